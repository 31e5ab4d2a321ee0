"""The step kernel: PyBoy 2.8.1's frame loop (``Motherboard.tick`` + ``CPU.tick``) per env.

A frame runs slices until the LCD reports the frame done. Each slice:

1. target = max(4, min(distance to the timer's overflow/interrupt, to the LCD's
   next transition, to the end of the LCD frame, to the serial transfer's end, and
   the sound unit's absolute next event, which only counts in the first few hundred
   cycles after power-on: ``kernels/apu/apu.py``); CGB HDMA adds nothing;
2. ``cpu_tick``: check interrupts once (dispatch may take 20 cycles); a halted
   CPU jumps the whole target at once (this is the HALT fast-forward); else run
   instructions until the target is reached or one bails (IO/IE/mapper writes,
   HALT, EI taking effect with an interrupt pending). A CPU halted with nothing
   pending (``halt_is_quiet``) skips ``cpu_tick``, and its run of slices that end at
   LCD transitions is fused (``halt_through_lcd``);
3. sync the OAM DMA copy, then serial, timer and LCD to the CPU's cycle count,
   raising their interrupt flags. When the next slice would only go on running
   instructions (no interrupt to check, not halted), ``cpu_tick`` does this sync
   itself and runs on with the registers in locals (``next_slice_is_plain``).

So an interrupt raised mid-slice is dispatched at the start of the next slice.
The step's buttons are pressed at the start of its first frame and released
``release_after`` frames later (``kernels/board/joypad.py``); the renderer (line
latches) runs on the step's last frame only, as ``PyBoy.tick(n, render)`` does.
Envs with ``m.i32[i, LOCKED] != 0`` (an illegal opcode, where PyBoy would hang) are
skipped (the backend reports them: ``locked_torch``/``locked_envs``). The same kernel
runs the boot ROM at reset (``stop_pc``, see ``step_kernel``).

Compile-time variants (``make_step_kernel``, ``StepFeatures``): ``step_kernel`` is the
plain kernel, the only one in this Warp module (the inlined shape with the field decode
alone); the CPU backends launch kernels/step/step_cpu.py's, ``opcode_dispatch`` (the same with
each base opcode dispatched to its own copy of the fast paths, run in a loop of their own,
``cpu_run_fast``, which also ends its slices, ``end_slice``; CPU only); the GPU shape,
``units_out_of_line``, is kernels/step/step_cuda.py's (what the CUDA backends launch and the
GPU budget of bench.cuda_build_report measures).
``step_kernel_variant(hooks=True)`` builds, on first use, the same loop with event hooks
compiled in (``kernels/step/hooks.py``): a hooked fetch ends the slice before the instruction
and the CPU single-steps past it, as PyBoy's breakpoints do. It lives in a Warp module of
its own, so the plain kernel has no hook test in it and its module (hash, code, cache) is
the same whether or not a hooked one was ever built.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import warp as wp

from gbxcule.kernels.address_map import ROM_END
from gbxcule.kernels.apu.apu import apu_step_end
from gbxcule.kernels.board.bus import hdma_block
from gbxcule.kernels.board.hdma import hdma_block_due
from gbxcule.kernels.board.ioregs import pending_interrupts
from gbxcule.kernels.board.joypad import joypad_frame_end, joypad_frame_start
from gbxcule.kernels.codegen import (
    STEP_CPU_MODULE,
    STEP_CUDA_MAX_REGISTERS,
    STEP_CUDA_MODULE,
    step_module_options,
)
from gbxcule.kernels.cpu.cpu_regs import load_regs, store_regs
from gbxcule.kernels.cpu.cpu_step import (
    RUN_BAIL,
    RUN_SLOW,
    RUN_SYNCED,
    cpu_step,
    make_cpu_hot_loop,
    make_cpu_run_fast,
    make_cpu_step,
)
from gbxcule.kernels.cpu.interrupts import check_interrupts, check_interrupts_outlined
from gbxcule.kernels.state import (
    BOOT_ON,
    CYCLES,
    FRAME_DONE,
    HALTED,
    INT_QUEUED,
    LCD_RENDER,
    LOCKED,
    PC,
    SND_FRAME_START,
    Machine,
    env_view,
)
from gbxcule.kernels.step.hooks import (
    HOOK_SS,
    hook_at,
    hook_maybe,
    hook_reached,
    hooks_step_start,
)
from gbxcule.kernels.step.slice import (
    MIN_SLICE,
    halt_is_quiet,
    halt_through_lcd,
    halt_through_lcd_outlined,
    next_slice_is_plain,
    slice_target,
    sync_units,
    sync_units_outlined,
)
from gbxcule.kernels.step.step_end import STEP_FRAMES, step_end_met, step_end_start

wp.set_module_options(step_module_options())  # the CPU's codegen: kernels/codegen.py

CGB = False  # True in the CGB variant (kernels/variant.py): HDMA's blocks in the frame loop

BOOT_MAX_FRAMES = 4
TICK_STOPPED = 1  # cpu_tick stopped at stop_pc
TICK_SYNCED = 2  # cpu_tick ended its last slice with sync_units already


@dataclass(frozen=True)
class StepFeatures:
    """What a variant of the step kernel compiles in (``if wp.static(features.X)`` blocks,
    which Warp drops at codegen when off); all off is the plain kernel. A new feature is
    one more field, its blocks, and one more keyword of ``step_kernel_variant``.

    Warp hashes every call in a func's source, dead static blocks included, so editing a
    feature's funcs (e.g. kernels/step/hooks.py) rebuilds the plain kernel too (same code)."""

    hooks: bool = False  # event hooks (kernels/step/hooks.py)
    # The GPU shape (what CUDA launches, kernels/step/step_cuda.py): the units a slice calls
    # rarely (unit sync, quiet HALT, interrupt check, code outside ROM, the general
    # decode) run as one out-of-line copy each, so the instruction loop's registers are
    # not spent on them (sm_90 stack 15,048 -> 1,904 B, history/performance.md). The CPU
    # device runs the inlined shape 17-52 % faster, so it keeps it.
    units_out_of_line: bool = False
    # The CPU's dispatch (what the CPU backends launch, kernels/step/step_cpu.py): the inlined
    # shape with each base opcode handed to its own copy of the fast paths
    # (kernels/cpu/cpu_step.py, make_fast_by_opcode), which run in a loop of their own,
    # cpu_run_fast (without hooks). CPU only: NVRTC runs out of memory on it.
    opcode_dispatch: bool = False
    # The GPU shape's register cap (the CUDA kernel's ``cuda_max_registers``; 0: none):
    # kernels/codegen.py, STEP_CUDA_MAX_REGISTERS. The GPU shape only.
    cuda_max_registers: int = STEP_CUDA_MAX_REGISTERS
    # The GPU shape's instruction loop: the fast paths in ``cpu_hot_loop``, a loop of their
    # own that calls nothing (True, the default); False is the shape before it (issue #41),
    # the fast paths in ``cpu_step`` beside the calls, kept for timing both on a GPU
    # (bench/gpu_shape_ab.py). The GPU shape only.
    hot_loop: bool = True

    def __post_init__(self):
        if self.opcode_dispatch and self.units_out_of_line:
            raise ValueError("opcode_dispatch is the inlined shape's: not with units_out_of_line")
        cap = self.cuda_max_registers
        if isinstance(cap, bool) or not isinstance(cap, int) or not (cap == 0 or 32 <= cap <= 255):
            raise ValueError(f"cuda_max_registers must be 0 (no cap) or 32-255, got {cap!r}")
        if cap != STEP_CUDA_MAX_REGISTERS and not self.units_out_of_line:
            raise ValueError("cuda_max_registers is the GPU shape's: only with units_out_of_line")
        if not self.hot_loop and not self.units_out_of_line:
            raise ValueError("hot_loop=False is the GPU shape's: only with units_out_of_line")

    @property
    def module(self) -> str | None:
        """The Warp module of the variant's kernel and funcs: this one (``None``) for the
        plain kernel, ``gbxcule.kernels.step.step_cuda`` for the GPU shape alone (built for
        sm_90 and reported like this one), ``gbxcule.kernels.step.step_cpu`` for the CPU's
        dispatch alone (CPU only); any other variant one of its own (``"unique"``: named by
        its hash), so building it neither adds to nor invalidates another module."""
        if self == StepFeatures():
            return None
        if self == StepFeatures(units_out_of_line=True):
            return STEP_CUDA_MODULE
        if self == StepFeatures(opcode_dispatch=True):
            return STEP_CPU_MODULE
        return "unique"

    def units(self):
        """The functions this shape calls for: (cpu_step, check_interrupts, sync_units,
        halt_through_lcd), inlined or out-of-line copies."""
        if self.opcode_dispatch:
            # the fast paths by opcode run in cpu_run_fast(_ram), and this step only gets
            # what they leave (the general decode; the boot; EI countdowns; hooked fetches'
            # single steps)
            step = make_cpu_step(module=self.module)
            return step, check_interrupts, sync_units, halt_through_lcd
        if not self.units_out_of_line:
            return cpu_step, check_interrupts, sync_units, halt_through_lcd
        return (
            make_cpu_step(out_of_line=True, module=self.module, fast=not self.hot_loop),
            check_interrupts_outlined,
            sync_units_outlined,
            halt_through_lcd_outlined,
        )


