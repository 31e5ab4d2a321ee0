"""The SM83 (DMG) instruction set: one row per base opcode and per CB-prefixed opcode.

Operand patterns use RGBDS spelling. Pattern tokens:

* register / condition names: ``a b c d e h l af bc de hl sp nz z nc c``
* memory: ``[hl] [bc] [de] [hl+] [hl-] [c]`` (``[c]`` is $FF00+C)
* ``n8`` / ``n16``: immediate byte / word; ``[n16]``: absolute address;
  ``[n8]``: high-page address $FF00+n8 (``ldh``)
* ``e8``: ``jr`` target (encoded as a signed offset from the next instruction)
* ``s8``: signed byte (``add sp, s8``); ``sp+s8``: ``ld hl, sp+s8``
* literal values baked into the opcode: bit index ``0``..``7`` (CB ``bit/res/set``)
  and ``rst`` vectors ``$00``..``$38``

Cycles are T-cycles (4 per M-cycle). Conditional instructions list the taken
count in ``cycles`` and the not-taken count in ``cycles_not_taken``. CB rows
count the whole two-byte instruction (prefix included) in ``length``/``cycles``.
"""

from __future__ import annotations

from dataclasses import dataclass

ILLEGAL_OPCODES = frozenset({0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD})
CB_PREFIX = 0xCB

# Operand order used by the opcode fields: r8 index 0..7, r16 index 0..3, cc 0..3.
R8 = ("b", "c", "d", "e", "h", "l", "[hl]", "a")
R16_SP = ("bc", "de", "hl", "sp")
R16_AF = ("bc", "de", "hl", "af")
CONDITIONS = ("nz", "z", "nc", "c")
ALU_OPS = ("add", "adc", "sub", "sbc", "and", "xor", "or", "cp")
CB_SHIFT_OPS = ("rlc", "rrc", "rl", "rr", "sla", "sra", "swap", "srl")
CB_BIT_OPS = ("bit", "res", "set")


@dataclass(frozen=True)
class Instruction:
    opcode: int
    prefixed: bool
    mnemonic: str
    operands: tuple[str, ...]
    length: int
    cycles: int
    cycles_not_taken: int | None = None
    illegal: bool = False

    @property
    def text(self) -> str:
        """Pattern text such as ``ld a, [hl+]``."""
        return f"{self.mnemonic} {', '.join(self.operands)}".strip()


# Rows outside the regular 0x40-0xBF block: "opcode mnemonic operands length cycles[/not-taken]".
_IRREGULAR_BASE = """
00 nop - 1 4
01 ld bc,n16 3 12
02 ld [bc],a 1 8
03 inc bc 1 8
07 rlca - 1 4
08 ld [n16],sp 3 20
09 add hl,bc 1 8
0A ld a,[bc] 1 8
0B dec bc 1 8
0F rrca - 1 4
10 stop - 2 4
11 ld de,n16 3 12
12 ld [de],a 1 8
13 inc de 1 8
17 rla - 1 4
18 jr e8 2 12
19 add hl,de 1 8
1A ld a,[de] 1 8
1B dec de 1 8
1F rra - 1 4
20 jr nz,e8 2 12/8
21 ld hl,n16 3 12
22 ld [hl+],a 1 8
23 inc hl 1 8
27 daa - 1 4
28 jr z,e8 2 12/8
29 add hl,hl 1 8
2A ld a,[hl+] 1 8
2B dec hl 1 8
2F cpl - 1 4
30 jr nc,e8 2 12/8
31 ld sp,n16 3 12
32 ld [hl-],a 1 8
33 inc sp 1 8
37 scf - 1 4
38 jr c,e8 2 12/8
39 add hl,sp 1 8
3A ld a,[hl-] 1 8
3B dec sp 1 8
3F ccf - 1 4
76 halt - 1 4
C0 ret nz 1 20/8
C1 pop bc 1 12
C2 jp nz,n16 3 16/12
C3 jp n16 3 16
C4 call nz,n16 3 24/12
C5 push bc 1 16
C8 ret z 1 20/8
C9 ret - 1 16
CA jp z,n16 3 16/12
CB prefix - 1 4
CC call z,n16 3 24/12
CD call n16 3 24
D0 ret nc 1 20/8
D1 pop de 1 12
D2 jp nc,n16 3 16/12
D4 call nc,n16 3 24/12
D5 push de 1 16
D8 ret c 1 20/8
D9 reti - 1 16
DA jp c,n16 3 16/12
DC call c,n16 3 24/12
E0 ldh [n8],a 2 12
E1 pop hl 1 12
E2 ldh [c],a 1 8
E5 push hl 1 16
E8 add sp,s8 2 16
E9 jp hl 1 4
EA ld [n16],a 3 16
F0 ldh a,[n8] 2 12
F1 pop af 1 12
F2 ldh a,[c] 1 8
F3 di - 1 4
F5 push af 1 16
F8 ld hl,sp+s8 2 12
F9 ld sp,hl 1 8
FA ld a,[n16] 3 16
FB ei - 1 4
"""


