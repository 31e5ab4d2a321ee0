"""Backends by name, for the harness, the benchmark sweep and the CLI.

Imports are lazy so naming a backend never pulls in another's dependencies
(PyBoy, Warp, CUDA) before it is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from gbxcule.backends.protocol import Backend

# name -> (module, class, fixed keyword arguments)
BACKENDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "pyboy": ("gbxcule.backends.pyboy_backend", "PyBoySingleBackend", {}),
    "pyboy-mp": ("gbxcule.backends.pyboy_mp", "PyBoyVecMpBackend", {}),
    # An unmodified PyBoy(rom): its boot ROM, default palette, sound emulated (compared like
    # everything else); -nosound: sound_emulated=False (FF10-FF3F masked in lockstep).
    "pyboy-stock": ("gbxcule.backends.pyboy_backend", "PyBoySingleBackend", {"stock": True}),
    "pyboy-stock-nosound": (
        "gbxcule.backends.pyboy_backend",
        "PyBoySingleBackend",
        {"stock": True, "sound_emulated": False},
    ),
    "warp-cpu": ("gbxcule.backends.warp_vec", "WarpVecCpuBackend", {}),
    "warp-cuda": ("gbxcule.backends.warp_vec", "WarpVecCudaBackend", {}),
}


# What a task runs on (TaskSession; train, eval and l4's --backend): "warp" is warp-cpu or
# warp-cuda by the device; "pyboy" is PyBoy 2.8.1, in worker processes for more than one
# env (pyboy-mp) and in this process for one; "pyboy-mp" always in worker processes.
TASK_BACKENDS = ("warp", "pyboy", "pyboy-mp")


def task_backend_name(kind: str, device: str = "cpu", num_envs: int = 1) -> str:
    """The registry name a task's backend ``kind`` (``TASK_BACKENDS``) stands for."""
    if kind == "warp":
        if str(device).startswith("cuda"):
            return "warp-cuda"
        if device != "cpu":
            raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
        return "warp-cpu"
    if kind == "pyboy":
        return "pyboy-mp" if num_envs > 1 else "pyboy"
    if kind == "pyboy-mp":
        return kind
    raise ValueError(f"backend must be one of {TASK_BACKENDS}, got {kind!r}")


def backend_names() -> list[str]:
    return list(BACKENDS)


def default_boot(name: str) -> str:
    """The boot mode a device under test needs to match reference ``name``: ``"pyboy"`` for
    the stock-PyBoy references, else ``"fast"`` (the backends' default)."""
    fixed = BACKENDS.get(name, ("", "", {}))[2]
    return "pyboy" if fixed.get("stock") else "fast"


def make_backend(name: str, rom_path: str, **kwargs: Any) -> Backend:
    """Construct the backend registered as ``name`` on ``rom_path``."""
    try:
        module_name, class_name, fixed = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}") from None
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(rom_path, **{**fixed, **kwargs})
