"""Load micro ROM: every LD form, each case recording all registers and four memory cells.

Before every case ``CaseSetup`` puts the registers and the scratch cells at their
``INIT_REGS`` / ``INIT_CELLS`` values (HL points at a cell); the case runs its load,
then ``LibTraceRegs`` appends A F B C D E H L and four watched cells follow. Python
replays each case on a small register/memory model to get the expected record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.roms.suite._lib import (
    RESULTS_BASE,
    STACK_TOP,
    ResultTable,
    SelfCheckingRom,
    rom_spec,
    trace_start,
)

REGS8 = ("b", "c", "d", "e", "h", "l", "a")
INIT_REGS = {"a": 0x0A, "f": 0xB0, "b": 0x1B, "c": 0x2C, "d": 0x3D, "e": 0x4E, "h": 0xD1, "l": 0x23}
CELL_HL = 0xD123
INIT_CELLS = {
    0xD122: 0x61,
    CELL_HL: 0x5E,
    0xD124: 0x72,
    0xD130: 0x6F,  # [bc] cases
    0xD140: 0x7A,  # [de] cases
    0xD150: 0x8B,  # [nn] cases
    0xD160: 0x94,  # ld [nn], sp
    0xD161: 0x95,
    0xFFB0: 0x9C,  # ldh [n8]
    0xFFB1: 0xAD,  # ldh [c]
    0xFFAC: 0xBE,  # hTmpSP: where SP cases store SP
    0xFFAD: 0xCF,
}
WATCHED = 4
RECORD = 8 + WATCHED
TRACE_ORDER = ("a", "f", "b", "c", "d", "e", "h", "l")


class Machine:
    """Registers and memory cells as the load cases see them."""

    def __init__(self) -> None:
        self.r = dict(INIT_REGS)
        self.mem = dict(INIT_CELLS)
        self.sp = STACK_TOP

    def pair(self, name: str) -> int:
        return self.r[name[0]] << 8 | self.r[name[1]]

    def set_pair(self, name: str, v: int) -> None:
        self.r[name[0]], self.r[name[1]] = v >> 8 & 0xFF, v & 0xFF


@dataclass(frozen=True)
class LoadCase:
    what: str
    asm: str
    effect: Callable[[Machine], None]
    cells: tuple[int, ...] = ()

    def expected(self) -> bytes:
        m = Machine()
        self.effect(m)
        return bytes(m.r[k] & 0xFF for k in TRACE_ORDER) + bytes(m.mem[c] for c in self.watched())

    def watched(self) -> tuple[int, ...]:
        return (self.cells + (CELL_HL,) * WATCHED)[:WATCHED]


def _set(reg: str, value: Callable[[Machine], int]) -> Callable[[Machine], None]:
    def effect(m: Machine) -> None:
        m.r[reg] = value(m)

    return effect


def _store(addr: Callable[[Machine], int], value: Callable[[Machine], int]):
    def effect(m: Machine) -> None:
        m.mem[addr(m)] = value(m)

    return effect


def _steps(*effects: Callable[[Machine], None]) -> Callable[[Machine], None]:
    def effect(m: Machine) -> None:
        for e in effects:
            e(m)

    return effect


def _ld_pair(pair: str, v: int) -> Callable[[Machine], None]:
    return lambda m: m.set_pair(pair, v)


def _register_cases() -> list[LoadCase]:
    cases = [
        LoadCase(f"ld {d}, {s}", f"    ld {d}, {s}\n", _set(d, lambda m, s=s: m.r[s]))
        for d in REGS8
        for s in REGS8
    ]
    cases += [
        LoadCase(
            f"ld {d}, ${0xC3 + i:02X}",
            f"    ld {d}, ${0xC3 + i:02X}\n",
            _set(d, lambda m, i=i: 0xC3 + i),
        )
        for i, d in enumerate(REGS8)
    ]
    cases += [
        LoadCase(f"ld {d}, [hl]", f"    ld {d}, [hl]\n", _set(d, lambda m: m.mem[m.pair("hl")]))
        for d in REGS8
    ]
    cases += [
        LoadCase(
            f"ld [hl], {s}",
            f"    ld [hl], {s}\n",
            _store(lambda m: m.pair("hl"), lambda m, s=s: m.r[s]),
            (CELL_HL,),
        )
        for s in REGS8
    ]
    cases.append(
        LoadCase("ld [hl], $E7", "    ld [hl], $E7\n", _store(lambda m: CELL_HL, lambda m: 0xE7))
    )
    return cases


def _indirect_cases() -> list[LoadCase]:
    cases = []
    for pair, cell in (("bc", 0xD130), ("de", 0xD140)):
        setup = f"    ld {pair}, ${cell:04X}\n"
        cases.append(
            LoadCase(
                f"ld a, [{pair}]",
                setup + f"    ld a, [{pair}]\n",
                _steps(_ld_pair(pair, cell), _set("a", lambda m, c=cell: m.mem[c])),
                (cell,),
            )
        )
        cases.append(
            LoadCase(
                f"ld [{pair}], a",
                setup + f"    ld [{pair}], a\n",
                _steps(_ld_pair(pair, cell), _store(lambda m, c=cell: c, lambda m: m.r["a"])),
                (cell,),
            )
        )
    cases.append(
        LoadCase("ld a, [nn]", "    ld a, [$D150]\n", _set("a", lambda m: m.mem[0xD150]), (0xD150,))
    )
    cases.append(
        LoadCase(
            "ld [nn], a",
            "    ld [$D150], a\n",
            _store(lambda m: 0xD150, lambda m: m.r["a"]),
            (0xD150,),
        )
    )
    cases.append(
        LoadCase(
            "ldh a, [n8]", "    ldh a, [$FFB0]\n", _set("a", lambda m: m.mem[0xFFB0]), (0xFFB0,)
        )
    )
    cases.append(
        LoadCase(
            "ldh [n8], a",
            "    ldh [$FFB0], a\n",
            _store(lambda m: 0xFFB0, lambda m: m.r["a"]),
            (0xFFB0,),
        )
    )
    set_c = _set("c", lambda m: 0xB1)
    cases.append(
        LoadCase(
            "ldh a, [c]",
            "    ld c, $B1\n    ldh a, [c]\n",
            _steps(set_c, _set("a", lambda m: m.mem[0xFFB1])),
            (0xFFB1,),
        )
    )
    cases.append(
        LoadCase(
            "ldh [c], a",
            "    ld c, $B1\n    ldh [c], a\n",
            _steps(set_c, _store(lambda m: 0xFFB1, lambda m: m.r["a"])),
            (0xFFB1,),
        )
    )
    return cases


def _post_hl(delta: int) -> Callable[[Machine], None]:
    return lambda m: m.set_pair("hl", m.pair("hl") + delta)


def _hl_step_cases() -> list[LoadCase]:
    around = (0xD122, CELL_HL, 0xD124)
    cases = []
    for sign, delta in (("+", 1), ("-", -1)):
        cases.append(
            LoadCase(
                f"ld a, [hl{sign}]",
                f"    ld a, [hl{sign}]\n",
                _steps(_set("a", lambda m: m.mem[m.pair("hl")]), _post_hl(delta)),
                around,
            )
        )
        cases.append(
            LoadCase(
                f"ld [hl{sign}], a",
                f"    ld [hl{sign}], a\n",
                _steps(_store(lambda m: m.pair("hl"), lambda m: m.r["a"]), _post_hl(delta)),
                around,
            )
        )
        # Twice in a row: the second access sees the stepped HL.
        cases.append(
            LoadCase(
                f"ld [hl{sign}], a twice",
                f"    ld [hl{sign}], a\n    ld a, $E1\n    ld [hl{sign}], a\n",
                _steps(
                    _store(lambda m: m.pair("hl"), lambda m: m.r["a"]),
                    _post_hl(delta),
                    _set("a", lambda m: 0xE1),
                    _store(lambda m: m.pair("hl"), lambda m: m.r["a"]),
                    _post_hl(delta),
                ),
                around,
            )
        )
    return cases


def _sp_cases() -> list[LoadCase]:
    tmp = (0xFFAC, 0xFFAD)
    restore = f"    ld sp, ${STACK_TOP:04X}\n"

    def sp_to_tmp(v: int) -> Callable[[Machine], None]:
        return _steps(
            _store(lambda m: 0xFFAC, lambda m: v & 0xFF), _store(lambda m: 0xFFAD, lambda m: v >> 8)
        )

    cases = [
        LoadCase(
            "ld sp, hl",
            "    ld hl, $D1F0\n    ld sp, hl\n    ld [hTmpSP], sp\n" + restore,
            _steps(_ld_pair("hl", 0xD1F0), sp_to_tmp(0xD1F0)),
            tmp,
        ),
        LoadCase(
            "ld [nn], sp (SP = $FFFE)",
            "    ld [$D160], sp\n",
            _steps(
                _store(lambda m: 0xD160, lambda m: STACK_TOP & 0xFF),
                _store(lambda m: 0xD161, lambda m: STACK_TOP >> 8),
            ),
            (0xD160, 0xD161),
        ),
        LoadCase(
            "ld sp, $ABCD then ld [nn], sp",
            "    ld sp, $ABCD\n    ld [$D160], sp\n" + restore,
            _steps(
                _store(lambda m: 0xD160, lambda m: 0xCD),
                _store(lambda m: 0xD161, lambda m: 0xAB),
            ),
            (0xD160, 0xD161),
        ),
        LoadCase(
            "ld sp, $1234",
            "    ld sp, $1234\n    ld [hTmpSP], sp\n" + restore,
            sp_to_tmp(0x1234),
            tmp,
        ),
    ]
    for pair, v in (("bc", 0x8001), ("de", 0x7FFE), ("hl", 0xC0DE)):
        cases.append(
            LoadCase(f"ld {pair}, ${v:04X}", f"    ld {pair}, ${v:04X}\n", _ld_pair(pair, v))
        )
    return cases


def _setup_routine() -> str:
    cells = "".join(f"    ld a, ${v:02X}\n    ld [${a:04X}], a\n" for a, v in INIT_CELLS.items())
    r = INIT_REGS
    return (
        "CaseSetup:\n"
        + cells
        + f"    ld hl, ${r['a']:02X}{r['f']:02X}\n    push hl\n    pop af\n"
        + f"    ld bc, ${r['b']:02X}{r['c']:02X}\n    ld de, ${r['d']:02X}{r['e']:02X}\n"
        + f"    ld hl, ${r['h']:02X}{r['l']:02X}\n    ret\n"
    )


def _plan() -> SelfCheckingRom:
    cases = _register_cases() + _indirect_cases() + _hl_step_cases() + _sp_cases()
    body = [trace_start(RESULTS_BASE)]
    for i, case in enumerate(cases):
        trace_cells = "".join(f"    ld a, [${c:04X}]\n    call LibTrace\n" for c in case.watched())
        body.append(
            f"LoadCase{i}:  ; {case.what}\n    call CaseSetup\n{case.asm}"
            f"    call LibTraceRegs\n{trace_cells}"
        )
    expected = b"".join(c.expected() for c in cases)

    def describe(i: int) -> str:
        watched = ", ".join(f"${c:04X}" for c in cases[i].watched())
        return f"case {i} '{cases[i].what}' (A F B C D E H L, then {watched})"

    table = ResultTable("loads", RESULTS_BASE, expected, RECORD, describe)
    return SelfCheckingRom("loads", "".join(body), (table,), routines=_setup_routine())


ROMS = [
    rom_spec(
        "loads",
        "every LD form (r,r'; r,n; [hl]; [bc]/[de]/[nn]; ldh n/c; [hl+/-]; sp; rr,nn) -> regs+cells",
        _plan,
        steps=30,
    )
]
