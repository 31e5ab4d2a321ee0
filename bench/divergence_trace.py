"""The kernel of bench/divergence.py: the plain step kernel, recording each env's path.

``path_trace_kernel`` is ``kernels/step/step.py``'s plain ``step_kernel`` (no hooks, the
inlined shape, ``stop_pc`` = -1: a normal step) written out with its loops in one place,
composed of the real kernels' funcs (``cpu_fast``, ``cpu_fast_mem``, ``cpu_fast_cb``,
``cpu_general``, ``check_interrupts``, ``sync_units``, ``lcd_sync``, ...), so it changes
the machine exactly as ``step_kernel`` does (tests/test_divergence.py checks every
per-env field after a step). On the way it appends one code per unit of work to its
env's row of ``trace``:

- an instruction: ``route << 9 | bin``
  (bench/divergence_model.py) (``bin``: the opcode, 256 + the byte after $CB
  for CB opcodes; ``route``: which branch of ``cpu_step`` ran it, ``ROUTE_*``);
- ``FRAME``: a frame's start (joypad, ``run_frame`` entry); ``SLICE``: a ``cpu_tick``
  entry (interrupt check, wake-up), ``DISPATCH`` when it dispatched an interrupt;
  ``SYNC``: a slice's end (``sync_units``, in ``cpu_tick`` or ``run_frame``);
  ``HALT_LCD``: one pass of ``halt_through_lcd``'s loop, ``HALT_END`` its exit (timer and
  serial sync), ``HALT_SLICE``: the quiet-HALT slice that ``run_frame`` runs after it.

``lens[i]`` is the number of codes env ``i`` produced (those past ``trace``'s width are
counted, not stored). ``path_trace_kernel_addresses`` (the GPU shape) also writes, beside
each instruction's code, what it read and wrote in ``addrs`` (bench/coalescing.py): the
``rom_code`` word fetched + 1 in bits 0-24 (0: fetched outside ROM), and for the fast
memory route the two ``mem`` columns accessed + 1 in bits 25-44 and 45-63 (0: none). Warp's kernel language, type-checked by the Warp compiler (so
pyright skips this file, pyproject.toml).
"""

from __future__ import annotations

import warp as wp

from bench.divergence_model import (
    DISPATCH,
    FRAME,
    HALT_END,
    HALT_LCD,
    HALT_SLICE,
    ROUTE_FAST,
    ROUTE_FAST_CB,
    ROUTE_FAST_MEM,
    SLICE,
    SYNC,
)
from gbxcule.kernels.apu.apu import apu_step_end
from gbxcule.kernels.board.ioregs import FRAME_T, raise_interrupt
from gbxcule.kernels.board.joypad import joypad_frame_end, joypad_frame_start
from gbxcule.kernels.board.serial import serial_sync
from gbxcule.kernels.board.timer import timer_sync
from gbxcule.kernels.cpu.cpu_fast import (
    cpu_fast,
    cpu_fast_cb,
    cpu_fast_mem,
    cpu_fast_mem_direct,
    fast_mem_addresses,
)
from gbxcule.kernels.cpu.cpu_regs import direct_index, load_regs, store_regs
from gbxcule.kernels.cpu.cpu_step import cpu_general
from gbxcule.kernels.cpu.fetch import fetch, is_illegal
from gbxcule.kernels.cpu.interrupts import check_interrupts
from gbxcule.kernels.ppu.ppu import lcd_sync
from gbxcule.kernels.ppu.ppu_quiet import lcd_quiet_lines
from gbxcule.kernels.state import (
    CYCLES,
    DMA_ACTIVE,
    FRAME_DONE,
    HALTED,
    IME,
    INT_QUEUED,
    LCD_RENDER,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    LOCKED,
    PC,
    SER_LAST,
    SER_TO_IRQ,
    SND_FRAME_START,
    TIM_LAST,
    TIM_TO_IRQ,
    Machine,
    env_view,
)
from gbxcule.kernels.step.slice import (
    MIN_SLICE,
    halt_is_quiet,
    next_slice_is_plain,
    slice_target,
    sync_units,
)

wp.set_module_options({"enable_backward": False})


@wp.func
def emit(trace: wp.array2d(dtype=wp.int16), i: int, n: int, code: int) -> int:
    if n < trace.shape[1]:
        trace[i, n] = wp.int16(code)
    return n + 1


