"""Shared shell of the ``gbxcule demo`` and ``gbxcule record`` commands.

Choosing the backend for a device, the seeded random actions and timed stepping;
PNG/GIF writing is :mod:`gbxcule.images`.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from gbxcule.core.actions import get_codec
from gbxcule.core.dmg import FRAMES_PER_SECOND

DEVICES = ("cpu", "cuda")


class RolloutError(RuntimeError):
    """Something the command needs is missing (device, file, encoder, backend feature)."""


@functools.cache
def cuda_available() -> bool:
    """Whether Warp sees a CUDA device (initialises Warp)."""
    import warp as wp

    wp.init()
    return bool(wp.is_cuda_available())


def backend_for(device: str | None, backend: str | None = None) -> str:
    """Registry name to run on: ``backend`` if given, else the Warp backend of ``device``.

    ``device`` None means CUDA when Warp sees a CUDA device, else the CPU.
    """
    if backend is not None:
        return backend
    if device is None:
        device = "cuda" if cuda_available() else "cpu"
    if device not in DEVICES:
        raise RolloutError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if device == "cuda" and not cuda_available():
        raise RolloutError("--device cuda: no CUDA device is visible to Warp (use --device cpu)")
    return f"warp-{device}"


def random_actions(steps: int, num_envs: int, codec: str, seed: int) -> np.ndarray:
    """int64 ``[steps, num_envs]`` uniform action ids; the same draw as ``gbxcule.lockstep``'s
    ``make_actions("random", ...)``, so ``gbxcule verify --actions random`` replays it."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, get_codec(codec).num_actions, size=(steps, num_envs), dtype=np.int64)


def timed_step(backend: Any, actions: np.ndarray) -> float:
    """Run one step and return its wall seconds, the device synchronised on both ends."""
    sync = getattr(backend, "synchronize", None)  # Warp backends; PyBoy runs synchronously
    if sync is not None:
        sync()
    start = time.perf_counter()
    backend.step(actions)
    if sync is not None:
        sync()
    return time.perf_counter() - start


def gif_frame_ms(frames_per_step: int) -> int:
    """GIF delay of one step shown in real time, at least 20 ms (viewers slow shorter delays)."""
    return max(20, round(1000 * frames_per_step / FRAMES_PER_SECOND))
