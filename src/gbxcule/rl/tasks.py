"""Tasks: reward, termination and truncation computed on the device from RAM views.

A :class:`TaskSpec` names the ROM, the start state, the step pacing, the action codec
and where the reward lives in RAM (a CPU address or a ``.sym`` name). A
:class:`TaskRuntime` holds the per-env counters on the backend's device and turns a
step into ``reward, terminated, truncated`` without a host round trip (Warp backends:
zero-copy RAM views; host backends such as PyBoy: ``read_memory`` per env).

Built in: ``demo-coins`` (see :data:`TASKS`). :func:`packed_l1_distance` is the
goal-distance helper for image-goal tasks on packed2 frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gbxcule.core import pixels as px
from gbxcule.demo import game


@dataclass(frozen=True)
class RamValue:
    """An unsigned little-endian value of ``size`` bytes at ``where`` (address or symbol)."""

    where: int | str
    size: int = 1


@dataclass(frozen=True)
class TaskSpec:
    name: str
    rom: str | None  # None: the demo game's ROM
    state: str | None  # None: every episode starts from the post-boot state
    frames_per_step: int
    release_after_frames: int
    action_codec: str
    max_steps: int  # truncation after this many steps
    reward: RamValue  # reward = increase of this value during the step (mod 2**(8*size))
    reward_scale: float = 1.0
    terminate: RamValue | None = None  # terminated when this value >= terminate_at
    terminate_at: int = 1
    description: str = ""

    def rom_path(self, override: str | Path | None = None) -> Path:
        if override is not None:
            return Path(override)
        if self.rom is not None:
            return Path(self.rom)
        from gbxcule.demo.rom import demo_rom_path

        return Path(demo_rom_path())


TASKS: dict[str, TaskSpec] = {
    "demo-coins": TaskSpec(
        name="demo-coins",
        rom=None,
        state=None,
        frames_per_step=24,
        release_after_frames=8,
        action_codec="pokemonred_puffer_v1",
        max_steps=100,
        reward=RamValue(game.W_SCORE, 2),
        description="the demo game: +1 per coin collected (16-bit count at 0xC102), "
        "100 steps from the post-boot state",
    ),
}


def get_task(name: str) -> TaskSpec:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}") from None


# ---- RAM readers ----------------------------------------------------------------------


def _address(backend: Any, where: int | str) -> int:
    if isinstance(where, int):
        return where
    if hasattr(backend, "symbol"):
        return int(backend.symbol(where))
    raise ValueError(f"{type(backend).__name__} has no .sym symbols; give {where!r} as an address")


class DeviceRam:
    """A :class:`RamValue` read from a Warp backend's zero-copy RAM views (no host sync)."""

    def __init__(self, backend: Any, value: RamValue) -> None:
        addr = _address(backend, value.where)
        end = addr + value.size
        if 0xC000 <= addr and end <= 0xE000:
            view = backend.wram_torch()[:, addr - 0xC000 : end - 0xC000]
        elif 0xFF80 <= addr and end <= 0xFFFF:
            view = backend.hram_torch()[:, addr - 0xFF80 : end - 0xFF80]
        else:
            raise ValueError(
                f"task RAM values must lie in WRAM or HRAM, got {addr:#06x}+{value.size}"
            )
        self.view = view
        self.shifts = torch.arange(value.size, device=view.device, dtype=torch.int64) * 8

    def read(self) -> torch.Tensor:
        """int64 [N], on the backend's device."""
        return (self.view.to(torch.int64) << self.shifts).sum(dim=1)


class HostRam:
    """A :class:`RamValue` read through ``read_memory`` (PyBoy backends), as a CPU tensor."""

    def __init__(self, backend: Any, value: RamValue) -> None:
        self.backend = backend
        self.addr = _address(backend, value.where)
        self.size = value.size

    def read(self) -> torch.Tensor:
        n = self.backend.num_envs
        rows = [self.backend.read_memory(e, self.addr, self.addr + self.size) for e in range(n)]
        data = torch.tensor([list(r) for r in rows], dtype=torch.int64)
        shifts = torch.arange(self.size, dtype=torch.int64) * 8
        return (data << shifts).sum(dim=1)


def ram_reader(backend: Any, value: RamValue) -> DeviceRam | HostRam:
    return DeviceRam(backend, value) if hasattr(backend, "wram_torch") else HostRam(backend, value)