@wp.func
def traced_halt_through_lcd(
    m: wp.ref[Machine], trace: wp.array2d(dtype=wp.int16), i: int, n0: int
) -> int:
    """``kernels/step/slice.py``'s ``halt_through_lcd``, one ``HALT_LCD`` per pass of its loop (a
    jump over whole quiet lines, ``lcd_quiet_lines``, is one pass)."""
    i32 = m.i32
    i64 = m.i64
    n = n0
    cycles = i64[0, CYCLES]
    while i32[0, FRAME_DONE] == 0:
        n = emit(trace, i, n, HALT_LCD)
        tim_left = i64[0, TIM_TO_IRQ] - (cycles - i64[0, TIM_LAST])
        ser_left = i64[0, SER_TO_IRQ] - (cycles - i64[0, SER_LAST])
        t = wp.max(MIN_SLICE, wp.min(i64[0, LCD_TO_IRQ], i64[0, LCD_TO_FRAME]))
        if t >= tim_left or t >= ser_left or i32[0, DMA_ACTIVE] != 0:
            break
        if cycles + wp.int64(1) < t:  # the sound unit's target may be the slice's
            break
        if cycles >= FRAME_T:
            jumped = lcd_quiet_lines(m, 0, cycles, cycles + wp.min(tim_left, ser_left))
            if jumped != cycles:
                cycles = jumped
                i64[0, CYCLES] = cycles
                continue
        cycles = cycles + t
        i64[0, CYCLES] = cycles
        bits = lcd_sync(m, 0, cycles)
        if bits != 0:
            raise_interrupt(m, 0, bits)
            break
    n = emit(trace, i, n, HALT_END)
    raise_interrupt(m, 0, serial_sync(m, 0, cycles))
    raise_interrupt(m, 0, timer_sync(m, 0, cycles))
    return n


