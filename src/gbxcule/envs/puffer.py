"""A PufferLib 3.0 ``PufferEnv``: N Game Boys as N agents of one native env.

PufferLib's contract (``pufferlib.PufferEnv``; ``pufferlib.vector.make(creator,
backend=PufferEnv)`` returns such an env as the vector env itself): the env defines
``single_observation_space`` (a Box), ``single_action_space`` (Discrete) and
``num_agents``, gets its buffers from ``pufferlib.set_buffers`` (or from a vector
backend's shared ``buf``: ``observations``, ``rewards`` float32, ``terminals``,
``truncations``, ``masks``, ``actions``), fills them *in place* on ``reset`` /
``step``, resets finished agents itself (``terminals``/``truncations`` flag the step
that ended an episode, ``observations`` already holds the next one's first), and
returns infos as a list of dicts.

Here a :class:`~gbxcule.envs.vector.GbxVectorEnv` in ``same_step`` mode does the work;
its results are copied into PufferLib's buffers (host NumPy arrays: on CUDA that is one
device-to-host copy of the observations per step; PufferLib's trainer moves them back).
``infos`` carries ``{"episode_return", "episode_length", "episode_frames", "episodes"}`` (means over the
episodes finished since the last report) every ``log_interval`` steps.

A task with RAM features (``Task.features``) observes a structure, which PufferLib
carries the way its emulation layer carries every structured space: each agent's
observation is the bytes of one record of ``env.obs_dtype`` (a NumPy structured dtype,
``align=True``: ``screen`` uint8 as above, ``features`` float32 ``[F]``), in a
``uint8`` Box of ``obs_dtype.itemsize``. ``unpack_observations(obs, env.obs_dtype)``
(or ``obs.view(obs_dtype)`` in NumPy, PufferLib's ``nativize_tensor`` in Torch) gives
the two arrays back.

PufferLib is optional: with it importable, :class:`GbxPufferEnv` subclasses
``pufferlib.PufferEnv``; without it, a stand-in with the same buffer contract, so the
adapter is tested either way (see history/ecosystem.md for installing PufferLib).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from gbxcule.envs.vector import GbxVectorEnv
from gbxcule.tasks.task import Task


class _StandIn:
    """PufferLib's buffer contract, for when PufferLib is not installed."""

    def __init__(self, buf: dict | None = None) -> None:
        n = self.num_agents
        shape = self.single_observation_space.shape
        if buf is None:
            buf = {
                "observations": np.zeros((n, *shape), dtype=np.uint8),
                "rewards": np.zeros(n, dtype=np.float32),
                "terminals": np.zeros(n, dtype=bool),
                "truncations": np.zeros(n, dtype=bool),
                "masks": np.ones(n, dtype=bool),
                "actions": np.zeros(n, dtype=np.int32),
            }
        for key, value in buf.items():
            setattr(self, key, value)
        self.agent_ids = np.arange(n)

    def async_reset(self, seed: int | None = None) -> None:
        _, self.infos = self.reset(seed)

    def send(self, actions: Any) -> None:
        _, _, _, _, self.infos = self.step(actions)

    def recv(self) -> tuple:
        return (
            self.observations,
            self.rewards,
            self.terminals,
            self.truncations,
            self.infos,
            self.agent_ids,
            self.masks,
        )


_Base: Any = _StandIn
try:
    import pufferlib

    _Base = pufferlib.PufferEnv
    HAVE_PUFFERLIB = True
except ImportError:  # the stand-in keeps PufferLib's buffer contract
    HAVE_PUFFERLIB = False


