"""OAM DMA and CPU access to OAM, as PyBoy 2.8.1 models them.

A write to FF46 schedules a 160-byte copy from ``source << 8`` that starts 12
cycles later (8 when it restarts a copy that has not moved a byte yet) and
moves one byte every 4 cycles. The copy is lazy: bytes are moved when PyBoy
syncs it, i.e. before every CPU access to 0xFF00-0xFFFF (with the access's
cycle offset), on CPU access to OAM, and after every slice of the run loop. A
source byte is read when it is moved, so the sync points decide which value a
byte the CPU changes mid-copy contributes. Sources $FE/$FF read $DE/$DF.

While the copy is running (after its start cycle) OAM reads return $FF and OAM
writes are dropped. Accesses carrying a cycle offset first sync the LCD and are
locked out in modes 2 and 3 (reads) or mode 3 and most of mode 2 (writes).

``dma_power_on`` sets PyBoy's power-on values; ``dma_from_pyboy`` / ``dma_to_pyboy``
(host side, at the end) map PyBoy's OAM DMA block of a save state.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import OAM_OFF
from gbxcule.core.pyboy_state import OamDmaState
from gbxcule.kernels.address_map import OAM_LO
from gbxcule.kernels.board.ioregs import DMA, LCDC, host_io, raise_interrupt, reg, set_reg
from gbxcule.kernels.board.memmap import mem_read, wram_at
from gbxcule.kernels.ppu.ppu import TRANS_START_MODE2, lcd_mode, lcd_sync_outlined, oam_store
from gbxcule.kernels.state import (
    ACCESS_OFFSET,
    CYCLES,
    DMA_ACTIVE,
    DMA_INDEX,
    DMA_START,
    LCD_CLOCK,
    LCD_FIRST_FRAME,
    LCD_TARGET,
    LCD_TRANSITION,
    OAM_LINES_OK,
    REG_H,
    REG_L,
    VLOG_LINE,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

OAM_BASE = wp.constant(OAM_OFF)
OAM_BYTES = wp.constant(0xA0)


@wp.func
def dma_sync(m: wp.ref[Machine], i: int, offset: int):
    """Move every byte due by ``cycles + offset`` (PyBoy's ``sync_oam_dma``)."""
    i32 = m.i32
    i64 = m.i64
    if i32[i, DMA_ACTIVE] == 0:
        return
    elapsed = i64[i, CYCLES] + wp.int64(offset) - i64[i, DMA_START]
    if elapsed < wp.int64(4):
        return
    due = OAM_BYTES
    if elapsed / wp.int64(4) < wp.int64(OAM_BYTES):
        due = int(elapsed / wp.int64(4))
    source = reg(m, i, DMA)
    if source >= 0xFE:
        source -= 0x20
    index = i32[i, DMA_INDEX]
    if source >= 0xC0 and index < due and i32[i, VLOG_LINE] == 0:
        # from WRAM (or its echo) with no video log: what mem_read and oam_store do there
        mem = m.mem
        src = wram_at(m, i, source << 8)
        while index < due:
            mem[i, OAM_BASE + index] = mem[i, src + index]
            index += 1
        i32[i, OAM_LINES_OK] = 0
    while index < due:
        oam_store(m, i, index, mem_read(m, i, (source << 8) | index))
        index += 1
    i32[i, DMA_INDEX] = index
    if index == OAM_BYTES:
        i32[i, DMA_ACTIVE] = 0


@wp.func(inline=False)
def dma_sync_outlined(m: wp.ref[Machine], i: int, offset: int):
    """``dma_sync`` as one out-of-line copy, for the bus paths below: inlined into each, it
    made every bus access spill on sm_90. The step's own slice sync inlines ``dma_sync``
    (out of line there cost the CPU 14 %, history/performance.md)."""
    dma_sync(m, i, offset)


@wp.func
def dma_catch_up(m: wp.ref[Machine], i: int):
    """The sync PyBoy does at the top of every 0xFF00-0xFFFF access."""
    i32 = m.i32
    if i32[i, DMA_ACTIVE] != 0:
        dma_sync_outlined(m, i, i32[i, ACCESS_OFFSET])


@wp.func
def dma_start(m: wp.ref[Machine], i: int, source: int):
    """FF46 write (after the LCD sync): schedule a new copy from ``source << 8``."""
    i32 = m.i32
    i64 = m.i64
    delay = 12
    if i32[i, DMA_ACTIVE] != 0 and i32[i, DMA_INDEX] == 0:
        delay = 8
    i64[i, DMA_START] = i64[i, CYCLES] + wp.int64(delay)
    i32[i, DMA_ACTIVE] = 1
    i32[i, DMA_INDEX] = 0
    set_reg(m, i, DMA, source)


@wp.func
def dma_started(m: wp.ref[Machine], i: int) -> int:
    i64 = m.i64
    if i64[i, CYCLES] + wp.int64(m.i32[i, ACCESS_OFFSET]) >= i64[i, DMA_START]:
        return 1
    return 0


@wp.func
def oam_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    i32 = m.i32
    offset = i32[i, ACCESS_OFFSET]
    if offset != 0:
        raise_interrupt(m, i, lcd_sync_outlined(m, i, m.i64[i, CYCLES] + wp.int64(offset)))
        if (reg(m, i, LCDC) & 0x80) != 0:
            mode = lcd_mode(m, i)
            if mode == 2 or mode == 3:
                return 0xFF
            # OAM locks when LY advances, before the first frame's mode 2 begins.
            if i32[i, LCD_FIRST_FRAME] != 0 and i32[i, LCD_TRANSITION] == TRANS_START_MODE2:
                return 0xFF
    if i32[i, DMA_ACTIVE] != 0:
        dma_sync_outlined(m, i, offset)
    hl = (i32[i, REG_H] << 8) | i32[i, REG_L]
    if i32[i, DMA_ACTIVE] != 0 and dma_started(m, i) != 0 and hl == addr:
        dma_sync_outlined(m, i, wp.max(offset, 4))
    if i32[i, DMA_ACTIVE] != 0 and dma_started(m, i) != 0:
        return 0xFF
    return int(m.mem[i, OAM_BASE + addr - OAM_LO])


@wp.func
def oam_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    i32 = m.i32
    i64 = m.i64
    offset = i32[i, ACCESS_OFFSET]
    if offset != 0:
        raise_interrupt(m, i, lcd_sync_outlined(m, i, i64[i, CYCLES] + wp.int64(offset)))
        if (reg(m, i, LCDC) & 0x80) != 0:
            mode = lcd_mode(m, i)
            if mode == 3:
                return
            if mode == 2:
                # OAM briefly opens during the final four startup cycles of mode 2.
                ahead = i64[i, LCD_TARGET] - i64[i, LCD_CLOCK]
                opening = i32[i, LCD_FIRST_FRAME] != 0 and ahead >= wp.int64(0)
                if not (opening and ahead <= wp.int64(4)):
                    return
    if i32[i, DMA_ACTIVE] != 0:
        dma_sync_outlined(m, i, offset)
    if i32[i, DMA_ACTIVE] == 0:
        oam_store(m, i, addr - OAM_LO, value)


@wp.func
def dma_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``OAMDMA()``: no copy running (FF46 reads 0: the IO page is zero)."""
    i32 = m.i32
    i32[i, DMA_ACTIVE] = 0
    i32[i, DMA_INDEX] = 0
    m.i64[i, DMA_START] = wp.int64(0)


# ---- PyBoy save state (host side) ------------------------------------------------------

DMA_UNSAVED: frozenset[str] = frozenset()


def dma_from_pyboy(dma: OamDmaState, st: MachineState) -> None:
    """Load PyBoy's OAM DMA block (zero before v29) into the host state ``st``.

    A state saved in the middle of a byte read (``reading``) is refused before this."""
    host_io(st)[DMA] = dma.source
    put_fields(
        st,
        {
            "dma_active": int(bool(dma.active)),
            "dma_index": dma.index,
            "dma_start": dma.start_cycle,
        },
    )


def dma_to_pyboy(st: MachineState) -> OamDmaState:
    return OamDmaState(
        active=int(st["dma_active"]),
        reading=0,
        source=int(host_io(st)[DMA]),
        index=int(st["dma_index"]),
        start_cycle=int(st["dma_start"]),
    )


DMA_UNIT = Unit(
    "dma",
    dma_power_on,
    load=lambda state, st, cart: dma_from_pyboy(state.oam_dma, st),
    save=lambda st, cart, layout: {"oam_dma": dma_to_pyboy(st)},
    unsaved=DMA_UNSAVED,
)
