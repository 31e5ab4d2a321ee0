"""A slice of PyBoy's frame loop besides its instructions (kernels/step/step.py): its target
cycle, the unit sync at its end, whether the next slice only runs on, and quiet HALT.

``slice_target``: max(4, the units' distances to their next events: the timer's overflow,
the LCD's next transition and frame end, the serial transfer, the sound unit's early
target); ``sync_units``: OAM DMA, then serial, timer and LCD up to the CPU's cycle count;
``halt_through_lcd``: a quiet HALT's run of slices that end at LCD transitions, fused.
Each in the two shapes of the step: inlined (the CPU's) and one out-of-line copy (the GPU
shape's, ``*_outlined``).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.apu.apu import apu_slice_target
from gbxcule.kernels.board.dma import dma_sync, dma_sync_outlined
from gbxcule.kernels.board.hdma import hdma_block_due, hdma_running
from gbxcule.kernels.board.ioregs import FRAME_T, NEVER, pending_interrupts, raise_interrupt
from gbxcule.kernels.board.serial import serial_sync
from gbxcule.kernels.board.timer import timer_sync
from gbxcule.kernels.ppu.ppu import MODE2_CYCLES, cycles_to_mode0, lcd_sync, lcd_sync_outlined
from gbxcule.kernels.ppu.ppu_quiet import lcd_quiet_lines, quiet_frame
from gbxcule.kernels.state import (
    CYCLES,
    DMA_ACTIVE,
    FRAME_DONE,
    HALTED,
    I64_FIELDS,
    IME_DELAY,
    INT_QUEUED,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    LOCKED,
    SER_LAST,
    SER_TO_IRQ,
    TIM_LAST,
    TIM_TO_IRQ,
    Machine,
)
from gbxcule.kernels.units import UNITS

CGB = False  # True in the CGB variant (kernels/variant.py)

wp.set_module_options({"enable_backward": False})

MIN_SLICE = wp.constant(wp.int64(4))


def _nearest_event(columns: tuple[int, ...]):
    """A func: the least of ``m.i64[i, c]`` over ``columns`` (the units' ``Unit.events``,
    distances to their next events), or NEVER."""

    @wp.func(name="nearest_event_none")
    def none(m: wp.ref[Machine], i: int) -> wp.int64:
        return NEVER

    fn = none
    for k, column in enumerate(columns):
        fn = _and_event(fn, column, k)
    return fn


def _and_event(nearer, column: int, k: int):
    @wp.func(name=f"nearest_event_{k}")
    def nearest(m: wp.ref[Machine], i: int) -> wp.int64:
        return wp.min(wp.static(nearer)(m, i), m.i64[i, wp.static(column)])

    return nearest


EVENT_COLUMNS = tuple(I64_FIELDS.index(name) for unit in UNITS for name in unit.events)
other_targets = _nearest_event(EVENT_COLUMNS)


@wp.func
def slice_target(m: wp.ref[Machine], i: int) -> wp.int64:
    target = apu_slice_target(m, i, other_targets(m, i))
    if wp.static(CGB):  # a running HBlank HDMA: the slice ends where mode 0 starts
        if hdma_running(m, i) != 0:
            target = wp.min(target, cycles_to_mode0(m, i))
    return wp.max(MIN_SLICE, target)


@wp.func
def halt_is_quiet(m: wp.ref[Machine], i: int) -> int:
    """1 when ``cpu_tick`` would only add the slice to the cycle count: halted with no
    interrupt queued or pending and no EI countdown (a game waiting in HALT)."""
    i32 = m.i32
    if i32[i, HALTED] == 0 or i32[i, INT_QUEUED] != 0 or i32[i, IME_DELAY] != 0:
        return 0
    if wp.static(CGB):  # its slices end at each mode 0: one by one, as cpu_tick runs them
        if hdma_running(m, i) != 0:
            return 0
    return wp.where(pending_interrupts(m, i) == 0, 1, 0)


def _make_sync_units(out_of_line: bool):
    lcd = lcd_sync_outlined if out_of_line else lcd_sync
    dma = dma_sync_outlined if out_of_line else dma_sync

    def sync_units(m: wp.ref[Machine], i: int):
        """The end of a slice: OAM DMA, then serial, timer and LCD up to the CPU."""
        if m.i32[i, DMA_ACTIVE] != 0:
            wp.static(dma)(m, i, 0)
        cycles = m.i64[i, CYCLES]
        raise_interrupt(m, i, serial_sync(m, i, cycles))
        raise_interrupt(m, i, timer_sync(m, i, cycles))
        raise_interrupt(m, i, wp.static(lcd)(m, i, cycles))

    if out_of_line:
        return wp.func(sync_units, name="sync_units_outlined", inline=False)
    return wp.func(sync_units)


# The GPU-shaped step (``StepFeatures.units_out_of_line``) calls one out-of-line copy of
# the slice's sync, which calls the one copy of the LCD and DMA syncs the bus paths call:
# inlined there, lcd_sync's registers were spilled in every caller (sm_90 stack 2,608 ->
# 1,872 B with the same in halt_through_lcd). The CPU inlines all of them.
sync_units = _make_sync_units(out_of_line=False)
sync_units_outlined = _make_sync_units(out_of_line=True)


@wp.func
def next_slice_is_plain(m: wp.ref[Machine], i: int, ime_delay: int) -> int:
    """1 when ``run_frame`` would start the next slice by running instructions with nothing
    else to do: the frame goes on, the CPU is not halted, and ``check_interrupts`` would
    find no interrupt (or wait for the EI countdown, ``ime_delay``, in the registers)."""
    i32 = m.i32
    if i32[i, FRAME_DONE] != 0 or i32[i, LOCKED] != 0 or i32[i, HALTED] != 0:
        return 0
    if wp.static(CGB):  # run_frame copies an HBlank HDMA block next
        if hdma_block_due(m, i) != 0:
            return 0
    if ime_delay != 0:
        return 1
    return wp.where(pending_interrupts(m, i) == 0, 1, 0)


def _make_halt_through_lcd(out_of_line: bool, quiet_lines: bool = True):
    lcd = lcd_sync_outlined if out_of_line else lcd_sync

    def halt_through_lcd(m: wp.ref[Machine], i: int):
        """Quiet HALT (``halt_is_quiet``): the slices that end at LCD transitions, fused.

        Each such slice only adds its target to the cycle count and syncs the units; the
        timer and serial port then just count (no event before their distance), so they
        are synced once at the end: the same state, since a sync that crosses no event
        is one jump. Stops at the first slice a timer/serial event or OAM DMA could end,
        at the first interrupt flag raised, or at the end of the frame. Where no
        transition of whole lines ahead can raise a flag, draw or reach the timer's or
        serial port's event, they are one jump too (``lcd_quiet_lines``,
        kernels/ppu/ppu_quiet.py; ``quiet_lines=False``: one transition a pass, for testing).
        """
        i32 = m.i32
        i64 = m.i64
        cycles = i64[i, CYCLES]
        if wp.static(quiet_lines):
            may_jump = quiet_frame(m, i)  # what no transition of this loop changes
        while i32[i, FRAME_DONE] == 0:
            tim_left = i64[i, TIM_TO_IRQ] - (cycles - i64[i, TIM_LAST])
            ser_left = i64[i, SER_TO_IRQ] - (cycles - i64[i, SER_LAST])
            t = wp.max(MIN_SLICE, wp.min(i64[i, LCD_TO_IRQ], i64[i, LCD_TO_FRAME]))
            if t >= tim_left or t >= ser_left or i32[i, DMA_ACTIVE] != 0:
                break
            if cycles + wp.int64(1) < t:  # the sound unit's target may be the slice's
                break
            if wp.static(quiet_lines):
                # t is mode 2's length at a mode-2 start (the cheap test first: at the
                # other three transitions of a line the loop pays one compare), and the
                # sound unit's early targets are long past
                if may_jump != 0 and t == wp.int64(MODE2_CYCLES) and cycles >= FRAME_T:
                    jumped = lcd_quiet_lines(m, i, cycles, cycles + wp.min(tim_left, ser_left))
                    if jumped != cycles:
                        cycles = jumped
                        i64[i, CYCLES] = cycles
                        continue
            cycles = cycles + t
            i64[i, CYCLES] = cycles
            bits = wp.static(lcd)(m, i, cycles)
            if bits != 0:
                raise_interrupt(m, i, bits)
                break
        raise_interrupt(m, i, serial_sync(m, i, cycles))
        raise_interrupt(m, i, timer_sync(m, i, cycles))

    if out_of_line:
        return wp.func(halt_through_lcd, name="halt_through_lcd_outlined", inline=False)
    if not quiet_lines:
        return wp.func(halt_through_lcd, name="halt_through_lcd_stepwise")
    return wp.func(halt_through_lcd)


halt_through_lcd = _make_halt_through_lcd(out_of_line=False)
halt_through_lcd_outlined = _make_halt_through_lcd(out_of_line=True)
# one LCD transition a pass, as before lcd_quiet_lines: what tests/test_ppu_quiet.py compares
halt_through_lcd_stepwise = _make_halt_through_lcd(out_of_line=False, quiet_lines=False)
