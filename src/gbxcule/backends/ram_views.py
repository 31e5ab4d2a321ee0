"""Zero-copy Torch views of every env's RAM, for rewards computed on the device.

All views share ``Machine.mem``'s memory (``wp.to_torch``): nothing is copied, the
emulator's writes show up in them at once (after the step that made them, on the
device's stream order), and each view's ``data_ptr`` stays the same for the backend's
life. Shapes, dtype uint8, env axis first:

=============  ==================  ===========================
view           shape               CPU addresses
=============  ==================  ===========================
``mem``        [N, row_bytes]      the whole row (``core/memory_layout.py``)
``wram``       [N, 8192]           0xC000-0xDFFF
``hram``       [N, 127]            0xFF80-0xFFFE
``cart_ram``   [N, cart RAM bytes] every bank, bank k at k * 0x2000 (MBC2: 512 cells
                                   holding ``value | 0xF0``; ROM-only carts: 0 bytes)
``vram``       [N, 8192]           0x8000-0x9FFF
``oam``        [N, 160]            0xFE00-0xFE9F
=============  ==================  ===========================

Strides (in elements): with ``mem_layout="env_major"`` a view ``[N, k]`` has strides
``(row_bytes, 1)`` (each env's bytes contiguous); with ``"interleaved"`` it has
``(1, N)`` (the envs' copies of one address contiguous). Neither is contiguous as a
whole (they are column slices of ``mem``); ``.contiguous()`` makes a copy.

On a Game Boy Color machine ``wram``'s D000 half is WRAM bank 1 whatever SVBK maps, and
``vram`` the bank VBK maps; banks 2-7 sit past the cart RAM in ``mem``
(``core.memory_layout.wramx_bank_offset``). A task's reads follow SVBK (or name a bank).

The views are writable: a write changes the game's RAM directly, with none of the
bus's side effects. Reading IO registers, banked ROM and the like goes through
``read_memory`` instead.
"""

from __future__ import annotations

import torch
import warp as wp

from gbxcule.core import memory_layout as ml

REGIONS = {
    key: (ml.SPAN[key].row_at(ml.SPAN[key].lo), ml.SPAN[key].size)
    for key in ("wram", "hram", "vram", "oam")
}
MBC2_CELLS = 512


class RamViews:
    """The views above for one ``Machine`` (built once; the same tensors every call)."""

    def __init__(self, mem: wp.array, cart_ram_bytes: int) -> None:
        self.mem: torch.Tensor = wp.to_torch(mem)
        self.cart_ram_bytes = cart_ram_bytes
        self.views: dict[str, torch.Tensor] = {
            name: self.mem[:, off : off + size] for name, (off, size) in REGIONS.items()
        }
        self.views["cart_ram"] = self.mem[:, ml.CART_RAM_OFF : ml.CART_RAM_OFF + cart_ram_bytes]

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.views[name]

    def at(self, offset: int, size: int) -> torch.Tensor:
        """``[N, size]`` view of row bytes ``[offset, offset + size)``."""
        return self.mem[:, offset : offset + size]


def mem_offset(addr: int, bank: int, size: int, cart_ram_bytes: int, mbc2: bool) -> int | None:
    """Row offset of ``size`` bytes at CPU ``addr`` in ``bank`` when they are plain RAM in
    ``mem`` (VRAM, WRAM and its echo, OAM, HRAM, cart RAM of that bank); else ``None``."""
    fixed = ml.fixed_row_offset(addr, size)
    if fixed is not None:
        return fixed
    cart = ml.SPAN["cartram"]
    if cart.holds(addr, size) and cart_ram_bytes:
        if mbc2:
            first = addr - cart.lo
            if first % MBC2_CELLS + size <= MBC2_CELLS:
                return cart.row_at(cart.lo) + first % MBC2_CELLS
            return None
        off = bank * cart.size + addr - cart.lo
        if 0 <= off and off + size <= cart_ram_bytes:
            return cart.row_at(cart.lo) + off
    return None
