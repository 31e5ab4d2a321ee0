"""One SM83 instruction, as PyBoy 2.8.1's ``CPU.fetch_and_execute`` runs it.

Decoding follows the opcode fields (x = op >> 6, y = op >> 3 & 7, z = op & 7,
p = y >> 1, q = y & 1) so whole families share one path. An instruction runs in
phases that hand an ``Instr`` on: fetch and decode (``cpu_step``), memory reads
(``read_phase``), compute (one helper per quarter of the opcode table, ``exec_*``:
they plan the writes and the register write-back), memory writes and write-back
(``write_phase``). The two memory phases are the only bus call sites
(``cpu_regs.bus_in`` / ``bus_out``, shared with kernels/cpu/cpu_fast.py), and registers
change only in the write-back, so every access sees the registers the instruction
started with.

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

from gbxcule.kernels.board.ioregs import pending_interrupts
from gbxcule.kernels.cpu.alu import (
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
from gbxcule.kernels.cpu.cpu_regs import (
    CpuRegs,
    bus_in,
    bus_out,
    get_r8,
    get_r16,
    reg_hl,
    set_r8,
    set_r16,
)
from gbxcule.kernels.state import (
    HALT_EI,
    HALTED,
    Machine,
)

wp.set_module_options({"enable_backward": False})


@wp.struct
class Instr:
    """One instruction on its way through the phases: its decode, the bytes read, the
    planned writes and the register write-back. Write ``k`` runs at cycle
    ``c0 + wr_at + wr_step * k`` at address ``wr_addr + wr_dir * k``."""

    cb: wp.int32  # 1: a CB opcode, whose fields x..q are those of the byte after 0xCB
    x: wp.int32
    y: wp.int32
    z: wp.int32
    p: wp.int32
    q: wp.int32
    n1: wp.int32  # the byte after the opcode
    n16: wp.int32  # the two bytes after the opcode, little-endian
    rd_n: wp.int32  # bytes read (0-2)
    m0: wp.int32  # bytes read, in order
    m1: wp.int32
    wr_n: wp.int32  # bytes written (0-2)
    wr_addr: wp.int32
    wr_at: wp.int32
    wr_step: wp.int32
    wr_dir: wp.int32
    wr_offset: wp.int32
    wv0: wp.int32  # bytes written, in order
    wv1: wp.int32
    length: wp.int32  # PC advance when nothing jumps
    cycles: wp.int32
    jump: wp.int32  # the next PC; -1: PC + length
    f: wp.int32  # F after the instruction
    w8: wp.int32  # register (0-7 as in the opcode; -1: none) written with v8
    v8: wp.int32
    w16: wp.int32  # pair written with v16 (set_r16: 0 BC, 1 DE, 2 HL, 3 SP, 4 AF; -1: none)
    v16: wp.int32
    sp: wp.int32  # SP after the instruction, unless w16 writes it
    bail: wp.int32  # PyBoy's bail so far


@wp.func
def decode(regs: wp.ref[CpuRegs], op: int, cb: int, n1: int, n16: int) -> Instr:
    """``op``'s fields and operands, and the defaults: 1 byte, 4 cycles, no access, no
    register written, F and SP unchanged."""
    ins = Instr()
    ins.cb = cb
    ins.x = op >> 6
    ins.y = (op >> 3) & 7
    ins.z = op & 7
    ins.p = ins.y >> 1
    ins.q = ins.y & 1
    ins.n1 = n1
    ins.n16 = n16
    ins.wr_step = 4
    ins.wr_dir = -1
    ins.length = 1
    ins.cycles = 4
    ins.jump = -1
    ins.f = regs.f
    ins.w8 = -1
    ins.w16 = -1
    ins.sp = regs.sp
    return ins


@wp.func
def read_phase(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """Phase 1: the instruction's memory reads, into ``ins.m0`` / ``ins.m1``."""
    x = ins.x
    y = ins.y
    z = ins.z
    p = ins.p
    q = ins.q
    hl = reg_hl(regs)
    n = wp.int32(0)
    addr = wp.int32(0)
    at = wp.int32(0)
    offset = wp.int32(0)  # PyBoy's memory_access_offset
    if ins.cb == 1:
        if z == 6:
            n = 1
            addr = hl
            at = 4
    elif x == 0:
        if (z == 4 or z == 5) and y == 6:
            n = 1
            addr = hl
        if z == 2 and q == 1:
            n = 1
            addr = get_r16(regs, wp.min(p, 2))
            if p == 1:
                offset = 4
    elif x == 1:
        if z == 6 and y != 6:
            n = 1
            addr = hl
            if y == 7:
                offset = 4
    elif x == 2:
        if z == 6:
            n = 1
            addr = hl
    else:
        if z == 0 and y < 4:
            if condition(y, regs.f) != 0:
                n = 2
                addr = regs.sp
                at = 8
        if z == 0 and y == 6:
            n = 1
            addr = 0xFF00 | ins.n1
            at = 4
        if z == 1 and (q == 0 or p < 2):
            n = 2
            addr = regs.sp
            if q == 1:
                at = 4
        if z == 2 and y == 6:
            n = 1
            addr = 0xFF00 | get_r8(regs, 1)
        if z == 2 and y == 7:
            n = 1
            addr = ins.n16
            at = 8
        if z == 1 and y == 3:  # RETI: IME on, and bail if an interrupt is waiting
            regs.ime = 1
            regs.ime_delay = 0
            ins.bail = wp.where(pending_interrupts(m, i) != 0, 1, 0)
    ins.rd_n = n
    k = wp.int32(0)
    while k < n:
        v = bus_in(m, i, regs, regs.cycles + wp.int64(at + 4 * k), addr + k, offset)
        if k == 0:
            ins.m0 = v
        else:
            ins.m1 = v
        k += 1


