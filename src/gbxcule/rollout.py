"""Shared shell of the ``gbxcule demo`` and ``gbxcule record`` commands.

Choosing the backend for a device, the seeded random actions, timed stepping and
the image writers of ``tools/snapshot.py`` (loaded from the source checkout, so
PNG/GIF writing is defined once).
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from gbxcule.core.actions import get_codec

DMG_FPS = 4_194_304 / 70_224  # frames per second of a DMG (T-cycles/s over T-cycles/frame)
DEVICES = ("cpu", "cuda")
SNAPSHOT_TOOL = Path(__file__).resolve().parents[2] / "tools" / "snapshot.py"


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
    """int64 ``[steps, num_envs]`` uniform action ids; the same draw as ``bench.harness``'s
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
    return max(20, round(1000 * frames_per_step / DMG_FPS))


def snapshot_tool() -> ModuleType:
    """``tools/snapshot.py`` of the source checkout: ``write_png``, ``write_gif``, ``to_image``."""
    name = "gbxcule_tools_snapshot"
    if name in sys.modules:
        return sys.modules[name]
    if not SNAPSHOT_TOOL.is_file():
        raise RolloutError(
            f"{SNAPSHOT_TOOL} not found: the image writers live in the source checkout's tools/"
        )
    spec = importlib.util.spec_from_file_location(name, SNAPSHOT_TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
