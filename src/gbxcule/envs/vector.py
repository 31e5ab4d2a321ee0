"""A Gymnasium 1.x ``VectorEnv`` over a Warp backend and a task of ``rl/tasks.py``.

Per ``step()`` (one emulator launch, one render launch, and ``reset_envs`` when an env
finishes):

An episode's first observation is blank (zeros): neither emulator has drawn a frame of
the start state yet. Then:

* ``next_step``: the envs that finished at the previous step are restored from the
  start state after the launch (their step is discarded) and report reward 0, not
  done, and their first observation, as Gymnasium's ``SyncVectorEnv`` does.
* ``same_step``: finished envs are restored in the same call; ``infos["final_obs"]``
  (with ``infos["_final_obs"]``) holds their last observation, ``infos["final_info"]``
  their last info.
* ``disabled``: nothing is restored; ``reset(options={"reset_mask": m})`` restores
  the envs in ``m`` (a bool [N] array) and returns every env's observation.

``hooks=[...]`` sets event hooks on the backend (``backends/hooks.py``: ROM addresses,
``"bank:addr"`` strings or symbols; no ``stop_on_hit``); each ``step()`` then reports
``infos["hook_hits"]`` (int32 ``[N, len(hooks)]``: each hook's hits in that step, columns
in the order given) with its Gymnasium mask ``infos["_hook_hits"]``, False (and hits 0)
for the envs a ``next_step`` autoreset restored in that call (their step was discarded).

A task whose steps vary in length (timed actions, ``step_end``: ``gbxcule.tasks.task``)
reports ``infos["frames"]``, the frames each env's step ran.

Rewards, terminations and truncations come from the task (``gbxcule.tasks``: a name,
a task file or a :class:`~gbxcule.tasks.Task`), run by a
:class:`~gbxcule.tasks.session.TaskSession` on the device; each episode starts from a
start drawn from the task's pool (``starts=`` overrides it; ``reset(seed=...)`` seeds
the draws). A task with RAM features (``Task.features``) observes a ``Dict``:
``{"screen": the stack above, "features": float32 [N, F]}``. On the CPU the results are NumPy arrays
(rewards float64, as ``SyncVectorEnv``); on CUDA they are Torch tensors on the device
(rewards float32) and no host copy is made.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from gbxcule.envs.frames import (
    FrameStack,
    check_obs,
    env_mask,
    restart_stacks,
    rgb_grid,
    single_observation_space,
)
from gbxcule.tasks.load import load_task
from gbxcule.tasks.runtime import swarm_sources
from gbxcule.tasks.session import TaskSession, make_task_backend
from gbxcule.tasks.task import Task

AUTORESET_MODES = {
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}


def resolve_task(
    task: str | Task, rom: str | Path | None, max_steps: int | None = None
) -> tuple[Task, Path]:
    """The task (a name, task file or module: ``gbxcule.tasks.load``; ``max_steps``
    overriding its truncation when given) and its ROM path."""
    spec = load_task(task)
    if max_steps is not None:
        spec = replace(spec, max_steps=int(max_steps))
    return spec, spec.rom_path(rom)


def parse_autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    if mode not in AUTORESET_MODES:
        raise ValueError(f"autoreset_mode must be one of {tuple(AUTORESET_MODES)}, got {mode!r}")
    return AUTORESET_MODES[mode]


class GbxVectorEnv(VectorEnv):
    """``num_envs`` Game Boys as one Gymnasium vector env (see the module doc)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 60}

    def __init__(
        self,
        rom: str | Path | None,
        num_envs: int,
        task: str | Task = "demo-coins",
        *,
        device: str = "cpu",
        obs: str = "u8",
        stack: int = 1,
        autoreset_mode: str | AutoresetMode = "next_step",
        render_mode: str | None = "rgb_array",
        copy: bool = True,
        max_steps: int | None = None,
        hooks: Any = None,
        starts: list[str | Path] | None = None,
        **backend_kwargs: Any,
    ) -> None:
        frame = check_obs(obs, stack)
        spec, rom_path = resolve_task(task, rom, max_steps)
        self.spec_task = spec
        self.obs_format = obs
        self.autoreset_mode = _mode = parse_autoreset_mode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": _mode}
        self.render_mode = render_mode
        self.copy = copy
        # render off: the env renders its observations itself
        self.backend = make_task_backend(
            spec, num_envs, device=device, rom=rom_path, **backend_kwargs
        )
        try:
            self.session = TaskSession(spec, self.backend, starts=starts)
            self.session.check_obs_format(obs)
        except BaseException:
            self.backend.close()
            raise
        self.hooks = self.backend.set_hooks(hooks) if hooks else []  # (bank, addr) per column
        self.num_envs = num_envs
        self.device = self.session.device
        self.on_cuda = self.device.type == "cuda"
        self.task = self.session.runtime
        self._result = self.session.new_result()
        self.num_features = len(spec.features)
        self.single_observation_space = single_observation_space(obs, stack, self.num_features)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = gym.spaces.Discrete(self.backend.codec.num_actions)
        self.action_space = batch_space(self.single_action_space, num_envs)
        d = self.device
        self._frame = torch.zeros((num_envs, *frame), dtype=torch.uint8, device=d)
        self._stack = FrameStack(num_envs, stack, frame, d)
        self._auto = torch.zeros(num_envs, dtype=torch.bool, device=d)
        self._all = torch.ones(num_envs, dtype=torch.bool, device=d)
        self._started = False

    # ---- Gymnasium API ---------------------------------------------------------------

    def reset(
        self, *, seed: int | list | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Every env to the task's start state (PyBoy is deterministic: ``seed`` only seeds
        ``np_random``); with ``options={"reset_mask": m}`` only the envs in ``m``."""
        if isinstance(seed, int):
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
            self.task.gen.manual_seed(seed)  # the start draws, sticky actions, no-op prefixes
        mask = None if not options or "reset_mask" not in options else options["reset_mask"]
        if mask is None or not self._started:
            self._start()
        else:
            m = self._reset_mask(mask)
            self.session.reset_envs(m)
            restart_stacks(self._stack, m)
            self._auto &= ~m
        return self._observation(), {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if self.autoreset_mode == AutoresetMode.DISABLED and not self.on_cuda:
            if bool(self._auto.any()):
                raise RuntimeError(
                    "autoreset_mode='disabled': reset the finished envs with "
                    "reset(options={'reset_mask': ...}) before stepping them again"
                )
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        auto = self._auto if next_step else None  # restored instead of stepped
        r = self.session.step(self._actions(actions), self._result, discard=auto)
        infos: dict[str, Any] = self._hook_info(auto) if self.hooks else {}
        if self.session.task.timed:  # steps of their own length: the frames each ran
            infos["frames"] = self._scalars(r.frames, np.int64)
        self._render()
        self._stack.push(self._frame)
        if auto is not None:
            restart_stacks(self._stack, auto)
        elif self.autoreset_mode == AutoresetMode.SAME_STEP:
            infos.update(self._same_step_reset(r.done))
        self._auto = r.done.clone()
        swarmed = self.session.swarm()  # the task's own swarm (Task.swarm), if it has one
        if swarmed is not None:
            self._copy_stacks(self.session.swarm_src, swarmed)
            infos["swarmed"], infos["_swarmed"] = (self._scalars(swarmed, np.bool_),) * 2
        return (
            self._observation(),
            self._scalars(r.reward, np.float64),
            self._scalars(r.terminated, np.bool_),
            self._scalars(r.truncated, np.bool_),
            infos,
        )

    def render(self) -> np.ndarray | None:
        """An RGB grid (``uint8 [H, W, 3]``) of the first 16 envs' full 144x160 screens."""
        if self.render_mode != "rgb_array":
            return None
        envs = np.arange(min(16, self.num_envs))
        return rgb_grid(self.backend.screens(envs))

    def close_extras(self, **kwargs: Any) -> None:
        self.backend.close()

    # ---- swarm resets ------------------------------------------------------------------

    def copy_envs(self, src_env_per_dst: Any, mask: Any) -> None:
        """Envs in ``mask`` become copies of ``src_env_per_dst[e]``: the machine (one
        launch, :meth:`~gbxcule.backends.swarm.SwarmMixin.copy_envs`), the task counters
        and the frame stack, so each continues exactly as its source would."""
        m = self._reset_mask(mask, check_any=False)
        src = torch.as_tensor(
            np.asarray(src_env_per_dst)
            if not torch.is_tensor(src_env_per_dst)
            else src_env_per_dst,
            device=self.device,
        ).to(torch.int64)
        self.session.copy_envs(src, m)
        self._copy_stacks(src, m)

    def _copy_stacks(self, src: torch.Tensor, m: torch.Tensor) -> None:
        """The env-side state of a copy: the autoreset flag and the frame stack."""
        self._auto.copy_(torch.where(m, self._auto[src], self._auto))
        frames = self._stack.frames
        frames.copy_(torch.where(env_mask(m, frames), frames[src], frames))

    def swarm_reset(self, mask: Any, progress: torch.Tensor | None = None) -> None:
        """Milestone swarm (pokemonred_puffer): the envs in ``mask`` jump to the env with the
        highest ``progress`` (default: the episode's return so far), in one launch; the
        best env itself is left alone."""
        m = self._reset_mask(mask, check_any=False)
        prog = self.task.ep_return if progress is None else torch.as_tensor(progress)
        src = swarm_sources(prog.to(self.device))
        self.copy_envs(src, m & (torch.arange(self.num_envs, device=self.device) != src))

    # ---- internals ---------------------------------------------------------------------

    def _start(self) -> None:
        self.session.start()
        self._started = True
        restart_stacks(self._stack, None)
        self._auto.zero_()

    def _restore(self, mask: torch.Tensor) -> None:
        """``reset_envs`` + new task episodes for ``mask`` (skipped on the CPU when empty)."""
        if not self.on_cuda and not bool(mask.any()):
            return
        self.session.reset_envs(mask)

    def _observation(self) -> Any:
        """The screen stack, or ``{"screen", "features"}`` for a task with RAM features."""
        screen = self._stack.observation()
        if not self.num_features:
            return self._out(screen)
        return {"screen": self._out(screen), "features": self._out(self.task.features())}

    def _same_step_reset(self, done: torch.Tensor) -> dict[str, Any]:
        if not self.on_cuda and not bool(done.any()):
            return {}
        final = self._stack.observation().clone()
        if self.num_features:
            feats = self.task.features()
            final_dict = {"screen": final, "features": feats}
        self._restore(done)
        restart_stacks(self._stack, done)
        if self.on_cuda:
            return {
                "final_obs": final_dict if self.num_features else final,
                "_final_obs": done.clone(),
                "final_info": {},
                "_final_info": done.clone(),
            }
        mask = done.numpy().copy()
        objs = np.full(self.num_envs, None, dtype=object)
        for e in np.flatnonzero(mask):
            objs[e] = (
                {k: v[e].numpy() for k, v in final_dict.items()}
                if self.num_features
                else final[e].numpy()
            )
        return {"final_obs": objs, "_final_obs": mask, "final_info": {}, "_final_info": mask.copy()}

    def _hook_info(self, discarded: torch.Tensor | None) -> dict[str, Any]:
        """``hook_hits`` and its mask (module doc); ``discarded``: envs whose step is undone."""
        hits = self.backend.hook_hits_torch().clone()
        valid = self._all.clone() if discarded is None else ~discarded
        hits.masked_fill_(~valid[:, None], 0)
        if self.on_cuda:
            return {"hook_hits": hits, "_hook_hits": valid}
        return {"hook_hits": hits.numpy(), "_hook_hits": valid.numpy()}

    def _render(self) -> None:
        self.backend.render_obs(self._frame, 0, self.obs_format)

    def _reset_mask(self, mask: Any, check_any: bool = True) -> torch.Tensor:
        if isinstance(mask, np.ndarray) or not torch.is_tensor(mask):
            arr = np.asarray(mask)
            if arr.dtype != np.bool_ or arr.shape != (self.num_envs,):
                raise ValueError(
                    f"reset_mask must be a bool array of shape ({self.num_envs},), "
                    f"got {arr.dtype} {arr.shape}"
                )
            t = torch.from_numpy(arr.copy()).to(self.device)
        else:
            if mask.dtype != torch.bool or tuple(mask.shape) != (self.num_envs,):
                raise ValueError(
                    f"reset_mask must be a bool tensor of shape ({self.num_envs},), "
                    f"got {mask.dtype} {tuple(mask.shape)}"
                )
            t = mask.to(self.device)
        if check_any and not self.on_cuda and not bool(t.any()):
            raise ValueError("reset_mask must select at least one env")
        return t

    def _actions(self, actions: Any) -> Any:
        if torch.is_tensor(actions):
            return actions if actions.device == self.device else actions.to(self.device)
        return np.asarray(actions)

    def _out(self, obs: torch.Tensor) -> Any:
        if self.on_cuda:
            return obs.clone() if self.copy else obs
        return obs.numpy().copy() if self.copy else obs.numpy()

    def _scalars(self, t: torch.Tensor, dtype: Any) -> Any:
        return t.clone() if self.on_cuda else t.numpy().astype(dtype)


def make_vector_env(
    rom: str | Path | None,
    num_envs: int,
    task: str | Task = "demo-coins",
    device: str = "cpu",
    obs: str = "u8",
    stack: int = 1,
    autoreset_mode: str = "next_step",
    **backend_kwargs: Any,
) -> GbxVectorEnv:
    """A :class:`GbxVectorEnv` (``rom`` None: the task's ROM, e.g. the demo game)."""
    return GbxVectorEnv(
        rom,
        num_envs,
        task,
        device=device,
        obs=obs,
        stack=stack,
        autoreset_mode=autoreset_mode,
        **backend_kwargs,
    )
