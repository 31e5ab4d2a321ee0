"""A benchmark ROM that never HALTs: the CPU-bound end of what a game runs.

The demo game waits in HALT for most of each frame, which the emulator fast-forwards;
a game busy with logic, or polling LY, keeps the CPU decoding every cycle. This ROM
copies and mixes 256 WRAM bytes, calls a routine with PUSH/POP, CB shifts and BIT
tests, polls LY and loops, with the LCD on: loads, stores, ALU, 16-bit ops, jumps,
calls and IO reads in proportions like game code. ``python -m bench.sweep --rom busy``.
"""

from __future__ import annotations

from pathlib import Path

from gbxcule.asm import build_rom
from gbxcule.files import write_atomic

BUSY_SOURCE = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $C000
    ld de, $C100
    ld b, 0
.copy:
    ld a, [hl+]
    add a, b
    xor $5A
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    call Work
    ldh a, [$44]
    cp 100
    jr nz, Main
    ld a, [$C000]
    inc a
    ld [$C000], a
    jr Main
Work:
    push bc
    push hl
    ld c, 16
.step:
    sla a
    rr b
    bit 3, c
    jr z, .skip
    inc a
.skip:
    dec c
    jr nz, .step
    pop hl
    pop bc
    ret
"""

OUT_DIR = Path(__file__).resolve().parent / "roms" / "out"


def busy_rom_path() -> Path:
    """``bench/roms/out/busy_cpu.gb``, assembled from :data:`BUSY_SOURCE` when it differs."""
    data = build_rom(BUSY_SOURCE, title="BUSYCPU")
    path = OUT_DIR / "busy_cpu.gb"
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data)
    return path