def make_step_kernel(features: StepFeatures):
    """A new step kernel with ``features`` compiled in. Registers new Warp funcs and a new
    kernel on each call, so build each variant once: ``step_kernel`` (the plain one,
    registered as ``step_kernel`` / ``cpu_tick`` / ``run_frame`` in this module) and
    ``step_kernel_variant`` do."""
    step_fn, check_fn, sync_fn, halt_fn = features.units()
    cpu_tick = _make_cpu_tick(features, step_fn, check_fn, sync_fn)
    run_frame = _make_run_frame(features, cpu_tick, sync_fn, halt_fn)
    return _make_kernel(features, run_frame)


def _make_end_slice(sync_fn, module: str | None):
    @wp.func(inline=False, name="end_slice", module=module)
    def end_slice(m: wp.ref[Machine], i: int, cycles: wp.int64) -> wp.int64:
        """``cpu_tick``'s end of a slice at ``cycles``, for ``cpu_run_fast``: the units
        synced, then the next slice's end cycle if it is plain, else -1.

        ``next_slice_is_plain`` where the run stands: no EI countdown (the run starts
        without one and EI is not its), not halted and not locked (HALT and the illegal
        opcodes are not its either), so what is left to test is the frame's end and a
        pending interrupt."""
        m.i64[i, CYCLES] = cycles
        wp.static(sync_fn)(m, i)
        if m.i32[i, FRAME_DONE] != 0 or pending_interrupts(m, i) != 0:
            return wp.int64(-1)
        if wp.static(CGB):  # run_frame copies an HBlank HDMA block next
            if hdma_block_due(m, i) != 0:
                return wp.int64(-1)
        return cycles + slice_target(m, i)

    return end_slice


