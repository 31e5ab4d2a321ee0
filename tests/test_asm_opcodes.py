"""Every base and CB opcode assembles to the documented bytes and round-trips the disassembler.

The expected encodings are generated here from the SM83 operand-field layout
(Pan Docs "CPU opcode" tables), independently of gbxcule.core.isa, plus
hand-checked spot values.
"""

from __future__ import annotations

import pytest

from gbxcule.asm import assemble, disassemble
from gbxcule.core import isa

pytestmark = pytest.mark.tooling

R8 = ["b", "c", "d", "e", "h", "l", "[hl]", "a"]
RP = ["bc", "de", "hl", "sp"]
RP_STACK = ["bc", "de", "hl", "af"]
CC = ["nz", "z", "nc", "c"]
# Mix the RGBDS spellings with and without the explicit "a," the assembler accepts.
ALU = ["add a,", "adc a,", "sub", "sbc a,", "and a,", "xor", "or", "cp a,"]
CB_SHIFTS = ["rlc", "rrc", "rl", "rr", "sla", "sra", "swap", "srl"]
ILLEGAL = {0xD3, 0xDB, 0xDD, 0xE3, 0xE4, 0xEB, 0xEC, 0xED, 0xF4, 0xFC, 0xFD}
JR_DELTA = 0x10  # "jr @+$12" jumps 0x10 bytes past the next instruction


def expected_base() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = [("nop", b"\x00"), ("ld [$C123], sp", b"\x08\x23\xc1")]
    out.append(("stop", b"\x10\x00"))
    out.append((f"jr @+{JR_DELTA + 2}", bytes([0x18, JR_DELTA])))
    for p, rr in enumerate(RP):
        out.append((f"ld {rr}, $1234", bytes([0x01 | p << 4, 0x34, 0x12])))
        out.append((f"inc {rr}", bytes([0x03 | p << 4])))
        out.append((f"add hl, {rr}", bytes([0x09 | p << 4])))
        out.append((f"dec {rr}", bytes([0x0B | p << 4])))
    for p, ind in enumerate(["[bc]", "[de]", "[hl+]", "[hl-]"]):
        out.append((f"ld {ind}, a", bytes([0x02 | p << 4])))
        out.append((f"ld a, {ind}", bytes([0x0A | p << 4])))
    for y, name in enumerate(["rlca", "rrca", "rla", "rra", "daa", "cpl", "scf", "ccf"]):
        out.append((name, bytes([0x07 | y << 3])))
    for c, cc in enumerate(CC):
        out.append((f"jr {cc}, @+{JR_DELTA + 2}", bytes([0x20 | c << 3, JR_DELTA])))
        out.append((f"ret {cc}", bytes([0xC0 | c << 3])))
        out.append((f"jp {cc}, $4321", bytes([0xC2 | c << 3, 0x21, 0x43])))
        out.append((f"call {cc}, $4321", bytes([0xC4 | c << 3, 0x21, 0x43])))
    for r, reg in enumerate(R8):
        out.append((f"inc {reg}", bytes([0x04 | r << 3])))
        out.append((f"dec {reg}", bytes([0x05 | r << 3])))
        out.append((f"ld {reg}, $5A", bytes([0x06 | r << 3, 0x5A])))
        for s, src in enumerate(R8):
            if (r, s) != (6, 6):
                out.append((f"ld {reg}, {src}", bytes([0x40 | r << 3 | s])))
    out.append(("halt", b"\x76"))
    for k, alu in enumerate(ALU):
        for s, src in enumerate(R8):
            out.append((f"{alu} {src}", bytes([0x80 | k << 3 | s])))
        out.append((f"{alu} $A5", bytes([0xC6 | k << 3, 0xA5])))
    for p, rr in enumerate(RP_STACK):
        out.append((f"pop {rr}", bytes([0xC1 | p << 4])))
        out.append((f"push {rr}", bytes([0xC5 | p << 4])))
    for n in range(8):
        out.append((f"rst ${n * 8:02X}", bytes([0xC7 | n << 3])))
    out += [
        ("jp $0150", b"\xc3\x50\x01"),
        ("ret", b"\xc9"),
        ("call $0150", b"\xcd\x50\x01"),
        ("reti", b"\xd9"),
        ("ldh [$FF80], a", b"\xe0\x80"),
        ("ldh a, [$FF44]", b"\xf0\x44"),
        ("ldh [c], a", b"\xe2"),
        ("ldh a, [c]", b"\xf2"),
        ("add sp, -2", b"\xe8\xfe"),
        ("jp hl", b"\xe9"),
        ("ld [$C000], a", b"\xea\x00\xc0"),
        ("ld a, [$C000]", b"\xfa\x00\xc0"),
        ("di", b"\xf3"),
        ("ei", b"\xfb"),
        ("ld hl, sp+5", b"\xf8\x05"),
        ("ld sp, hl", b"\xf9"),
    ]
    return out


