"""Rollout storage with observation slots, and the task env that renders into them.

A :class:`RolloutBuffer` holds one frame per slot: ``frames uint8 [K-1 + T+1, N, 72, W]``
(``W`` = 20 for packed2, 80 for u8 shades), where the first ``K-1`` slots carry the
previous rollout's last frames so every step can see a stack of ``K`` frames, and
``obs`` (``frames[K-1:]``) is the ``[T+1, N, 72, W]`` view of this rollout's steps
0..T. ``first[s, n]`` marks a frame that starts an episode: a stack never reaches back
across it (earlier frames read as zeros, as :class:`gbxcule.rl.agent.Agent` does).

:class:`TaskEnv` drives a backend and a task. The Warp backend runs with
``render_pixels=False``; after each step (and after ``reset_envs`` of the envs that
finished) it renders every env's next observation straight into its slot with
``render_pixels_snapshot_packed_to_torch(frames, offset)`` (u8: ``..._to_torch``):
exactly one render launch per env-step. :class:`HostTaskEnv` feeds the same buffer
from a host backend (PyBoy), for comparison.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from gbxcule.core import pixels as px
from gbxcule.rl.tasks import TaskRuntime, TaskSpec

FRAME_W = {"packed2": px.PACKED_W, "u8": px.DOWN_W}


class RolloutBuffer:
    def __init__(
        self, num_steps: int, num_envs: int, stack: int, obs_format: str, device: Any
    ) -> None:
        if obs_format not in FRAME_W:
            raise ValueError(f"obs_format must be one of {tuple(FRAME_W)}, got {obs_format!r}")
        self.T, self.N, self.K = num_steps, num_envs, stack
        self.obs_format = obs_format
        self.width = FRAME_W[obs_format]
        self.device = torch.device(device)
        slots = stack - 1 + num_steps + 1
        d = self.device
        self.frames = torch.zeros(
            (slots, num_envs, px.DOWN_H, self.width), dtype=torch.uint8, device=d
        )
        self.first = torch.zeros((slots, num_envs), dtype=torch.bool, device=d)
        self.actions = torch.zeros((num_steps, num_envs), dtype=torch.int64, device=d)
        self.logprobs = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        self.values = torch.zeros((num_steps + 1, num_envs), dtype=torch.float32, device=d)
        self.rewards = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        self.dones = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        self.episode_stats = torch.zeros(3, dtype=torch.float64, device=d)

    @property
    def obs(self) -> torch.Tensor:
        """``[T+1, N, 72, W]``: the observation of every step of this rollout, and the next."""
        return self.frames[self.K - 1 :]

    def slot(self, t: int) -> int:
        """Index into ``frames`` of step ``t``'s observation (0 <= t <= T)."""
        return self.K - 1 + t

    def slot_offset(self, t: int) -> int:
        """Element (= byte) offset of step ``t``'s slot in ``frames.view(-1)``."""
        return self.slot(t) * self.N * px.DOWN_H * self.width

    def stacked(self, t: int) -> torch.Tensor:
        """``[N, K, 72, W]``: the frames of steps t-K+1..t, zeroed before an episode start."""
        s = self.slot(t)
        return stack_frames(self.frames[s - self.K + 1 : s + 1], self.first[s - self.K + 1 : s + 1])

    def stacked_at(self, t_idx: torch.Tensor, n_idx: torch.Tensor) -> torch.Tensor:
        """``[B, K, 72, W]`` for the (step, env) pairs of a minibatch."""
        offs = torch.arange(self.K, device=self.device)
        rows = (t_idx + self.K - 1).unsqueeze(1) - (self.K - 1) + offs  # [B, K] slots
        frames = self.frames[rows, n_idx.unsqueeze(1)]  # [B, K, 72, W]
        first = self.first[rows, n_idx.unsqueeze(1)]  # [B, K]
        return stack_frames(frames.transpose(0, 1), first.transpose(0, 1)).contiguous()

    def carry_from(self, prev: RolloutBuffer) -> None:
        """Start this rollout where ``prev`` ended: its last K frames become our first K."""
        k = self.K
        self.frames[:k].copy_(prev.frames[-k:])
        self.first[:k].copy_(prev.first[-k:])


