"""The CPU's bus: every address, dispatching the IO page to kernels/board/io.py.

``bus_read`` / ``bus_write`` are PyBoy's ``Motherboard.getitem`` / ``setitem``.
The caller sets ``m.i64[i, CYCLES]`` to the cycle count PyBoy has at the access;
``bus_read_at`` / ``bus_write_at`` also carry PyBoy's ``memory_access_offset``.
``bus_write`` returns 1 where PyBoy sets ``cpu.bail`` (the run loop then ends
its slice): mapper writes, IO writes to FF00-FF4B except LY, a boot-ROM unmap
and IE writes.

``bus_power_on`` maps the boot ROM; ``board_from_pyboy`` / ``board_to_pyboy`` (host
side, at the end) map PyBoy's ``bootrom_enabled`` and memory block of a save state.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from gbxcule.core.memory_layout import (
    HRAM_OFF,
    HRAM_SIZE,
    IE_OFF,
    UNUSABLE_OFF,
    UNUSABLE_SIZE,
    WRAM_OFF,
    WRAM_SIZE,
)
from gbxcule.core.pyboy_state import IO_BYTES, MemoryState
from gbxcule.kernels.address_map import HRAM_LO, IE_ADDR, IO_LO, OAM_LO, UNUSABLE_LO, VRAM_LO
from gbxcule.kernels.board.hdma import (
    BLOCK_CYCLES,
    DST,
    SRC,
    hdma5_write,
    hdma_address_write,
    hdma_block_done,
    hdma_general_done,
    hdma_word,
)
from gbxcule.kernels.board.io import dma_catch_up, io_read, io_write, oam_read, oam_write
from gbxcule.kernels.board.ioregs import UNIT_REGS, host_io
from gbxcule.kernels.board.memmap import mem_read, mem_write
from gbxcule.kernels.state import (
    ACCESS_OFFSET,
    BOOT_ON,
    DMA_ACTIVE,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py)

HRAM_BASE = wp.constant(HRAM_OFF)
IE_BASE = wp.constant(IE_OFF)
UNUSABLE_BASE = wp.constant(UNUSABLE_OFF)


@wp.func
def bus_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    mem = m.mem
    if addr < OAM_LO:
        return mem_read(m, i, addr)
    if addr < UNUSABLE_LO:
        return oam_read(m, i, addr)
    if addr < IO_LO:
        return int(mem[i, UNUSABLE_BASE + addr - UNUSABLE_LO])
    dma_catch_up(m, i)
    if addr < HRAM_LO:
        return io_read(m, i, addr)
    if addr < IE_ADDR:
        return int(mem[i, HRAM_BASE + addr - HRAM_LO])
    return int(mem[i, IE_BASE])


@wp.func
def bus_write(m: wp.ref[Machine], i: int, addr: int, value: int) -> int:
    i32 = m.i32
    mem = m.mem
    v = value & 0xFF
    if addr < OAM_LO:
        return mem_write(m, i, addr, v)
    if addr < UNUSABLE_LO:
        oam_write(m, i, addr, v)
        return 0
    if addr < IO_LO:
        mem[i, UNUSABLE_BASE + addr - UNUSABLE_LO] = wp.uint8(v)
        return 0
    dma_catch_up(m, i)
    if addr == 0xFF50:
        if i32[i, BOOT_ON] != 0 and (v == 0x01 or v == 0x11):
            i32[i, BOOT_ON] = 0
            return 1
        return 0
    if wp.static(CGB):
        if addr >= 0xFF51 and addr <= 0xFF55:
            if m.cgb_mode == 0:
                return 0
            hdma_io_write(m, i, addr - 0xFF00, v)
            return wp.where(addr == 0xFF55, 1, 0)
    if addr < HRAM_LO:
        if wp.static(CGB):
            if io_write(m, i, addr, v) != 0:  # KEY1, HDMA5 (kernels/board/cgb.py)
                return 1
        else:
            io_write(m, i, addr, v)
        if addr < 0xFF4C and addr != 0xFF44:
            return 1
        return 0
    if addr < IE_ADDR:
        mem[i, HRAM_BASE + addr - HRAM_LO] = wp.uint8(v)
        return 0
    mem[i, IE_BASE] = wp.uint8(v)
    return 1


# ---- CGB HDMA's transfers (kernels/board/hdma.py keeps its registers) ---------------


@wp.func(inline=False)
def hdma_copy(m: wp.ref[Machine], i: int, src: int, dst: int, n: int):
    """``n`` bytes through the bus, as PyBoy's ``setitem(dst, getitem(src))``; every
    destination HDMA can form is below the OAM, so the write is the memory map's."""
    for k in range(n):
        mem_write(m, i, (dst + k) & 0xFFFF, bus_read(m, i, (src + k) & 0xFFFF))


@wp.func(inline=False)
def hdma_block(m: wp.ref[Machine], i: int) -> int:
    """One HBlank block: 16 bytes to VRAM; the cycles the CPU waits (PyBoy's ``tick``)."""
    src = hdma_word(m, i, SRC) & 0xFFF0
    dst = (hdma_word(m, i, DST) & 0x1FF0) | VRAM_LO
    hdma_copy(m, i, src, dst, 0x10)
    hdma_block_done(m, i)
    return BLOCK_CYCLES


