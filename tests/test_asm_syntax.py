"""Assembler syntax: labels, local labels, expressions, data directives, sections and banks."""

from __future__ import annotations

import pytest

from gbxcule.asm import assemble

pytestmark = pytest.mark.tooling


def data_of(source: str) -> bytes:
    program = assemble(source)
    return b"".join(bytes(s.data) for s in program.sections)


def test_local_labels_are_scoped_to_the_last_global_label():
    program = assemble(
        """
First:
    nop
.loop:
    jr .loop          ; to First.loop
Second:
    nop
    nop
.loop:
    jr .loop          ; to Second.loop
    jp First.loop     ; explicit qualified reference
"""
    )
    sym = program.symbols
    assert sym["First"] == 0x0150
    assert sym["First.loop"] == 0x0151
    assert sym["Second"] == 0x0153
    assert sym["Second.loop"] == 0x0155
    data = bytes(program.sections[0].data)
    assert data == bytes([0x00, 0x18, 0xFE, 0x00, 0x00, 0x18, 0xFE, 0xC3, 0x51, 0x01])


def test_forward_references_and_jr_forward():
    data = data_of(
        """
    jr .skip
    nop
.skip:
    call Sub
    ret
Sub:
    ret
"""
    )
    assert data == bytes([0x18, 0x01, 0x00, 0xCD, 0x57, 0x01, 0xC9, 0xC9])


def test_number_formats_and_operator_precedence():
    data = data_of(
        """
    db $1F, 0x1F, %101, 0b11, 31, 'A', -1
    db 2 + 3 * 4, (2 + 3) * 4, 1 << 4 | 1, $F0 & $3C ^ $FF, 1 + 6 & 2
    db 7 % 3, 7 / 2, -7 / 2, ~$0F & $FF, 10 - 2 - 3
    db HIGH($ABCD), LOW($ABCD), 5 %101
    dw $1234, $FFFF, -1
"""
    )
    assert data == bytes(
        [0x1F, 0x1F, 5, 3, 31, 65, 0xFF]
        + [14, 20, 0x11, (0xF0 & 0x3C) ^ 0xFF, 1 + (6 & 2)]  # RGBDS: & | ^ above + -
        + [1, 3, 0xFD, 0xF0, 5]
        + [0xAB, 0xCD, 5 % 101]
        + [0x34, 0x12, 0xFF, 0xFF, 0xFF, 0xFF]
    )


def test_equ_constants_including_forward_and_def_forms():
    program = assemble(
        """
COUNT EQU LATER * 2
DEF LATER EQU 3
ADDR = $C000 + COUNT
    ld a, COUNT
    ld [ADDR], a
    ds COUNT, $AA
"""
    )
    assert program.symbols["COUNT"] == 6
    assert program.symbols["ADDR"] == 0xC006
    assert bytes(program.sections[0].data) == bytes([0x3E, 6, 0xEA, 0x06, 0xC0]) + b"\xaa" * 6


def test_strings_escapes_and_at_symbol():
    data = data_of(
        """
SECTION "s", ROM0[$0200]
    db "Hi;\\n", 0      ; the semicolon inside the string is not a comment
    dw @
    db "a,b", 'x'
"""
    )
    assert data == b"Hi;\n\x00" + (0x0205).to_bytes(2, "little") + b"a,bx"


def test_ds_pads_to_an_address_with_at():
    program = assemble(
        """
SECTION "entry", ROM0[$0100]
    nop
    jp Main
    ds $0150 - @, 0
Main:
    halt
"""
    )
    assert program.symbols["Main"] == 0x0150
    assert program.sections[0].size == 0x51


def test_label_and_instruction_on_one_line_and_exported_labels():
    program = assemble("Start:: ld a, 1\n.here: ld b, a\n")
    assert program.symbols["Start"] == 0x0150
    assert program.symbols["Start.here"] == 0x0152


def test_sections_at_fixed_addresses_and_rom_banks():
    program = assemble(
        """
SECTION "vectors", ROM0[$0040]
    reti
SECTION "main", ROM0[$0150]
Main:
    ld a, BANK(Far)
    call Far
SECTION "bank2", ROMX[$4100], BANK[2]
Far2:
    ret
SECTION "bank3", ROMX[$4000], BANK[3]
Far:
    ld a, HIGH(Far2)
    ret
SECTION "vars", WRAM0[$C000]
Counter: ds 2
Flags: ds 1
SECTION "hram", HRAM[$FF80]
HVar: ds 1
"""
    )
    sym = program.symbols
    assert (sym["Far"], program.label_banks["Far"]) == (0x4000, 3)
    assert (sym["Far2"], program.label_banks["Far2"]) == (0x4100, 2)
    assert (sym["Counter"], sym["Flags"], sym["HVar"]) == (0xC000, 0xC002, 0xFF80)
    assert program.rom_banks_used == 4
    image = program.image(4)
    assert len(image) == 4 * 0x4000
    assert image[0x40] == 0xD9
    assert image[0x150:0x155] == bytes([0x3E, 3, 0xCD, 0x00, 0x40])
    assert image[2 * 0x4000 + 0x100] == 0xC9  # bank 2, $4100
    assert image[3 * 0x4000 : 3 * 0x4000 + 3] == bytes([0x3E, 0x41, 0xC9])  # bank 3, $4000


def test_romx_defaults_to_bank_one_and_floating_sections_fill_gaps():
    program = assemble(
        """
SECTION "fixed", ROM0[$0150]
    db 1, 2, 3
SECTION "floating", ROM0
Floating:
    db 4
SECTION "x", ROMX[$4000]
InX:
    db 5
SECTION "ram", WRAM0
Var: ds 1
"""
    )
    assert program.symbols["Floating"] == 0x0153
    assert program.label_banks["InX"] == 1
    assert program.symbols["Var"] == 0xC000
    assert program.image(2)[0x4000] == 5


def test_case_insensitive_mnemonics_and_registers():
    assert data_of("LD A, [HL+]\nXOR A\nJR NZ, @\n") == bytes([0x2A, 0xAF, 0x20, 0xFE])


def test_quotes_escapes_commas_and_semicolons_in_data():
    data = data_of('db "a\\"b;,c", \';\', \',\' ; comment\ndb "x\\\\", 1\n')
    assert data == b'a"b;,c;,x\\\x01'
