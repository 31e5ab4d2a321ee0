"""CB-prefixed micro ROMs: all 256 CB opcodes over sample values, register and [hl] forms.

``cb_shift`` runs the 64 rotate/shift/swap opcodes on 16 samples, ``cb_bitops`` the
192 BIT/RES/SET opcodes on 8 samples; each with flags-in $00 and $F0 (carry-in both
ways, and every flag that BIT/RES/SET must keep both ways). Each case records the
operand after the op and F; the expectation is ``cpu_model.cb``.
"""

from __future__ import annotations

from bench.roms.suite import cpu_model
from bench.roms.suite._lib import (
    RESULTS_BASE,
    CaseRun,
    SelfCheckingRom,
    case_runs_source,
    rom_spec,
    runs_table,
    set_flags,
)
from gbxcule.core.isa import R8

SHIFT_SAMPLES = (
    0x00,
    0x01,
    0x02,
    0x0F,
    0x10,
    0x3C,
    0x55,
    0x7E,
    0x7F,
    0x80,
    0x81,
    0xAA,
    0xC3,
    0xF0,
    0xFE,
    0xFF,
)
BIT_SAMPLES = (0x00, 0xFF, 0x01, 0x80, 0x5A, 0xA5, 0x0F, 0xF0)
FINS = (0x00, 0xF0)


def _snippet(opcode: int) -> str:
    """CB ``opcode`` on its operand holding hIn, F = hFin; records operand and F."""
    target = R8[opcode & 7]
    if target == "[hl]":
        load, read = "    ldh [hCell], a\n    ld hl, hCell\n", "    ldh a, [hCell]\n"
    elif target == "a":
        load, read = "", ""
    else:
        load, read = f"    ld {target}, a\n", f"    ld a, {target}\n"
    return (
        set_flags("de")
        + "    ldh a, [hIn]\n"
        + load
        + f"    {cpu_model.cb_mnemonic(opcode)}\n"
        + "    push af\n"
        + read
        + "    ldh [hOut], a\n    pop de\n    ld a, e\n    ldh [hOut + 1], a\n"
    )


def _plan(name: str, opcodes: range, samples: tuple[int, ...]) -> SelfCheckingRom:
    records = tuple(bytes([v]) for v in samples)
    runs = [
        CaseRun(
            f"Cb{op:02X}",
            _snippet(op),
            records,
            FINS,
            2,
            model=lambda r, f, op=op: bytes(cpu_model.cb(op, r[0], f)),
            what=f"CB ${op:02X} ({cpu_model.cb_mnemonic(op)})",
        )
        for op in opcodes
    ]
    code, data = case_runs_source(runs, RESULTS_BASE)
    return SelfCheckingRom(name, code, (runs_table(name, RESULTS_BASE, runs),), data=data)


ROMS = [
    rom_spec(
        "cb_shift",
        "CB $00-$3F (RLC RRC RL RR SLA SRA SWAP SRL, all operands) x 16 values x F in -> value, F",
        lambda: _plan("cb_shift", range(0x00, 0x40), SHIFT_SAMPLES),
        steps=60,
    ),
    rom_spec(
        "cb_bitops",
        "CB $40-$FF (BIT RES SET, all bits and operands) x 8 values x F in -> value, F",
        lambda: _plan("cb_bitops", range(0x40, 0x100), BIT_SAMPLES),
        steps=60,
    ),
]