def _make_cpu_tick(features: StepFeatures, step_fn, check_fn, sync_fn):
    # the CPU dispatch's instruction loop (kernels/cpu/cpu_step.py), with the hook filter in it
    # when hooks are compiled in (code outside ROM has no hooks)
    # (the GPU shape's is cpu_hot_loop, inlined and calling nothing, on the kernel's own
    # Machine ``k``: code in ROM only, and it ends no slice itself)
    run_fast = None
    run_ram = None
    hot = features.units_out_of_line and features.hot_loop
    if features.opcode_dispatch:
        end_slice = _make_end_slice(sync_fn, features.module)
        run_fast = make_cpu_run_fast(features.module, end_slice, hooks=features.hooks)
        run_ram = make_cpu_run_fast(features.module, end_slice, in_rom=False)
    elif hot:
        run_fast = make_cpu_hot_loop(features.module, hooks=features.hooks)

    @wp.func(name="cpu_tick", module=features.module)
    def cpu_tick(
        m: wp.ref[Machine], i: int, target: wp.int64, stop_pc: int, k: wp.ref[Machine]
    ) -> int:
        """PyBoy's ``CPU.tick``; returns ``TICK_STOPPED`` at ``stop_pc`` (boot hand-over).

        When the run of instructions reaches the target and the next slice would start as
        a plain continuation (``next_slice_is_plain``), the slice's end (``sync_units``)
        runs here and the instructions go on with the registers kept in locals: the same
        sequence as returning to ``run_frame``. The last such sync sets ``TICK_SYNCED``.
        The CPU dispatch runs the instructions that the fast paths take through
        ``cpu_run_fast`` (code in ROM) or ``cpu_run_fast_ram`` (kernels/cpu/cpu_step.py), and
        ``cpu_step`` the rest; the GPU shape through ``cpu_hot_loop`` (code in ROM, on the
        kernel's own Machine ``k``; the CPU shapes pass ``m`` and never read it), and the
        rest through the general decode.

        Hooks: a fetch at a hooked address bails before the instruction (PyBoy's BRK) and
        sets ``HOOK_SS``; a single-step slice (``HOOK_SS`` set at entry) runs the
        instruction at its start PC un-patched and never fuses into the next slice
        (``run_frame`` looks the PC up after it). The hooked ``cpu_run_fast`` stops before
        a PC the hook filter may hold; back here it is looked up (the loop's top) before
        it runs: ``checked`` is the PC last looked up.
        """
        i32 = m.i32
        i64 = m.i64
        end = i64[i, CYCLES] + target
        if wp.static(features.hooks):
            single = i32[i, HOOK_SS]
            pc0 = wp.where(single != 0, i32[i, PC], -1)
        if wp.static(check_fn)(m, i) != 0:
            i32[i, HALTED] = 0
        if i32[i, HALTED] != 0 and i32[i, INT_QUEUED] != 0:
            i32[i, HALTED] = 0
            i32[i, PC] = (i32[i, PC] + 1) & 0xFFFF
        elif i32[i, HALTED] != 0:
            i64[i, CYCLES] = i64[i, CYCLES] + target
        i32[i, INT_QUEUED] = 0
        out = wp.int32(0)
        if i64[i, CYCLES] < end:
            r = load_regs(m, i)  # registers stay in locals for the run of instructions
            while r.cycles < end:
                if r.pc == stop_pc and i32[i, BOOT_ON] == 0:
                    out = TICK_STOPPED
                    break
                if wp.static(features.hooks):
                    checked = r.pc
                    if (
                        hook_maybe(i32, i, r.pc) != 0
                        and r.pc != pc0
                        and hook_at(m, i, r.pc, 1) >= 0
                    ):
                        # PyBoy's BRK: no cycles, PC unchanged, but it runs the EI countdown
                        # as any opcode does
                        i32[i, HOOK_SS] = 1
                        if r.ime_delay > 0:
                            r.ime_delay = r.ime_delay - 1
                            r.ime = wp.where(r.ime_delay == 0, 1, r.ime)
                        break
                    if single != 0:  # one instruction, then run_frame's breakpoint_reached
                        if wp.static(step_fn)(m, i, r) != 0:
                            break
                        continue
                if wp.static(run_fast is not None):
                    ran = RUN_SLOW
                    if (
                        r.ime_delay == 0
                        and stop_pc < 0
                        and m.cpu_fast_paths != 0
                        and i32[i, BOOT_ON] == 0
                    ):
                        ended = wp.int64(0)
                        if wp.static(hot):
                            ended = wp.static(run_fast)(k, i, r, end)
                        elif r.pc + 2 < ROM_END:
                            ended = wp.static(run_fast)(m, i, r, end)
                        else:
                            ended = wp.static(run_ram)(m, i, r, end)
                        ran = wp.int32(ended & wp.int64(3))
                        end = ended >> wp.int64(2)
                    if ran == RUN_SYNCED:
                        out = TICK_SYNCED
                        break
                    if ran == RUN_BAIL:
                        break
                    if ran == RUN_SLOW:
                        if wp.static(features.hooks):
                            if r.pc != checked:  # the run stopped at a PC to look up
                                continue
                        if wp.static(step_fn)(m, i, r) != 0:
                            break
                elif wp.static(step_fn)(m, i, r) != 0:  # PyBoy's bail, or the env locked
                    break
                if r.cycles >= end:
                    i64[i, CYCLES] = r.cycles
                    wp.static(sync_fn)(m, i)
                    if next_slice_is_plain(m, i, r.ime_delay) == 0:
                        out = TICK_SYNCED
                        break
                    end = r.cycles + slice_target(m, i)
            store_regs(m, i, r)
        return out

    return cpu_tick