def make_path_trace_kernel(gpu_shape: bool, addresses: bool = False):
    """``path_trace_kernel``; ``gpu_shape``: with the GPU shape's fast memory path
    (kernels/step/step_cuda.py: only plain WRAM/HRAM accesses, the rest the general way), so the
    routes are the ones CUDA runs (same machine state either way); ``addresses``: each
    instruction's accesses in ``addrs`` too (the module doc)."""
    fast_mem = cpu_fast_mem_direct if gpu_shape else cpu_fast_mem
    suffix = ("_gpu" if gpu_shape else "") + ("_addresses" if addresses else "")

    def traced_cpu_tick(
        m: wp.ref[Machine],
        trace: wp.array2d(dtype=wp.int16),
        addrs: wp.array2d(dtype=wp.int64),
        i: int,
        n0: int,
        target: wp.int64,
    ) -> wp.vec2i:
        """``cpu_tick`` with ``stop_pc`` = -1 and ``cpu_step``'s branches written out:
        (codes emitted so far, 1 when the last slice's ``sync_units`` ran here)."""
        i32 = m.i32
        i64 = m.i64
        n = n0
        end = i64[0, CYCLES] + target
        ime0 = i32[0, IME]
        kind = wp.int32(SLICE)
        if check_interrupts(m, 0) != 0:
            i32[0, HALTED] = 0
            if ime0 != 0 and i32[0, IME] == 0:
                kind = DISPATCH
        n = emit(trace, i, n, kind)
        if i32[0, HALTED] != 0 and i32[0, INT_QUEUED] != 0:
            i32[0, HALTED] = 0
            i32[0, PC] = (i32[0, PC] + 1) & 0xFFFF
        elif i32[0, HALTED] != 0:
            i64[0, CYCLES] = i64[0, CYCLES] + target
        i32[0, INT_QUEUED] = 0
        synced = wp.int32(0)
        if i64[0, CYCLES] < end:
            r = load_regs(m, 0)
            while r.cycles < end:
                # cpu_step (kernels/cpu/cpu.py), its route recorded
                c0 = r.cycles
                fetched = fetch(m, 0, r.pc, c0, r.hl, r.rom_lo, r.rom_hi)
                op = fetched & 0xFF
                n1 = (fetched >> 8) & 0xFF
                n16 = fetched >> 8
                cb = wp.where(op == 0xCB, 1, 0)
                code = wp.where(cb == 1, 256 + n1, op)
                bail = wp.int32(-1)
                if wp.static(addresses):
                    word = wp.int64(0)
                    if r.pc + 2 < 0x8000:
                        word = wp.int64(wp.where(r.pc + 2 < 0x4000, r.rom_lo, r.rom_hi) + r.pc + 1)
                    ab = fast_mem_addresses(r, op, n1, n16)
                if r.ime_delay == 0 and m.cpu_fast_paths != 0:
                    fast = wp.int32(0)
                    route = wp.int32(ROUTE_FAST)
                    if cb == 0:
                        fast = cpu_fast(r, op, n1, n16)
                        if fast == 0:
                            route = ROUTE_FAST_MEM
                            fast = wp.static(fast_mem)(m, 0, r, op, n1, n16)
                    elif (n1 & 7) != 6:
                        route = ROUTE_FAST_CB
                        fast = cpu_fast_cb(r, n1)
                    if fast != 0:
                        r.cycles = c0 + wp.int64(fast & 0xFF)
                        bail = fast >> 8
                        code = code | (route << 9)
                        if wp.static(addresses):
                            if route == ROUTE_FAST_MEM:
                                word = word | (
                                    wp.int64(direct_index(m, 0, ab[0]) + 1) << wp.int64(25)
                                )
                                word = word | (
                                    wp.int64(direct_index(m, 0, ab[1]) + 1) << wp.int64(45)
                                )
                if bail < 0:
                    if cb == 0 and is_illegal(op) != 0:
                        m.i32[0, LOCKED] = 0x100 | op
                        bail = 1
                    else:
                        bail = cpu_general(m, 0, r, op, cb, n1, n16)
                if wp.static(addresses):
                    if n < addrs.shape[1]:
                        addrs[i, n] = word
                n = emit(trace, i, n, code)
                if bail != 0:
                    break
                if r.cycles >= end:
                    i64[0, CYCLES] = r.cycles
                    sync_units(m, 0)
                    n = emit(trace, i, n, SYNC)
                    if next_slice_is_plain(m, 0, r.ime_delay) == 0:
                        synced = 1
                        break
                    end = r.cycles + slice_target(m, 0)
            store_regs(m, 0, r)
        return wp.vec2i(n, synced)

    tick = wp.func(traced_cpu_tick, name="traced_cpu_tick" + suffix)

    def path_trace_kernel(
        m: Machine,
        buttons: wp.array(dtype=wp.int32),
        frames: int,
        release_after: int,
        render: int,
        trace: wp.array2d(dtype=wp.int16),
        addrs: wp.array2d(dtype=wp.int64),
        lens: wp.array(dtype=wp.int32),
    ):
        """``step_kernel``'s step (``stop_pc`` = -1), each env's codes into its row of
        ``trace`` and their count into ``lens``."""
        i = wp.tid()
        n = wp.int32(0)
        if m.i32[i, LOCKED] == 0:
            press = buttons[i]
            e = env_view(m, i)
            for f in range(frames):
                n = emit(trace, i, n, FRAME)
                joypad_frame_start(e, 0, wp.where(f == 0, press, 0), release_after)
                e.i64[0, SND_FRAME_START] = e.i64[0, CYCLES]
                e.i32[0, LCD_RENDER] = 0
                if render != 0 and f == frames - 1:
                    e.i32[0, LCD_RENDER] = 1
                # run_frame (kernels/step/step.py)
                e.i32[0, FRAME_DONE] = 0
                while e.i32[0, FRAME_DONE] == 0 and e.i32[0, LOCKED] == 0:
                    if halt_is_quiet(e, 0) != 0:
                        n = traced_halt_through_lcd(e, trace, i, n)
                        if e.i32[0, FRAME_DONE] == 0 and halt_is_quiet(e, 0) != 0:
                            e.i64[0, CYCLES] = e.i64[0, CYCLES] + slice_target(e, 0)
                            sync_units(e, 0)
                            n = emit(trace, i, n, HALT_SLICE)
                        continue
                    ticked = wp.static(tick)(e, trace, addrs, i, n, slice_target(e, 0))
                    n = ticked[0]
                    if ticked[1] == 0:
                        sync_units(e, 0)
                        n = emit(trace, i, n, SYNC)
                joypad_frame_end(e, 0)
                if e.i32[0, LOCKED] != 0:
                    break
            apu_step_end(e, 0)
        lens[i] = n

    return wp.kernel(path_trace_kernel, name="path_trace_kernel" + suffix)


path_trace_kernel = make_path_trace_kernel(gpu_shape=False)
path_trace_kernel_gpu = make_path_trace_kernel(gpu_shape=True)
path_trace_kernel_addresses = make_path_trace_kernel(gpu_shape=True, addresses=True)
