"""DAA micro ROM: every A (256) x every Z/N/H/C combination of F (16) -> A and F.

The expectation is ``cpu_model.daa``, written from the Pan Docs description of DAA
(adjust after an addition when N = 0, after a subtraction when N = 1). Z in the
flags-in is included to show it does not feed the result.
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

FINS = tuple(f << 4 for f in range(16))


def _plan() -> SelfCheckingRom:
    snippet = (
        set_flags("de")
        + "    ldh a, [hIn]\n    daa\n    push af\n    ldh [hOut], a\n"
        + "    pop de\n    ld a, e\n    ldh [hOut + 1], a\n"
    )
    run = CaseRun(
        "DaaAll",
        snippet,
        tuple(bytes([a]) for a in range(256)),
        FINS,
        2,
        model=lambda r, f: bytes(cpu_model.daa(r[0], f)),
        what="daa",
    )
    code, data = case_runs_source([run], RESULTS_BASE)
    return SelfCheckingRom("daa", code, (runs_table("daa", RESULTS_BASE, [run]),), data=data)


ROMS = [
    rom_spec(
        "daa",
        "DAA for all 256 A x 16 Z/N/H/C flag inputs -> A, F (Pan Docs model)",
        _plan,
        steps=90,
    )
]