class GbxPufferEnv(_Base):
    """``num_envs`` Game Boys as the agents of one PufferLib native env."""

    def __init__(
        self,
        rom: str | Path | None = None,
        num_envs: int = 64,
        task: str | Task = "demo-coins",
        *,
        device: str = "cpu",
        obs: str = "u8",
        stack: int = 1,
        log_interval: int = 32,
        buf: dict | None = None,
        seed: int | None = 0,
        **backend_kwargs: Any,
    ) -> None:
        self.env = GbxVectorEnv(
            rom,
            num_envs,
            task,
            device=device,
            obs=obs,
            stack=stack,
            autoreset_mode="same_step",
            copy=False,
            **backend_kwargs,
        )
        self.obs_dtype: np.dtype | None = None
        self.single_observation_space = self.env.single_observation_space
        if self.env.num_features:
            screen = self.env.single_observation_space["screen"]
            self.obs_dtype = np.dtype(
                [("screen", np.uint8, screen.shape),
                 ("features", np.float32, (self.env.num_features,))],
                align=True,
            )  # fmt: skip
            self.single_observation_space = spaces.Box(
                0, 255, (self.obs_dtype.itemsize,), dtype=np.uint8
            )
        self.single_action_space = self.env.single_action_space
        self.num_agents = num_envs
        self.log_interval = log_interval
        self._tick = 0
        self._seed = seed
        super().__init__(buf)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict]]:
        obs, _ = self.env.reset(seed=self._seed if seed is None else seed)
        self._fill(obs)
        self.env.task.take_stats()
        self._tick = 0
        return self.observations, []

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list]:
        acts = actions if torch.is_tensor(actions) else np.asarray(actions).astype(np.int64)
        obs, reward, term, trunc, _ = self.env.step(acts)
        self._fill(obs, reward, term, trunc)
        self._tick += 1
        infos: list[dict] = []
        if self._tick % self.log_interval == 0:
            count, ret, length, frames = self.env.task.take_stats()[:4].tolist()
            if count > 0:
                infos.append(
                    {
                        "episode_return": ret / count,
                        "episode_length": length / count,
                        "episode_frames": frames / count,
                        "episodes": int(count),
                    }
                )
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def _fill(self, obs: Any, reward: Any = None, term: Any = None, trunc: Any = None) -> None:
        host = (lambda t: t.cpu().numpy()) if self.env.on_cuda else (lambda a: a)
        if self.obs_dtype is None:
            self.observations[:] = host(obs)
        else:
            records = _records(self.observations, self.obs_dtype)
            records["screen"] = host(obs["screen"])
            records["features"] = host(obs["features"])
        if reward is None:
            self.rewards[:] = 0
            self.terminals[:] = False
            self.truncations[:] = False
            return
        self.rewards[:] = host(reward)
        self.terminals[:] = host(term)
        self.truncations[:] = host(trunc)

    def render(self) -> np.ndarray | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _records(buf: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``buf`` (uint8 ``[N, itemsize]``) as ``N`` records of ``dtype``, sharing its memory."""
    if buf.dtype != np.uint8 or buf.ndim != 2 or not buf.flags.c_contiguous:
        raise ValueError(
            f"the observations buffer must be C-contiguous uint8 [N, {dtype.itemsize}] for a "
            f"structured observation, got {buf.dtype} {buf.shape}"
        )
    return buf.view(dtype)[:, 0]


def unpack_observations(obs: Any, dtype: np.dtype) -> dict[str, np.ndarray]:
    """``{"screen", "features"}`` of a features task's observations (uint8 ``[N, itemsize]``
    bytes, :class:`GbxPufferEnv`'s ``observations``), as copies."""
    records = _records(np.ascontiguousarray(np.asarray(obs)), dtype)
    return {name: records[name].copy() for name in dtype.names or ()}


def make_puffer_env(
    rom: str | Path | None = None,
    num_envs: int = 64,
    task: str | Task = "demo-coins",
    device: str = "cpu",
    obs: str = "u8",
    stack: int = 1,
    buf: dict | None = None,
    seed: int | None = 0,
    **backend_kwargs: Any,
) -> GbxPufferEnv:
    """A :class:`GbxPufferEnv`; pass it as the creator to ``pufferlib.vector.make``."""
    return GbxPufferEnv(
        rom,
        num_envs,
        task,
        device=device,
        obs=obs,
        stack=stack,
        buf=buf,
        seed=seed,
        **backend_kwargs,
    )
