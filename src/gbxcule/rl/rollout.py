"""Rollout storage with observation slots, and the task env that renders into them.

A :class:`RolloutBuffer` holds one frame per slot: ``frames uint8 [K-1 + T+1, N, 72, W]``
(``W`` = 20 for packed2, 80 for u8 shades), where the first ``K-1`` slots carry the
previous rollout's last frames so every step can see a stack of ``K`` frames, and
``obs`` (``frames[K-1:]``) is the ``[T+1, N, 72, W]`` view of this rollout's steps
0..T. ``first[s, n]`` marks a frame that starts an episode: a stack never reaches back
across it (earlier frames read as zeros, as :class:`gbxcule.rl.agent.Agent` does).

:class:`TaskEnv` drives a task session (``gbxcule.tasks.session``) on either family of
backend. After each step (and after the reset of the envs that finished) the backend
renders every env's next observation straight into its slot (``render_obs``): on Warp,
built with ``render_pixels=False``, exactly one render launch per env-step; on PyBoy
its screens downsampled on the host, for comparison.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from gbxcule.core import pixels as px
from gbxcule.tasks.runtime import STATS_HEAD
from gbxcule.tasks.session import TaskSession, make_task_backend
from gbxcule.tasks.task import Task

FRAMES = px.OBS_FRAME_SHAPES  # one observation's shape per format


class RolloutBuffer:
    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        stack: int,
        obs_format: str,
        device: Any,
        num_features: int = 0,
        num_terms: int = 0,
    ) -> None:
        if obs_format not in FRAMES:
            raise ValueError(f"obs_format must be one of {tuple(FRAMES)}, got {obs_format!r}")
        self.T, self.N, self.K = num_steps, num_envs, stack
        self.obs_format = obs_format
        self.frame = FRAMES[obs_format]
        self.device = torch.device(device)
        slots = stack - 1 + num_steps + 1
        d = self.device
        self.frames = torch.zeros((slots, num_envs, *self.frame), dtype=torch.uint8, device=d)
        self.first = torch.zeros((slots, num_envs), dtype=torch.bool, device=d)
        # the task's RAM features of steps 0..T (float32 [T+1, N, F]; F = 0: none)
        self.features = torch.zeros((num_steps + 1, num_envs, num_features), device=d)
        self.actions = torch.zeros((num_steps, num_envs), dtype=torch.int64, device=d)
        self.logprobs = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        self.values = torch.zeros((num_steps + 1, num_envs), dtype=torch.float32, device=d)
        self.rewards = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        self.dones = torch.zeros((num_steps, num_envs), dtype=torch.float32, device=d)
        # finished episodes, their return and length sums, each reward term's sum
        self.episode_stats = torch.zeros(STATS_HEAD + num_terms, dtype=torch.float64, device=d)

    @property
    def obs(self) -> torch.Tensor:
        """``[T+1, N, 72, W]``: the observation of every step of this rollout, and the next."""
        return self.frames[self.K - 1 :]

    def slot(self, t: int) -> int:
        """Index into ``frames`` of step ``t``'s observation (0 <= t <= T)."""
        return self.K - 1 + t

    def slot_offset(self, t: int) -> int:
        """Element (= byte) offset of step ``t``'s slot in ``frames.view(-1)``."""
        return self.slot(t) * self.N * math.prod(self.frame)

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
        self.features[0].copy_(prev.features[-1])

    def features_at(self, t: Any, n: Any = None) -> torch.Tensor | None:
        """The features of step ``t`` (all envs, or the minibatch's ``n``), None without any."""
        if self.features.shape[-1] == 0:
            return None
        return self.features[t] if n is None else self.features[t, n]


