"""Reward terms: each a named, weighted Torch function of one read's value per step.

A task's reward is the sum of its terms (``Task(reward={"score": Progress("score"),
"time": StepCost(-0.001)})``). Every term but :class:`StepCost` watches one read (by the
name the task gave it in ``reads``) and pays ``weight`` times:

=================  ==============================================================
``Progress``       how far the value went past the highest it reached this episode
                   (the default for counters: a value that drops, wraps or is read
                   torn between two byte writes never pays twice, nor a jackpot)
``Increase``       how much it rose since the last step (drops pay 0)
``Decrease``       how much it fell since the last step (damage taken, lives lost)
``Delta``          the signed change since the last step
``Changed``        1 when it differs from the last step (an event: a map change)
``StepCost``       1 every step (a negative weight: a time penalty)
``Novelty``        1 the first time this episode a key of several reads is seen
                   (``Novelty(keys=("map", "x", "y"))``: new places, on the device)
=================  ==============================================================

``clip=(lo, hi)`` bounds the term's weighted reward each step. A term keeps per-env
buffers (the last value, the episode's best) that the runtime starts at an episode's
first value, copies for swarm resets and saves in checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch


class TermError(ValueError):
    """A term that cannot be built; the message says why."""


@dataclass(frozen=True)
class Term:
    """Base of the term kinds (module doc)."""

    read: str | None = None
    weight: float = 1.0
    clip: tuple[float, float] | None = None

    # per-env int64 buffers this kind keeps, set to the value at an episode's start
    buffers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.needs_read and (not isinstance(self.read, str) or not self.read):
            raise TermError(f"{type(self).__name__} needs the name of a read, got {self.read!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)):
            raise TermError(f"weight must be a number, got {self.weight!r}")
        if not math.isfinite(self.weight):
            raise TermError(f"weight must be finite, got {self.weight!r}")
        if self.clip is not None:
            lo, hi = self.clip
            if not lo <= hi:  # NaN fails this too
                raise TermError(f"clip must be (lo, hi) with lo <= hi, got {self.clip!r}")
            object.__setattr__(self, "clip", (float(lo), float(hi)))

    @property
    def needs_read(self) -> bool:
        return True

    @property
    def watches(self) -> tuple[str, ...]:
        """The reads this term needs."""
        return (self.read,) if self.read else ()

    def observe(self, now: dict[str, torch.Tensor]) -> torch.Tensor:
        """What the term follows, from this step's reads (int64 [N])."""
        return now[self.read]  # type: ignore[index]

    def make_buffers(self, n: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {b: torch.zeros(n, dtype=torch.int64, device=device) for b in self.buffers}

    def start(self, now: dict[str, torch.Tensor], bufs: dict[str, torch.Tensor], mask) -> None:
        """The envs in ``mask`` start an episode: the buffers take the value now."""
        if bufs:
            value = self.observe(now)
            for buf in bufs.values():
                buf.copy_(torch.where(mask, value, buf))

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The term's unweighted reward this step (float32 [N]); updates ``bufs`` in place."""
        raise NotImplementedError

    def reward(self, value: torch.Tensor | None, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.gain(value, bufs) * float(self.weight)  # type: ignore[arg-type]
        if self.clip is not None:
            out = out.clamp(self.clip[0], self.clip[1])
        return out


def _last(value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The change since the last step; the last value becomes this one."""
    change = value - bufs["last"]
    bufs["last"].copy_(value)
    return change


@dataclass(frozen=True)
class Progress(Term):
    buffers: tuple[str, ...] = ("best",)

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        best = bufs["best"]
        gain = (value - best).clamp(min=0)
        torch.maximum(best, value, out=best)
        return gain.to(torch.float32)


@dataclass(frozen=True)
class Increase(Term):
    buffers: tuple[str, ...] = ("last",)

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        return _last(value, bufs).clamp(min=0).to(torch.float32)


@dataclass(frozen=True)
class Decrease(Term):
    buffers: tuple[str, ...] = ("last",)

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        return (-_last(value, bufs)).clamp(min=0).to(torch.float32)


@dataclass(frozen=True)
class Delta(Term):
    buffers: tuple[str, ...] = ("last",)

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        return _last(value, bufs).to(torch.float32)


@dataclass(frozen=True)
class Changed(Term):
    buffers: tuple[str, ...] = ("last",)

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        return (_last(value, bufs) != 0).to(torch.float32)


@dataclass(frozen=True)
class StepCost(Term):
    """``weight`` every step; watches no read (``StepCost(-0.01)``)."""

    def __init__(self, weight: float = -0.01, clip: tuple[float, float] | None = None) -> None:
        object.__setattr__(self, "read", None)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "clip", clip)
        object.__setattr__(self, "buffers", ())
        self.__post_init__()

    @property
    def needs_read(self) -> bool:
        return False

    def gain(self, value: Any, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        raise TypeError("StepCost pays its weight each step; it reads no value")


@dataclass(frozen=True)
class Novelty(Term):
    """1 the first time in an episode that the key (the values of ``keys``, e.g. ``("map",
    "x", "y")``) is seen: exploration. Each env keeps a visited set of ``2**bits``
    entries, a bitmap of ``2**bits / 8`` bytes (``bits=16``: 8 KiB an env, 128 MiB at
    16,384 envs); keys are hashed into it, so with more distinct keys than entries some
    share one. The start's key counts as visited; ``count`` holds the keys seen."""

    keys: tuple[str, ...] = ()
    bits: int = 16

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.keys))
        super().__post_init__()
        if not self.keys or not all(isinstance(k, str) and k for k in self.keys):
            raise TermError(f"Novelty needs keys: the names of reads, got {self.keys!r}")
        if (
            isinstance(self.bits, bool)
            or not isinstance(self.bits, int)
            or not 3 <= self.bits <= 26
        ):
            raise TermError(f"Novelty bits must be an int in 3..26, got {self.bits!r}")

    @property
    def needs_read(self) -> bool:
        return False

    @property
    def watches(self) -> tuple[str, ...]:
        return self.keys

    def observe(self, now: dict[str, torch.Tensor]) -> torch.Tensor:
        """The key's entry in the visited set (int64 [N] in 0..2**bits-1)."""
        h = torch.zeros_like(now[self.keys[0]])
        for k in self.keys:
            h = (h * 1_000_003 + now[k]) & 0x7FFFFFFFFFFF
        h = (h ^ (h >> 21)) * 0x9E3779B1 & 0x7FFFFFFFFFFF
        return (h ^ (h >> 29)) & ((1 << self.bits) - 1)

    def make_buffers(self, n: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {
            "visited": torch.zeros((n, (1 << self.bits) // 8), dtype=torch.uint8, device=device),
            "count": torch.zeros(n, dtype=torch.int64, device=device),
        }

    def start(self, now: dict[str, torch.Tensor], bufs: dict[str, torch.Tensor], mask) -> None:
        bufs["visited"].masked_fill_(mask[:, None], 0)
        bufs["count"].masked_fill_(mask, 0)
        new = self._visit(self.observe(now), bufs["visited"])
        bufs["count"] += (new & mask).to(torch.int64)

    @staticmethod
    def _visit(entry: torch.Tensor, visited: torch.Tensor) -> torch.Tensor:
        """Mark ``entry`` of every env; True where it was not marked yet."""
        byte = (entry >> 3)[:, None]
        bit = (entry & 7).to(torch.uint8)
        cur = visited.gather(1, byte).squeeze(1)
        mask = torch.ones_like(bit) << bit
        new = (cur & mask) == 0
        visited.scatter_(1, byte, (cur | mask)[:, None])
        return new

    def gain(self, value: torch.Tensor, bufs: dict[str, torch.Tensor]) -> torch.Tensor:
        new = self._visit(value, bufs["visited"])
        bufs["count"] += new.to(torch.int64)
        return new.to(torch.float32)


TERM_KINDS = (Progress, Increase, Decrease, Delta, Changed, StepCost, Novelty)


def as_term(name: str, term: Any) -> Term:
    """A term as given in ``Task(reward=...)``: a :class:`Term`, or a read's name as a
    shorthand for ``Progress(name)``."""
    if isinstance(term, Term):
        return term
    if isinstance(term, str):
        return Progress(term)
    kinds = ", ".join(k.__name__ for k in TERM_KINDS)
    raise TermError(f"reward term {name!r} must be a Term ({kinds}) or a read's name, got {term!r}")
