"""The CPU's fast paths: the common opcodes, each decoded on its own.

``cpu_step`` (kernels/cpu/cpu.py) decodes every opcode through the same phases (reads,
compute, writes, write-back), so one code path serves whole opcode families; on
the CPU device that costs every instruction the work of all phases. The opcodes a
game runs most are simple, and run here directly; ``cpu_step`` skips its phases
for them:
- ``cpu_fast``: register-only base opcodes (LD r,r', ALU, INC/DEC, 16-bit loads and
  INC/DEC, ADD HL,rr, the accumulator rotates, DAA, CPL, SCF, CCF, JR/JP, JP HL,
  LD SP,HL, DI, NOP);
- ``cpu_fast_cb``: CB opcodes on registers;
- ``cpu_fast_mem``: loads and stores through HL/BC/DE/HL+/HL-, LDH, [C] and [n16],
  ALU A,[HL], INC/DEC [HL], LD [HL],n8, PUSH/POP, CALL/RET (and their conditional
  forms), RST. Each access at the cycle and with the access offset the phases give it.
Everything else (HALT, STOP, EI, RETI, CB on [HL], the SP arithmetic, LD [n16],SP)
and any instruction while an EI countdown runs go the general way. Measured in
history/performance.md (step 13). The two ways agree
exactly: the lockstep with PyBoy and the instruction-by-instruction fuzz traces run
both, and a wrong cycle count or flag in either fails tens of tests.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.cpu.alu import (
    FC,
    FH,
    acc_op,
    alu8,
    cb_op,
    condition,
    inc_dec8,
    signed8,
)
from gbxcule.kernels.cpu.cpu_regs import (
    CpuRegs,
    bus_in,
    bus_out,
    direct_in,
    direct_out,
    get_r8,
    get_r16,
    is_direct,
    reg_hl,
    set_r8,
    set_r16,
)
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_fast(regs: wp.ref[CpuRegs], op: int, n1: int, n16: int) -> int:
    """Run base opcode ``op`` (operands ``n1`` / ``n16``) if it touches only registers: its
    T-cycles, with PC and the registers updated; 0 (nothing changed) otherwise."""
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    pc = regs.pc
    cyc = wp.int32(0)
    npc = pc + 1
    if x == 1:
        if y != 6 and z != 6:  # LD r,r'
            set_r8(regs, y, get_r8(regs, z))
            cyc = 4
    elif x == 2:
        if z != 6:  # ALU A,r
            r = alu8(y, regs.a, get_r8(regs, z), regs.f)
            regs.a = r[0]
            regs.f = r[1]
            cyc = 4
    elif x == 0:  # one branch per z: a short if/elif chain, no test repeated
        if z == 0:
            if y == 0:  # NOP
                cyc = 4
            elif y >= 3:  # JR / JR cc
                cyc = 8
                npc = pc + 2
                if y == 3 or condition(y - 4, regs.f) != 0:
                    cyc = 12
                    npc = pc + 2 + signed8(n1)
        elif z == 1:
            if (y & 1) == 0:  # LD rr,n16
                set_r16(regs, y >> 1, n16)
                cyc = 12
                npc = pc + 3
            else:  # ADD HL,rr
                hl = reg_hl(regs)
                rr = get_r16(regs, y >> 1)
                t16 = hl + rr
                nf = (regs.f & 0x80) | wp.where((hl & 0xFFF) + (rr & 0xFFF) > 0xFFF, FH, 0)
                regs.f = nf | wp.where(t16 > 0xFFFF, FC, 0)
                set_r16(regs, 2, t16 & 0xFFFF)
                cyc = 8
        elif z == 3:  # INC rr / DEC rr
            set_r16(regs, y >> 1, (get_r16(regs, y >> 1) + 1 - 2 * (y & 1)) & 0xFFFF)
            cyc = 8
        elif z == 4 or z == 5:
            if y != 6:  # INC r / DEC r
                r = inc_dec8(get_r8(regs, y), z - 4, regs.f)
                set_r8(regs, y, r[0])
                regs.f = r[1]
                cyc = 4
        elif z == 6:
            if y != 6:  # LD r,n8
                set_r8(regs, y, n1)
                cyc = 8
                npc = pc + 2
        elif z == 7:  # RLCA RRCA RLA RRA DAA CPL SCF CCF
            r = acc_op(y, regs.a, regs.f)
            regs.a = r[0]
            regs.f = r[1]
            cyc = 4
    else:
        if z == 6:  # ALU A,n8
            r = alu8(y, regs.a, n1, regs.f)
            regs.a = r[0]
            regs.f = r[1]
            cyc = 8
            npc = pc + 2
        elif z == 3:
            if y == 0:  # JP n16
                cyc = 16
                npc = n16
            elif y == 6:  # DI (no EI countdown runs here)
                regs.ime = 0
                cyc = 4
        elif z == 1:
            if y == 5:  # JP HL
                cyc = 4
                npc = reg_hl(regs)
            elif y == 7:  # LD SP,HL
                regs.sp = reg_hl(regs)
                cyc = 8
        elif z == 2:
            if y < 4:  # JP cc,n16
                cyc = 12
                npc = pc + 3
                if condition(y, regs.f) != 0:
                    cyc = 16
                    npc = n16
    if cyc != 0:
        regs.pc = npc & 0xFFFF
    return cyc


@wp.func
def cpu_fast_cb(regs: wp.ref[CpuRegs], op: int) -> int:
    """CB opcode ``op`` on a register (not [HL]): 8 T-cycles, registers and PC updated."""
    x = op >> 6
    z = op & 7
    r = cb_op(op, get_r8(regs, z), regs.f)
    if x < 2:  # RES / SET leave F
        regs.f = r[1]
    if x != 1:  # BIT writes no register
        set_r8(regs, z, r[0])
    regs.pc = (regs.pc + 2) & 0xFFFF
    return 8


def make_cpu_fast_mem(direct_only: bool):
    """``cpu_fast_mem``, whose accesses go through ``direct_in``/``direct_out`` when
    ``direct_only`` (``cpu_fast_mem_direct``)."""
    rd = direct_in if direct_only else bus_in
    wr = direct_out if direct_only else bus_out

    def cpu_fast_mem(
        m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, n1: int, n16: int
    ) -> int:
        """Run base opcode ``op`` if it is one of the common loads, stores and stack ops: its
        T-cycles | bail << 8 (bail as the bus returns it), registers and PC updated; 0 if not.

        Each access happens at the cycle and with the access offset ``cpu_step``'s phases
        give it (PyBoy's timing): loads through HL, BC, DE, HL+/HL-, LDH, [C] and [n16],
        ALU A,[HL], INC/DEC [HL], LD [HL],n8, PUSH/POP, CALL/RET (and cc), RST.
        """
        x = op >> 6
        y = (op >> 3) & 7
        z = op & 7
        c0 = regs.cycles
        hl = reg_hl(regs)
        pc = regs.pc
        cyc = wp.int32(0)
        bail = wp.int32(0)
        npc = pc + 1
        if x == 1:
            if z == 6 and y != 6:  # LD r,[HL] (LD A,[HL] reads with PyBoy's offset 4)
                set_r8(regs, y, wp.static(rd)(m, i, regs, c0, hl, wp.where(y == 7, 4, 0)))
                cyc = 8
            elif y == 6 and z != 6:  # LD [HL],r
                bail = wp.static(wr)(m, i, regs, c0, hl, get_r8(regs, z), 0)
                cyc = 8
        elif x == 2:
            if z == 6:  # ALU A,[HL]
                r = alu8(y, regs.a, wp.static(rd)(m, i, regs, c0, hl, 0), regs.f)
                regs.a = r[0]
                regs.f = r[1]
                cyc = 8
        elif x == 0:
            if z == 2:  # LD [rr],A / LD A,[rr]: BC, DE (offset 4), HL+, HL-
                p = y >> 1
                addr = get_r16(regs, wp.min(p, 2))
                off = wp.where(p == 1, 4, 0)
                if (y & 1) == 0:
                    bail = wp.static(wr)(m, i, regs, c0, addr, regs.a, off)
                else:
                    regs.a = wp.static(rd)(m, i, regs, c0, addr, off)
                if p >= 2:
                    set_r16(regs, 2, (hl + 5 - 2 * p) & 0xFFFF)
                cyc = 8
            elif z == 4 or z == 5:
                if y == 6:  # INC [HL] / DEC [HL]
                    r = inc_dec8(wp.static(rd)(m, i, regs, c0, hl, 0), z - 4, regs.f)
                    bail = wp.static(wr)(m, i, regs, c0 + wp.int64(4), hl, r[0], 0)
                    regs.f = r[1]
                    cyc = 12
            elif z == 6:
                if y == 6:  # LD [HL],n8
                    bail = wp.static(wr)(m, i, regs, c0 + wp.int64(4), hl, n1, 0)
                    cyc = 12
                    npc = pc + 2
        else:
            sp = regs.sp
            push = wp.int32(-1)  # a 16-bit value pushed with its first byte at c0 + push_at
            push_at = wp.int32(8)
            pop_at = wp.int32(-1)  # a 16-bit value popped with its first byte at c0 + pop_at
            call = wp.int32(-1)  # CALL / CALL cc: 1 taken, 0 not
            if z == 0:
                if y < 4:  # RET cc
                    cyc = 8
                    if condition(y, regs.f) != 0:
                        pop_at = 8
                        cyc = 20
                elif y == 4:  # LDH [n8],A
                    bail = wp.static(wr)(m, i, regs, c0 + wp.int64(4), 0xFF00 | n1, regs.a, 0)
                    cyc = 12
                    npc = pc + 2
                elif y == 6:  # LDH A,[n8]
                    regs.a = wp.static(rd)(m, i, regs, c0 + wp.int64(4), 0xFF00 | n1, 0)
                    cyc = 12
                    npc = pc + 2
            elif z == 1:
                if (y & 1) == 0:  # POP rr
                    pop_at = 0
                    cyc = 12
                elif y == 1:  # RET
                    pop_at = 4
                    cyc = 16
            elif z == 2:
                if y == 4:  # LD [C],A
                    bail = wp.static(wr)(m, i, regs, c0, 0xFF00 | get_r8(regs, 1), regs.a, 0)
                    cyc = 8
                elif y == 5:  # LD [n16],A
                    bail = wp.static(wr)(m, i, regs, c0 + wp.int64(8), n16, regs.a, 0)
                    cyc = 16
                    npc = pc + 3
                elif y == 6:  # LD A,[C]
                    regs.a = wp.static(rd)(m, i, regs, c0, 0xFF00 | get_r8(regs, 1), 0)
                    cyc = 8
                elif y == 7:  # LD A,[n16]
                    regs.a = wp.static(rd)(m, i, regs, c0 + wp.int64(8), n16, 0)
                    cyc = 16
                    npc = pc + 3
            elif z == 4:
                if y < 4:  # CALL cc,n16
                    call = condition(y, regs.f)
            elif z == 5:
                if (y & 1) == 0:  # PUSH rr
                    push = get_r16(regs, y >> 1)
                    if y == 6:
                        push = (regs.a << 8) | regs.f
                    cyc = 16
                elif y == 1:  # CALL n16
                    call = 1
            elif z == 7:  # RST
                push = (pc + 1) & 0xFFFF
                cyc = 16
                npc = y * 8
            if call >= 0:
                cyc = 12
                npc = pc + 3
                if call == 1:
                    push = (pc + 3) & 0xFFFF
                    push_at = 16
                    cyc = 24
                    npc = n16
            if push >= 0:
                bail = wp.static(wr)(m, i, regs, c0 + wp.int64(push_at), sp - 1, push >> 8, 0)
                bail = bail | wp.static(wr)(m, i, regs, c0 + wp.int64(push_at + 4), sp - 2, push, 0)
                regs.sp = (sp - 2) & 0xFFFF
            if pop_at >= 0:
                v = wp.static(rd)(m, i, regs, c0 + wp.int64(pop_at), sp, 0)
                v = v | (wp.static(rd)(m, i, regs, c0 + wp.int64(pop_at + 4), sp + 1, 0) << 8)
                regs.sp = (sp + 2) & 0xFFFF
                if z == 1 and (y & 1) == 0:  # POP rr; AF is set_r16's pair 4
                    set_r16(regs, wp.where(y == 6, 4, y >> 1), v)
                else:
                    npc = v
        if cyc != 0:
            regs.pc = npc & 0xFFFF
        return cyc | (bail << 8)

    return wp.func(cpu_fast_mem, name="cpu_fast_mem_direct_accesses" if direct_only else None)


cpu_fast_mem = make_cpu_fast_mem(direct_only=False)
_fast_mem_direct_accesses = make_cpu_fast_mem(direct_only=True)


@wp.func
def fast_mem_addresses(regs: wp.ref[CpuRegs], op: int, n1: int, n16: int) -> wp.vec2i:
    """The two addresses ``cpu_fast_mem`` may access for ``op`` (the same one twice where it
    makes one access): HL, BC/DE/HL+/HL-, $FF00+n8 or +C, n16, and for the stack ops both
    bytes."""
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    a = reg_hl(regs)
    b = a
    if x == 0 and z == 2:
        a = get_r16(regs, wp.min(y >> 1, 2))
        b = a
    elif x == 3:
        sp = regs.sp
        if z == 0 and y >= 4:  # LDH
            a = 0xFF00 | n1
            b = a
        elif z == 2:  # [C], [n16]
            a = wp.where((y & 1) == 0, 0xFF00 | get_r8(regs, 1), n16)
            b = a
        elif z <= 1:  # POP, RET, RET cc
            a = sp
            b = sp + 1
        else:  # PUSH, CALL, CALL cc, RST
            a = sp - 1
            b = sp - 2
    return wp.vec2i(a, b)


@wp.func
def fast_mem_is_direct(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, n1: int, n16: int
) -> int:
    """1 when every access ``cpu_fast_mem`` makes for ``op`` is ``is_direct`` (WRAM, HRAM)."""
    ab = fast_mem_addresses(regs, op, n1, n16)
    return is_direct(m, i, ab[0]) & is_direct(m, i, ab[1])


@wp.func
def cpu_fast_mem_direct(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], op: int, n1: int, n16: int
) -> int:
    """``cpu_fast_mem`` for the GPU shape (``make_cpu_step``): it runs an opcode only when
    all its accesses are plain WRAM/HRAM bytes, read and written without a bus call, and
    leaves the rest (ROM tables, IO, VRAM) to the general path. Each of ``cpu_fast_mem``'s
    18 call sites of the slow bus made the step kernel save its live registers around it
    (sm_90 spill stores, history/performance.md)."""
    if fast_mem_is_direct(m, i, regs, op, n1, n16) == 0:
        return 0
    return _fast_mem_direct_accesses(m, i, regs, op, n1, n16)
