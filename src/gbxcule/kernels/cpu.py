"""One SM83 instruction, as PyBoy 2.8.1's ``CPU.fetch_and_execute`` runs it.

Decoding follows the opcode fields (x = op >> 6, y = op >> 3 & 7, z = op & 7,
p = y >> 1, q = y & 1) so whole families share one path. An instruction runs in
four phases: fetch, memory reads, compute, memory writes; each phase has one
bus call site (``cpu_regs.bus_in`` / ``bus_out``, shared with kernels/cpu_fast.py).

Timing: PyBoy adds an instruction's cycles at its end, except for the opcodes
that advance ``cpu.cycles`` in steps before an access. Every access sees the
cycle count PyBoy has at that moment (``ACCESS TIMING`` below, read from
PyBoy's opcodes.py), plus ``memory_access_offset`` = 4 for LD (DE),A,
LD A,(DE) and LD A,(HL), and 4/8 for the operand bytes of an instruction
fetched outside ROM.

    opcode group                          reads @ T        writes @ T   total
    INC/DEC (HL)                          HL @0            HL @4        12
    LD (HL),n8                            -                HL @4        12
    POP rr                                SP,SP+1 @0,4     -            12
    RET / RETI                            SP,SP+1 @4,8     -            16
    RET cc (taken / not)                  SP,SP+1 @8,12    -            20 / 8
    PUSH rr, RST n                        -                SP-1,SP-2 @8,12   16
    CALL n16, CALL cc (taken / not)       -                SP-1,SP-2 @16,20  24 / 12
    LDH [n8],A / LDH A,[n8]               @4 / -           - / @4       12
    LD [n16],A / LD A,[n16]               @8 / -           - / @8       16
    LD [n16],SP                           -                n16,n16+1 @0,0    20
    CB op [HL] (BIT / others)             HL @4            - / HL @8    12 / 16
    every other memory access             @0

Illegal opcodes (D3 DB DD E3 E4 EB EC ED F4 FC FD) lock the env:
``m.i32[i, LOCKED] = 0x100 | opcode``, nothing else changes. PyBoy instead spins
forever on them (0xDB is its debugger breakpoint), so there is nothing to match.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.alu import (
    FC,
    FH,
    acc_op,
    alu8,
    cb_op,
    condition,
    inc_dec8,
    signed8,
    sp_offset_flags,
)
from gbxcule.kernels.cpu_fast import cpu_fast, cpu_fast_cb, cpu_fast_mem
from gbxcule.kernels.cpu_regs import (
    CpuRegs,
    bus_in,
    bus_out,
    get_r8,
    get_r16,
    load_regs,
    store_regs,
)
from gbxcule.kernels.fetch import fetch, is_illegal
from gbxcule.kernels.ioregs import pending_interrupts
from gbxcule.kernels.state import (
    HALT_EI,
    HALTED,
    LOCKED,
    Machine,
)

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_execute(m: wp.ref[Machine], i: int) -> int:
    """Run the instruction at PC; returns PyBoy's ``bail`` (1: the run loop must stop),
    also 1 when the instruction locked the env."""
    r = load_regs(m, i)
    bail = cpu_step(m, i, r)
    store_regs(m, i, r)
    return bail


@wp.func(inline=True)  # one call site per kernel; +2 % on the CPU (A/B, 8 rounds)
def cpu_step(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs]) -> int:
    """``cpu_execute`` on registers held in ``regs`` (cycle counter included); memory gets
    the cycle count and HL before each bus access (kernels/cpu_regs.py)."""
    i32 = m.i32
    pc = regs.pc
    c0 = regs.cycles
    fetched = fetch(m, i, pc, c0, regs.h, regs.l)
    op = fetched & 0xFF
    n1 = (fetched >> 8) & 0xFF
    n16 = fetched >> 8
    cb = wp.where(op == 0xCB, 1, 0)
    if regs.ime_delay == 0 and m.cpu_fast_paths != 0:  # kernels/cpu_fast.py; none is illegal
        fast = wp.int32(0)
        if cb == 0:
            fast = cpu_fast(regs, op, n1, n16)
            if fast == 0:
                fast = cpu_fast_mem(m, i, regs, op, n1, n16)
        elif (n1 & 7) != 6:
            fast = cpu_fast_cb(regs, n1)
        if fast != 0:
            regs.cycles = c0 + wp.int64(fast & 0xFF)
            return fast >> 8
    if cb == 0 and is_illegal(op) != 0:
        i32[i, LOCKED] = 0x100 | op
        return 1
    if cb == 1:
        op = n1
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    p = y >> 1
    q = y & 1

    a = regs.a
    f = regs.f
    b = regs.b
    c = regs.c
    d = regs.d
    e = regs.e
    h = regs.h
    l = regs.l  # noqa: E741
    sp = regs.sp
    hl = (h << 8) | l
    ime = regs.ime
    ei_delay = regs.ime_delay
    bail = wp.int32(0)

    # ---- phase 1: memory reads ---------------------------------------------
    rd_n = wp.int32(0)
    rd_addr = wp.int32(0)
    rd_at = wp.int32(0)
    rd_offset = wp.int32(0)
    if cb == 1:
        if z == 6:
            rd_n = 1
            rd_addr = hl
            rd_at = 4
    else:
        if x == 0:
            if (z == 4 or z == 5) and y == 6:
                rd_n = 1
                rd_addr = hl
            if z == 2 and q == 1:
                rd_n = 1
                rd_addr = get_r16(regs, wp.min(p, 2))
                if p == 1:
                    rd_offset = 4
        if x == 1 and z == 6 and y != 6:
            rd_n = 1
            rd_addr = hl
            if y == 7:
                rd_offset = 4
        if x == 2 and z == 6:
            rd_n = 1
            rd_addr = hl
        if x == 3:
            if z == 0 and y < 4:
                if condition(y, f) != 0:
                    rd_n = 2
                    rd_addr = sp
                    rd_at = 8
            if z == 0 and y == 6:
                rd_n = 1
                rd_addr = 0xFF00 | n1
                rd_at = 4
            if z == 1 and (q == 0 or p < 2):
                rd_n = 2
                rd_addr = sp
                if q == 1:
                    rd_at = 4
            if z == 2 and y == 6:
                rd_n = 1
                rd_addr = 0xFF00 | c
            if z == 2 and y == 7:
                rd_n = 1
                rd_addr = n16
                rd_at = 8
            if z == 1 and y == 3:  # RETI: IME on, and bail if an interrupt is waiting
                ime = 1
                ei_delay = 0
                bail = wp.where(pending_interrupts(m, i) != 0, 1, 0)
    m0 = wp.int32(0)
    m1 = wp.int32(0)
    k = wp.int32(0)
    while k < rd_n:
        v = bus_in(m, i, regs, c0 + wp.int64(rd_at + 4 * k), rd_addr + k, rd_offset)
        if k == 0:
            m0 = v
        else:
            m1 = v
        k += 1

    # ---- phase 2: compute ---------------------------------------------------
    length = wp.int32(1)
    cycles = wp.int32(4)
    jump = wp.int32(-1)
    nf = f
    w8 = wp.int32(-1)  # register index (0-7 as in the opcode) written with v8
    v8 = wp.int32(0)
    w16 = wp.int32(-1)  # pair written with v16: 0 BC, 1 DE, 2 HL, 3 SP, 4 AF
    v16 = wp.int32(0)
    wr_n = wp.int32(0)
    wr_addr = wp.int32(0)
    wr_at = wp.int32(0)
    wr_step = wp.int32(4)
    wr_dir = wp.int32(-1)
    wr_offset = wp.int32(0)
    wv0 = wp.int32(0)  # bytes written, in order
    wv1 = wp.int32(0)
    src = wp.where(z == 6, m0, get_r8(regs, z))  # regs are written back only at the end
    if cb == 1:
        length = 2
        cycles = 8
        r = cb_op(op, src, f)
        t = r[0]
        nf = r[1]
        if z == 6:
            cycles = 16
            if x == 1:
                cycles = 12
            else:
                wr_n = 1
                wr_addr = hl
                wr_at = 8
                wv0 = t
        elif x != 1:
            w8 = z
            v8 = t
    else:
        if x == 0:
            if z == 0:
                if y == 1:  # LD [n16],SP
                    length = 3
                    cycles = 20
                    wr_n = 2
                    wr_addr = n16
                    wr_step = 0
                    wr_dir = 1
                    wv0 = sp & 0xFF
                    wv1 = sp >> 8
                if y == 2:  # STOP: a 2-byte no-op on DMG in PyBoy
                    length = 2
                if y >= 3:  # JR / JR cc
                    length = 2
                    cycles = 8
                    if y == 3 or condition(y - 4, f) != 0:
                        cycles = 12
                        jump = (pc + 2 + signed8(n1)) & 0xFFFF
            if z == 1:
                rr = get_r16(regs, p)
                if q == 0:  # LD rr,n16
                    length = 3
                    cycles = 12
                    w16 = p
                    v16 = n16
                else:  # ADD HL,rr
                    cycles = 8
                    t16 = hl + rr
                    nf = (f & 0x80) | wp.where((hl & 0xFFF) + (rr & 0xFFF) > 0xFFF, FH, 0)
                    nf = nf | wp.where(t16 > 0xFFFF, FC, 0)
                    w16 = 2
                    v16 = t16 & 0xFFFF
            if z == 2:  # LD [rr],A / LD A,[rr] with rr = BC, DE, HL+, HL-
                cycles = 8
                if q == 0:
                    wr_n = 1
                    wr_addr = get_r16(regs, wp.min(p, 2))
                    wv0 = a
                    if p == 1:
                        wr_offset = 4
                else:
                    w8 = 7
                    v8 = m0
                if p >= 2:
                    w16 = 2
                    v16 = (hl + 5 - 2 * p) & 0xFFFF
            if z == 3:  # INC rr / DEC rr
                cycles = 8
                w16 = p
                v16 = (get_r16(regs, p) + 1 - 2 * q) & 0xFFFF
            if z == 4 or z == 5:  # INC r / DEC r
                r = inc_dec8(wp.where(y == 6, m0, get_r8(regs, y)), z - 4, f)
                nf = r[1]
                if y == 6:
                    cycles = 12
                    wr_n = 1
                    wr_addr = hl
                    wr_at = 4
                    wv0 = r[0]
                else:
                    w8 = y
                    v8 = r[0]
            if z == 6:  # LD r,n8
                length = 2
                cycles = 8
                if y == 6:
                    cycles = 12
                    wr_n = 1
                    wr_addr = hl
                    wr_at = 4
                    wv0 = n1
                else:
                    w8 = y
                    v8 = n1
            if z == 7:  # accumulator ops
                w8 = 7
                r = acc_op(y, a, f)
                v8 = r[0]
                nf = r[1]
        if x == 1:
            if y == 6 and z == 6:  # HALT: PC stays; the run loop steps over it on wake-up
                length = 0
                i32[i, HALTED] = 1
                i32[i, HALT_EI] = wp.where(ei_delay == 1, 1, 0)
                bail = 1
            elif y == 6:
                cycles = 8
                wr_n = 1
                wr_addr = hl
                wv0 = src
            else:
                w8 = y
                v8 = src
                if z == 6:
                    cycles = 8
        if x == 2 or (x == 3 and z == 6):  # ALU A,r / ALU A,n8
            operand = src
            if x == 3:
                operand = n1
                length = 2
                cycles = 8
            elif z == 6:
                cycles = 8
            r = alu8(y, a, operand, f)
            w8 = 7
            v8 = r[0]
            nf = r[1]
        if x == 3:
            if z == 0:
                if y < 4:  # RET cc
                    cycles = 8
                    if rd_n == 2:
                        cycles = 20
                        jump = m0 | (m1 << 8)
                        w16 = 3
                        v16 = (sp + 2) & 0xFFFF
                if y == 4:  # LDH [n8],A
                    length = 2
                    cycles = 12
                    wr_n = 1
                    wr_addr = 0xFF00 | n1
                    wr_at = 4
                    wv0 = a
                if y == 5 or y == 7:  # ADD SP,e8 / LD HL,SP+e8
                    length = 2
                    nf = sp_offset_flags(sp, n1)
                    v16 = (sp + signed8(n1)) & 0xFFFF
                    cycles = 16
                    w16 = 3
                    if y == 7:
                        cycles = 12
                        w16 = 2
                if y == 6:  # LDH A,[n8]
                    length = 2
                    cycles = 12
                    w8 = 7
                    v8 = m0
            if z == 1:
                if q == 0:  # POP rr (AF: low nibble of F reads as 0)
                    cycles = 12
                    w16 = wp.where(p == 3, 4, p)
                    v16 = m0 | (m1 << 8)
                if q == 1 and p < 2:  # RET / RETI
                    cycles = 16
                    jump = m0 | (m1 << 8)
                if q == 0 or p < 2:
                    sp = (sp + 2) & 0xFFFF
                if y == 5:  # JP HL
                    jump = hl
                if y == 7:  # LD SP,HL
                    cycles = 8
                    sp = hl
            if z == 2:
                cycles = 8
                if y < 4:  # JP cc,n16
                    length = 3
                    cycles = 12
                    if condition(y, f) != 0:
                        cycles = 16
                        jump = n16
                if y == 4 or y == 5:  # LD [C],A / LD [n16],A
                    wr_n = 1
                    wr_addr = 0xFF00 | c
                    wv0 = a
                if y == 5:
                    length = 3
                    cycles = 16
                    wr_addr = n16
                    wr_at = 8
                if y == 6 or y == 7:  # LD A,[C] / LD A,[n16]
                    w8 = 7
                    v8 = m0
                if y == 7:
                    length = 3
                    cycles = 16
            if z == 3:
                if y == 0:  # JP n16
                    cycles = 16
                    jump = n16
                if y == 6:  # DI
                    ime = 0
                    ei_delay = 0
                if y == 7 and ei_delay == 0:  # EI
                    ei_delay = 2
            call = wp.int32(0)
            if z == 4:  # CALL cc,n16
                length = 3
                cycles = 12
                call = condition(y, f)
            if z == 5 and q == 1:  # CALL n16
                length = 3
                call = 1
            if z == 5 and q == 0:  # PUSH rr
                cycles = 16
                pair = wp.where(p == 3, (a << 8) | f, get_r16(regs, p))
                wv0 = pair >> 8
                wv1 = pair & 0xFF
                wr_at = 8
            if z == 7:  # RST
                cycles = 16
                jump = y * 8
                wv0 = (pc + 1) >> 8
                wv1 = (pc + 1) & 0xFF
                wr_at = 8
            if call != 0:
                cycles = 24
                jump = n16
                wv0 = ((pc + 3) & 0xFFFF) >> 8
                wv1 = (pc + 3) & 0xFF
                wr_at = 16
            if call != 0 or (z == 5 and q == 0) or z == 7:
                wr_n = 2
                wr_addr = (sp - 1) & 0xFFFF
                sp = (sp - 2) & 0xFFFF

    # ---- phase 3: memory writes ---------------------------------------------
    k = wp.int32(0)
    while k < wr_n:
        at = c0 + wp.int64(wr_at + wr_step * k)
        v = wp.where(k == 0, wv0, wv1)
        bail = bail | bus_out(m, i, regs, at, wr_addr + wr_dir * k, v, wr_offset)
        k += 1

    # ---- phase 4: write back ------------------------------------------------
    if w8 == 0:
        b = v8
    if w8 == 1:
        c = v8
    if w8 == 2:
        d = v8
    if w8 == 3:
        e = v8
    if w8 == 4:
        h = v8
    if w8 == 5:
        l = v8  # noqa: E741
    if w8 == 7:
        a = v8
    if w16 == 0:
        b = v16 >> 8
        c = v16 & 0xFF
    if w16 == 1:
        d = v16 >> 8
        e = v16 & 0xFF
    if w16 == 2:
        h = v16 >> 8
        l = v16 & 0xFF  # noqa: E741
    if w16 == 3:
        sp = v16
    if w16 == 4:
        a = v16 >> 8
        nf = v16 & 0xF0
    if jump < 0:
        jump = (pc + length) & 0xFFFF
    regs.pc = jump
    regs.sp = sp
    regs.a = a
    regs.f = nf
    regs.b = b
    regs.c = c
    regs.d = d
    regs.e = e
    regs.h = h
    regs.l = l
    regs.cycles = c0 + wp.int64(cycles)
    # PyBoy's EI countdown at the end of fetch_and_execute
    if ei_delay > 0:
        ei_delay = ei_delay - 1
        if ei_delay == 0:
            ime = 1
            bail = wp.where(pending_interrupts(m, i) != 0, 1, 0)
    regs.ime = ime
    regs.ime_delay = ei_delay
    return bail
