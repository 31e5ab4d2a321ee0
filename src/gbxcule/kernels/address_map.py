"""The CPU address map's bounds as the kernels compare addresses with them.

Derived from ``core/memory_layout.py``'s ``SPANS``, the one address map (the host's tables
derive from it too): where ROM ends, where each region of the bus begins.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import SPAN

ROM_END = wp.constant(SPAN["romx"].hi)  # 0x8000: code and reads below come from ROM
VRAM_LO = wp.constant(SPAN["vram"].lo)  # 0x8000
CART_RAM_LO = wp.constant(SPAN["cartram"].lo)  # 0xA000
CART_RAM_BANK = wp.constant(SPAN["cartram"].size)  # 0x2000 bytes a bank
WRAM_LO = wp.constant(SPAN["wram"].lo)  # 0xC000
WRAM_MASK = wp.constant(SPAN["wram"].size - 1)  # echo RAM repeats WRAM
OAM_LO = wp.constant(SPAN["oam"].lo)  # 0xFE00, where echo RAM ends
UNUSABLE_LO = wp.constant(SPAN["unusable"].lo)  # 0xFEA0
IO_LO = wp.constant(SPAN["io"].lo)  # 0xFF00
HRAM_LO = wp.constant(SPAN["hram"].lo)  # 0xFF80
IE_ADDR = wp.constant(SPAN["ie"].lo)  # 0xFFFF