@wp.func
def hdma_io_write(m: wp.ref[Machine], i: int, r: int, v: int):
    """FF51-FF55 on a Colour cartridge: an address register, or FF55 starting (a
    general-purpose transfer at once; an HBlank one's first block at once with the LCD
    off), stopping or relengthening a transfer."""
    if r < 0x55:
        hdma_address_write(m, i, r, v)
        return
    n = hdma5_write(m, i, v)
    if n > 0:
        hdma_copy(m, i, hdma_word(m, i, SRC), hdma_word(m, i, DST), n)
        hdma_general_done(m, i, n)
    elif n == -2:
        hdma_block(m, i)


@wp.func
def bus_read_at(m: wp.ref[Machine], i: int, addr: int, offset: int) -> int:
    """``bus_read`` with PyBoy's ``memory_access_offset`` = ``offset`` for this access."""
    i32 = m.i32
    if offset != 0:
        i32[i, ACCESS_OFFSET] = offset
    v = bus_read(m, i, addr)
    if offset != 0:
        i32[i, ACCESS_OFFSET] = 0
    return v


@wp.func
def hram_read_at(m: wp.ref[Machine], i: int, addr: int, offset: int) -> int:
    """``bus_read_at`` for 0xFF80-0xFFFE without the dispatch (code running in HRAM, e.g.
    an OAM DMA wait loop): the DMA catch-up every 0xFF00-0xFFFF access makes, then the byte."""
    i32 = m.i32
    if i32[i, DMA_ACTIVE] != 0:
        if offset != 0:
            i32[i, ACCESS_OFFSET] = offset
        dma_catch_up(m, i)
        if offset != 0:
            i32[i, ACCESS_OFFSET] = 0
    return int(m.mem[i, HRAM_BASE + addr - HRAM_LO])


@wp.func
def bus_write_at(m: wp.ref[Machine], i: int, addr: int, value: int, offset: int) -> int:
    i32 = m.i32
    if offset != 0:
        i32[i, ACCESS_OFFSET] = offset
    bail = bus_write(m, i, addr, value)
    if offset != 0:
        i32[i, ACCESS_OFFSET] = 0
    return bail


@wp.func
def bus_power_on(m: wp.ref[Machine], i: int):
    """The boot ROM is mapped at 0x0000-0x00FF until FF50 is written (PyBoy's
    ``bootrom_enabled``); WRAM, FEA0-FEFF, HRAM and IE start at 0 (``mem`` is zero)."""
    m.i32[i, BOOT_ON] = 1


# ---- PyBoy save state (host side) ------------------------------------------------------
# The motherboard's own memory: PyBoy's ``bootrom_enabled`` and its ``memory`` block (WRAM,
# FEA0-FEFF, HRAM and the raw FF00-FF4B bytes; VRAM/OAM are the LCD's, IE the CPU's).


# The raw IO bytes the board loads: P1 and the ports no unit handles. The registers of
# UNIT_REGS are loaded by their units from their own blocks.
BOARD_IO = np.setdiff1d(np.arange(IO_BYTES), UNIT_REGS)


def board_from_pyboy(memory: MemoryState, bootrom_enabled: int, st: MachineState) -> None:
    """Load the boot ROM switch and the memory block into the host state ``st``."""
    mem = st["mem"]
    mem[WRAM_OFF : WRAM_OFF + WRAM_SIZE] = memory.wram[:WRAM_SIZE]  # CGB: banks 0-1 (cgb.py)
    mem[UNUSABLE_OFF : UNUSABLE_OFF + UNUSABLE_SIZE] = memory.unusable
    mem[HRAM_OFF : HRAM_OFF + HRAM_SIZE] = memory.hram
    host_io(st)[BOARD_IO] = np.asarray(memory.io, dtype=np.uint8)[BOARD_IO]
    put_fields(st, {"boot_on": int(bool(bootrom_enabled))})


def board_to_pyboy(st: MachineState) -> tuple[MemoryState, int]:
    """The memory block and ``bootrom_enabled`` for the host state ``st`` (PyBoy's backing
    bytes of unit registers stay 0)."""
    mem = st["mem"]
    raw_io = host_io(st)[:IO_BYTES].copy()
    raw_io[list(UNIT_REGS)] = 0
    memory = MemoryState(
        wram=mem[WRAM_OFF : WRAM_OFF + WRAM_SIZE].copy(),
        unusable=mem[UNUSABLE_OFF : UNUSABLE_OFF + UNUSABLE_SIZE].copy(),
        io=raw_io,
        hram=mem[HRAM_OFF : HRAM_OFF + HRAM_SIZE].copy(),
    )
    return memory, int(st["boot_on"])


def _board_save(st: MachineState, cart, layout) -> dict:
    memory, bootrom_enabled = board_to_pyboy(st)
    return {"memory": memory, "bootrom_enabled": bootrom_enabled}


BOARD = Unit(
    "bus",
    bus_power_on,
    load=lambda state, st, cart: board_from_pyboy(state.memory, state.bootrom_enabled, st),
    save=_board_save,
)
