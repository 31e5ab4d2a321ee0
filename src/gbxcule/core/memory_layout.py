"""Per-env RAM layout shared by every backend, kernel and Torch view.

Each env owns one contiguous row of ``MEM_BASE_BYTES + cart_ram_bytes`` bytes in
``Machine.mem`` (shape ``[N, row_bytes]``). The regions below sit at fixed
offsets in that row; cart RAM follows at ``CART_RAM_OFF`` and is sized from the
cartridge header. The ROM is never per env: one shared copy lives in
``Machine.rom``.
"""

from __future__ import annotations

VRAM_OFF = 0x0000  # 0x8000-0x9FFF, 8 KiB
VRAM_SIZE = 0x2000
WRAM_OFF = 0x2000  # 0xC000-0xDFFF, 8 KiB (echo 0xE000-0xFDFF maps here)
WRAM_SIZE = 0x2000
OAM_OFF = 0x4000  # 0xFE00-0xFE9F, 160 bytes
OAM_SIZE = 0xA0
IO_OFF = 0x40A0  # 0xFF00-0xFF7F, raw register backing store
IO_SIZE = 0x80
HRAM_OFF = 0x4120  # 0xFF80-0xFFFE, 127 bytes
HRAM_SIZE = 0x7F
IE_OFF = 0x419F  # 0xFFFF
UNUSABLE_OFF = 0x41A0  # 0xFEA0-0xFEFF: PyBoy keeps it as plain RAM
UNUSABLE_SIZE = 0x60
CART_RAM_OFF = 0x4200  # cart RAM (0xA000-0xBFFF, banked), length from the header
MEM_BASE_BYTES = CART_RAM_OFF


def row_bytes(cart_ram_bytes: int) -> int:
    """Bytes of one env's row for a cartridge with ``cart_ram_bytes`` of RAM."""
    if cart_ram_bytes < 0:
        raise ValueError(f"cart_ram_bytes must be >= 0, got {cart_ram_bytes}")
    return MEM_BASE_BYTES + cart_ram_bytes