def expected_cb() -> list[tuple[str, bytes]]:
    out = []
    for z, reg in enumerate(R8):
        for y, name in enumerate(CB_SHIFTS):
            out.append((f"{name} {reg}", bytes([0xCB, y << 3 | z])))
        for group, name in enumerate(["bit", "res", "set"], start=1):
            for bit in range(8):
                out.append((f"{name} {bit}, {reg}", bytes([0xCB, group << 6 | bit << 3 | z])))
    return out


# Hand-checked against Pan Docs' opcode tables, including alternative spellings.
SPOT = [
    ("ld b, b", "40"),
    ("ld a, [hl]", "7E"),
    ("ld [hl], $12", "3612"),
    ("inc [hl]", "34"),
    ("xor a", "AF"),
    ("cp $90", "FE90"),
    ("sub a, b", "90"),
    ("add b", "80"),
    ("ld sp, $FFFE", "31FEFF"),
    ("jp $0150", "C35001"),
    ("push af", "F5"),
    ("pop af", "F1"),
    ("rst $38", "FF"),
    ("halt", "76"),
    ("reti", "D9"),
    ("ld hl, sp-2", "F8FE"),
    ("ld hl, sp + 127", "F87F"),
    ("add sp, 127", "E87F"),
    ("ldh [$FF40], a", "E040"),
    ("ldh [$40], a", "E040"),
    ("ld [$FF00+c], a", "E2"),
    ("ld a, [c]", "F2"),
    ("ld a, [hli]", "2A"),
    ("ld [hld], a", "32"),
    ("ldi a, [hl]", "2A"),
    ("ldd [hl], a", "32"),
    ("jp [hl]", "E9"),
    ("LD A, B", "78"),
    ("bit 7, h", "CB7C"),
    ("swap a", "CB37"),
    ("set 0, [hl]", "CBC6"),
    ("res 3, a", "CB9F"),
    ("rl c", "CB11"),
    ("srl [hl]", "CB3E"),
    ("bit 1 + 2, [hl]", "CB5E"),
]


def assemble_one(line: str) -> bytes:
    program = assemble(f'SECTION "t", ROM0[$0200]\n    {line}\n')
    (section,) = program.sections
    return bytes(section.data)


def test_expected_tables_cover_every_opcode():
    base = expected_base()
    cb = expected_cb()
    base_ops = {code[0] for _, code in base}
    assert base_ops == set(range(256)) - ILLEGAL - {0xCB}
    assert len(base) == len(base_ops) == 256 - len(ILLEGAL) - 1
    assert sorted(code[1] for _, code in cb) == list(range(256))


