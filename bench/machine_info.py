"""What a benchmark row records about the machine it ran on: the device and the versions."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path


def versions() -> dict:
    """Python and the versions of the packages a measurement depends on (None: absent)."""
    out = {"python": platform.python_version()}
    for dist in ("gbxcule", "warp-lang", "torch", "pyboy", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def device_name(backend: str) -> str:
    """What a backend runs on: the GPU's name for warp-cuda, else the CPU model and cores."""
    if backend == "warp-cuda":
        try:
            import torch

            return torch.cuda.get_device_name(0)
        except Exception:  # noqa: BLE001 - the name is metadata only
            return "cuda (unknown)"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu} ({os.cpu_count()} cores)"
