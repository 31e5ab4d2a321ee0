"""bench.sass_census: loops found in a SASS listing, the hot loop, and what is counted in it
(calls, local and global sites, Machine descriptor loads), on listings in cuobjdump's shape."""

from __future__ import annotations

import pytest

from bench.cuda_build_report import check_budget, hot_loop_goals
from bench.sass_census import census, hot_loop, innermost, loops, parse_sass
from bench.sass_live import live_peaks, parse_live

pytestmark = pytest.mark.tooling


def listing(lines: list[str]) -> str:
    """cuobjdump -sass lines, one instruction every 0x10 bytes from 0."""
    out = ["\t\tFunction : step_kernel_0cca4b80_cuda_kernel_forward"]
    for k, text in enumerate(lines):
        out.append(f"        /*{16 * k:04x}*/                   {text} ;   /* 0x000000 */")
    return "\n".join(out)


# An outer loop (0x10..0xd0) around an inner one (0x30..0xb0); a small loop after them.
SASS = listing(
    [
        "MOV R1, c[0x0][0x28]",  # 0x00
        "LDG.E R4, desc[UR4][R2.64]",  # 0x10: outer head
        "CALL.REL.NOINC 0x400",  # 0x20
        "LDG.E.64 R8, desc[UR4][R20.64+0xa8]",  # 0x30: inner head, a data pointer
        "LDG.E R6, desc[UR4][R20.64+0xb8]",  # 0x40: a stride, from the same struct
        "IMAD.WIDE R10, R6, R7, R8",  # 0x50: pointer + index
        "LD.E.U8 R12, desc[UR4][R10.64]",  # 0x60: the data
        "STL [R1+0x10], R12",  # 0x70
        "LDL R13, [R1+0x14]",  # 0x80
        "@P0 STG.E.U8 desc[UR4][R10.64], R13",  # 0x90
        "LDG.E.64 R14, desc[UR4][R2.64+0x8]",  # 0xa0: 64-bit data, never an address
        "@P1 BRA 0x30",  # 0xb0: inner back edge
        "@P2 BRA 0x10",  # 0xc0: outer back edge
        "IADD3 R1, R1, 0x1, RZ",  # 0xd0
        "@P3 BRA 0xd0",  # 0xe0: a small loop
        "EXIT",  # 0xf0
    ]
)


def test_loops_innermost_and_the_hot_loop():
    ins = parse_sass(SASS)
    assert len(ins) == 16 and ins[3] == (0x30, "LDG.E.64 R8, desc[UR4][R20.64+0xa8]")
    assert loops(ins) == [(0x10, 0xC0), (0x30, 0xB0), (0xD0, 0xE0)]
    assert innermost(loops(ins)) == [(0x30, 0xB0), (0xD0, 0xE0)]
    hot = hot_loop(ins)
    assert hot is not None and (hot.first, hot.last, hot.instructions) == (0x30, 0xB0, 9)


def test_census_counts_sites_and_descriptor_loads():
    ins = parse_sass(SASS)
    inner = census(ins, (0x30, 0xB0))
    assert (inner.calls, inner.local_loads, inner.local_stores) == (0, 1, 1)
    assert (inner.global_loads, inner.global_stores) == (4, 1)
    # the data pointer reaches an address; the stride loaded from the same base counts too;
    # the 64-bit load from another base (R2) never becomes an address
    assert inner.descriptor_loads == 2
    assert inner.as_dict()["local_sites"] == 2
    outer = census(ins, (0x10, 0xC0))
    assert outer.calls == 1 and outer.global_loads == 5
    assert hot_loop(parse_sass(listing(["MOV R1, R2", "EXIT"]))) is None


def test_descriptor_loads_from_the_constant_bank_count_zero():
    body = listing(
        [
            "ULDC.64 UR6, c[0x0][0x260]",
            "IMAD.WIDE R4, R2, UR8, R6",
            "LDG.E.U8 R5, desc[UR4][R4.64]",
            "@P0 BRA 0x0",
        ]
    )
    hot = hot_loop(parse_sass(body))
    assert hot is not None and hot.descriptor_loads == 0 and hot.global_loads == 1


def _row(registers=128, stack=512, hot=None):
    entry = {
        "kind": "entry",
        "name": "step_kernel",
        "registers": registers,
        "stack_frame": stack,
        "cumulative_stack": stack,
        "spill_stores": 0,
    }
    row = {"module": "gbxcule.kernels.step.step_cuda", "functions": [entry]}
    if hot is not None:
        row["hot_loop"] = hot
    return row


def test_budget_checks_the_hot_loop_and_reports_its_goals():
    clean = {"calls": 0, "descriptor_loads": 0, "local_sites": 10}
    assert check_budget(_row(hot=clean)) == []
    assert hot_loop_goals(_row(hot=clean)) == []
    bad = {"calls": 4, "descriptor_loads": 103, "local_sites": 396}
    breaches = check_budget(_row(hot=bad))
    assert any("4 calls" in b for b in breaches) and any("103 descriptor" in b for b in breaches)
    assert any("396 local-memory sites > 16" in b for b in breaches)
    assert check_budget(_row(registers=255, hot=clean)) == ["step_kernel 255 registers > 128"]
    assert hot_loop_goals(_row(registers=255, stack=2096, hot=bad)) == [
        "registers 255 > 128",
        "stack 2096 > 512",
        "local_sites 396 > 16",
    ]
    assert hot_loop_goals(_row()) == []  # no census taken: nothing to report


def live_listing_text(functions: dict[str, list[tuple[str, int]]]) -> str:
    """An ``nvdisasm -lrm count`` listing: per function, (instruction, live registers) every
    0x10 bytes, numbered on from the previous function."""
    out, offset = [], 0
    for symbol, body in functions.items():
        out.append(f"        .type           {symbol},@function")
        out.append(f"{symbol}:")
        for text, live in body:
            out.append(f"        /*{offset:04x}*/   {text} ;   // | {live:3d} |  1 |  2 |")
            offset += 0x10
    return "\n".join(out)


def test_live_peaks_split_the_loop_the_entry_and_each_function_without_call_sites():
    entry = "step_kernel_0cca4b80_cuda_kernel_forward"
    callee = f"${entry}$_ZN75_INTERNAL_00000000_44_wp_gbxcule_cu_861cb82512tick_sweep_0EP16Mi"
    text = live_listing_text(
        {
            entry: [
                ("MOV R1, c[0x0][0x28]", 5),  # 0x00
                ("IADD3 R2, R2, 0x1, RZ", 40),  # 0x10: loop head
                ("CALL.REL.NOINC 0x80", 200),  # 0x20: a call site counts the convention
                ("@P0 BRA 0x10", 60),  # 0x30: back edge
                ("IMAD R9, R8, R7, RZ", 90),  # 0x40: after the loop
                ("EXIT", 3),  # 0x50
            ],
            callee: [("MOV R20, R4", 110), ("IADD3 R21, R20, R22, RZ", 150), ("RET.REL", 111)],
        }
    )
    rows = parse_live(text)
    assert len(rows) == 9 and rows[6].function == callee and rows[6].live == 110
    peaks = live_peaks(rows, (0x10, 0x30))
    assert peaks == {
        "entry": 90,
        "hot_loop": 60,
        "functions": {"tick_sweep": {"at_entry": 110, "peak": 150}},
    }
    assert live_peaks(rows, None)["hot_loop"] is None
    assert live_peaks([], None) == {"entry": 0, "hot_loop": None, "functions": {}}
