"""What a benchmark row records about the machine it ran on: the device and the versions."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from gbxcule.lockstep import package_versions as versions  # noqa: F401 - the bench's name for it


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
