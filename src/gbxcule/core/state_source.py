"""Where a save state comes from: bytes or a file, a PyBoy ``.state`` or our snapshot.

Shared by every backend's ``load_state`` (PyBoy oracle and Warp), so both read the
same thing the same way.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
from pathlib import Path
from typing import Any

from gbxcule.core.pyboy_state import PyBoyState
from gbxcule.core.savestate import load_pyboy_state, load_snapshot, refuse_cgb, rom_sha256
from gbxcule.core.snapshot import SNAPSHOT_MAGIC

GZIP_MAGIC = b"\x1f\x8b"


def read_state_source(source: Any, rom: bytes, cgb: bool = False) -> PyBoyState:
    """A PyBoy ``.state`` (v7-v29), a gbxcule snapshot, or a ``PyBoyState``, for ``rom``.

    ``source`` is bytes or a path; gzip-compressed data is accepted. A snapshot must
    belong to ``rom`` (its sha256) and not be of a newer format, and a state that needs a
    CGB machine is refused unless ``cgb`` (the machine is one: the bridge checks the
    rest); refusals raise ``SavestateError``.
    """
    state = _read(source, rom)
    if not cgb:
        refuse_cgb(state)
    return state


def _read(source: Any, rom: bytes) -> PyBoyState:
    if isinstance(source, PyBoyState):
        return source
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"save state not found: {path}")
        data = path.read_bytes()
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        raise TypeError(
            f"a save state is bytes, a path or a PyBoyState, got {type(source).__name__}"
        )
    if data[:2] == GZIP_MAGIC:
        data = gzip.decompress(data)
    if data.startswith(SNAPSHOT_MAGIC):
        return load_snapshot(data, rom_sha256(rom))
    return load_pyboy_state(data, rom)


def without_wall_clock(state: PyBoyState) -> PyBoyState:
    """``state`` with the MBC3 clock's ``saved_at`` at +infinity.

    PyBoy 2.8.1 advances a loaded clock by the wall time since ``saved_at``; with
    +infinity it adds nothing, so the clock follows emulated cycles only (as ours does).
    """
    if state.cart.rtc is None or state.cart.rtc.saved_at == math.inf:
        return state
    rtc = dataclasses.replace(state.cart.rtc, saved_at=math.inf)
    return dataclasses.replace(state, cart=dataclasses.replace(state.cart, rtc=rtc))