@wp.func
def exec_cb(regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """CB opcodes: rotates, shifts and SWAP, BIT, RES, SET on a register or [HL]."""
    z = ins.z
    ins.length = 2
    ins.cycles = 8
    r = cb_op(ins.n1, wp.where(z == 6, ins.m0, get_r8(regs, z)), regs.f)  # n1: the CB opcode
    ins.f = r[1]
    if z == 6:
        ins.cycles = 16
        if ins.x == 1:
            ins.cycles = 12
        else:
            ins.wr_n = 1
            ins.wr_addr = reg_hl(regs)
            ins.wr_at = 8
            ins.wv0 = r[0]
    elif ins.x != 1:
        ins.w8 = z
        ins.v8 = r[0]


@wp.func
def exec_x0_pairs(regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """x = 0, z = 0-3: NOP, LD [n16],SP, STOP, JR, the 16-bit loads, ADD HL,rr, the loads
    through BC/DE/HL+/HL-, INC/DEC rr."""
    y = ins.y
    z = ins.z
    p = ins.p
    q = ins.q
    hl = reg_hl(regs)
    if z == 0:
        if y == 1:  # LD [n16],SP
            ins.length = 3
            ins.cycles = 20
            ins.wr_n = 2
            ins.wr_addr = ins.n16
            ins.wr_step = 0
            ins.wr_dir = 1
            ins.wv0 = regs.sp & 0xFF
            ins.wv1 = regs.sp >> 8
        if y == 2:  # STOP: a 2-byte no-op on DMG in PyBoy
            ins.length = 2
        if y >= 3:  # JR / JR cc
            ins.length = 2
            ins.cycles = 8
            if y == 3 or condition(y - 4, regs.f) != 0:
                ins.cycles = 12
                ins.jump = (regs.pc + 2 + signed8(ins.n1)) & 0xFFFF
    if z == 1:
        rr = get_r16(regs, p)
        if q == 0:  # LD rr,n16
            ins.length = 3
            ins.cycles = 12
            ins.w16 = p
            ins.v16 = ins.n16
        else:  # ADD HL,rr
            ins.cycles = 8
            t16 = hl + rr
            nf = (regs.f & 0x80) | wp.where((hl & 0xFFF) + (rr & 0xFFF) > 0xFFF, FH, 0)
            ins.f = nf | wp.where(t16 > 0xFFFF, FC, 0)
            ins.w16 = 2
            ins.v16 = t16 & 0xFFFF
    if z == 2:  # LD [rr],A / LD A,[rr] with rr = BC, DE, HL+, HL-
        ins.cycles = 8
        if q == 0:
            ins.wr_n = 1
            ins.wr_addr = get_r16(regs, wp.min(p, 2))
            ins.wv0 = regs.a
            if p == 1:
                ins.wr_offset = 4
        else:
            ins.w8 = 7
            ins.v8 = ins.m0
        if p >= 2:
            ins.w16 = 2
            ins.v16 = (hl + 5 - 2 * p) & 0xFFFF
    if z == 3:  # INC rr / DEC rr
        ins.cycles = 8
        ins.w16 = p
        ins.v16 = (get_r16(regs, p) + 1 - 2 * q) & 0xFFFF


@wp.func
def exec_x0_r8(regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """x = 0, z = 4-7: INC r, DEC r, LD r,n8 (r may be [HL]), the accumulator ops."""
    y = ins.y
    z = ins.z
    if z == 4 or z == 5:  # INC r / DEC r
        r = inc_dec8(wp.where(y == 6, ins.m0, get_r8(regs, y)), z - 4, regs.f)
        ins.f = r[1]
        if y == 6:
            ins.cycles = 12
            ins.wr_n = 1
            ins.wr_addr = reg_hl(regs)
            ins.wr_at = 4
            ins.wv0 = r[0]
        else:
            ins.w8 = y
            ins.v8 = r[0]
    if z == 6:  # LD r,n8
        ins.length = 2
        ins.cycles = 8
        if y == 6:
            ins.cycles = 12
            ins.wr_n = 1
            ins.wr_addr = reg_hl(regs)
            ins.wr_at = 4
            ins.wv0 = ins.n1
        else:
            ins.w8 = y
            ins.v8 = ins.n1
    if z == 7:  # accumulator ops
        r = acc_op(y, regs.a, regs.f)
        ins.w8 = 7
        ins.v8 = r[0]
        ins.f = r[1]


@wp.func
def exec_ld_alu(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """x = 1: LD r,r' (r or r' may be [HL]) and HALT; x = 2: ALU A,r; x = 3, z = 6:
    ALU A,n8."""
    x = ins.x
    y = ins.y
    z = ins.z
    src = wp.where(z == 6, ins.m0, get_r8(regs, z))
    if x == 1:
        if y == 6 and z == 6:  # HALT: PC stays; the run loop steps over it on wake-up
            ins.length = 0
            m.i32[i, HALTED] = 1
            m.i32[i, HALT_EI] = wp.where(regs.ime_delay == 1, 1, 0)
            ins.bail = 1
        elif y == 6:
            ins.cycles = 8
            ins.wr_n = 1
            ins.wr_addr = reg_hl(regs)
            ins.wv0 = src
        else:
            ins.w8 = y
            ins.v8 = src
            if z == 6:
                ins.cycles = 8
    else:
        operand = src
        if x == 3:
            operand = ins.n1
            ins.length = 2
            ins.cycles = 8
        elif z == 6:
            ins.cycles = 8
        r = alu8(y, regs.a, operand, regs.f)
        ins.w8 = 7
        ins.v8 = r[0]
        ins.f = r[1]


@wp.func
def exec_x3_flow(regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """x = 3, z = 0-3: RET cc, LDH, the SP arithmetic, POP, RET, RETI, JP HL, LD SP,HL,
    JP cc, the loads through [C] and [n16], JP, DI, EI."""
    y = ins.y
    z = ins.z
    p = ins.p
    q = ins.q
    sp = regs.sp
    if z == 0:
        if y < 4:  # RET cc
            ins.cycles = 8
            if ins.rd_n == 2:
                ins.cycles = 20
                ins.jump = ins.m0 | (ins.m1 << 8)
                ins.w16 = 3
                ins.v16 = (sp + 2) & 0xFFFF
        if y == 4:  # LDH [n8],A
            ins.length = 2
            ins.cycles = 12
            ins.wr_n = 1
            ins.wr_addr = 0xFF00 | ins.n1
            ins.wr_at = 4
            ins.wv0 = regs.a
        if y == 5 or y == 7:  # ADD SP,e8 / LD HL,SP+e8
            ins.length = 2
            ins.f = sp_offset_flags(sp, ins.n1)
            ins.v16 = (sp + signed8(ins.n1)) & 0xFFFF
            ins.cycles = 16
            ins.w16 = 3
            if y == 7:
                ins.cycles = 12
                ins.w16 = 2
        if y == 6:  # LDH A,[n8]
            ins.length = 2
            ins.cycles = 12
            ins.w8 = 7
            ins.v8 = ins.m0
    if z == 1:
        if q == 0:  # POP rr (AF: pair 4, whose write clears F's low nibble)
            ins.cycles = 12
            ins.w16 = wp.where(p == 3, 4, p)
            ins.v16 = ins.m0 | (ins.m1 << 8)
        if q == 1 and p < 2:  # RET / RETI
            ins.cycles = 16
            ins.jump = ins.m0 | (ins.m1 << 8)
        if q == 0 or p < 2:
            ins.sp = (sp + 2) & 0xFFFF
        if y == 5:  # JP HL
            ins.jump = reg_hl(regs)
        if y == 7:  # LD SP,HL
            ins.cycles = 8
            ins.sp = reg_hl(regs)
    if z == 2:
        ins.cycles = 8
        if y < 4:  # JP cc,n16
            ins.length = 3
            ins.cycles = 12
            if condition(y, regs.f) != 0:
                ins.cycles = 16
                ins.jump = ins.n16
        if y == 4 or y == 5:  # LD [C],A / LD [n16],A
            ins.wr_n = 1
            ins.wr_addr = 0xFF00 | get_r8(regs, 1)
            ins.wv0 = regs.a
        if y == 5:
            ins.length = 3
            ins.cycles = 16
            ins.wr_addr = ins.n16
            ins.wr_at = 8
        if y == 6 or y == 7:  # LD A,[C] / LD A,[n16]
            ins.w8 = 7
            ins.v8 = ins.m0
        if y == 7:
            ins.length = 3
            ins.cycles = 16
    if z == 3:
        if y == 0:  # JP n16
            ins.cycles = 16
            ins.jump = ins.n16
        if y == 6:  # DI
            regs.ime = 0
            regs.ime_delay = 0
        if y == 7 and regs.ime_delay == 0:  # EI
            regs.ime_delay = 2


@wp.func
def exec_x3_calls(regs: wp.ref[CpuRegs], ins: wp.ref[Instr]):
    """x = 3, z = 4, 5, 7: CALL cc, CALL, PUSH, RST: the pushes."""
    y = ins.y
    z = ins.z
    q = ins.q
    pc = regs.pc
    call = wp.int32(0)
    if z == 4:  # CALL cc,n16
        ins.length = 3
        ins.cycles = 12
        call = condition(y, regs.f)
    if z == 5 and q == 1:  # CALL n16
        ins.length = 3
        call = 1
    if z == 5 and q == 0:  # PUSH rr
        ins.cycles = 16
        pair = wp.where(ins.p == 3, (regs.a << 8) | regs.f, get_r16(regs, ins.p))
        ins.wv0 = pair >> 8
        ins.wv1 = pair & 0xFF
        ins.wr_at = 8
    if z == 7:  # RST
        ins.cycles = 16
        ins.jump = y * 8
        ins.wv0 = (pc + 1) >> 8
        ins.wv1 = (pc + 1) & 0xFF
        ins.wr_at = 8
    if call != 0:
        ins.cycles = 24
        ins.jump = ins.n16
        ins.wv0 = ((pc + 3) & 0xFFFF) >> 8
        ins.wv1 = (pc + 3) & 0xFF
        ins.wr_at = 16
    if call != 0 or (z == 5 and q == 0) or z == 7:
        ins.wr_n = 2
        ins.wr_addr = (regs.sp - 1) & 0xFFFF
        ins.sp = (regs.sp - 2) & 0xFFFF


@wp.func
def write_phase(m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], ins: wp.ref[Instr]) -> int:
    """Phases 3 and 4: the memory writes, then the registers, PC and cycle count; PyBoy's
    ``bail``."""
    bail = ins.bail
    c0 = regs.cycles
    k = wp.int32(0)
    while k < ins.wr_n:
        at = c0 + wp.int64(ins.wr_at + ins.wr_step * k)
        v = wp.where(k == 0, ins.wv0, ins.wv1)
        bail = bail | bus_out(m, i, regs, at, ins.wr_addr + ins.wr_dir * k, v, ins.wr_offset)
        k += 1
    set_r8(regs, ins.w8, ins.v8)
    regs.f = ins.f
    regs.sp = ins.sp
    set_r16(regs, ins.w16, ins.v16)  # after F and SP: POP AF and the SP writes win
    regs.pc = wp.where(ins.jump < 0, (regs.pc + ins.length) & 0xFFFF, ins.jump)
    regs.cycles = c0 + wp.int64(ins.cycles)
    # PyBoy's EI countdown at the end of fetch_and_execute
    if regs.ime_delay > 0:
        regs.ime_delay = regs.ime_delay - 1
        if regs.ime_delay == 0:
            regs.ime = 1
            bail = wp.where(pending_interrupts(m, i) != 0, 1, 0)
    return bail
