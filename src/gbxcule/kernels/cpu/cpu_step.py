"""One SM83 instruction: fetch, then the fast paths (kernels/cpu/cpu_fast.py) or the general
phases (kernels/cpu/cpu.py), in the step kernel's two shapes (``make_cpu_step``).

The CPU's shape inlines everything; the GPU's (kernels/step/step_cuda.py) keeps the rare
paths out of line (code fetched outside ROM, the general phases, and the fast memory
path's accesses that are not plain WRAM/HRAM, which go the general way), so the
instruction loop's registers are not spent on them. Both give the same results
(tests/test_step_shapes.py). The CPU device's own kernel (kernels/step/step_cpu.py) also
dispatches each base opcode to its own copy of the fast paths (``fast_by_opcode``).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.address_map import ROM_END
from gbxcule.kernels.board.bus import bus_write_at
from gbxcule.kernels.board.cgb import switch_speed
from gbxcule.kernels.cpu.cpu import (
    Instr,
    decode,
    exec_cb,
    exec_ld_alu,
    exec_x0_pairs,
    exec_x0_r8,
    exec_x3_calls,
    exec_x3_flow,
    read_phase,
    write_phase,
)
from gbxcule.kernels.cpu.cpu_fast import cpu_fast, cpu_fast_cb, cpu_fast_mem, cpu_fast_mem_direct
from gbxcule.kernels.cpu.cpu_regs import (
    CpuRegs,
    copy_regs,
    load_regs,
    publish_for_bus,
    reg_hl,
    reload_regs,
    store_regs,
)
from gbxcule.kernels.cpu.fetch import (
    fetch,
    fetch_outside_rom,
    fetch_rom_or_outlined,
    is_illegal,
    rom_code_at,
)
from gbxcule.kernels.state import LOCKED, Machine
from gbxcule.kernels.step.hooks import hook_maybe

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py): STOP switches the speed


@wp.func
def cpu_execute(m: wp.ref[Machine], i: int) -> int:
    """Run the instruction at PC; returns PyBoy's ``bail`` (1: the run loop must stop),
    also 1 when the instruction locked the env."""
    r = load_regs(m, i)
    bail = cpu_step(m, i, r)
    store_regs(m, i, r)
    return bail


def make_fast_paths(fast_mem, module: str | None):
    """The base opcodes' fast paths: ``cpu_fast``, then ``fast_mem`` (T-cycles | bail << 8,
    0 if neither runs ``op``)."""

    @wp.func(inline=True, module=module)
    def fast_paths(
        m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, n1: int, n16: int
    ) -> int:
        fast = cpu_fast(regs, op, n1, n16)
        if fast == 0:
            fast = wp.static(fast_mem)(m, i, regs, op, n1, n16)
        return fast

    return fast_paths


def make_fast_by_opcode(fast_paths, module: str | None):
    """``fast_paths`` with the opcode a constant: one copy per base opcode, picked by the
    opcode's value. The fast paths still decode by fields; in each copy clang folds that
    decode away (the opcode is known), leaving the opcode's own work, and it turns the 256
    tests into jump tables. The CPU's step only (kernels/step/step_cpu.py): x86 instructions
    per SM83 instruction on the busy ROM 128.7 -> 99.4, time -17.8 %; the game-like ROM
    141.4 -> 117.5 but no faster (its 103 opcodes make the indirect jump mispredict where
    the field decode's branches did not); NVRTC runs out of memory on the 256 copies
    (history/cpu-instruction-count.md)."""

    @wp.func(inline=True, module=module)
    def fast_by_opcode(
        m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, n1: int, n16: int
    ) -> int:
        for k in range(256):  # unrolled (kernels/codegen.py, DISPATCH_UNROLL): k a constant
            if op == k:
                return wp.static(fast_paths)(m, i, regs, k, n1, n16)
        return 0

    return fast_by_opcode


RUN_END = 0  # the run reached its end cycle
RUN_SLOW = 1  # the instruction at PC is not the run's: ``cpu_step`` runs it
RUN_BAIL = 2  # the last instruction bailed (PyBoy's bail)
RUN_SYNCED = 3  # a slice ended, its units synced, and the next one is not plain


def make_cpu_run_fast(module: str | None, end_slice, in_rom: bool = True, hooks: bool = False):
    """``cpu_run_fast``: the CPU dispatch's instruction loop (kernels/step/step_cpu.py), the fast
    paths by opcode (``fast_by_opcode``) on code in the mapped ROM banks, as one out-of-line
    function of its own: clang allocates its registers for the fast paths alone, not for
    the whole slice with its unit syncs and general decode. ``in_rom=False``:
    ``cpu_run_fast_ram``, the same on code outside ROM (fetched through the bus, as
    ``fetch_outside_rom`` does), a function of its own too: one loop for both, or a call
    for that fetch in this one, cost code in ROM 8-11 % (history/cpu-instruction-count.md).

    ``cpu_tick`` calls it only where nothing a fast path does can make it wrong, so the loop
    tests none of it per instruction: no ``stop_pc`` (the boot's), the boot ROM unmapped,
    no EI countdown (no fast path starts one: EI is general) and the fast paths on. Mapper
    and boot-ROM writes bail, so the banks hold for the run. It returns ``RUN_SLOW`` at the
    first instruction that is not the fast paths' or not in its memory (ROM, or outside
    it), before running it. Where a slice ends it calls ``end_slice`` (``cpu_tick``'s slice
    end, out of line: the unit syncs, then the next slice's end cycle, or -1 if the next
    slice is not plain) and runs on. Busy ROM -24 %, game-like -13 %, demo -1 %; the slice
    end here, not by returning to ``cpu_tick``: -10 % / -3 % more
    (history/cpu-instruction-count.md).

    ``hooks`` (the hooked step, kernels/step/hooks.py): code in ROM also returns ``RUN_SLOW``
    before an instruction whose PC the hook filter (``hook_maybe``) does not rule out, so
    ``cpu_tick`` looks it up as it does every fetch. The run's first PC is exempt:
    ``cpu_tick`` looked it up just before, and no bank changes during a run."""
    fast_paths = make_fast_by_opcode(make_fast_paths(cpu_fast_mem, module), module)

    name = ("cpu_run_fast" if in_rom else "cpu_run_fast_ram") + ("_hooked" if hooks else "")

    @wp.func(inline=False, name=name, module=module)
    def cpu_run_fast(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], end: wp.int64) -> wp.int64:
        """Run instructions until an instruction bails, the next one is not the run's or a
        slice ends with a next slice that is not plain (the slice's end cycle ``end``);
        returns the end cycle of the slice it stopped in << 2 | ``RUN_*``."""
        r = CpuRegs()  # a copy in locals: ``regs`` is the caller's, in its memory
        copy_regs(regs, r)
        # rom_code as a view built here: its stride is the compiler's constant, not a
        # field loaded and multiplied on the way from one PC to the next
        code = wp.array(ptr=m.rom_code.ptr, shape=(m.rom_code.shape[0],), dtype=wp.int32)
        if wp.static(hooks):
            first_pc = r.pc
            hook_row = m.i32  # the array once: stores through m may alias m.i32's fields
        out = RUN_END
        while r.cycles < end:
            fetched = wp.int32(0)
            if wp.static(in_rom):
                if r.pc + 2 >= ROM_END:
                    out = RUN_SLOW
                    break
                if wp.static(hooks):
                    if r.pc != first_pc and hook_maybe(hook_row, i, r.pc) != 0:
                        out = RUN_SLOW
                        break
                fetched = rom_code_at(code, r.pc, r.rom_lo, r.rom_hi)
            else:
                if r.pc + 2 < ROM_END:
                    out = RUN_SLOW
                    break
                fetched = fetch_outside_rom(m, i, r.pc, r.cycles, reg_hl(r))
            op = fetched & 0xFF
            n1 = (fetched >> 8) & 0xFF
            fast = wp.int32(0)
            if op != 0xCB:
                fast = wp.static(fast_paths)(m, i, r, op, n1, fetched >> 8)
            elif (n1 & 7) != 6:
                fast = cpu_fast_cb(r, n1)
            if fast == 0:
                out = RUN_SLOW
                break
            r.cycles = r.cycles + wp.int64(fast & 0xFF)
            if (fast >> 8) != 0:
                out = RUN_BAIL
                break
            if r.cycles >= end:
                next_end = wp.static(end_slice)(m, i, r.cycles)
                if next_end < wp.int64(0):
                    out = RUN_SYNCED
                    break
                end = next_end
        copy_regs(r, regs)
        return (end << wp.int64(2)) | wp.int64(out)

    return cpu_run_fast


def make_cpu_hot_loop(module: str | None, hooks: bool = False):
    """``cpu_hot_loop``: the GPU shape's instruction loop (kernels/step/step_cuda.py), inlined in
    ``cpu_tick`` and calling nothing: code in the mapped ROM banks through the register
    fast paths, CB on registers and the memory fast path on plain WRAM/HRAM bytes
    (``cpu_fast_mem_direct``). It returns ``RUN_SLOW`` before the first instruction that
    is none of these (code outside ROM, the general decode, an access to IO, VRAM or a ROM
    table), which ``cpu_tick`` runs out of line, and ``RUN_END`` at the slice's end cycle
    ``end``, whose unit sync ``cpu_tick`` runs out of line too: a loop with a call in it
    saves its live registers around the call, and the calls' registers spilled the whole
    loop (sm_90: 207 local loads, 189 local stores and 4 calls in it before;
    history/performance.md). Nothing it runs bails (no bus write), so it never returns
    ``RUN_BAIL``. ``k`` is the kernel's own ``Machine`` argument, so the array descriptors
    are read from the constant bank, not reloaded from global memory at each access.

    ``cpu_tick`` enters it only where nothing a fast path does can make it wrong, as it
    does ``cpu_run_fast``: no ``stop_pc``, the boot ROM unmapped, no EI countdown, the fast
    paths on. ``hooks``: it also stops before a PC the hook filter may hold (the first
    exempt, as in ``cpu_run_fast``). Returns ``end << 2 | RUN_*`` (``end`` unchanged)."""
    name = "cpu_hot_loop_hooked" if hooks else "cpu_hot_loop"
    fast_paths = make_fast_paths(cpu_fast_mem_direct, module)

    @wp.func(inline=True, name=name, module=module)
    def cpu_hot_loop(k: wp.ref[Machine], i: int, r: wp.ref[CpuRegs], end: wp.int64) -> wp.int64:
        code = wp.array(ptr=k.rom_code.ptr, shape=(k.rom_code.shape[0],), dtype=wp.int32)
        if wp.static(hooks):
            first_pc = r.pc
        out = RUN_END
        while r.cycles < end:
            if r.pc + 2 >= ROM_END:
                out = RUN_SLOW
                break
            if wp.static(hooks):
                if r.pc != first_pc and hook_maybe(k.i32, i, r.pc) != 0:
                    out = RUN_SLOW
                    break
            fetched = rom_code_at(code, r.pc, r.rom_lo, r.rom_hi)
            op = fetched & 0xFF
            n1 = (fetched >> 8) & 0xFF
            fast = wp.int32(0)
            if op != 0xCB:
                fast = wp.static(fast_paths)(k, i, r, op, n1, fetched >> 8)
            elif (n1 & 7) != 6:
                fast = cpu_fast_cb(r, n1)
            if fast == 0:
                out = RUN_SLOW
                break
            r.cycles = r.cycles + wp.int64(fast & 0xFF)
        return (end << wp.int64(2)) | wp.int64(out)

    return cpu_hot_loop


def make_cpu_step(
    out_of_line: bool = False,
    module: str | None = None,
    by_opcode: bool = False,
    fast: bool = True,
):
    """A ``cpu_step``: ``cpu_execute`` on registers held in ``regs`` (cycle counter
    included); memory gets the cycle count and HL before each bus access
    (kernels/cpu/cpu_regs.py).

    ``out_of_line`` picks where its rare paths run, code fetched outside ROM and the
    general phases (``cpu_general``): inlined (``cpu_step``, what the CPU device runs
    fastest) or called as one out-of-line copy each (the GPU-shaped step in
    kernels/step/step.py: their registers then stay out of the instruction loop), the fast
    memory path then taking plain WRAM/HRAM accesses only (``cpu_fast_mem_direct``).
    ``module``: the Warp module of a non-default one (``None``: this one). ``by_opcode``:
    the fast paths through ``fast_by_opcode`` (which shapes take it: ``StepFeatures``).
    ``fast=False``: no fast paths at all, every opcode the general way (the GPU shape,
    whose fast paths run in ``cpu_hot_loop`` alone: a second copy here would add their
    code and registers to the loop around it)."""
    # code outside ROM: inlined in the GPU shape's general step too (fast=False: its loop
    # is cpu_hot_loop's), where the call cost 8 B of stack over issue #41's 512 B budget
    # for the same spills; the shape before it (fast=True) keeps the out-of-line copy
    fetch_code = fetch_rom_or_outlined if out_of_line and fast else fetch
    general = cpu_general_outlined if out_of_line else cpu_general
    fast_paths = make_fast_paths(cpu_fast_mem_direct if out_of_line else cpu_fast_mem, module)
    if by_opcode:
        fast_paths = make_fast_by_opcode(fast_paths, module)

    # inlined: +2 % on the CPU (A/B, 8 rounds)
    @wp.func(inline=True, name="cpu_step" if fast else "cpu_step_general", module=module)
    def cpu_step(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs]) -> int:
        c0 = regs.cycles
        fetched = wp.static(fetch_code)(m, i, regs.pc, c0, regs.hl, regs.rom_lo, regs.rom_hi)
        op = fetched & 0xFF
        n1 = (fetched >> 8) & 0xFF
        n16 = fetched >> 8
        cb = wp.where(op == 0xCB, 1, 0)
        if wp.static(fast):
            if (
                regs.ime_delay == 0 and m.cpu_fast_paths != 0
            ):  # kernels/cpu/cpu_fast.py; none illegal
                ran = wp.int32(0)
                if cb == 0:
                    ran = wp.static(fast_paths)(m, i, regs, op, n1, n16)
                elif (n1 & 7) != 6:
                    ran = cpu_fast_cb(regs, n1)
                if ran != 0:
                    regs.cycles = c0 + wp.int64(ran & 0xFF)
                    return ran >> 8
        if cb == 0 and is_illegal(op) != 0:
            m.i32[i, LOCKED] = 0x100 | op
            return 1
        return wp.static(general)(m, i, regs, op, cb, n1, n16)

    return cpu_step


@wp.func(inline=False)
def cgb_stop(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs]):
    """PyBoy's STOP on CGB hardware, at the instruction's first cycle: ``switch_speed``,
    then ``setitem(0xFF04, 0)`` through the bus (which ends the slice)."""
    publish_for_bus(m, i, regs.cycles, reg_hl(regs))
    switch_speed(m, i, regs.cycles)
    bus_write_at(m, i, 0xFF04, 0, 0)


def _make_cpu_general(out_of_line: bool):
    reads = read_phase_outlined if out_of_line else read_phase
    writes = write_phase_outlined if out_of_line else write_phase

    def cpu_general(
        m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, cb: int, n1: int, n16: int
    ) -> int:
        """Every opcode through its phases: reads, compute, writes and write-back."""
        ins = decode(regs, wp.where(cb == 1, n1, op), cb, n1, n16)
        if wp.static(CGB):  # STOP on CGB hardware: the speed switch, then a DIV write
            if cb == 0 and op == 0x10:
                cgb_stop(m, i, regs)
                exec_x0_pairs(regs, ins)  # STOP's 2 bytes
                wp.static(writes)(m, i, regs, ins)
                return 1
        wp.static(reads)(m, i, regs, ins)
        if cb == 1:
            exec_cb(regs, ins)
        elif ins.x == 0 and ins.z < 4:
            exec_x0_pairs(regs, ins)
        elif ins.x == 0:
            exec_x0_r8(regs, ins)
        elif ins.x == 3 and ins.z < 4:
            exec_x3_flow(regs, ins)
        elif ins.x == 3 and ins.z != 6:
            exec_x3_calls(regs, ins)
        else:
            exec_ld_alu(m, i, regs, ins)
        return wp.static(writes)(m, i, regs, ins)

    if out_of_line:
        return wp.func(cpu_general, name="cpu_general_phases_outlined")
    return wp.func(cpu_general, inline=True)  # one call site; game-like ROM -1.4 % (A/B)


@wp.func(inline=False)
def read_phase_outlined(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """``read_phase`` as one out-of-line copy (the GPU shape's general path)."""
    read_phase(m, i, regs, ins)


@wp.func(inline=False)
def write_phase_outlined(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], ins: wp.ref[Instr]
) -> int:
    """``write_phase`` as one out-of-line copy (the GPU shape's general path)."""
    return write_phase(m, i, regs, ins)


# The CPU inlines the phases; the GPU shape calls them out of line, so what the general
# path holds across its bus accesses (the decoded Instr) lives in its frame, not in
# spilled registers (sm_90: cpu_general_on_machine 1,080 -> 152 B of spill stores).
cpu_general = _make_cpu_general(out_of_line=False)
cpu_general_phases_outlined = _make_cpu_general(out_of_line=True)


@wp.func(inline=False)
def cpu_general_on_machine(m: wp.ref[Machine], i: int, op: int, cb: int, n1: int, n16: int) -> int:
    """``cpu_general`` on the registers as stored in ``m`` (``cpu_general_outlined``)."""
    regs = load_regs(m, i)
    bail = cpu_general_phases_outlined(m, i, regs, op, cb, n1, n16)
    store_regs(m, i, regs)
    return bail


@wp.func
def cpu_general_outlined(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, cb: int, n1: int, n16: int
) -> int:
    """``cpu_general`` as one out-of-line copy (``make_cpu_step(out_of_line=True)``). The
    registers go through ``m``, not by reference: an out-of-line callee taking their
    address puts the caller's ``regs`` in local memory for the whole instruction loop
    (sm_90 PTX: 455 -> 316 local loads/stores in the step kernel)."""
    store_regs(m, i, regs)
    bail = cpu_general_on_machine(m, i, op, cb, n1, n16)
    reload_regs(m, i, regs)
    return bail


cpu_step = make_cpu_step()
