"""End-to-end proof: PyBoy 2.8.1 runs ROMs built by our assembler."""

from __future__ import annotations

import pytest

from gbxcule.asm import assemble, build_rom

pytestmark = pytest.mark.tooling

pyboy = pytest.importorskip("pyboy")

SOURCE = """
SECTION "vars", WRAM0[$C100]
Result: ds 1
Swapped: ds 1
FarByte: ds 1
Sum16: ds 2
HVal EQU $FF90

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $DFFF
    ld a, $21
    add a, $21          ; $42
    ld [Result], a
    swap a              ; $24
    ld [Swapped], a
    ldh [HVal], a
    ld a, BANK(Far)
    ld [$2000], a       ; MBC5 ROM bank select
    call Far
    ld [FarByte], a
    ld hl, $1234
    ld de, $0FFF
    add hl, de          ; $2233
    ld a, l
    ld [Sum16], a
    ld a, h
    ld [Sum16 + 1], a
.done:
    halt
    nop
    jr .done

SECTION "far", ROMX[$4000], BANK[5]
Far:
    ld a, HIGH(Far) + BANK(Far)  ; $40 + 5
    ret
"""


def run_rom(tmp_path, rom: bytes, frames: int):
    path = tmp_path / "built.gb"
    path.write_bytes(rom)
    emulator = pyboy.PyBoy(str(path), window="null", sound_emulated=False)
    try:
        for _ in range(frames):
            emulator.tick()
        return emulator, [emulator.memory[a] for a in range(0xC000, 0xE000)]
    finally:
        emulator.stop(save=False)


def test_pyboy_runs_a_built_banked_rom(tmp_path):
    rom = build_rom(SOURCE, title="E2E", cart_type="MBC5", rom_banks=8)
    symbols = assemble(SOURCE).symbols
    emulator, wram = run_rom(tmp_path, rom, frames=90)  # PyBoy's own boot ROM takes ~64 frames

    def byte(name: str, plus: int = 0) -> int:
        return wram[symbols[name] + plus - 0xC000]

    assert byte("Result") == 0x42
    assert byte("Swapped") == 0x24
    assert byte("FarByte") == 0x45
    assert (byte("Sum16"), byte("Sum16", 1)) == (0x33, 0x22)
    assert emulator.cartridge_title == "E2E"
