"""Shared by the hook tests: a banked MBC1 ROM with interrupts, and PyBoy's hook counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.asm import assemble
from gbxcule.asm.header import build_rom
from gbxcule.core.symbols import format_sym

BANKS = 4
# MBC1, 4 banks: the same address $4000 holds a different routine in banks 1-3, called in
# turn with the bank switched; VBlank and a fast timer interrupt pre-empt everything (the
# timer also lands inside the banked loops); the main loop waits in a HALT.
BANKED_SOURCE = """
SECTION "vblank", ROM0[$0040]
    jp VBlankIsr
SECTION "timer", ROM0[$0050]
    jp TimerIsr
SECTION "main", ROM0[$0150]
Main:
    ld sp, $DFF0
    xor a
    ld [$C000], a
    ld [$C001], a
    ld a, $C0
    ldh [$06], a
    ld a, $05
    ldh [$07], a
    ld a, $05
    ldh [$FF], a
    ei
MainLoop:
    ld a, 1
    ld [$2000], a
    call $4000
    ld a, 2
    ld [$2000], a
    call $4000
    ld a, 3
    ld [$2000], a
    call $4000
WaitHere:
    halt
AfterHalt:
    nop
    jr MainLoop
VBlankIsr:
    push af
    ld a, [$C000]
    inc a
    ld [$C000], a
    pop af
    reti
TimerIsr:
    push af
    ld a, [$C001]
    inc a
    ld [$C001], a
    pop af
    reti
SECTION "b1", ROMX[$4000], BANK[1]
Bank1Fn:
    ld b, 40
Bank1Loop:
    dec b
    jr nz, Bank1Loop
    ret
SECTION "b2", ROMX[$4000], BANK[2]
Bank2Fn:
    ld b, 25
    nop
Bank2Loop:
    dec b
    jr nz, Bank2Loop
    ret
SECTION "b3", ROMX[$4000], BANK[3]
Bank3Fn:
    ld c, 7
Bank3Loop:
    dec c
    nop
    jr nz, Bank3Loop
    ret
"""


def banked_rom(folder: Path) -> Path:
    """The banked ROM, with its ``.sym`` beside it."""
    path = folder / "hooks_banked.gb"
    path.write_bytes(build_rom(BANKED_SOURCE, cart_type="MBC1", rom_banks=BANKS))
    program = assemble(BANKED_SOURCE)
    path.with_suffix(".sym").write_text(format_sym(program.symbols, program.label_banks))
    return path


class PyBoyHookCounter:
    """Callback counts of PyBoy ``hook_register`` on one PyBoy, per hook, cumulative;
    ``on_hit`` (optional) is called with the hook index inside the callback."""

    def __init__(self, pyboy: Any, keys: list[tuple[int, int]], on_hit: Any = None) -> None:
        self.counts = np.zeros(len(keys), np.int64)
        self.on_hit = on_hit
        for k, (bank, addr) in enumerate(keys):
            pyboy.hook_register(bank, addr, self._hit, k)

    def _hit(self, k: int) -> None:
        self.counts[k] += 1
        if self.on_hit is not None:
            self.on_hit(k)
