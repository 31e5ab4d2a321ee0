"""When inside an instruction each memory access happens, seen through the timer and the LCD.

A program reads DIV, TIMA (fast timer), STAT and LY, and writes DIV/TIMA, with
every instruction form that can reach IO (ldh, [c], [n16], [hl], [hl+/-], [bc],
[de], ALU/BIT on [hl], read-modify-write on [hl], POP/PUSH and LD [n16],SP with
SP in the IO page), logs each value to WRAM, and shifts its phase against the
timer and LCD by a varying delay every round. It also reads VRAM and OAM with
LD A,[HL] / LD A,[DE] (which carry PyBoy's 4-cycle access offset and so see the
PPU lock) and with plain forms. Registers, cycle counts and all RAM must equal
PyBoy's after every frame.
"""

from __future__ import annotations

import pytest

from gbxcule.asm import build_rom
from gbxcule.lockstep import LockstepConfig, run_lockstep

pytestmark = pytest.mark.l2

LOG = 0xC000
TIMER_REGS = (0x04, 0x05, 0x41, 0x44)


def read_forms(reg: int) -> list[str]:
    addr = 0xFF00 | reg
    return [
        f"ldh a, [${reg:02X}]",
        f"ld c, ${reg:02X}\n    ldh a, [c]",
        f"ld a, [${addr:04X}]",
        f"ld hl, ${addr:04X}\n    ld a, [hl]",
        f"ld hl, ${addr:04X}\n    ld b, [hl]\n    ld a, b",
        f"ld hl, ${addr:04X}\n    xor a\n    add a, [hl]",
        f"ld hl, ${addr:04X}\n    ld a, [hl+]",
        f"ld hl, ${addr:04X}\n    ld a, [hl-]",
        f"ld bc, ${addr:04X}\n    ld a, [bc]",
        f"ld de, ${addr:04X}\n    ld a, [de]",
        f"ld hl, ${addr:04X}\n    bit 3, [hl]\n    push af\n    pop bc\n    ld a, c",
        f"ld sp, ${addr:04X}\n    pop bc\n    ld sp, $DFF0\n    ld a, c\n    call Log\n    ld a, b",
    ]


def write_forms(reg: int, value: int) -> list[str]:
    addr = 0xFF00 | reg
    return [
        f"ld a, ${value:02X}\n    ldh [${reg:02X}], a",
        f"ld a, ${value:02X}\n    ld c, ${reg:02X}\n    ldh [c], a",
        f"ld a, ${value:02X}\n    ld [${addr:04X}], a",
        f"ld hl, ${addr:04X}\n    ld [hl], ${value:02X}",
        f"ld hl, ${addr:04X}\n    ld b, ${value:02X}\n    ld [hl], b",
        f"ld de, ${addr:04X}\n    ld a, ${value:02X}\n    ld [de], a",
        f"ld hl, ${addr:04X}\n    inc [hl]",
        f"ld hl, ${addr:04X}\n    rlc [hl]",
        f"ld hl, ${addr:04X}\n    set 7, [hl]",
        f"ld sp, ${addr + 2:04X}\n    ld bc, ${value:02X}{value:02X}\n    push bc\n    ld sp, $DFF0",
        f"ld sp, ${value:02X}{value:02X}\n    ld [${addr:04X}], sp\n    ld sp, $DFF0",
    ]


def lock_forms() -> list[str]:
    """VRAM/OAM reads and writes with and without PyBoy's access offset."""
    out = []
    for addr in (0x8010, 0x9800, 0xFE04):
        out += [
            f"ld hl, ${addr:04X}\n    ld a, [hl]",  # offset 4: sees the lock
            f"ld hl, ${addr:04X}\n    ld b, [hl]\n    ld a, b",  # offset 0
            f"ld de, ${addr:04X}\n    ld a, [de]",  # offset 4
            f"ld a, [${addr:04X}]",
            f"ld de, ${addr:04X}\n    ldh a, [$44]\n    ld [de], a\n    ld a, [${addr:04X}]",
            f"ld bc, ${addr:04X}\n    ldh a, [$44]\n    ld [bc], a\n    ld a, [${addr:04X}]",
        ]
    return out


def program() -> str:
    blocks = []
    for reg in TIMER_REGS:
        blocks += read_forms(reg)
    for reg, value in ((0x05, 0xF0), (0x04, 0x00)):
        for form in write_forms(reg, value):
            blocks.append(form + "\n    ldh a, [$05]\n    call Log\n    ldh a, [$04]")
    blocks += lock_forms()
    code = "\n    call Log\n    call Delay\n".join("    " + b for b in blocks)
    return f"""
SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $DFF0
    xor a
    ldh [$FF], a        ; IE = 0: no interrupt is ever taken
    ld a, $05
    ldh [$07], a        ; timer on, 16 cycles per TIMA tick
    ld a, HIGH({LOG:#06x})
    ldh [$81], a
    xor a
    ldh [$80], a        ; log pointer
    ldh [$82], a        ; delay phase
.round:
{code}
    call Log
    jp .round

; A -> log (a 4 KiB ring at $C000)
Log:
    push hl
    push af
    ldh a, [$80]
    ld l, a
    ldh a, [$81]
    ld h, a
    pop af
    ld [hl+], a
    ld a, l
    ldh [$80], a
    ld a, h
    and $0F
    or $C0
    ldh [$81], a
    pop hl
    ret

; burn 4 * (1 + phase) extra M-cycles, phase cycling 0..6, so every round lands elsewhere
Delay:
    ldh a, [$82]
    inc a
    cp 7
    jr c, .keep
    xor a
.keep:
    ldh [$82], a
    inc a
.spin:
    dec a
    jr nz, .spin
    ret
"""


@pytest.fixture(scope="module")
def timing_rom(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("timing") / "cpu_access_timing.gb"
    path.write_bytes(build_rom(program()))
    return str(path)


def test_access_timing_matches_pyboy(timing_rom: str) -> None:
    import numpy as np

    steps = 40
    cfg = LockstepConfig(
        ref="pyboy",
        dut="warp-cpu",
        steps=steps,
        frames_per_step=1,
        release_after_frames=1,
        codec="buttons",
        compare_cycles=True,
        compare_frames=False,
    )
    result = run_lockstep(timing_rom, np.zeros((steps, 1), np.int64), cfg, bundle_root=None)
    assert result.ok, f"diverged at step {result.divergence_step}: {result.diffs[:6]}"
