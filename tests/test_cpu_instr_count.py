"""bench/cpu_instr_count.py: callgrind parsing, the load base, grouping, and a real count."""

from __future__ import annotations

import json
import shutil

import pytest

from bench import cpu_instr_count as ic

pytestmark = pytest.mark.tooling

# A callgrind file as Valgrind writes it with --dump-instr=yes: name compression (a JIT
# function first named as a callee, with a recursion suffix), relative positions, and a
# call whose inclusive cost must not count as the caller's own.
CALLGRIND = """\
version: 1
positions: instr line
events: Ir
ob=(1) ???
fl=(1) ???
fn=(1) 0x0000000040001000
0x40001000 0 5
+4 * 7
cfn=(2) 0x0000000040002000'2
calls=1 0x40002000 0
+2 0 1000
+3 0 2
fn=(2)
0x40002000 0 11
fn=(1)
0x40001000 0 1
ob=(2) /usr/lib/libc.so
fn=(3) memcpy
0x7000 0 50
summary: 1076
totals: 1076
"""


def test_parse_callgrind_self_costs():
    profile = ic.parse_callgrind(CALLGRIND)
    assert profile.by_address == {
        0x40001000: 6,
        0x40001004: 7,
        0x40001009: 2,
        0x40002000: 11,
        0x7000: 50,
    }
    assert profile.by_function == {"0x0000000040001000": 15, "0x0000000040002000": 11, "memcpy": 50}
    assert profile.jit_functions() == {0x40001000: 15, 0x40002000: 11}
    assert ic.total_cost(CALLGRIND) == 1076
    with pytest.raises(ValueError, match="summary"):
        ic.total_cost("events: Ir\n")


def test_load_base_and_object_costs():
    syms = [(0x100, 0x50, "f"), (0x1100, 0x20, "g"), (0x2000, 0x10, "h")]
    # 0x40001000 is f at base 0x40000F00, and so is g at 0x40002000; the costlier entry
    # alone would also allow base 0x3FFFFF00 (as g), which puts nothing else on a symbol
    assert ic.load_base({0x40001000: 15, 0x40002000: 11}, syms) == 0x40000F00
    costs = ic.object_costs(CALLGRIND, syms)
    assert costs == {0x100: 6, 0x104: 7, 0x109: 2, 0x1100: 11}


def test_group_of_inlined_chains():
    chain = [
        "store<int>",
        "alu8_0",
        "cpu_fast_0",
        "cpu_step_0",
        "cpu_tick_0(Machine_324c189d*, int, long long, int)",
    ]
    assert ic.group_of(chain) == "cpu_fast"
    mem = ["make_cpu_fast_mem__locals__cpu_fast_mem_0", "cpu_step_0", "cpu_tick_0(Machine*)"]
    assert ic.group_of(mem) == "cpu_fast_mem"
    assert ic.group_of(["cpu_step_0", "cpu_tick_0(Machine*)"]) == "cpu_step (itself)"
    sync = ["lcd_sync_0", "_make_sync_units__locals__sync_units_0", "cpu_tick_0(Machine*)"]
    assert ic.group_of(sync) == "sync_units"
    assert ic.group_of(["cpu_tick_0(Machine*)"]) == "cpu_tick (itself)"
    assert ic.group_of(["memcpy"]) == "other"
    # kernels/step/step_cpu.py's module numbers its funcs _1; its dispatch names the fast path
    by_opcode = [
        "alu8_0",
        "cpu_fast_0",
        "make_fast_paths__locals__fast_paths_1",
        "make_fast_by_opcode__locals__fast_by_opcode_1",
        "cpu_step_1",
        "cpu_tick_1(Machine*)",
    ]
    assert ic.group_of(by_opcode) == "cpu_fast"
    assert ic.group_of(by_opcode[3:]) == "fast_by_opcode (itself)"
    assert ic.group_of(["cpu_step_1", "cpu_tick_1(Machine*)"]) == "cpu_step (itself)"
    # its run of fast paths is a function of its own (kernels/cpu/cpu_step.py, cpu_run_fast)
    run = "cpu_run_fast_1(Machine*, int, CpuRegs*, long long)"
    assert ic.group_of([*by_opcode[:4], run]) == "cpu_fast"
    assert ic.group_of(["rom_code_at_1", run]) == "fetch"
    assert ic.group_of(["copy_regs_0", run]) == "copy_regs"
    assert ic.group_of([run]) == "cpu_run_fast (itself)"
    # a line of the run itself that addr2line names by its Python factory's local
    assert ic.group_of(["make_cpu_run_fast__locals__cpu_run_fast_0", run]) == (
        "cpu_run_fast (itself)"
    )


