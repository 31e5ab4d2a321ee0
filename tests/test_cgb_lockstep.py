"""L3: the CGB variant in lockstep with PyBoy 2.8.1's Game Boy Color mode, frame by frame
from power-on through PyBoy's CGB boot ROM (tests/support/cgb_support.py): registers and
cycles, the IO page, WRAM bank 0 and every bank at D000, both VRAM banks.

The register program writes and reads back every CGB register (palette RAM through both
index registers with auto-increment and its wrap, VBK, SVBK with all eight values, KEY0/KEY1,
OPRI, FF72-FF75, PCM12/34, the unmapped ones), logging each read to WRAM bank 0; run on a
Colour cartridge and on a DMG one, whose gates differ (PyBoy's ``cgb_mode``). The timing
programs are the DMG lockstep's own (LCD, STAT, timer, serial, OAM DMA, VRAM locks),
built as Colour cartridges: CGB hardware's mode 3 and 0 lengths and its early VBlank STAT.
"""

from __future__ import annotations

import pytest

from gbxcule.asm import build_rom

from .support import emu_timing_programs as timing
from .support.cgb_support import lockstep

pytestmark = pytest.mark.l3


def _register_program() -> str:
    lines = ['SECTION "main", ROM0[$0150]', "Main:", "    ld hl, $C000"]

    def write(reg: int, value: int) -> None:
        lines.append(f"    ld a, ${value & 0xFF:02X}\n    ldh [${reg:02X}], a")

    def read(reg: int) -> None:
        lines.append(f"    ldh a, [${reg:02X}]\n    ld [hl+], a")

    def read_at(addr: int) -> None:
        lines.append(f"    ld a, [${addr:04X}]\n    ld [hl+], a")

    write(0x68, 0x80)  # BCPS: index 0, auto-increment
    for k in range(64):
        write(0x69, k * 3 + 1)
    read(0x68)
    for k in range(0, 64, 5):
        write(0x68, k)
        read(0x69)
    write(0x6A, 0x82)  # OCPS: index 1, auto-increment
    for k in range(10):
        write(0x6B, 0xF0 - k)
    read(0x6A)
    for k in range(12):
        write(0x6A, k)
        read(0x6B)
    for start in (0xBF, 0xFF):  # the increment past the end: $C0 and $80
        write(0x68, start)
        write(0x69, 0x66)
        read(0x68)
    write(0x4F, 1)
    read(0x4F)
    for k in range(8):
        lines.append(f"    ld a, ${0x40 + k:02X}\n    ld [${0x8000 + k:04X}], a")
    write(0x4F, 0)
    read(0x4F)
    for k in range(8):
        read_at(0x8000 + k)
        lines.append(f"    ld a, ${0x90 + k:02X}\n    ld [${0x8000 + k:04X}], a")
    write(0x4F, 1)
    for k in range(8):
        read_at(0x8000 + k)
    for bank in range(8):
        write(0x70, bank)
        lines.append(f"    ld a, ${0x11 * bank + 3:02X}\n    ld [$D000], a")
        lines.append(f"    ld a, ${0xF0 - bank:02X}\n    ld [$DFFF], a")
    for bank in range(8):
        write(0x70, bank)
        read(0x70)
        for addr in (0xD000, 0xDFFF, 0xF000, 0xC000):
            read_at(addr)
    write(0x70, 3)
    write(0x4D, 0x01)
    for reg, value in ((0x4C, 0x04), (0x6C, 0x00), (0x72, 0x5A), (0x74, 0xA5), (0x75, 0x00)):
        write(reg, value)
    for reg in (0x4C, 0x4D, 0x4E, 0x51, 0x55, 0x56, 0x6C, 0x72, 0x74, 0x75, 0x76, 0x77, 0x7F):
        read(reg)
    lines.append(".halt:\n    jr .halt")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("flag", [0x80, 0x00], ids=["colour cartridge", "dmg cartridge"])
def test_every_cgb_register_and_bank(flag):
    step, problems = lockstep(build_rom(_register_program(), cgb_flag=flag), 70)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


TIMING = {
    "stat_rotate": timing.STAT_ROTATE,
    "lcd_toggle": timing.LCD_TOGGLE,
    "timer_halt": timing.TIMER_HALT,
    "vram_lock": timing.VRAM_LOCK,
    "serial": timing.SERIAL,
}


@pytest.mark.parametrize("name", sorted(TIMING))
def test_timing_programs_on_cgb_hardware(name):
    rom = build_rom(timing.FRAME + TIMING[name], cgb_flag=0x80)
    step, problems = lockstep(rom, 110)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)
