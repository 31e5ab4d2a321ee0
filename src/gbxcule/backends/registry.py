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
