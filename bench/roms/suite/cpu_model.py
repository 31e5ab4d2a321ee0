"""Reference semantics of SM83 instructions for the CPU micro ROMs, written from Pan Docs.

Every function returns exact results and flags (F as a byte, low nibble 0); the CPU
ROMs' expected tables are computed from these, never from an emulator run. Also
here: M-cycle counts of straight-line code, taken from the project ISA table, for
the timer ROM's cycle-exact expectations.
"""

from __future__ import annotations

from gbxcule.asm import assemble
from gbxcule.core import isa

FLAG_Z = 0x80
FLAG_N = 0x40
FLAG_H = 0x20
FLAG_C = 0x10


def flags(z: bool, n: bool, h: bool, c: bool) -> int:
    return (FLAG_Z if z else 0) | (FLAG_N if n else 0) | (FLAG_H if h else 0) | (FLAG_C if c else 0)


def _carry(f: int) -> int:
    return 1 if f & FLAG_C else 0


def _add(a: int, b: int, cin: int) -> tuple[int, int]:
    r = a + b + cin
    return r & 0xFF, flags(r & 0xFF == 0, False, (a & 0xF) + (b & 0xF) + cin > 0xF, r > 0xFF)


def _sub(a: int, b: int, cin: int) -> tuple[int, int]:
    r = a - b - cin
    return r & 0xFF, flags(r & 0xFF == 0, True, (a & 0xF) - (b & 0xF) - cin < 0, r < 0)


def _logic(r: int, h: bool) -> tuple[int, int]:
    return r, flags(r == 0, False, h, False)


_ALU = {
    "add": lambda a, b, f: _add(a, b, 0),
    "adc": lambda a, b, f: _add(a, b, _carry(f)),
    "sub": lambda a, b, f: _sub(a, b, 0),
    "sbc": lambda a, b, f: _sub(a, b, _carry(f)),
    "and": lambda a, b, f: _logic(a & b, True),
    "xor": lambda a, b, f: _logic(a ^ b, False),
    "or": lambda a, b, f: _logic(a | b, False),
    "cp": lambda a, b, f: (a, _sub(a, b, 0)[1]),
}


def alu8(op: str, a: int, b: int, f: int) -> tuple[int, int]:
    """(A, F) after ``op a, b`` (op in isa.ALU_OPS) with flags ``f`` before it."""
    return _ALU[op](a, b, f)


def inc8(v: int, f: int) -> tuple[int, int]:
    r = (v + 1) & 0xFF
    return r, flags(r == 0, False, v & 0xF == 0xF, bool(f & FLAG_C))


def dec8(v: int, f: int) -> tuple[int, int]:
    r = (v - 1) & 0xFF
    return r, flags(r == 0, True, v & 0xF == 0, bool(f & FLAG_C))


def daa(a: int, f: int) -> tuple[int, int]:
    """DAA as Pan Docs describes it: adjust after an add (N=0) or a subtract (N=1)."""
    adjust = 0
    carry = bool(f & FLAG_C)
    if f & FLAG_N:
        if f & FLAG_H:
            adjust |= 0x06
        if carry:
            adjust |= 0x60
        r = (a - adjust) & 0xFF
    else:
        if f & FLAG_H or a & 0x0F > 0x09:
            adjust |= 0x06
        if carry or a > 0x99:
            adjust |= 0x60
            carry = True
        r = (a + adjust) & 0xFF
    return r, flags(r == 0, bool(f & FLAG_N), False, carry)


def _rotate(kind: str, v: int, cin: int) -> tuple[int, int]:
    """(result, carry out) of a CB rotate/shift."""
    top, low = v >> 7, v & 1
    table = {
        "rlc": (((v << 1) | top) & 0xFF, top),
        "rrc": ((v >> 1) | (low << 7), low),
        "rl": (((v << 1) | cin) & 0xFF, top),
        "rr": ((v >> 1) | (cin << 7), low),
        "sla": ((v << 1) & 0xFF, top),
        "sra": ((v >> 1) | (v & 0x80), low),
        "swap": (((v & 0x0F) << 4) | (v >> 4), 0),
        "srl": (v >> 1, low),
    }
    return table[kind]


def cb(opcode: int, v: int, f: int) -> tuple[int, int]:
    """(value, F) after CB-prefixed ``opcode`` on operand value ``v``."""
    group, bit = opcode >> 6, (opcode >> 3) & 7
    if group == 0:
        r, c = _rotate(isa.CB_SHIFT_OPS[bit], v, _carry(f))
        return r, flags(r == 0, False, False, bool(c))
    if group == 1:  # BIT: Z = !bit, N = 0, H = 1, C kept
        return v, flags(not v >> bit & 1, False, True, bool(f & FLAG_C))
    if group == 2:
        return v & ~(1 << bit) & 0xFF, f
    return v | 1 << bit, f


def cb_mnemonic(opcode: int) -> str:
    """RGBDS text of CB ``opcode``, e.g. ``bit 3, [hl]``."""
    ins = isa.CB[opcode]
    return f"{ins.mnemonic} {', '.join(ins.operands)}"


def add_hl(hl: int, rr: int, f: int) -> tuple[int, int]:
    """(HL, F) after ``add hl, rr``: Z kept, N = 0, H from bit 11, C from bit 15."""
    r = hl + rr
    return r & 0xFFFF, flags(
        bool(f & FLAG_Z), False, (hl & 0xFFF) + (rr & 0xFFF) > 0xFFF, r > 0xFFFF
    )


def add_sp_e(sp: int, e: int) -> tuple[int, int]:
    """(result, F) of ``add sp, e`` / ``ld hl, sp+e`` (e as its byte): Z = N = 0,
    H and C from the unsigned add of the low bytes."""
    offset = e - 0x100 if e & 0x80 else e
    h = (sp & 0x0F) + (e & 0x0F) > 0x0F
    c = (sp & 0xFF) + e > 0xFF
    return (sp + offset) & 0xFFFF, flags(False, False, h, c)


def condition_holds(cond: str, f: int) -> bool:
    """Whether branch condition ``cond`` (nz, z, nc, c) is true under flags ``f``."""
    return {
        "nz": not f & FLAG_Z,
        "z": bool(f & FLAG_Z),
        "nc": not f & FLAG_C,
        "c": bool(f & FLAG_C),
    }[cond]


def instruction_cycles(text: str) -> tuple[int, int | None]:
    """(M-cycles, M-cycles when not taken) of one instruction, from the ISA table."""
    code = bytes(assemble(f'SECTION "t", ROM0[$0150]\n    {text}\n').image()[0x150:0x153])
    ins = isa.CB[code[1]] if code[0] == isa.CB_PREFIX else isa.BASE[code[0]]
    not_taken = None if ins.cycles_not_taken is None else ins.cycles_not_taken // 4
    return ins.cycles // 4, not_taken