def test_every_opcode_assembles_to_documented_bytes():
    mismatches = []
    for line, code in expected_base() + expected_cb():
        got = assemble_one(line)
        if got != code:
            mismatches.append(f"{line!r}: expected {code.hex()}, got {got.hex()}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("line,hexcode", SPOT)
def test_spot_values(line, hexcode):
    assert assemble_one(line) == bytes.fromhex(hexcode)


def test_isa_table_lengths_match_encodings():
    for line, code in expected_base() + expected_cb():
        row = isa.lookup(code[1], prefixed=True) if code[0] == 0xCB else isa.lookup(code[0])
        assert row.length == len(code), line
        assert not row.illegal
    for op in ILLEGAL:
        assert isa.BASE[op].illegal
    assert isa.ILLEGAL_OPCODES == frozenset(ILLEGAL)


# T-cycles from Pan Docs, (taken, not taken) for conditionals.
CYCLE_SPOTS = {
    0x00: (4, None),
    0x01: (12, None),
    0x08: (20, None),
    0x18: (12, None),
    0x20: (12, 8),
    0x34: (12, None),
    0x36: (12, None),
    0x46: (8, None),
    0x70: (8, None),
    0x86: (8, None),
    0xC0: (20, 8),
    0xC2: (16, 12),
    0xC3: (16, None),
    0xC4: (24, 12),
    0xC5: (16, None),
    0xC1: (12, None),
    0xC7: (16, None),
    0xC9: (16, None),
    0xCD: (24, None),
    0xE0: (12, None),
    0xE8: (16, None),
    0xE9: (4, None),
    0xEA: (16, None),
    0xF8: (12, None),
    0xF9: (8, None),
}
CB_CYCLE_SPOTS = {0x00: 8, 0x06: 16, 0x46: 12, 0x7E: 12, 0x86: 16, 0xC6: 16, 0xFF: 8, 0x37: 8}


def test_isa_cycle_spot_values():
    for op, (taken, not_taken) in CYCLE_SPOTS.items():
        row = isa.BASE[op]
        assert (row.cycles, row.cycles_not_taken) == (taken, not_taken), hex(op)
    for op, cycles in CB_CYCLE_SPOTS.items():
        assert isa.CB[op].cycles == cycles, hex(op)


def _pyboy_pattern(name: str) -> tuple[str, tuple[str, ...], int]:
    """Translate PyBoy's opcode name ("LD (a16),SP") into our pattern and its length."""
    words = name.lower().replace("(", "[").replace(")", "]").split(" ", 1)
    mnemonic, ops = words[0], (words[1].split(",") if len(words) > 1 else [])
    size = 1
    if mnemonic != "rst":
        size += sum(2 if "16" in o else 1 if "8" in o else 0 for o in ops)
    mapped = []
    for o in ops:
        o = (
            o.replace("a16", "n16")
            .replace("d16", "n16")
            .replace("d8", "n8")
            .replace("[a8]", "[n8]")
        )
        if o == "r8":
            o = "s8" if mnemonic == "add" else "e8"
        o = o.replace("sp+r8", "sp+s8")
        if mnemonic == "rst":
            o = f"${int(o[:-1], 16):02x}"
        mapped.append(o)
    if "[c]" in mapped:
        mnemonic = "ldh"
    if mnemonic == "jp" and mapped == ["[hl]"]:
        mapped = ["hl"]
    if mnemonic == "stop":
        mapped, size = [], 2
    if mnemonic in ("sub", "and", "xor", "or", "cp") and len(mapped) == 1:
        mapped = ["a"] + mapped
    return mnemonic, tuple(mapped), size


def test_isa_table_agrees_with_pyboy_opcode_names():
    from pyboy.core.opcodes import CPU_COMMANDS

    for op in range(256):
        name = CPU_COMMANDS[op]
        row = isa.BASE[op]
        if op in ILLEGAL:
            assert name in ("", "Breakpoint/Illegal opcode")
            continue
        if op == 0xCB:
            assert name == "PREFIX CB" and row.mnemonic == "prefix"
            continue
        mnemonic, operands, size = _pyboy_pattern(name)
        assert (row.mnemonic, row.operands, row.length) == (mnemonic, operands, size), hex(op)
    for op in range(256):
        mnemonic, operands, _ = _pyboy_pattern(CPU_COMMANDS[0x100 + op])
        row = isa.CB[op]
        assert (row.mnemonic, row.operands) == (mnemonic, operands), hex(op)


def _with_immediates(code: bytes) -> list[bytes]:
    """The encoding with representative immediates in place of the test's fixed ones."""
    if code[0] == 0xCB or len(code) == 1 or code[0] == 0x10:
        return [code]
    if len(code) == 2:
        return [code[:1] + bytes([b]) for b in (0x00, 0x05, 0x7F, 0x80, 0xFB, 0xFF)]
    return [code[:1] + bytes(w) for w in ([0x00, 0x00], [0x50, 0x01], [0xFF, 0xFF], [0x34, 0x12])]


def test_disassembler_round_trips_every_opcode():
    failures = []
    for _, code in expected_base() + expected_cb():
        for variant in _with_immediates(code):
            text = disassemble(variant)
            back = assemble(text).sections[0].data
            if bytes(back) != variant:
                failures.append(f"{variant.hex()} -> {text.strip()!r} -> {bytes(back).hex()}")
    assert not failures, "\n".join(failures)


def test_disassembler_round_trips_a_stream_at_an_origin():
    stream = b"".join(code for _, code in expected_base() + expected_cb())
    text = disassemble(stream, origin=0x4000)
    program = assemble(f'SECTION "s", ROMX[$4000], BANK[2]\n{text}')
    assert bytes(program.sections[0].data) == stream


def test_disassembler_marks_illegal_and_truncated_bytes_as_data():
    text = disassemble(bytes([0xD3, 0x3E]), addresses=True)
    lines = text.splitlines()
    assert lines[0].split(";")[0].strip() == "db $D3"
    assert lines[1].split(";")[0].strip() == "db $3E"
    assert "$0151: 3E" in lines[1]
    assert disassemble(bytes([0xCB])).strip() == "db $CB"
