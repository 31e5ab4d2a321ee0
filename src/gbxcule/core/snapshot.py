"""gbxcule's own versioned snapshot format: a PyBoyState tied to the ROM it came from.

Layout (all integers little-endian)::

    magic        8 bytes  b"GBXSNAP\\0"
    format       u16      SNAPSHOT_FORMAT (this module writes and reads only up to it)
    rom_sha256   32 bytes sha256 of the full ROM image the state belongs to
    cart         u8 MBC (0 none, 1 MBC1, 2 MBC2, 3 MBC3, 5 MBC5), u8 RAM banks,
                 u8 flags (bit 0 clock, bit 1 rumble): the payload's cart block shape
    length       u32      payload bytes
    payload      length   the state as a PyBoy v29 save state (write_pyboy_state)
    crc32        u32      zlib.crc32 of everything before it

Loading checks, in order: magic, format (a newer one is refused: this build cannot
know its layout), ROM hash (a state only makes sense on its own ROM), length and
checksum (truncated or corrupted files), then parses the payload.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

from gbxcule.core.pyboy_state import CartLayout, PyBoyState
from gbxcule.core.pyboy_state_io import SavestateError, load_pyboy_state, write_pyboy_state

SNAPSHOT_MAGIC = b"GBXSNAP\0"
SNAPSHOT_FORMAT = 1
_HEAD = struct.Struct("<8sH32sBBBI")
_MBC_CODES = {"none": 0, "mbc1": 1, "mbc2": 2, "mbc3": 3, "mbc5": 5}
_MBC_NAMES = {code: name for name, code in _MBC_CODES.items()}
_CRC = struct.Struct("<I")


def rom_sha256(rom: bytes) -> bytes:
    return hashlib.sha256(rom).digest()


def _digest(rom_hash: bytes | str) -> bytes:
    raw = bytes.fromhex(rom_hash) if isinstance(rom_hash, str) else bytes(rom_hash)
    if len(raw) != 32:
        raise SavestateError(f"a ROM sha256 is 32 bytes, got {len(raw)}")
    return raw


def save_snapshot(state: PyBoyState, rom_hash: bytes | str) -> bytes:
    """Snapshot bytes for ``state`` on the ROM whose sha256 is ``rom_hash`` (bytes or hex)."""
    payload = write_pyboy_state(state)
    cart = state.cart_layout
    flags = int(cart.has_rtc) | int(cart.has_rumble) << 1
    head = _HEAD.pack(
        SNAPSHOT_MAGIC,
        SNAPSHOT_FORMAT,
        _digest(rom_hash),
        _MBC_CODES[cart.mbc],
        cart.ram_banks,
        flags,
        len(payload),
    )
    body = head + payload
    return body + _CRC.pack(zlib.crc32(body))


def load_snapshot(data: bytes, rom_hash: bytes | str) -> PyBoyState:
    """The state in a snapshot, if it was taken on the ROM whose sha256 is ``rom_hash``."""
    data = bytes(data)
    if len(data) < _HEAD.size + _CRC.size:
        raise SavestateError(f"truncated snapshot: {len(data)} bytes, the header alone is larger")
    magic, fmt, stored_hash, mbc, ram_banks, flags, length = _HEAD.unpack_from(data)
    if magic != SNAPSHOT_MAGIC:
        raise SavestateError(f"not a gbxcule snapshot (magic {magic!r})")
    if fmt > SNAPSHOT_FORMAT:
        raise SavestateError(
            f"snapshot format {fmt} is newer than this gbxcule reads ({SNAPSHOT_FORMAT}); upgrade"
        )
    if fmt < 1:
        raise SavestateError(f"snapshot format {fmt} does not exist")
    want = _digest(rom_hash)
    if stored_hash != want:
        raise SavestateError(
            f"snapshot belongs to the ROM with sha256 {stored_hash.hex()}, "
            f"not to this ROM ({want.hex()})"
        )
    end = _HEAD.size + length
    if len(data) < end + _CRC.size:
        raise SavestateError(
            f"truncated snapshot: {len(data)} bytes, header says {end + _CRC.size}"
        )
    if len(data) > end + _CRC.size:
        raise SavestateError(f"{len(data) - end - _CRC.size} bytes of trailing data after snapshot")
    (crc,) = _CRC.unpack_from(data, end)
    if crc != zlib.crc32(data[:end]):
        raise SavestateError("snapshot checksum mismatch: the file is corrupted")
    if mbc not in _MBC_NAMES:
        raise SavestateError(f"snapshot names an unknown MBC code {mbc}")
    cart = CartLayout(_MBC_NAMES[mbc], ram_banks, bool(flags & 1), bool(flags & 2))
    return load_pyboy_state(data[_HEAD.size : end], cart=cart)