def stack_frames(frames: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    """``frames [K, B, 72, W]`` and ``first [K, B]`` -> ``[B, K, 72, W]`` where the frames
    before the latest episode start in the window are zero."""
    k = frames.shape[0]
    keep = torch.ones_like(first)
    for j in range(k - 2, -1, -1):  # frame j survives if no later frame starts an episode
        keep[j] = keep[j + 1] & ~first[j + 1]
    out = frames * keep.to(frames.dtype).view(*keep.shape, *([1] * (frames.ndim - 2)))
    return out.transpose(0, 1)


class TaskEnv:
    """A task session on a backend, rendering each next observation into a slot."""

    def __init__(self, session: TaskSession, obs_format: str) -> None:
        backend = session.backend
        session.check_obs_format(obs_format)
        self.session = session
        self.backend = backend
        self.spec = session.task
        self.obs_format = obs_format
        self.num_envs = backend.num_envs
        self.device = session.device
        self.task = session.runtime
        self.result = session.new_result()
        self.render_s = 0.0

    def emulator_sps(self, steps: int, seed: int = 0) -> float:
        """Env-steps/s of the emulator alone on these envs, from the task's first start:
        ``steps`` steps of random actions, each rendered as an observation, with no policy,
        task or learner. Call before :meth:`start`, which sets every env up anew (the run's
        draws are untouched)."""
        gen = torch.Generator().manual_seed(seed)
        n_actions = self.spec.codec.num_actions
        frame = FRAMES[self.obs_format]
        out = torch.empty((self.num_envs, *frame), dtype=torch.uint8, device=self.device)
        actions = [torch.randint(0, n_actions, (self.num_envs,), generator=gen).to(self.device)
                   for _ in range(steps + 1)]  # fmt: skip
        self.session.place_at_first_start()
        self.backend.step(actions[steps])  # (the first step pays one-time costs)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        for a in actions[:steps]:
            self.backend.step(a)
            self.backend.render_obs(out, 0, self.obs_format)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return steps * self.num_envs / (time.perf_counter() - t0)

    def start(self, buf: RolloutBuffer, start_states: list | None = None) -> None:
        """Every env at a start drawn from the pool (or the given start states), render slot 0."""
        self.session.start(start_states)
        buf.first[: buf.slot(0) + 1] = True
        self.render(buf, 0)
        self._features(buf, 0)

    def _features(self, buf: RolloutBuffer, t: int) -> None:
        if buf.features.shape[-1]:
            buf.features[t] = self.session.runtime.features()

    def start_states(self) -> list:
        return self.session.start_states()

    def render(self, buf: RolloutBuffer, t: int) -> None:
        """Every env's current screen into step ``t``'s slot (Warp: one launch)."""
        t0 = time.perf_counter()
        self.backend.render_obs(buf.frames, buf.slot_offset(t), buf.obs_format)
        self.render_s += time.perf_counter() - t0  # wall time of the launch (CPU: the render)

    def step(self, actions: torch.Tensor, buf: RolloutBuffer, t: int) -> torch.Tensor:
        """Step with ``actions``, record reward/done at ``t``, reset finished envs, render the
        next observation into slot ``t+1``. Returns the done mask (bool [N], on the device)."""
        r = self.session.step(actions, self.result, reset_done=True)
        done = r.done | r.swarmed  # swarmed envs' experience goes on elsewhere: cut it here
        buf.rewards[t] = r.reward
        buf.dones[t] = done.to(torch.float32)
        buf.first[buf.slot(t + 1)] = done
        self.render(buf, t + 1)
        self._features(buf, t + 1)
        return done


def make_env(task: Task, cfg: Any, backend: str = "warp", *, env_offset: int = 0) -> TaskEnv:
    """The env for a config: ``backend`` one of ``registry.TASK_BACKENDS``
    (``TrainConfig.env_backend``: warp on ``cfg.device``, or PyBoy). ``cfg.rom`` / ``cfg.state`` override the task's ROM and starts;
    each rank's start draws are seeded by the run's seed and its first env."""
    starts = None if cfg.state is None else [cfg.state]
    extra = {"threads": cfg.threads if cfg.threads > 0 else None} if backend == "warp" else {}
    b = make_task_backend(task, cfg.num_envs, kind=backend, device=cfg.device, rom=cfg.rom, **extra)
    try:
        session = TaskSession(task, b, starts=starts, seed=cfg.seed * 1_000_003 + env_offset)
    except BaseException:
        b.close()
        raise
    return TaskEnv(session, cfg.obs_format)
