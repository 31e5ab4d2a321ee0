"""Save-state IO, one import away: PyBoy ``.state`` files and gbxcule snapshots.

* :func:`load_pyboy_state` parses a PyBoy save state of any released layout (v7-v29;
  CGB hardware: v29) into a :class:`PyBoyState` (``core/pyboy_state.py`` documents
  every field); :func:`refuse_cgb` refuses one that needs a CGB machine.
* :func:`write_pyboy_state` writes one PyBoy 2.8.1 loads (v29), or the state's own
  version byte for byte.
* :func:`save_snapshot` / :func:`load_snapshot`: our own format, bound to the ROM's sha256.

Every refusal raises :class:`SavestateError` with the reason.
"""

from gbxcule.core.pyboy_state import CartLayout, PyBoyState
from gbxcule.core.pyboy_state_io import (
    CGB_REFUSAL,
    LAYOUTS_BY_VERSION,
    PYBOY_281_STATE_VERSION,
    SavestateError,
    cart_layout_from_rom,
    load_pyboy_state,
    refuse_cgb,
    write_pyboy_state,
)
from gbxcule.core.snapshot import SNAPSHOT_FORMAT, load_snapshot, rom_sha256, save_snapshot

__all__ = [
    "CGB_REFUSAL",
    "LAYOUTS_BY_VERSION",
    "PYBOY_281_STATE_VERSION",
    "SNAPSHOT_FORMAT",
    "CartLayout",
    "PyBoyState",
    "SavestateError",
    "cart_layout_from_rom",
    "load_pyboy_state",
    "load_snapshot",
    "refuse_cgb",
    "rom_sha256",
    "save_snapshot",
    "write_pyboy_state",
]
