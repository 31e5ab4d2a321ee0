"""The memory map below the IO page: ROM (+ boot overlay), VRAM, cart RAM, WRAM and echo.

``mem_read`` / ``mem_write`` follow PyBoy's ``Motherboard.getitem`` / ``setitem``
for 0x0000-0xFDFF. They never touch IO registers, so OAM DMA can read its
source through ``mem_read``. The only timing-dependent part is VRAM: PyBoy
checks the PPU lock only when the access carries a nonzero
``memory_access_offset`` (column ``ACCESS_OFFSET`` of ``m.i32``), which a handful of
opcodes set.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import CGB_WRAM_BANK_SIZE, CGB_WRAMX_EXTRA, VRAM_OFF, WRAM_OFF
from gbxcule.kernels.address_map import CART_RAM_LO, ROM_END, VRAM_LO, WRAM_LO, WRAM_MASK
from gbxcule.kernels.board.ioregs import SVBK, VBK, reg
from gbxcule.kernels.board.mbc import cart_ram_read, cart_ram_write, mbc_write, rom_read
from gbxcule.kernels.ppu.ppu import vram_blocked
from gbxcule.kernels.ppu.video_log import video_log_write
from gbxcule.kernels.state import ACCESS_OFFSET, VLOG_LINE, Machine

wp.set_module_options({"enable_backward": False})

VRAM_BASE = wp.constant(VRAM_OFF)
VIDEO_VRAM = wp.constant(px.VIDEO_VRAM_OFF)
VIDEO_VRAM1 = wp.constant(px.VIDEO_VRAM1_OFF)
CGB = False  # True in the CGB variant (kernels/variant.py): banked VRAM and WRAM
WRAM_BANK = wp.constant(CGB_WRAM_BANK_SIZE)
WRAMX_EXTRA = wp.constant(CGB_WRAMX_EXTRA)
WRAM_BASE = wp.constant(WRAM_OFF)


@wp.func
def wram_index(addr: int) -> int:
    """Column of ``mem`` holding WRAM byte ``addr`` (0xC000-0xFDFF, echo included)."""
    return WRAM_BASE + ((addr - WRAM_LO) & WRAM_MASK)


@wp.func
def wram_at(m: wp.ref[Machine], i: int, addr: int) -> int:
    """Column of ``mem`` holding WRAM byte ``addr`` as the CPU sees it: on a Game Boy Color
    machine D000-DFFF (and its echo) is SVBK's bank, banks 2-7 past the row's cart RAM."""
    index = wram_index(addr)
    if wp.static(CGB):
        bank = reg(m, i, SVBK) & 7
        if (addr & WRAM_BANK) != 0 and bank >= 2:
            extra = m.mem.shape[1] - WRAMX_EXTRA
            index = extra + (bank - 2) * WRAM_BANK + (addr & (WRAM_BANK - 1))
    return index


@wp.func
def mem_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    """Byte at ``addr`` (0x0000-0xFDFF) as the CPU reads it."""
    mem = m.mem
    if addr < ROM_END:
        return rom_read(m, i, addr)
    if addr < CART_RAM_LO:
        if m.i32[i, ACCESS_OFFSET] != 0:
            if vram_blocked(m, i, 0) != 0:
                return 0xFF
        return int(mem[i, VRAM_BASE + addr - VRAM_LO])
    if addr < WRAM_LO:
        return cart_ram_read(m, i, addr)
    return int(mem[i, wram_at(m, i, addr)])


@wp.func
def mem_write(m: wp.ref[Machine], i: int, addr: int, value: int) -> int:
    """CPU write to 0x0000-0xFDFF; returns 1 where PyBoy sets ``cpu.bail`` (mapper writes)."""
    mem = m.mem
    if addr < ROM_END:
        mbc_write(m, i, addr, value)
        return 1
    if addr < CART_RAM_LO:
        i32 = m.i32
        if i32[i, ACCESS_OFFSET] != 0:
            if vram_blocked(m, i, 1) != 0:
                return 0
        k = addr - VRAM_LO
        if i32[i, VLOG_LINE] != 0:  # the last frame is being drawn
            key = VIDEO_VRAM + k
            if wp.static(CGB):
                if reg(m, i, VBK) != 0:
                    key = VIDEO_VRAM1 + k
            video_log_write(m, i, key, int(mem[i, VRAM_BASE + k]), value & 0xFF)
        mem[i, VRAM_BASE + k] = wp.uint8(value & 0xFF)
        return 0
    if addr < WRAM_LO:
        cart_ram_write(m, i, addr, value)
        return 0
    mem[i, wram_at(m, i, addr)] = wp.uint8(value & 0xFF)
    return 0