def test_cython_names():
    assert ic.cython_name("__pyx_f_5pyboy_4core_3cpu_3CPU_tick") == "pyboy.core.cpu.CPU.tick"
    assert ic.cython_name("__pyx_f_5pyboy_4core_7opcodes_execute_opcode") == (
        "pyboy.core.opcodes.execute_opcode"
    )
    assert ic.cython_name("memcpy") == "memcpy"


def test_count_flags_replace_native():
    flags = ic.count_flags("-march=native -mllvm=-inline-threshold=9000")
    assert flags.split()[:2] == ["-target-cpu", ic.COUNT_TARGET]
    assert "-march=native" not in flags
    assert "-mllvm=-inline-threshold=9000" in flags
    assert flags.endswith("-debug-info-kind=line-tables-only")


def test_summary_lines_ratio_and_retired_per_ns():
    rows = [
        {"kind": "count", "rom": "a.gb", "backend": "pyboy", "per_sm83": 100.0},
        {
            "kind": "count",
            "rom": "a.gb",
            "backend": "warp-cpu",
            "per_sm83": 150.0,
            "kernel_per_sm83": 149.5,
        },  # fmt: skip
        {
            "kind": "breakdown",
            "rom": "a.gb",
            "backend": "warp-cpu",
            "group": "fetch",
            "per_sm83": 20.0,
        },
        {
            "kind": "breakdown",
            "rom": "a.gb",
            "backend": "pyboy",
            "group": "pyboy.core.cpu.CPU.tick",
            "per_sm83": 30.0,
        },  # fmt: skip
    ]
    text = "\n".join(ic.summary_lines(rows, {"a.gb": {"pyboy": 5.0, "warp-cpu": 6.0}}))
    assert "| a.gb | 100.0 | 150.0 | 149.5 | 1.50 | 20.0 | 25.0 |" in text
    assert "## warp-cpu on a.gb: by the function the CPU loop calls" in text
    assert "## pyboy on a.gb: its costliest functions" in text
    assert text.index("| `fetch` | 20.00 |") < text.index("| `pyboy.core.cpu.CPU.tick` | 30.00 |")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_real_count_of_the_busy_rom(tmp_path):
    """warp-cpu on the busy ROM, one counted step: a plausible count, most of it in the
    instruction loop's own functions."""
    assert ic.main(["--rom", "busy", "--backends", "warp-cpu", "--steps", "1", "--warmup", "1",
                    "--instructions", "20000", "--out", str(tmp_path)]) == 0  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    (count,) = [r for r in rows if r["kind"] == "count"]
    assert 40 < count["per_sm83"] < 400
    groups = {r["group"]: r["per_sm83"] for r in rows if r["kind"] == "breakdown"}
    assert {"fetch", "cpu_fast", "end_slice"} <= set(groups)  # end_slice: the unit syncs
    assert abs(sum(groups.values()) - count["kernel_per_sm83"]) < 0.5  # all but a few
    assert count["kernel_per_sm83"] < count["per_sm83"]  # Python's step work on top
    assert (tmp_path / "summary.md").exists()
