"""bench/cpu_profile.py: the access classifier, the fast-path coverage and a tiny run."""

from __future__ import annotations

import json

import pytest

from bench import cpu_profile as cp

pytestmark = pytest.mark.tooling

HL, BC, DE, SP = 0x4123, 0xC0FE, 0x9801, 0xDFF0
ZF = 0x80


def _acc(*code: int, f: int = 0) -> list[tuple[str, int]]:
    packed = (
        code[0] | (code[1] << 8 if len(code) > 1 else 0) | (code[2] << 16 if len(code) > 2 else 0)
    )
    return cp.data_accesses(packed, HL, BC, DE, SP, f)


def test_data_accesses_by_opcode():
    assert _acc(0x2A) == [("r", HL)]  # ld a, [hl+]
    assert _acc(0x12) == [("w", DE)]  # ld [de], a
    assert _acc(0x86) == [("r", HL)]  # add a, [hl]
    assert _acc(0x34) == [("r", HL), ("w", HL)]  # inc [hl]
    assert _acc(0xE0, 0x46) == [("w", 0xFF46)]  # ldh [$46], a
    assert _acc(0xF2) == [("r", 0xFFFE)]  # ldh a, [c]
    assert _acc(0xFA, 0x34, 0x12) == [("r", 0x1234)]  # ld a, [$1234]
    assert _acc(0x08, 0x00, 0xC0) == [("w", 0xC000), ("w", 0xC001)]  # ld [n16], sp
    assert _acc(0xC5) == [("w", SP - 1), ("w", SP - 2)]  # push bc
    assert _acc(0xC9) == [("r", SP), ("r", SP + 1)]  # ret
    assert _acc(0xC4, 0, 0, f=ZF) == []  # call nz with Z set: not taken
    assert _acc(0xC4, 0, 0, f=0) == [("w", SP - 1), ("w", SP - 2)]
    assert _acc(0xCB, 0x46) == [("r", HL)]  # bit 0, [hl]
    assert _acc(0xCB, 0x06) == [("r", HL), ("w", HL)]  # rlc [hl]
    assert _acc(0xCB, 0x47) == []  # bit 0, a
    assert _acc(0x80) == []  # add a, b


def test_region_names():
    assert [cp.region(a, False) for a in (0x0150, 0x4000, 0x9800, 0xC000, 0xE000)] == [
        "rom0",
        "romx",
        "vram",
        "wram",
        "wram",
    ]
    assert cp.region(0x2000, True) == "mbc"
    assert cp.region(0xFF44, False) == "io 44"
    assert cp.region(0xFF80, False) == "hram"
    assert cp.region(0xFFFF, True) == "io FF"


def test_fast_path_coverage_matches_cpu_fast():
    cover = cp.fast_path_coverage()
    for op in (0x7E, 0x2A, 0x12, 0x80, 0xC5, 0xC9, 0xCD, 0xE0, 0xF0, 0xE9, 0x29, 0x18):
        assert cover[op], cp.mnemonic(op)
    for op in (0x76, 0x10, 0xFB, 0xD9, 0xE8, 0xF8, 0x08, 0xCB):  # the general phases' own
        assert not cover[op], cp.mnemonic(op)
    assert cover[256 + 0x47] and not cover[256 + 0x46]  # bit 0, a / bit 0, [hl]


def test_profile_run_writes_mix_and_timing(tmp_path, capsys):
    args = ["--rom", "loop-io", "--instructions", "7000", "--warmup", "3", "--steps", "1"]
    args += ["--repeats", "1", "--backends", "pyboy,warp-cpu", "--out", str(tmp_path)]
    assert cp.main(args) == 0
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    mix = rows[0]
    assert mix["kind"] == "mix" and mix["instructions"] == 7000
    loop = {"ld a, [hl+]", "add a, b", "ldh a, [n8]", "ld [de], a", "inc de", "dec b", "jr nz, e8"}
    assert loop <= set(mix["counts"])
    assert mix["counts"]["ldh a, [n8]"] == pytest.approx(1000, abs=10)  # one in seven
    assert mix["accesses"]["r io 44"] == mix["counts"]["ldh a, [n8]"]
    assert mix["not_fast"] == []
    assert [(r["backend"], r["rom"]) for r in rows[1:]] == [
        ("pyboy", "loop-io.gb"),
        ("warp-cpu", "loop-io.gb"),
    ]
    assert "| loop-io.gb | 8.00 |" in (tmp_path / "summary.md").read_text()
