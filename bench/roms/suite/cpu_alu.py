"""8-bit ALU micro ROMs: every ALU op x all 256 A x operand samples x carry-in, INC/DEC r.

Each ``alu_<op>`` ROM runs ``op a, x`` for 8 operand samples; sample j of op k uses
operand form (j + k) % 8 of b, c, d, e, h, l, [hl], n8, so across the suite every
sample meets every form. ``alu_self`` covers ``op a, a``. ``alu_inc`` / ``alu_dec``
run INC/DEC on every target register and [hl] for all 256 values. Every case runs
with flags-in $E0 (carry 0, Z/N/H set) and $10 (carry 1 alone) and records A (or the
target) and F; the expectation comes from ``cpu_model``.
"""

from __future__ import annotations

from collections.abc import Callable

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
from gbxcule.core.isa import ALU_OPS

SAMPLES = (0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0xF0, 0xFF)
FORMS = ("b", "c", "d", "e", "h", "l", "[hl]", "n8")
TARGETS = ("b", "c", "d", "e", "h", "l", "[hl]", "a")
FINS = (0xE0, 0x10)  # carry-in 0 with Z/N/H set, carry-in 1 alone
ALL_BYTES = tuple(bytes([v]) for v in range(256))
STORE_A_AND_F = "    push af\n    ldh [hOut], a\n    pop de\n    ld a, e\n    ldh [hOut + 1], a\n"


def _operand_snippet(op: str, form: str, sample: int) -> str:
    """``op a, <form>`` with the form holding ``sample`` and A = hIn, F = hFin."""
    pre = f"    ld a, ${sample:02X}\n    ldh [hCell], a\n    ld hl, hCell\n"
    operand = {"[hl]": "[hl]", "n8": f"${sample:02X}"}.get(form, form)
    load = "" if form in ("[hl]", "n8") else f"    ld {form}, ${sample:02X}\n"
    return (
        (pre if form == "[hl]" else "")
        + set_flags("de")
        + "    ldh a, [hIn]\n"
        + load
        + f"    {op} a, {operand}\n"
        + STORE_A_AND_F
    )


def _incdec_snippet(op: str, target: str) -> str:
    """``op <target>`` with the target holding hIn and F = hFin; records target and F."""
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
        + f"    {op} {target}\n"
        + "    push af\n"
        + read
        + "    ldh [hOut], a\n    pop de\n    ld a, e\n    ldh [hOut + 1], a\n"
    )


def _rom(name: str, blocks: list[tuple[str, str, Callable[[int, int], tuple[int, int]]]]):
    """blocks: (snippet, description, model(value, f) -> (result, F)), all 256 values each."""
    runs = [
        CaseRun(
            f"Block{i}",
            snippet,
            ALL_BYTES,
            FINS,
            2,
            model=lambda r, f, m=model: bytes(m(r[0], f)),
            what=what,
        )
        for i, (snippet, what, model) in enumerate(blocks)
    ]
    code, data = case_runs_source(runs, RESULTS_BASE)
    return SelfCheckingRom(name, code, (runs_table(name, RESULTS_BASE, runs),), data=data)


def _alu_plan(k: int) -> SelfCheckingRom:
    op = ALU_OPS[k]
    blocks = []
    for j, sample in enumerate(SAMPLES):
        form = FORMS[(j + k) % len(FORMS)]
        blocks.append(
            (
                _operand_snippet(op, form, sample),
                f"{op} a, {form}=${sample:02X}",
                lambda v, f, op=op, s=sample: cpu_model.alu8(op, v, s, f),
            )
        )
    return _rom(f"alu_{op}", blocks)


def _self_plan() -> SelfCheckingRom:
    blocks = [
        (
            set_flags("de") + f"    ldh a, [hIn]\n    {op} a, a\n" + STORE_A_AND_F,
            f"{op} a, a",
            lambda v, f, op=op: cpu_model.alu8(op, v, v, f),
        )
        for op in ALU_OPS
    ]
    return _rom("alu_self", blocks)


def _incdec_plan(op: str) -> SelfCheckingRom:
    model = cpu_model.inc8 if op == "inc" else cpu_model.dec8
    blocks = [(_incdec_snippet(op, t), f"{op} {t}", model) for t in TARGETS]
    return _rom(f"alu_{op}", blocks)


ROMS = [
    rom_spec(
        f"alu_{op}",
        f"{op.upper()} a, x: 256 A x 8 operands (reg/[hl]/imm forms) x carry-in 0/1 -> A, F",
        lambda k=k: _alu_plan(k),
        steps=90,
    )
    for k, op in enumerate(ALU_OPS)
]
ROMS += [
    rom_spec(
        "alu_self",
        "every ALU op on a, a for all 256 A x carry-in 0/1 -> A, F",
        _self_plan,
        steps=90,
    ),
    rom_spec(
        "alu_inc",
        "INC r and INC [hl] on every target x 256 values x carry-in 0/1 -> value, F",
        lambda: _incdec_plan("inc"),
        steps=90,
    ),
    rom_spec(
        "alu_dec",
        "DEC r and DEC [hl] on every target x 256 values x carry-in 0/1 -> value, F",
        lambda: _incdec_plan("dec"),
        steps=90,
    ),
]
