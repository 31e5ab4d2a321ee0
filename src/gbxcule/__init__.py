"""gbxcule: thousands of Game Boys per NVIDIA Warp launch, in lockstep with PyBoy.

The backends and the errors they raise are importable from here
(``from gbxcule import WarpVecCudaBackend``). They load on first use, so
``import gbxcule`` alone pulls in neither Warp, Torch nor PyBoy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# exported name -> module that defines it
_EXPORTS = {
    "WarpVecBase": "gbxcule.backends.warp_vec",
    "WarpVecCpuBackend": "gbxcule.backends.warp_vec",
    "WarpVecCudaBackend": "gbxcule.backends.warp_vec",
    "PyBoySingleBackend": "gbxcule.backends.pyboy_backend",
    "PyBoyVecMpBackend": "gbxcule.backends.pyboy_mp",
    "make_backend": "gbxcule.backends.registry",
    "ActionError": "gbxcule.core.actions",
    "ActionShapeError": "gbxcule.core.actions",
    "ActionDtypeError": "gbxcule.core.actions",
    "ActionRangeError": "gbxcule.core.actions",
    "ActionDeviceError": "gbxcule.backends.device_inputs",
    "EnvMaskError": "gbxcule.backends.device_inputs",
    "CartridgeError": "gbxcule.core.cartridge",
    "UnsupportedCartridgeError": "gbxcule.backends.warp_base",
    "SavestateError": "gbxcule.core.pyboy_state_io",
    "StartStateError": "gbxcule.backends.start_states",
    "MachineStateError": "gbxcule.backends.machine_state",
    "PixelsNotEnabledError": "gbxcule.backends.pixels",
    "SymbolError": "gbxcule.core.symbols",
    "UnknownSymbolError": "gbxcule.core.symbols",
    "PyBoyVersionError": "gbxcule.backends.pyboy_backend",
}
__all__ = [  # literal, for static tools; tests/test_package.py checks it against _EXPORTS
    "__version__",
    "WarpVecBase",
    "WarpVecCpuBackend",
    "WarpVecCudaBackend",
    "PyBoySingleBackend",
    "PyBoyVecMpBackend",
    "make_backend",
    "ActionError",
    "ActionShapeError",
    "ActionDtypeError",
    "ActionRangeError",
    "ActionDeviceError",
    "EnvMaskError",
    "CartridgeError",
    "UnsupportedCartridgeError",
    "SavestateError",
    "StartStateError",
    "MachineStateError",
    "PixelsNotEnabledError",
    "SymbolError",
    "UnknownSymbolError",
    "PyBoyVersionError",
]

if TYPE_CHECKING:
    from gbxcule.backends.device_inputs import ActionDeviceError, EnvMaskError
    from gbxcule.backends.machine_state import MachineStateError
    from gbxcule.backends.pixels import PixelsNotEnabledError
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend, PyBoyVersionError
    from gbxcule.backends.pyboy_mp import PyBoyVecMpBackend
    from gbxcule.backends.registry import make_backend
    from gbxcule.backends.start_states import StartStateError
    from gbxcule.backends.warp_base import UnsupportedCartridgeError
    from gbxcule.backends.warp_vec import WarpVecBase, WarpVecCpuBackend, WarpVecCudaBackend
    from gbxcule.core.actions import (
        ActionDtypeError,
        ActionError,
        ActionRangeError,
        ActionShapeError,
    )
    from gbxcule.core.cartridge import CartridgeError
    from gbxcule.core.pyboy_state_io import SavestateError
    from gbxcule.core.symbols import SymbolError, UnknownSymbolError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gbxcule' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
