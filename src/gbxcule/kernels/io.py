"""IO register reads and writes (0xFF00-0xFF7F) as PyBoy 2.8.1 performs them.

Hooks the bus calls (``kernels/bus.py``, ``kernels/memmap.py``); ``m.i64[i, CYCLES]`` is
PyBoy's ``cpu.cycles`` at the access and ``m.i32[i, ACCESS_OFFSET]`` its
``memory_access_offset``:

* ``io_read(m, i, addr)`` / ``io_write(m, i, addr, value)``: a read first syncs the
  unit it belongs to (serial and timer to ``cycles``, the LCD to ``cycles +
  offset``); a write syncs the unit to ``cycles`` (the LCD too, no offset), then
  applies the write's side effects. The bus handles FF50, HRAM and IE and
  derives the run loop's bail flag.
* ``dma_catch_up``, ``oam_read``, ``oam_write`` (kernels/dma.py) are re-exported
  here for the bus.
* ``power_on_timing(m, i)``: the IO/timing state PyBoy's constructor leaves.

Read values (``io_peek``, no side effects): unused bits and unmapped registers
read as 1 where PyBoy does (FF03, FF08-FF0E, FF4C-FF7F read $FF; TAC | $F8;
IF | $E0); with ``sound_emulated=False`` PyBoy reads every FF10-FF3F register
as $00 and ignores writes there. P1 is the value computed at its last write.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import IO_OFF
from gbxcule.kernels.dma import dma_catch_up, dma_start, oam_read, oam_write
from gbxcule.kernels.ioregs import (
    BGP,
    FRAME_T,
    IF,
    NEVER,
    OBP0,
    OBP1,
    SB,
    SC,
    STAT,
    raise_interrupt,
    set_reg,
)
from gbxcule.kernels.joypad import p1_write
from gbxcule.kernels.ppu import (
    lcd_sync,
    lcdc_write,
    lyc_write,
    stat_read,
    stat_write,
)
from gbxcule.kernels.serial import sb_write, sc_write, serial_sync
from gbxcule.kernels.state import (
    ACCESS_OFFSET,
    BOOT_ON,
    CYCLES,
    DMA_ACTIVE,
    DMA_INDEX,
    DMA_START,
    FRAME_DONE,
    HALT_EI,
    IME_DELAY,
    INT_QUEUED,
    JOY_DIR,
    JOY_STD,
    LCD_CLOCK,
    LCD_FIRST_FRAME,
    LCD_IRQ_LINE,
    LCD_LAST,
    LCD_LYC_DIRTY,
    LCD_M3_ADJUST,
    LCD_NEXT_MODE,
    LCD_RENDER,
    LCD_RESET,
    LCD_STAT_OVERRIDE,
    LCD_TARGET,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    LCD_TRANSITION,
    SER_ACTIVE,
    SER_LAST,
    SER_TARGET,
    SER_TO_IRQ,
    SERIAL_LEN,
    TIM_COUNTER,
    TIM_LAST,
    TIM_RELOAD,
    TIM_RELOAD_LEFT,
    TIM_TO_IRQ,
    WIN_ACTIVE,
    WIN_LINE,
    Machine,
)
from gbxcule.kernels.timer import (
    timer_read_div,
    timer_read_tima,
    timer_sync,
    timer_write_div,
    timer_write_tac,
    timer_write_tima,
    timer_write_tma,
)

wp.set_module_options({"enable_backward": False})

__all__ = [
    "dma_catch_up",
    "io_peek",
    "io_read",
    "io_write",
    "oam_read",
    "oam_write",
    "power_on_timing",
]


@wp.func
def io_peek(m: wp.ref[Machine], i: int, addr: int) -> int:
    """Value the CPU would read at ``addr`` (0xFF00-0xFFFF) now, without syncing anything."""
    r = addr - 0xFF00
    value = int(m.mem[i, IO_OFF + r])  # P1, SB, SC, TMA, LCD registers, HRAM, IE
    if r == 0x03 or (r >= 0x08 and r <= 0x0E) or (r >= 0x4C and r < 0x80):
        value = 0xFF
    if r >= 0x10 and r < 0x40:
        value = 0x00
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
        raise_interrupt(m, i, lcd_sync(m, i, cycles + wp.int64(m.i32[i, ACCESS_OFFSET])))
    if r == 0x41:
        return stat_read(m, i)
    return io_peek(m, i, addr)


@wp.func
def io_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    r = addr - 0xFF00
    v = value & 0xFF
    cycles = m.i64[i, CYCLES]
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
        raise_interrupt(m, i, lcd_sync(m, i, cycles))
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


@wp.func
def power_on_timing(m: wp.ref[Machine], i: int):
    """IO/timing state of a freshly constructed PyBoy (before the boot ROM runs).

    ``mem`` is already zero; only non-zero registers and fields are set here.
    """
    i32 = m.i32
    i64 = m.i64
    set_reg(m, i, SB, 0xFF)
    set_reg(m, i, SC, 0x7E)
    set_reg(m, i, STAT, 0x80)
    set_reg(m, i, BGP, 0xFC)
    set_reg(m, i, OBP0, 0xFF)
    set_reg(m, i, OBP1, 0xFF)
    i32[i, IME_DELAY] = 0
    i32[i, HALT_EI] = 0
    i32[i, BOOT_ON] = 1
    i32[i, INT_QUEUED] = 0
    i32[i, FRAME_DONE] = 0
    i32[i, TIM_COUNTER] = 0
    i32[i, TIM_RELOAD] = 0
    i32[i, TIM_RELOAD_LEFT] = 0
    i64[i, TIM_LAST] = wp.int64(0)
    i64[i, TIM_TO_IRQ] = wp.int64(0)
    i64[i, LCD_CLOCK] = wp.int64(0)
    i64[i, LCD_TARGET] = FRAME_T
    i64[i, LCD_LAST] = wp.int64(0)
    i64[i, LCD_TO_IRQ] = wp.int64(0)
    i64[i, LCD_TO_FRAME] = FRAME_T
    i32[i, LCD_IRQ_LINE] = 0
    i32[i, LCD_NEXT_MODE] = 2
    i32[i, LCD_TRANSITION] = 0
    i32[i, LCD_FIRST_FRAME] = 0
    i32[i, LCD_RESET] = 0
    i32[i, LCD_STAT_OVERRIDE] = 0
    i32[i, LCD_LYC_DIRTY] = 0
    i32[i, LCD_M3_ADJUST] = 0
    i32[i, WIN_LINE] = 0
    i32[i, WIN_ACTIVE] = 0
    i32[i, LCD_RENDER] = 0
    i64[i, SER_LAST] = wp.int64(0)
    i64[i, SER_TARGET] = NEVER
    i64[i, SER_TO_IRQ] = wp.int64(0)
    i32[i, SER_ACTIVE] = 0
    i32[i, SERIAL_LEN] = 0
    i32[i, DMA_ACTIVE] = 0
    i32[i, DMA_INDEX] = 0
    i64[i, DMA_START] = wp.int64(0)
    i32[i, JOY_DIR] = 0xF
    i32[i, JOY_STD] = 0xF
    for k in range(m.joy_rel_mask.shape[1]):
        m.joy_rel_mask[i, k] = 0
        m.joy_rel_wait[i, k] = 0