def stack_frames(frames: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """``frames [K, B, 72, W]`` and ``first [K, B]`` -> ``[B, K, 72, W]`` where the frames
    before the latest episode start in the window are zero."""
    k = frames.shape[0]
    keep = torch.ones_like(first)
    for j in range(k - 2, -1, -1):  # frame j survives if no later frame starts an episode
        keep[j] = keep[j + 1] & ~first[j + 1]
    out = frames * keep.to(frames.dtype)[..., None, None]
    return out.transpose(0, 1)


class TaskEnv:
    """A Warp backend + a task, rendering each next observation into a buffer slot."""

    def __init__(self, backend: Any, spec: TaskSpec, obs_format: str) -> None:
        if getattr(backend.pixels, "render_pixels", False) or getattr(
            backend.pixels, "render_pixels_packed", False
        ):
            raise ValueError("build the backend with render_pixels=False: TaskEnv renders itself")
        self.backend = backend
        self.spec = spec
        self.obs_format = obs_format
        self.num_envs = backend.num_envs
        self.device = torch.device(backend.pixels.torch_device)
        self.task = TaskRuntime(spec, backend, self.device)
        self._all = torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        # Device slots: reset_envs then reads no host value (one launch, no copy).
        self._slots = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        self.env_offset = 0  # global index of env 0 (a rank's first env under torchrun)
        self.render_s = 0.0

    def start(self, buf: RolloutBuffer, start_states: list | None = None) -> None:
        """Boot (or restore the given start states), start every episode, render slot 0."""
        b = self.backend
        b.reset()
        b.clear_start_states()
        if start_states:
            for state in start_states:
                b.add_start_state(state)
        else:
            b.capture_start_state(0)  # the post-boot state, or the task's state file
        # Per-env start states: global env e always restarts from slot e % S (a device tensor).
        count = b.num_start_states
        env_ids = torch.arange(self.num_envs, device=self.device) + self.env_offset
        self._slots = (env_ids % count).to(torch.int32)
        b.reset_envs(self._all, slots=self._slots)
        self.task.begin()
        buf.first[: buf.slot(0) + 1] = True
        self.render(buf, 0)

    def start_states(self) -> list:
        return [self.backend.start_state(s) for s in range(self.backend.num_start_states)]

    def render(self, buf: RolloutBuffer, t: int) -> None:
        """One render launch: every env's current screen into step ``t``'s slot."""
        t0 = time.perf_counter()
        if buf.obs_format == "packed2":
            self.backend.render_pixels_snapshot_packed_to_torch(buf.frames, buf.slot_offset(t))
        else:
            self.backend.render_pixels_snapshot_to_torch(buf.frames, buf.slot_offset(t))
        self.render_s += time.perf_counter() - t0  # wall time of the launch (CPU: the render)

    def step(self, actions: torch.Tensor, buf: RolloutBuffer, t: int) -> torch.Tensor:
        """Step with ``actions``, record reward/done at ``t``, reset finished envs, render the
        next observation into slot ``t+1``. Returns the done mask (bool [N], on the device)."""
        self.backend.step(actions)
        reward, terminated, truncated = self.task.after_step()
        done = terminated | truncated
        self.backend.reset_envs(done, slots=self._slots)
        self.task.after_reset(done)
        buf.rewards[t] = reward
        buf.dones[t] = done.to(torch.float32)
        buf.first[buf.slot(t + 1)] = done
        self.render(buf, t + 1)
        return done


class HostTaskEnv:
    """The same contract over a host backend (``PyBoyVecMpBackend``): frames come from
    ``frame_shades`` per env, downsampled and packed on the host. PyBoy has no start-state
    cache, so a finished episode's env keeps running (its counters restart)."""

    def __init__(self, backend: Any, spec: TaskSpec, obs_format: str) -> None:
        self.backend = backend
        self.spec = spec
        self.obs_format = obs_format
        self.num_envs = backend.num_envs
        self.device = torch.device("cpu")
        self.task = TaskRuntime(spec, backend, self.device)
        self.render_s = 0.0

    def start(self, buf: RolloutBuffer, start_states: list | None = None) -> None:
        self.backend.reset()
        self.task.begin()
        buf.first[: buf.slot(0) + 1] = True
        self.render(buf, 0)

    def start_states(self) -> list:
        return []

    def render(self, buf: RolloutBuffer, t: int) -> None:
        t0 = time.perf_counter()
        full = np.stack([self.backend.frame_shades(e) for e in range(self.num_envs)])
        shades = px.downsample(full)
        frames = px.pack_shades(shades) if buf.obs_format == "packed2" else shades
        buf.frames[buf.slot(t)].copy_(torch.from_numpy(frames))
        self.render_s += time.perf_counter() - t0

    def step(self, actions: torch.Tensor, buf: RolloutBuffer, t: int) -> torch.Tensor:
        self.backend.step(actions.cpu().numpy())
        reward, terminated, truncated = self.task.after_step()
        done = terminated | truncated
        self.task.after_reset(done)
        buf.rewards[t] = reward
        buf.dones[t] = done.to(torch.float32)
        buf.first[buf.slot(t + 1)] = done
        self.render(buf, t + 1)
        return done


def make_env(spec: TaskSpec, cfg: Any, backend: str = "warp") -> TaskEnv | HostTaskEnv:
    """The env for a config: ``backend`` "warp" (CPU or CUDA by ``cfg.device``) or "pyboy"
    (also spelled "pyboy-mp", ``TrainConfig.env_backend``: :class:`HostTaskEnv` over
    ``PyBoyVecMpBackend``)."""
    rom = spec.rom_path(cfg.rom)
    state = cfg.state if cfg.state is not None else spec.state
    common = dict(
        num_envs=cfg.num_envs,
        frames_per_step=spec.frames_per_step,
        release_after_frames=spec.release_after_frames,
        action_codec=spec.action_codec,
    )
    if backend in ("pyboy", "pyboy-mp"):
        from gbxcule.backends.pyboy_mp import PyBoyVecMpBackend

        if state is not None:
            raise ValueError("the PyBoy-fed env supports the post-boot start only")
        return HostTaskEnv(PyBoyVecMpBackend(rom, render=True, **common), spec, cfg.obs_format)
    from gbxcule.backends.warp_vec import WarpVecCpuBackend, WarpVecCudaBackend

    if cfg.device.startswith("cuda"):
        dev = cfg.device if ":" in cfg.device else "cuda:0"
        b = WarpVecCudaBackend(rom, device=dev, state_path=state, **common)
    else:
        threads = cfg.threads if cfg.threads > 0 else None
        b = WarpVecCpuBackend(rom, threads=threads, state_path=state, **common)
    return TaskEnv(b, spec, cfg.obs_format)
