"""16-bit arithmetic micro ROM: ADD HL,rr (all rr), INC/DEC rr, ADD SP,e, LD HL,SP+e.

Operands come from ``VALUES16`` (carry edges at bits 3, 7, 11 and 15); ADD HL,rr
runs every pair of them, ADD SP,e and LD HL,SP+e run every value with each of
``OFFSETS``. Every case runs with flags-in $00 and $F0 (Z must be kept by ADD HL,
all flags by INC/DEC rr) and records the 16-bit result (low, high) and F.
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

VALUES16 = (
    0x0000,
    0x0001,
    0x000F,
    0x0010,
    0x00FF,
    0x0100,
    0x07FF,
    0x0800,
    0x0FFF,
    0x1000,
    0x7FFF,
    0x8000,
    0x8FFF,
    0xF000,
    0xFFFE,
    0xFFFF,
)
OFFSETS = (0x00, 0x01, 0x0F, 0x10, 0x7F, 0x80, 0xF0, 0xFF)  # e as a byte
FINS = (0x00, 0xF0)
PAIR_REGS = {"bc": ("b", "c"), "de": ("d", "e"), "hl": ("h", "l")}
# Snippets that borrow SP park it in hSaveSP; restoring it (ldh/ld/ld sp,hl) keeps the flags.
SAVE_SP = "    ld [hSaveSP], sp\n"
RESTORE_SP = (
    "    ldh a, [hSaveSP]\n    ld l, a\n    ldh a, [hSaveSP + 1]\n    ld h, a\n    ld sp, hl\n"
)


def _word(v: int) -> bytes:
    return bytes([v & 0xFF, v >> 8])


def _load_pair(pair: str, offset: int) -> str:
    hi, lo = PAIR_REGS[pair]
    return f"    ldh a, [hIn + {offset}]\n    ld {lo}, a\n    ldh a, [hIn + {offset + 1}]\n    ld {hi}, a\n"


def _out_pair(pair: str) -> str:
    hi, lo = PAIR_REGS[pair]
    return f"    ld a, {lo}\n    ldh [hOut], a\n    ld a, {hi}\n    ldh [hOut + 1], a\n"


def _out_tmp_sp() -> str:
    return (
        "    ldh a, [hTmpSP]\n    ldh [hOut], a\n    ldh a, [hTmpSP + 1]\n    ldh [hOut + 1], a\n"
    )


def _out_flags(scratch: str) -> str:
    hi, lo = PAIR_REGS[scratch]
    return f"    push af\n    pop {hi}{lo}\n    ld a, {lo}\n    ldh [hOut + 2], a\n"


def _signed(e: int) -> str:
    return str(e - 0x100 if e & 0x80 else e)


def _sp_plus(e: int) -> str:
    s = _signed(e)
    return f"sp+{s}" if not s.startswith("-") else f"sp{s}"


def _run(label: str, what: str, snippet: str, records, model: Callable[[bytes, int], bytes]):
    return CaseRun(label, snippet, tuple(records), FINS, 3, model=model, what=what)


def _add_hl_runs() -> list[CaseRun]:
    pairs = [_word(hl) + _word(rr) for hl in VALUES16 for rr in VALUES16]

    def model(r: bytes, f: int) -> bytes:
        hl, rr = int.from_bytes(r[:2], "little"), int.from_bytes(r[2:], "little")
        v, fo = cpu_model.add_hl(hl, rr, f)
        return _word(v) + bytes([fo])

    runs = []
    for rr, scratch in (("bc", "de"), ("de", "bc")):
        code = set_flags(scratch) + _load_pair("hl", 0) + _load_pair(rr, 2)
        code += f"    add hl, {rr}\n" + _out_pair("hl") + _out_flags(scratch)
        runs.append(_run(f"AddHl{rr.upper()}", f"add hl, {rr}", code, pairs, model))
    code = set_flags("de") + _load_pair("hl", 0) + "    add hl, hl\n"
    code += _out_pair("hl") + _out_flags("de")
    singles = [_word(v) for v in VALUES16]
    runs.append(_run("AddHlHL", "add hl, hl", code, singles, lambda r, f: model(r + r, f)))
    code = SAVE_SP + set_flags("de") + _load_pair("hl", 2) + "    ld sp, hl\n"
    code += _load_pair("hl", 0) + "    add hl, sp\n" + _out_pair("hl") + RESTORE_SP
    code += _out_flags("de")
    runs.append(_run("AddHlSP", "add hl, sp", code, pairs, model))
    return runs


def _incdec_runs() -> list[CaseRun]:
    singles = [_word(v) for v in VALUES16]
    runs = []
    for op, delta in (("inc", 1), ("dec", -1)):

        def model(r: bytes, f: int, delta=delta) -> bytes:
            return _word((int.from_bytes(r, "little") + delta) & 0xFFFF) + bytes([f])

        for rr in ("bc", "de", "hl"):
            scratch = "bc" if rr == "de" else "de"
            code = set_flags(scratch) + _load_pair(rr, 0) + f"    {op} {rr}\n"
            code += _out_pair(rr) + _out_flags(scratch)
            runs.append(_run(f"{op.title()}{rr.upper()}", f"{op} {rr}", code, singles, model))
        code = SAVE_SP + set_flags("de") + _load_pair("hl", 0) + "    ld sp, hl\n"
        code += (
            f"    {op} sp\n    ld [hTmpSP], sp\n" + RESTORE_SP + _out_tmp_sp() + _out_flags("de")
        )
        runs.append(_run(f"{op.title()}SP", f"{op} sp", code, singles, model))
    return runs


def _sp_offset_runs() -> list[CaseRun]:
    singles = [_word(v) for v in VALUES16]
    runs = []
    for e in OFFSETS:

        def model(r: bytes, f: int, e=e) -> bytes:
            v, fo = cpu_model.add_sp_e(int.from_bytes(r, "little"), e)
            return _word(v) + bytes([fo])

        head = SAVE_SP + set_flags("de") + _load_pair("hl", 0) + "    ld sp, hl\n"
        code = head + f"    add sp, {_signed(e)}\n    ld [hTmpSP], sp\n" + RESTORE_SP
        code += _out_tmp_sp() + _out_flags("de")
        runs.append(_run(f"AddSp{e:02X}", f"add sp, {_signed(e)}", code, singles, model))
        code = head + f"    ld hl, {_sp_plus(e)}\n" + _out_pair("hl") + RESTORE_SP
        code += _out_flags("de")
        runs.append(_run(f"LdHlSp{e:02X}", f"ld hl, {_sp_plus(e)}", code, singles, model))
    return runs


def _plan() -> SelfCheckingRom:
    runs = _add_hl_runs() + _incdec_runs() + _sp_offset_runs()
    code, data = case_runs_source(runs, RESULTS_BASE)
    return SelfCheckingRom("alu16", code, (runs_table("alu16", RESULTS_BASE, runs),), data=data)


ROMS = [
    rom_spec(
        "alu16",
        "ADD HL,rr (all rr), INC/DEC rr (all rr), ADD SP,e, LD HL,SP+e over samples -> value, F",
        _plan,
        steps=60,
    )
]
