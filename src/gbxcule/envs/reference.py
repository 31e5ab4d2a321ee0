"""The reference: one PyBoy 2.8.1 as a single ``gymnasium.Env`` with the same task.

``gymnasium.vector.SyncVectorEnv([lambda: PyBoyTaskEnv(...)] * N)`` is what
:class:`gbxcule.envs.vector.GbxVectorEnv` must equal step by step (observations,
rewards, terminations, truncations, in every autoreset mode): same ROM, start state,
pacing, action codec and task (run by a :class:`~gbxcule.tasks.session.TaskSession`);
observations are PyBoy's screen downsampled (and packed) on the host, stacked like the
vector env's. Each episode's start is drawn from the task's pool by this env's own
generator: with more than one start the two envs draw differently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from gbxcule.envs.frames import FrameStack, check_obs, rgb_grid, single_observation_space
from gbxcule.envs.vector import resolve_task
from gbxcule.tasks.session import TaskSession, make_task_backend
from gbxcule.tasks.task import Task


class PyBoyTaskEnv(gym.Env):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}

    def __init__(
        self,
        rom: str | Path | None = None,
        task: str | Task = "demo-coins",
        *,
        obs: str = "u8",
        stack: int = 1,
        render_mode: str | None = "rgb_array",
        max_steps: int | None = None,
        starts: list[str | Path] | None = None,
    ) -> None:
        frame = check_obs(obs, stack)
        spec, rom_path = resolve_task(task, rom, max_steps)
        self.obs_format = obs
        self.render_mode = render_mode
        self._spec = spec
        self._starts = starts
        self._new_backend = lambda: make_task_backend(spec, 1, kind="pyboy", rom=rom_path)
        self._seed = 0
        self.session = self._new_session()
        self.backend = self.session.backend
        try:
            self.session.check_obs_format(obs)
        except ValueError:
            self.backend.close()
            raise
        self.task = self.session.runtime
        self._stack = FrameStack(1, stack, frame, torch.device("cpu"))
        self.observation_space = single_observation_space(obs, stack, len(spec.features))
        self.action_space = gym.spaces.Discrete(self.backend.codec.num_actions)

    def _new_session(self) -> TaskSession:
        backend = self._new_backend()
        try:
            return TaskSession(self._spec, backend, starts=self._starts, seed=self._seed)
        except BaseException:
            backend.close()
            raise

    def _frame(self) -> torch.Tensor:
        return self.session.observe(self.obs_format)

    def _obs(self) -> Any:
        screen = self._stack.observation()[0].numpy().copy()
        if not self._spec.features:
            return screen
        return {"screen": screen, "features": self.task.features()[0].numpy().copy()}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        # A fresh PyBoy per episode: PyBoy 2.8.1's load_state keeps its renderer's caches,
        # so a used PyBoy reset to the post-boot snapshot draws the first frame differently
        # from a fresh one (history/ecosystem.md); ours equals the fresh one.
        gen_state = self.task.gen.get_state()
        self.session.close()
        self.session = self._new_session()
        if seed is None:
            self.session.runtime.gen.set_state(gen_state)  # the draws go on
        else:
            self.session.runtime.gen.manual_seed(seed)
        self.backend, self.task = self.session.backend, self.session.runtime
        self.session.start()
        self._stack.frames.zero_()  # blank: PyBoy still shows the last episode's screen
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        r = self.session.step(np.array([int(action)], dtype=np.int64))
        self._stack.push(self._frame())
        return self._obs(), float(r.reward[0]), bool(r.terminated[0]), bool(r.truncated[0]), {}

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return rgb_grid(self.backend.screens([0]))

    def close(self) -> None:
        self.session.close()