# ---- per-env counters -------------------------------------------------------------------


class TaskRuntime:
    """Per-env task state on ``device``: last reward value, step count, episode stats."""

    def __init__(self, spec: TaskSpec, backend: Any, device: torch.device) -> None:
        self.spec = spec
        self.device = device
        n = backend.num_envs
        self.reward_ram = ram_reader(backend, spec.reward)
        self.term_ram = None if spec.terminate is None else ram_reader(backend, spec.terminate)
        self.modulus = 1 << (8 * spec.reward.size)
        self.prev = torch.zeros(n, dtype=torch.int64, device=device)
        self.steps = torch.zeros(n, dtype=torch.int32, device=device)
        self.ep_return = torch.zeros(n, dtype=torch.float32, device=device)
        # Finished-episode sums since the last take_stats(): count, return, length.
        self.finished = torch.zeros(3, dtype=torch.float64, device=device)

    def _read(self, ram: DeviceRam | HostRam) -> torch.Tensor:
        return ram.read().to(self.device, non_blocking=True)

    def begin(self) -> None:
        """After a full reset: every env starts an episode now."""
        self.prev.copy_(self._read(self.reward_ram))
        self.steps.zero_()
        self.ep_return.zero_()

    def after_step(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``reward`` float32, ``terminated`` and ``truncated`` bool, all [N], no host sync."""
        cur = self._read(self.reward_ram)
        reward = ((cur - self.prev) % self.modulus).to(torch.float32) * self.spec.reward_scale
        self.prev.copy_(cur)
        self.steps += 1
        if self.term_ram is None:
            terminated = torch.zeros_like(self.steps, dtype=torch.bool)
        else:
            terminated = self._read(self.term_ram) >= self.spec.terminate_at
        truncated = (self.steps >= self.spec.max_steps) & ~terminated
        self.ep_return += reward
        done = terminated | truncated
        donef = done.to(torch.float64)
        self.finished[0] += donef.sum()
        self.finished[1] += (self.ep_return.to(torch.float64) * donef).sum()
        self.finished[2] += (self.steps.to(torch.float64) * donef).sum()
        return reward, terminated, truncated

    def after_reset(self, done: torch.Tensor) -> None:
        """The envs in ``done`` were restored to a start state: new episodes."""
        self.prev.copy_(torch.where(done, self._read(self.reward_ram), self.prev))
        self.steps.masked_fill_(done, 0)
        self.ep_return.masked_fill_(done, 0.0)

    def take_stats(self) -> torch.Tensor:
        """float64 [3] (episodes, return sum, length sum) since the last call (device copy)."""
        out = self.finished.clone()
        self.finished.zero_()
        return out


# ---- image goals ------------------------------------------------------------------------


def _unpack_lut(device: torch.device) -> torch.Tensor:
    """int16 [256, 4]: the 4 shades packed in each byte (256 entries)."""
    b = torch.arange(256, dtype=torch.int16, device=device)
    return torch.stack([(b >> s) & 3 for s in (0, 2, 4, 6)], dim=1)


_LUTS: dict[torch.device, torch.Tensor] = {}


def packed_l1_distance(frames: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """L1 distance in shades between packed2 ``frames [..., 72, 20]`` and ``goal`` (same
    trailing shape, broadcast), int64 ``[...]``: a 256-entry LUT unpacks each byte."""
    for name, t in (("frames", frames), ("goal", goal)):
        if t.dtype != torch.uint8 or tuple(t.shape[-2:]) != (px.DOWN_H, px.PACKED_W):
            raise ValueError(f"{name} must be uint8 [..., 72, 20], got {t.dtype} {tuple(t.shape)}")
    lut = _LUTS.get(frames.device)
    if lut is None:
        lut = _LUTS[frames.device] = _unpack_lut(frames.device)
    diff = (lut[frames.long()] - lut[goal.long()]).abs()  # [..., 72, 20, 4]
    return diff.sum(dim=(-3, -2, -1), dtype=torch.int64)


def goal_reward(frames: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
    """A dense image-goal reward in [0, 1]: 1 - distance / the largest possible distance."""
    worst = 3 * px.DOWN_H * px.DOWN_W
    return 1.0 - packed_l1_distance(frames, goal).to(torch.float32) / worst
