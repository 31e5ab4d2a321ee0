"""The Game Boy Color micro-ROMs: self-checking ROMs of our assembler (header $80, so PyBoy
and our backends run them on a Game Boy Color machine), one CGB feature each. Each leaves
what it observed in WRAM tables checked against bytes computed here (PyBoy 2.8.1's CGB
behaviour, history/cgb.md), and ``tests/test_cgb_suite.py`` also runs each in lockstep
with PyBoy ``cgb=True`` frame by frame (registers, cycles, every RAM bank, palettes).

Kept beside the DMG suite (``bench/roms/suite``), not in it: that suite's goldens,
shape and lockstep harnesses are DMG machines'.
"""

from __future__ import annotations

from bench.roms.spec import RomSpec
from bench.roms.suite._hwlib import Probe, block_probe, byte_probe, hw_spec, probe_rom

LCD_OFF = "    call LibLcdOff\n"


def _svbk(bank: int) -> str:
    return f"    ld a, ${bank:02X}\n    ldh [$70], a\n"


def _vbk(bank: int) -> str:
    return f"    ld a, ${bank:02X}\n    ldh [$4F], a\n"


def wram_value(bank: int) -> int:
    return ((bank * 0x11) ^ 0x5A) & 0xFF


WRAM_SETUP = LCD_OFF + "".join(
    _svbk(b) + f"    ld a, ${wram_value(b):02X}\n    ld [$D000], a\n" for b in range(1, 8)
)
WRAM_PROBES: list[Probe] = [
    *(
        byte_probe(f"WRAM bank {b} at D000", _svbk(b) + "    ld a, [$D000]\n", wram_value(b))
        for b in range(1, 8)
    ),  # fmt: skip
    byte_probe("SVBK 0 selects bank 1", _svbk(0) + "    ld a, [$D000]\n", wram_value(1)),
    byte_probe("echo F000 shows bank 5", _svbk(5) + "    ld a, [$F000]\n", wram_value(5)),
    byte_probe("SVBK reads back | $F8", _svbk(6) + "    ldh a, [$70]\n", 0xFE),
    byte_probe("C000-CFFF is bank 0 whatever SVBK", _svbk(3) + "    ld a, [$C800]\n", 0x00),
]

VRAM_SETUP = (
    LCD_OFF
    + _vbk(1)
    + "    ld a, $A5\n    ld [$8000], a\n    ld a, $77\n    ld [$9C00], a\n"
    + _vbk(0)
    + "    ld a, $3C\n    ld [$8000], a\n"
)
VRAM_PROBES = [
    byte_probe("VRAM bank 1 at 8000", _vbk(1) + "    ld a, [$8000]\n", 0xA5),
    byte_probe("VRAM bank 0 at 8000", _vbk(0) + "    ld a, [$8000]\n", 0x3C),
    byte_probe("VBK 3 selects bank 1", _vbk(3) + "    ld a, [$9C00]\n", 0x77),
    byte_probe("VBK reads back | $FE", _vbk(1) + "    ldh a, [$4F]\n", 0xFF),
]

PALETTE_BYTES = bytes((k * 7 + 3) & 0xFF for k in range(16))
PALETTE_SETUP = (
    LCD_OFF + "    ld a, $80\n    ldh [$68], a\n    ld hl, PaletteData\n    ld b, 16\n"
    ".bg:\n    ld a, [hl+]\n    ldh [$69], a\n    dec b\n    jr nz, .bg\n"
    "    ld a, $84\n    ldh [$6A], a\n    ld a, $5B\n    ldh [$6B], a\n    ld a, $C4\n"
    "    ldh [$6B], a\n"
)
PALETTE_PROBES = [
    *(
        byte_probe(
            f"BG palette byte {k}",
            f"    ld a, ${k:02X}\n    ldh [$68], a\n    ldh a, [$69]\n",
            PALETTE_BYTES[k],
        )
        for k in (0, 5, 15)
    ),  # fmt: skip
    byte_probe("BCPS auto-increments past the last write", "    ldh a, [$68]\n", 0x4F),
    byte_probe("OCPS reads its index | $40", "    ldh a, [$6A]\n", 0xC6),
    byte_probe("OBJ palette byte 5", "    ld a, $05\n    ldh [$6A], a\n    ldh a, [$6B]\n", 0xC4),
]

HDMA_DATA = bytes((k * 13 + 0x21) & 0xFF for k in range(32))
HDMA_SETUP = (
    LCD_OFF + _vbk(1) + "    ld a, HIGH(HdmaData)\n    ldh [$51], a\n"
    "    ld a, LOW(HdmaData)\n    ldh [$52], a\n    ld a, $08\n    ldh [$53], a\n"
    "    ld a, $80\n    ldh [$54], a\n    ld a, $01\n    ldh [$55], a\n"
)
HDMA_PROBES = [
    byte_probe("HDMA5 reads $FF when done", "    ldh a, [$55]\n", 0xFF),
    block_probe(
        "32 bytes by general-purpose HDMA into VRAM bank 1 $8880",
        "    ld de, $8880\n    ld b, 32\n.copy:\n    ld a, [de]\n    ld [hl+], a\n    inc de\n"
        "    dec b\n    jr nz, .copy\n",
        HDMA_DATA,
    ),
    byte_probe("bank 0 untouched at $8880", _vbk(0) + "    ld a, [$8880]\n", 0x00),
]

SPEED_PROBES = [
    byte_probe("KEY1 before the switch", "    ldh a, [$4D]\n", 0x00),
    byte_probe(
        "KEY1 after KEY1=1 and STOP (PyBoy toggles bit 7: $01 ^ $81)",
        "    ld a, $01\n    ldh [$4D], a\n    stop\n    ldh a, [$4D]\n",
        0x80,
    ),
    byte_probe(
        "back to single speed",
        "    ld a, $81\n    ldh [$4D], a\n    stop\n    ldh a, [$4D]\n",
        0x00,
    ),
]


def _db(label: str, data: bytes) -> str:
    rows = (", ".join(f"${b:02X}" for b in data[i : i + 16]) for i in range(0, len(data), 16))
    return f"{label}:\n" + "".join(f"    db {row}\n" for row in rows)


def _spec(name: str, description: str, probes, setup: str, data: str = "") -> RomSpec:
    return hw_spec(
        name,
        description,
        lambda: probe_rom(name, probes, setup=setup, data=data),
        tags=("cgb",),
        cgb_flag=0x80,
    )


CGB_ROMS: list[RomSpec] = [
    _spec(
        "cgb_wram_banks",
        "WRAM banks 1-7 by SVBK, SVBK 0, echo, the read mask, bank 0 fixed",
        WRAM_PROBES,
        WRAM_SETUP,
    ),  # fmt: skip
    _spec(
        "cgb_vram_banks",
        "VRAM bank 1 by VBK, VBK's bit 0 only, the read mask",
        VRAM_PROBES,
        VRAM_SETUP,
    ),  # fmt: skip
    _spec(
        "cgb_palettes",
        "BCPD/OCPD with and without auto-increment, the index reads",
        PALETTE_PROBES,
        PALETTE_SETUP,
        _db("PaletteData", PALETTE_BYTES),
    ),  # fmt: skip
    _spec(
        "cgb_hdma",
        "general-purpose HDMA from ROM into VRAM bank 1, HDMA5 when done",
        HDMA_PROBES,
        HDMA_SETUP,
        'SECTION "hdma", ROM0[$3000]\n' + _db("HdmaData", HDMA_DATA),
    ),  # fmt: skip
    _spec("cgb_speed", "KEY1 and STOP: to double speed and back", SPEED_PROBES, ""),
]
