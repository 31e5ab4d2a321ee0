"""Assembler errors name the source line and the problem."""

from __future__ import annotations

import pytest

from gbxcule.asm import AsmError, assemble, build_rom

pytestmark = pytest.mark.tooling

CASES = [
    ("nop\nfrob a\n", 2, "unknown mnemonic 'frob'"),
    ("nop\nnop\nld [bc], b\n", 3, "bad operands for 'ld'"),
    ("ld a, [hl+2]\n", 1, "register 'hl' used in an expression"),
    ("rst $39\n", 1, "bad operands for 'rst'"),
    ("bit 8, a\n", 1, "bad operands for 'bit'"),
    ("bit Label, a\nLabel:\n", 1, "constant"),
    ("db 300\n", 1, "out of range"),
    ("db -129\n", 1, "out of range"),
    ("ld a, 256\n", 1, "out of range"),
    ("ld hl, $10000\n", 1, "out of range"),
    ("ldh a, [$FE00]\n", 1, "out of range"),
    ("add sp, 128\n", 1, "out of range"),
    ("Start:\n    ds 200\n    jr Start\n", 3, "jr target $0150 out of range (offset -202)"),
    ("    jr Far\n    ds 128\nFar:\n", 1, "out of range (offset 128)"),
    ("nop\n    jp Nowhere\n", 2, "undefined symbol 'Nowhere'"),
    ("Top:\n.loop:\nOther:\n    jr .loop\n", 4, "undefined symbol 'Other.loop'"),
    ("Dup:\n nop\nDup:\n", 3, "duplicate symbol 'Dup' (first defined on line 1)"),
    ("X EQU 1\nX:\n", 2, "duplicate symbol 'X'"),
    ("A1 EQU B1\nB1 EQU A1\nld a, A1\n", 1, "defined in terms of itself"),
    (
        'SECTION "a", ROM0[$0200]\n ds 16\nSECTION "b", ROM0[$0208]\n nop\n',
        3,
        "section 'b' ($0208-$0208) overlaps section 'a' ($0200-$020F, line 1)",
    ),
    ('SECTION "big", ROMX[$7FFE], BANK[1]\n dw 1, 2\n', 1, "overflows ROMX"),
    ('SECTION "big", ROM0[$3FFF]\n nop\n nop\n', 1, "overflows ROM0"),
    ('SECTION "v", WRAM0[$C000]\n db 1\n', 2, "use ds there"),
    ('SECTION "v", WRAM0[$C000]\n nop\n', 2, "only ds is allowed"),
    ('SECTION "v", WRAM0[$8000]\n', 1, "outside WRAM0"),
    ('SECTION "v", ROM9[$0000]\n', 1, "unknown section type"),
    ('SECTION "x", ROM0[$0200], BANK[2]\n', 1, "only allowed on ROMX"),
    ('SECTION "x", ROM0[$0200]\nSECTION "x", ROM0[$0300]\n', 2, "duplicate section name 'x'"),
    ("db 1 +\n", 1, "expression ends unexpectedly"),
    ("db 1 2\n", 1, "unexpected '2' after expression"),
    ("db 1 / 0\n", 1, "division by zero"),
    ("ld a, `\n", 1, "unexpected character"),
    ("ld a,\n", 1, "empty operand"),
    ("ds Later\nLater:\n", 1, "undefined symbol 'Later'"),
    ("Early:\nds Early\n", 2, "'Early' is a label; a constant is needed here"),
]


@pytest.mark.parametrize("source,line,problem", CASES)
def test_error_names_line_and_problem(source, line, problem):
    with pytest.raises(AsmError) as info:
        assemble(source)
    assert info.value.line == line
    assert problem in info.value.problem
    assert str(info.value).startswith(f"line {line}: ")


def test_good_neighbours_of_error_cases_assemble():
    # The boundaries just inside each range are accepted.
    assemble("db 255, -128\nld hl, $FFFF\nldh a, [$FFFF]\nadd sp, -128\nrst $38\nbit 7, a\n")
    assemble("Start:\n    ds 126\n    jr Start\n")  # offset -128 (2-byte jr)
    assemble("    jr Far\n    ds 127\nFar:\n")  # offset +127


def test_build_rom_errors():
    with pytest.raises(AsmError, match="uses 4 ROM banks but rom_banks=2"):
        build_rom('SECTION "x", ROMX[$4000], BANK[3]\n nop\n', cart_type="MBC1")
    with pytest.raises(AsmError, match="unsupported cart_type 'MBC6'"):
        build_rom("nop\n", cart_type="MBC6")
    with pytest.raises(AsmError, match="ROM_ONLY cannot address 4 ROM banks"):
        build_rom("nop\n", rom_banks=4)
    with pytest.raises(AsmError, match="power of two"):
        build_rom("nop\n", cart_type="MBC5", rom_banks=6)
    with pytest.raises(AsmError, match="MBC2 cannot address 32 ROM banks"):
        build_rom("nop\n", cart_type="MBC2", rom_banks=32)
    with pytest.raises(AsmError, match="MBC2 has built-in RAM"):
        build_rom("nop\n", cart_type="MBC2", ram_banks=1)
    with pytest.raises(AsmError, match="has RAM: pass ram_banks"):
        build_rom("nop\n", cart_type="MBC1+RAM")
    with pytest.raises(AsmError, match="has no RAM"):
        build_rom("nop\n", cart_type="MBC5", ram_banks=1)
    with pytest.raises(AsmError, match="RAM bank count must be one of"):
        build_rom("nop\n", cart_type="MBC5+RAM", ram_banks=3)
    with pytest.raises(AsmError, match="title"):
        build_rom("nop\n", title="THIS TITLE IS TOO LONG")
    with pytest.raises(AsmError, match=r"line 1: section 'hdr' puts data in the cartridge header"):
        build_rom('SECTION "hdr", ROM0[$0134]\n db "X"\n')
