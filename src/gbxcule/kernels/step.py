"""The step kernel: PyBoy 2.8.1's frame loop (``Motherboard.tick`` + ``CPU.tick``) per env.

A frame runs slices until the LCD reports the frame done. Each slice:

1. target = max(4, min(distance to the timer's overflow/interrupt, to the LCD's
   next transition, to the end of the LCD frame, to the serial transfer's end));
   sound (not emulated) and CGB HDMA add nothing;
2. ``cpu_tick``: check interrupts once (dispatch may take 20 cycles); a halted
   CPU jumps the whole target at once (this is the HALT fast-forward); else run
   instructions until the target is reached or one bails (IO/IE/mapper writes,
   HALT, EI taking effect with an interrupt pending);
3. sync the OAM DMA copy, then serial, timer and LCD to the CPU's cycle count,
   raising their interrupt flags.

So an interrupt raised mid-slice is dispatched at the start of the next slice.
The step's buttons are pressed at the start of its first frame and released
``release_after`` frames later (``kernels/joypad.py``); the renderer (line
latches) runs on the step's last frame only, as ``PyBoy.tick(n, render)`` does.
Envs with ``m.locked[i] != 0`` (an illegal opcode, where PyBoy would hang) are
skipped. The same kernel runs the boot ROM at reset (``stop_pc``, see
``step_kernel``).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.cpu import cpu_execute
from gbxcule.kernels.dma import dma_sync
from gbxcule.kernels.interrupts import check_interrupts
from gbxcule.kernels.ioregs import NEVER, raise_interrupt
from gbxcule.kernels.joypad import joypad_frame_end, joypad_frame_start
from gbxcule.kernels.ppu import lcd_sync
from gbxcule.kernels.serial import serial_sync
from gbxcule.kernels.state import Machine
from gbxcule.kernels.timer import timer_sync

wp.set_module_options({"enable_backward": False})

MIN_SLICE = wp.constant(wp.int64(4))
POST_BOOT_PC = 0x0100
BOOT_MAX_FRAMES = 4


@wp.func
def slice_target(m: Machine, i: int) -> wp.int64:
    t = NEVER  # sound (not emulated) and CGB HDMA never schedule anything
    t = wp.min(t, m.tim_to_irq[i])
    t = wp.min(t, m.lcd_to_irq[i])
    t = wp.min(t, m.lcd_to_frame[i])
    t = wp.min(t, m.ser_to_irq[i])
    return wp.max(MIN_SLICE, t)


@wp.func
def cpu_tick(m: Machine, i: int, target: wp.int64, stop_pc: int) -> int:
    """PyBoy's ``CPU.tick``; returns 1 when it stopped at ``stop_pc`` (boot hand-over)."""
    end = m.cycles[i] + target
    if check_interrupts(m, i) != 0:
        m.halted[i] = 0
    if m.halted[i] != 0 and m.int_queued[i] != 0:
        m.halted[i] = 0
        m.pc[i] = (m.pc[i] + 1) & 0xFFFF
    elif m.halted[i] != 0:
        m.cycles[i] = m.cycles[i] + target
    m.int_queued[i] = 0
    while m.cycles[i] < end:
        if m.pc[i] == stop_pc and m.boot_on[i] == 0:
            return 1
        if cpu_execute(m, i) != 0 or m.locked[i] != 0:
            break
    return 0


@wp.func
def sync_units(m: Machine, i: int):
    """The end of a slice: OAM DMA, then serial, timer and LCD up to the CPU."""
    if m.dma_active[i] != 0:
        dma_sync(m, i, 0)
    cycles = m.cycles[i]
    raise_interrupt(m, i, serial_sync(m, i, cycles))
    raise_interrupt(m, i, timer_sync(m, i, cycles))
    raise_interrupt(m, i, lcd_sync(m, i, cycles))


@wp.func
def run_frame(m: Machine, i: int, stop_pc: int) -> int:
    """One ``PyBoy.tick()`` frame; returns 1 if it stopped at ``stop_pc`` instead."""
    m.frame_done[i] = 0
    while m.frame_done[i] == 0 and m.locked[i] == 0:
        stopped = cpu_tick(m, i, slice_target(m, i), stop_pc)
        sync_units(m, i)
        if stopped != 0:
            return 1
    return 0


@wp.kernel
def step_kernel(
    m: Machine,
    buttons: wp.array(dtype=wp.int32),
    frames: int,
    release_after: int,
    render: int,
    stop_pc: int,
):
    """Run ``frames`` frames per env; ``buttons[i]`` is the step's button mask (0 = none).

    ``stop_pc`` = -1 for a normal step. The reset passes ``POST_BOOT_PC`` (with no
    buttons, ``BOOT_MAX_FRAMES`` frames, render off) to run the boot ROM from power-on
    to where the oracle's reset snapshot is taken: PyBoy stops at a breakpoint on
    0x0100 after finishing that slice's unit syncs. The host then checks that every
    env has PC = 0x0100 with the boot ROM unmapped. (One kernel for both, so the
    CPU is compiled once.)
    """
    i = wp.tid()
    if m.locked[i] != 0:
        return
    for f in range(frames):
        press = wp.int32(0)
        if f == 0:
            press = buttons[i]
        joypad_frame_start(m, i, press, release_after)
        m.lcd_render[i] = 0
        if render != 0 and f == frames - 1:
            m.lcd_render[i] = 1
        if run_frame(m, i, stop_pc) != 0:
            return
        joypad_frame_end(m, i)
        if m.locked[i] != 0:
            return