def _make_run_frame(features: StepFeatures, cpu_tick, sync_fn, halt_fn):
    @wp.func(name="run_frame", module=features.module)
    def run_frame(m: wp.ref[Machine], i: int, stop_pc: int, k: wp.ref[Machine]) -> int:
        """One ``PyBoy.tick()`` frame; returns 1 if it stopped at ``stop_pc`` or, with
        ``stop_on_hit``, at a hook hit instead.

        Hooks: every slice that ends with ``HOOK_SS`` set is followed by PyBoy's
        ``breakpoint_reached`` (``hook_reached``), and while ``HOOK_SS`` is set a slice is
        a 4-cycle single step, halted or not (kernels/step/hooks.py).
        """
        i32 = m.i32
        i32[i, FRAME_DONE] = 0
        while i32[i, FRAME_DONE] == 0 and i32[i, LOCKED] == 0:
            if wp.static(features.hooks):
                if i32[i, HOOK_SS] != 0:
                    ticked = cpu_tick(m, i, MIN_SLICE, stop_pc, k)
                    wp.static(sync_fn)(m, i)  # a single step never fuses (never TICK_SYNCED)
                    if ticked == TICK_STOPPED:
                        return 1
                    if hook_reached(m, i, i32[i, PC]) != 0:
                        return 1
                    continue
            if wp.static(CGB):  # PyBoy's coordinator: an HBlank HDMA block, not the CPU
                if hdma_block_due(m, i) != 0:
                    m.i64[i, CYCLES] = m.i64[i, CYCLES] + wp.int64(hdma_block(m, i))
                    wp.static(sync_fn)(m, i)
                    continue
            if halt_is_quiet(m, i) != 0:
                wp.static(halt_fn)(m, i)
                if i32[i, FRAME_DONE] == 0 and halt_is_quiet(m, i) != 0:
                    # the slice a timer/serial event or OAM DMA may end: all cpu_tick would do
                    m.i64[i, CYCLES] = m.i64[i, CYCLES] + slice_target(m, i)
                    wp.static(sync_fn)(m, i)
                continue
            ticked = cpu_tick(m, i, slice_target(m, i), stop_pc, k)
            if ticked != TICK_SYNCED:
                wp.static(sync_fn)(m, i)
            if ticked == TICK_STOPPED:
                return 1
            if wp.static(features.hooks):
                if i32[i, HOOK_SS] != 0:  # the slice ended at a hooked fetch
                    if hook_reached(m, i, i32[i, PC]) != 0:
                        return 1
        return 0

    return run_frame