def _parse_row(line: str) -> Instruction:
    op_hex, mnemonic, operands, length, cycles = line.split()
    taken, _, not_taken = cycles.partition("/")
    return Instruction(
        opcode=int(op_hex, 16),
        prefixed=False,
        mnemonic=mnemonic,
        operands=() if operands == "-" else tuple(operands.split(",")),
        length=int(length),
        cycles=int(taken),
        cycles_not_taken=int(not_taken) if not_taken else None,
    )


def _build_base() -> tuple[Instruction, ...]:
    rows: dict[int, Instruction] = {}
    for line in _IRREGULAR_BASE.strip().splitlines():
        ins = _parse_row(line)
        rows[ins.opcode] = ins
    for i, r in enumerate(R8):
        mem = r == "[hl]"
        rows[0x04 | i << 3] = Instruction(0x04 | i << 3, False, "inc", (r,), 1, 12 if mem else 4)
        rows[0x05 | i << 3] = Instruction(0x05 | i << 3, False, "dec", (r,), 1, 12 if mem else 4)
        rows[0x06 | i << 3] = Instruction(
            0x06 | i << 3, False, "ld", (r, "n8"), 2, 12 if mem else 8
        )
        for j, src in enumerate(R8):
            op = 0x40 | i << 3 | j
            if op != 0x76:
                cyc = 8 if (mem or src == "[hl]") else 4
                rows[op] = Instruction(op, False, "ld", (r, src), 1, cyc)
    for k, alu in enumerate(ALU_OPS):
        for j, src in enumerate(R8):
            op = 0x80 | k << 3 | j
            rows[op] = Instruction(op, False, alu, ("a", src), 1, 8 if src == "[hl]" else 4)
        op = 0xC6 | k << 3
        rows[op] = Instruction(op, False, alu, ("a", "n8"), 2, 8)
    for n in range(8):
        op = 0xC7 | n << 3
        rows[op] = Instruction(op, False, "rst", (f"${n * 8:02x}",), 1, 16)
    for op in ILLEGAL_OPCODES:
        rows[op] = Instruction(op, False, "illegal", (), 1, 4, illegal=True)
    missing = set(range(256)) - set(rows)
    if missing:
        raise AssertionError(f"ISA table incomplete: {sorted(missing)}")
    return tuple(rows[op] for op in range(256))


def _build_cb() -> tuple[Instruction, ...]:
    rows = []
    for op in range(256):
        group, y, z = op >> 6, (op >> 3) & 7, op & 7
        reg = R8[z]
        mem = reg == "[hl]"
        if group == 0:
            ins = Instruction(op, True, CB_SHIFT_OPS[y], (reg,), 2, 16 if mem else 8)
        else:
            mnemonic = CB_BIT_OPS[group - 1]
            cycles = (12 if mnemonic == "bit" else 16) if mem else 8
            ins = Instruction(op, True, mnemonic, (str(y), reg), 2, cycles)
        rows.append(ins)
    return tuple(rows)


BASE: tuple[Instruction, ...] = _build_base()
CB: tuple[Instruction, ...] = _build_cb()


def lookup(opcode: int, prefixed: bool = False) -> Instruction:
    """Row for ``opcode`` (0..255) in the base or CB table."""
    if not 0 <= opcode <= 0xFF:
        raise ValueError(f"opcode must be 0..255, got {opcode}")
    return (CB if prefixed else BASE)[opcode]
