"""Our own Mooneye-style HALT-timing ROMs that depend on the post-boot DIV/LCD phase.

Each ROM, from PC=0x0100 and without ever writing DIV or the LCD, HALTs until VBlank
twice and, after each wake, reads DIV eight times 32 T-cycles apart (``ldh a, [$04]``,
``ld [de], a``, ``inc de``, ``nop``). DIV's internal counter moves once every 256
T-cycles, so the sixteen samples pin the counter's phase against the LCD's VBlank to 32
T-cycles. The ROM compares them with a table of expected values assembled into it, stores
the verdict at :data:`VERDICT_ADDR` ($01 pass, $FF fail) and writes ``P`` or ``F`` to SB.

* ``halt_ime0_boot_phase``: IME = 0 (HALT resumes at the next instruction on VBlank).
* ``halt_ime1_boot_phase``: IME = 1 (``ei; halt``; the VBlank vector does ``jp hl``).

The expected values are computed here, independently of any emulator, from a real DMG's
post-boot state (history/postboot.md): DIV's counter is $ABCC at PC=0x0100 and line 0
starts 56 T-cycles later, so VBlank (line 144) starts at +56 + 144 * 456 and every 70224
after. Hardware timing model: the CPU resumes within ``WAKE`` = 0..8 T-cycles of VBlank
(the samples' delays are chosen so that any value in that window gives the same DIV
values: every sample is >= 12 T-cycles from a DIV step); interrupt dispatch takes 20
T-cycles, ``jp hl`` 4, ``nop`` 4; ``ldh a, [n]`` reads in its third M-cycle (+8).
"""

from __future__ import annotations

import functools

from gbxcule.asm import build_rom
from gbxcule.core.dmg import FRAME_CYCLES, LINE_CYCLES

DIV_COUNTER_AT_0100 = 0xABCC  # real DMG (history/postboot.md)
LINE0_AFTER_0100 = 56
VBLANK_AFTER_0100 = LINE0_AFTER_0100 + 144 * LINE_CYCLES
WAKE = (0, 8)  # T-cycles from VBlank to the first instruction (or dispatch), hardware window
SAMPLES = 8
SAMPLE_CYCLES = 32
SAMPLES_ADDR = 0xC000
VERDICT_ADDR = 0xC020
# Extra nops before the samples of round 0 / round 1, chosen so no sample is near a DIV step.
PRE_NOPS = {"halt_ime0_boot_phase": (0, 4), "halt_ime1_boot_phase": (2, 6)}
DISPATCH = {"halt_ime0_boot_phase": 0, "halt_ime1_boot_phase": 20 + 4}  # + jp hl


def sample_counters(name: str, wake: int) -> list[int]:
    """DIV's internal counter at each of the 16 reads, on a real DMG, for a given wake delay."""
    out = []
    for rnd, pre in enumerate(PRE_NOPS[name]):
        start = DIV_COUNTER_AT_0100 + VBLANK_AFTER_0100 + rnd * FRAME_CYCLES + wake + DISPATCH[name]
        for k in range(SAMPLES):
            out.append(start + 4 * pre + 8 + SAMPLE_CYCLES * k)
    return out


def expected_div(name: str) -> list[int]:
    """The 16 DIV values a real DMG reads (the same for every wake delay in ``WAKE``)."""
    values = {
        tuple((c >> 8) & 0xFF for c in sample_counters(name, w))
        for w in range(WAKE[0], WAKE[1] + 1)
    }
    if len(values) != 1:
        raise AssertionError(f"{name}: the samples are too close to a DIV step: {values}")
    return list(values.pop())


def _samples(label: str, pre: int) -> str:
    body = "    nop\n" * pre
    body += "    ldh a, [$04]\n    ld [de], a\n    inc de\n    nop\n" * SAMPLES
    return f"{label}:\n{body}"


def _check_and_report() -> str:
    return f"""
    ld hl, Expected
    ld de, {SAMPLES_ADDR}
    ld b, {2 * SAMPLES}
.cmp:
    ld a, [de]
    cp [hl]
    jr nz, .fail
    inc de
    inc hl
    dec b
    jr nz, .cmp
    ld a, $01
    ld [{VERDICT_ADDR}], a
    ld a, "P"
    ldh [$01], a
    jr .done
.fail:
    ld a, $FF
    ld [{VERDICT_ADDR}], a
    ld a, "F"
    ldh [$01], a
.done:
    jr .done
"""


def halt_rom_source(name: str) -> str:
    pre0, pre1 = PRE_NOPS[name]
    expected = ", ".join(f"${v:02X}" for v in expected_div(name))
    setup = f"""
    ld a, $01
    ldh [$FF], a        ; IE = VBlank
    xor a
    ldh [$0F], a        ; IF = 0
    ld de, {SAMPLES_ADDR}
"""
    clear_if = "    xor a\n    ldh [$0F], a\n"
    if name == "halt_ime0_boot_phase":
        main = (
            setup
            + "    halt\n"
            + _samples("Round0", pre0)
            + clear_if
            + "    halt\n"
            + _samples("Round1", pre1)
        )
        vector = ""
        handlers = ""
    else:
        main = (
            setup
            + "    ld hl, Round0\n    ei\n    halt\n    nop\n"
            + clear_if
            + "    ld hl, Round1\n    ei\n    halt\n    nop\n"
        )
        vector = 'SECTION "vblank", ROM0[$0040]\n    jp hl\n'
        handlers = _samples("Round0", pre0) + "    ret\n" + _samples("Round1", pre1) + "    ret\n"
    return (
        vector
        + 'SECTION "main", ROM0[$0150]\nMain:\n'
        + main
        + _check_and_report()
        + handlers
        + f"Expected:\n    db {expected}\n"
    )


HALT_ROM_NAMES = tuple(PRE_NOPS)


@functools.cache
def halt_rom(name: str) -> bytes:
    return build_rom(halt_rom_source(name), title=name[:11].upper())