def _make_kernel(features: StepFeatures, run_frame):
    module = features.module
    options = step_module_options(opcode_dispatch=features.opcode_dispatch)
    unique_options = {}
    if module == "unique":
        unique_options = {"module_options": options}
    elif module is not None:
        wp.set_module_options(options, module=module)

    @wp.func(name="step_env", module=features.module, inline=True)
    def step_env(
        m: wp.ref[Machine],
        i: int,
        word: int,
        frames: int,
        release_after: int,
        render: int,
        stop_pc: int,
        k: wp.ref[Machine],
    ):
        """The step of env ``i``: ``frames`` frames, ``word``'s buttons held from the first
        for ``release_after`` frames (the action's own hold and length where its word has
        them, and an early end: kernels/step/step_end.py)."""
        if wp.static(features.hooks):
            hooks_step_start(m, i)
        press = word & 0xFF
        hold = (word >> 8) & 0xFF
        length = word >> 16
        if hold != 0:
            release_after = hold
        if length != 0:
            frames = length
        end_from = wp.where(stop_pc < 0, step_end_start(m, i), -1)  # not in the boot run
        for f in range(frames):
            m.i32[i, STEP_FRAMES] = f + 1
            joypad_frame_start(m, i, wp.where(f == 0, press, 0), release_after)
            m.i32[i, LCD_RENDER] = 0
            if render != 0 and (f == frames - 1 or end_from >= 0):
                m.i32[i, LCD_RENDER] = 1  # with an early end any frame may be the last
            m.i64[i, SND_FRAME_START] = m.i64[i, CYCLES]  # the sound unit's sample count
            if run_frame(m, i, stop_pc, k) != 0:
                break
            joypad_frame_end(m, i)
            if m.i32[i, LOCKED] != 0:
                break
            if step_end_met(m, i, end_from, f + 1) != 0:
                break
        apu_step_end(m, i)

    if features.units_out_of_line:
        # The GPU shape takes the Machine twice: as the one element of an array, whose
        # reference the out-of-line units get (global memory: a kernel's struct argument
        # whose address goes to an out-of-line function is copied to the thread's stack
        # first, env_view's copy was 760 B of every thread's frame), and as the kernel's
        # own argument ``m``, which only the inlined, call-free instruction loop reads
        # (cpu_hot_loop), so its array descriptors come from the constant bank.
        cap = features.cuda_max_registers
        cap_option = {"cuda_max_registers": cap} if cap else {}

        @wp.kernel(
            name="step_kernel",
            module=module,
            enable_backward=False,
            **unique_options,
            **cap_option,
        )
        def step_kernel_gpu(
            m: Machine,
            ms: wp.array(dtype=Machine),
            order: wp.array(dtype=wp.int32),
            buttons: wp.array(dtype=wp.int32),
            frames: int,
            release_after: int,
            render: int,
            stop_pc: int,
        ):
            """``step_kernel`` on ``ms[0]`` (the same Machine as ``m``); thread ``t`` steps
            env ``order[t]`` (kernels/step/env_order.py; the identity by default)."""
            i = order[wp.tid()]
            if m.i32[i, LOCKED] != 0:
                return
            step_env(ms[0], i, buttons[i], frames, release_after, render, stop_pc, m)

        return step_kernel_gpu

    @wp.kernel(name="step_kernel", module=module, enable_backward=False, **unique_options)
    def step_kernel(
        m: Machine,
        buttons: wp.array(dtype=wp.int32),
        frames: int,
        release_after: int,
        render: int,
        stop_pc: int,
    ):
        """Run ``frames`` frames per env; ``buttons[i]`` is the step's action word: its button
        mask (0 = none), and the action's own hold and length (core/actions.py).

        ``stop_pc`` = -1 for a normal step. The reset passes ``POST_BOOT_PC`` (with no
        buttons, ``BOOT_MAX_FRAMES`` frames, render off) to run the boot ROM from power-on
        to where the oracle's reset snapshot is taken: PyBoy stops at a breakpoint on
        0x0100 after finishing that slice's unit syncs. The host then checks that every
        env has PC = 0x0100 with the boot ROM unmapped. (One kernel for both, so the
        CPU is compiled once.)
        """
        i = wp.tid()
        if m.i32[i, LOCKED] != 0:
            return
        e = env_view(m, i)  # env i as env 0 of a view: constant index, cheaper accesses
        step_env(e, 0, buttons[i], frames, release_after, render, stop_pc, e)

    return step_kernel


step_kernel = make_step_kernel(StepFeatures())


def step_kernel_variant(
    hooks: bool = False,
    units_out_of_line: bool = False,
    opcode_dispatch: bool = False,
    cuda_max_registers: int | None = None,
    hot_loop: bool = True,
):
    """The step kernel with these features compiled in: ``step_kernel`` when none is, else
    the variant, built on the first call (one per feature set) and compiled on its first
    launch. ``cuda_max_registers``: the GPU shape's register cap (``None``: its default,
    ``STEP_CUDA_MAX_REGISTERS``; 0: none); ``hot_loop=False``: the GPU shape without its
    call-free instruction loop (the shape before it, for timing both)."""
    features = StepFeatures(
        hooks=bool(hooks),
        units_out_of_line=bool(units_out_of_line),
        opcode_dispatch=bool(opcode_dispatch),
        cuda_max_registers=(
            STEP_CUDA_MAX_REGISTERS if cuda_max_registers is None else cuda_max_registers
        ),
        hot_loop=bool(hot_loop),
    )
    return _variant(features)


@functools.cache
def _variant(features: StepFeatures):
    return step_kernel if features == StepFeatures() else make_step_kernel(features)
