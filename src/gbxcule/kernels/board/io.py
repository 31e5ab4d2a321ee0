"""IO register reads and writes (0xFF00-0xFF7F) as PyBoy 2.8.1 performs them.

Hooks the bus calls (``kernels/board/bus.py``, ``kernels/board/memmap.py``); ``m.i64[i, CYCLES]`` is
PyBoy's ``cpu.cycles`` at the access and ``m.i32[i, ACCESS_OFFSET]`` its
``memory_access_offset``:

* ``io_read(m, i, addr)`` / ``io_write(m, i, addr, value)``: a read first syncs the
  unit it belongs to (serial and timer to ``cycles``, the LCD to ``cycles +
  offset``); a write syncs the unit to ``cycles`` (the LCD too, no offset), then
  applies the write's side effects. The bus handles FF50, HRAM and IE and
  derives the run loop's bail flag.
* ``dma_catch_up``, ``oam_read``, ``oam_write`` (kernels/board/dma.py) are re-exported
  here for the bus.

Each unit keeps its own power-on values (``<unit>_power_on``, composed by
``kernels/step/reset.py``) and PyBoy-state mapping; this file only dispatches.

Read values (``io_peek``, no side effects): unused bits and unmapped registers
read as 1 where PyBoy does (FF03, FF08-FF0E, FF4C-FF7F read $FF; TAC | $F8;
IF | $E0). FF10-FF3F belong to the sound unit (``kernels/apu/apu.py``): a read or write
syncs it to ``cycles``, as PyBoy's with ``sound_emulated=True``; ``io_peek`` gives its
registers as of its last sync, with wave RAM as a read at that same cycle sees it. P1 is
the value computed at its last write.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import IO_OFF
from gbxcule.kernels.apu.apu import apu_io_write, apu_pcm, apu_pcm_read, apu_peek, apu_read
from gbxcule.kernels.board.cgb import cgb_io_peek, cgb_io_write
from gbxcule.kernels.board.dma import dma_catch_up, dma_start, oam_read, oam_write
from gbxcule.kernels.board.ioregs import IF, raise_interrupt, set_reg
from gbxcule.kernels.board.joypad import p1_write
from gbxcule.kernels.board.serial import sb_write, sc_write, serial_sync
from gbxcule.kernels.board.timer import (
    timer_read_div,
    timer_read_tima,
    timer_sync,
    timer_write_div,
    timer_write_tac,
    timer_write_tima,
    timer_write_tma,
)
from gbxcule.kernels.ppu.ppu import (
    lcd_sync_outlined,
    lcdc_write,
    lyc_write,
    stat_read,
    stat_write,
)
from gbxcule.kernels.state import ACCESS_OFFSET, CYCLES, LCD_STAT_OVERRIDE, Machine

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py): FF4C-FF7F are kernels/board/cgb.py's

__all__ = [
    "dma_catch_up",
    "io_peek",
    "io_read",
    "io_write",
    "oam_read",
    "oam_write",
]


@wp.func
def io_peek(m: wp.ref[Machine], i: int, addr: int) -> int:
    """Value the CPU would read at ``addr`` (0xFF00-0xFFFF) now, without syncing anything."""
    r = addr - 0xFF00
    value = int(m.mem[i, IO_OFF + r])  # P1, SB, SC, TMA, LCD registers, HRAM, IE
    if r == 0x03 or (r >= 0x08 and r <= 0x0E) or (r >= 0x4C and r < 0x80):
        value = 0xFF
    if wp.static(CGB):
        if r >= 0x4C and r < 0x80:
            value = cgb_io_peek(m, i, r)
        if r == 0x76 or r == 0x77:
            value = apu_pcm(m, i, r)
    if r >= 0x10 and r < 0x40:
        value = apu_peek(m, i, r - 0x10, 0)
    if r == 0x04:
        value = timer_read_div(m, i)
    if r == 0x05:
        value = timer_read_tima(m, i)
    if r == 0x07:
        value = value | 0xF8
    if r == 0x0F:
        value = value | 0xE0
    if r == 0x41 and m.i32[i, LCD_STAT_OVERRIDE] != 0:
        value = value & 0xFC
    return value


@wp.func
def io_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    r = addr - 0xFF00
    cycles = m.i64[i, CYCLES]
    if r == 0x01 or r == 0x02:
        raise_interrupt(m, i, serial_sync(m, i, cycles))
    if r >= 0x04 and r <= 0x07:
        raise_interrupt(m, i, timer_sync(m, i, cycles))
    if r >= 0x40 and r <= 0x4B:
        raise_interrupt(m, i, lcd_sync_outlined(m, i, cycles + wp.int64(m.i32[i, ACCESS_OFFSET])))
    if r == 0x41:
        return stat_read(m, i)
    if r >= 0x10 and r < 0x40:
        return apu_read(m, i, r - 0x10, cycles)
    if wp.static(CGB):
        if r == 0x76 or r == 0x77:
            return apu_pcm_read(m, i, r, cycles)
    return io_peek(m, i, addr)


@wp.func
def io_write(m: wp.ref[Machine], i: int, addr: int, value: int) -> int:
    """The write's side effects; returns 1 where the CGB variant's registers end PyBoy's
    slice (the bus decides for the rest)."""
    r = addr - 0xFF00
    v = value & 0xFF
    cycles = m.i64[i, CYCLES]
    if wp.static(CGB):
        if r >= 0x4C:
            return cgb_io_write(m, i, r, v)
    if r == 0x00:
        p1_write(m, i, v)
    if r == 0x01 or r == 0x02:
        raise_interrupt(m, i, serial_sync(m, i, cycles))
        if r == 0x01:
            sb_write(m, i, v)
        else:
            sc_write(m, i, v)
    if r >= 0x04 and r <= 0x07:
        raise_interrupt(m, i, timer_sync(m, i, cycles))
    if r == 0x04 or (r >= 0x10 and r < 0x40):
        apu_io_write(m, i, r, v, cycles)  # a DIV write clocks it before the counter clears
    if r >= 0x04 and r <= 0x07:
        if r == 0x04:
            timer_write_div(m, i)
        if r == 0x05:
            timer_write_tima(m, i, v)
        if r == 0x06:
            timer_write_tma(m, i, v)
        if r == 0x07:
            timer_write_tac(m, i, v)
    if r == 0x0F:
        set_reg(m, i, IF, v & 0x1F)
    if r >= 0x40 and r <= 0x4B:
        raise_interrupt(m, i, lcd_sync_outlined(m, i, cycles))
        if r == 0x40:
            raise_interrupt(m, i, lcdc_write(m, i, v))
        if r == 0x41:
            raise_interrupt(m, i, stat_write(m, i, v))
        if r == 0x45:
            raise_interrupt(m, i, lyc_write(m, i, v))
        if r == 0x46:
            dma_start(m, i, v)
        if r == 0x42 or r == 0x43 or (r >= 0x47 and r <= 0x4B):
            set_reg(m, i, r, v)  # SCY, SCX, BGP, OBP0, OBP1, WY, WX
    return 0
