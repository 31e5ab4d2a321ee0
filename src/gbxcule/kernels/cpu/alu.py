"""SM83 arithmetic and flag rules, one function per opcode family.

Flags live in F's high nibble: Z=0x80, N=0x40, H=0x20, C=0x10. Results and
flags match PyBoy 2.8.1's opcode implementations bit for bit.
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})

FZ = wp.constant(0x80)
FN = wp.constant(0x40)
FH = wp.constant(0x20)
FC = wp.constant(0x10)


@wp.func
def zflag(t: int) -> int:
    return wp.where((t & 0xFF) == 0, FZ, 0)


@wp.func
def alu8(op: int, a: int, v: int, f: int) -> wp.vec2i:
    """ALU op ``y`` (add adc sub sbc and xor or cp) on A and ``v``: (new A, new F)."""
    carry = (f >> 4) & 1
    res = a
    nf = wp.int32(0)
    if op < 2:  # add, adc
        ci = carry * op
        t = a + v + ci
        nf = zflag(t) | wp.where((a & 0xF) + (v & 0xF) + ci > 0xF, FH, 0)
        nf = nf | wp.where(t > 0xFF, FC, 0)
        res = t & 0xFF
    if op == 2 or op == 3 or op == 7:  # sub, sbc, cp
        ci = wp.where(op == 3, carry, 0)
        t = a - v - ci
        nf = FN | zflag(t) | wp.where((a & 0xF) - (v & 0xF) - ci < 0, FH, 0)
        nf = nf | wp.where(t < 0, FC, 0)
        if op != 7:
            res = t & 0xFF
    if op == 4:
        res = a & v
        nf = FH | zflag(res)
    if op == 5:
        res = a ^ v
        nf = zflag(res)
    if op == 6:
        res = a | v
        nf = zflag(res)
    return wp.vec2i(res, nf)


@wp.func
def rot_shift(op: int, v: int, f: int) -> wp.vec2i:
    """CB rotate/shift ``y`` (rlc rrc rl rr sla sra swap srl): (result, F with Z)."""
    carry_in = (f >> 4) & 1
    t = v
    cout = wp.int32(0)
    if op == 0:
        t = ((v << 1) | (v >> 7)) & 0xFF
        cout = v >> 7
    if op == 1:
        t = (v >> 1) | ((v & 1) << 7)
        cout = v & 1
    if op == 2:
        t = ((v << 1) | carry_in) & 0xFF
        cout = v >> 7
    if op == 3:
        t = (v >> 1) | (carry_in << 7)
        cout = v & 1
    if op == 4:
        t = (v << 1) & 0xFF
        cout = v >> 7
    if op == 5:
        t = (v >> 1) | (v & 0x80)
        cout = v & 1
    if op == 6:
        t = ((v & 0x0F) << 4) | (v >> 4)
    if op == 7:
        t = v >> 1
        cout = v & 1
    return wp.vec2i(t, zflag(t) | (cout << 4))


@wp.func
def daa(a: int, f: int) -> wp.vec2i:
    t = a
    corr = wp.int32(0)
    if (f & FH) != 0:
        corr = corr | 0x06
    if (f & FC) != 0:
        corr = corr | 0x60
    if (f & FN) != 0:
        t = t - corr
    else:
        if (t & 0x0F) > 0x09:
            corr = corr | 0x06
        if t > 0x99:
            corr = corr | 0x60
        t = t + corr
    nf = (f & FN) | zflag(t) | wp.where((corr & 0x60) != 0, FC, 0)
    return wp.vec2i(t & 0xFF, nf)


@wp.func
def acc_op(y: int, a: int, f: int) -> wp.vec2i:
    """Accumulator ops ``0x07 | y << 3`` (RLCA RRCA RLA RRA DAA CPL SCF CCF): (A, F).
    The rotates are the CB ones with Z always clear."""
    v = a
    nf = f
    if y < 4:
        r = rot_shift(y, a, f)
        v = r[0]
        nf = r[1] & FC
    elif y == 4:
        r = daa(a, f)
        v = r[0]
        nf = r[1]
    elif y == 5:  # CPL
        v = (~a) & 0xFF
        nf = (f & 0x90) | 0x60
    elif y == 6:  # SCF
        nf = (f & 0x80) | FC
    else:  # CCF
        nf = (f & 0x80) | ((f & FC) ^ FC)
    return wp.vec2i(v, nf)


@wp.func
def cb_op(op: int, v: int, f: int) -> wp.vec2i:
    """CB opcode ``op`` on the value ``v``: (result, F). BIT returns ``v`` unchanged."""
    x = op >> 6
    y = (op >> 3) & 7
    t = v
    nf = f
    if x == 0:  # RLC RRC RL RR SLA SRA SWAP SRL
        r = rot_shift(y, v, f)
        t = r[0]
        nf = r[1]
    if x == 1:  # BIT
        nf = (f & FC) | FH | zflag(v & (1 << y))
    if x == 2:  # RES
        t = v & ~(1 << y)
    if x == 3:  # SET
        t = v | (1 << y)
    return wp.vec2i(t, nf)


@wp.func
def inc_dec8(v: int, dec: int, f: int) -> wp.vec2i:
    """INC r / DEC r: C kept."""
    t = wp.int32(0)
    nf = f & FC
    if dec == 0:
        t = (v + 1) & 0xFF
        nf = nf | wp.where((v & 0xF) == 0xF, FH, 0)
    else:
        t = (v - 1) & 0xFF
        nf = nf | FN | wp.where((v & 0xF) == 0, FH, 0)
    return wp.vec2i(t, nf | zflag(t))


@wp.func
def sp_offset_flags(sp: int, v: int) -> int:
    """H and C of ADD SP,e8 / LD HL,SP+e8: carries out of bits 3 and 7 of SP + unsigned v."""
    nf = wp.where((sp & 0xF) + (v & 0xF) > 0xF, FH, 0)
    return nf | wp.where((sp & 0xFF) + (v & 0xFF) > 0xFF, FC, 0)


@wp.func
def condition(cc: int, f: int) -> int:
    """1 when condition ``cc`` (nz z nc c) holds."""
    bit = wp.where(cc < 2, (f >> 7) & 1, (f >> 4) & 1)
    return wp.where((cc & 1) == 1, bit, 1 - bit)


@wp.func
def signed8(v: int) -> int:
    return (v ^ 0x80) - 0x80
