"""bench/divergence.py: the lockstep model on hand-made traces, and a real traced step."""

from __future__ import annotations

import numpy as np
import pytest

from bench.divergence_model import (
    DISPATCH,
    FRAME,
    HALT_END,
    HALT_LCD,
    ROUTE_FAST,
    ROUTE_FAST_MEM,
    SLICE,
    SYNC,
    WARP,
    collapse_halt,
    fold,
    path_ids,
    segment_keys,
    warp_lockstep,
)

pytestmark = pytest.mark.tooling


def run(lanes: list[list[int]], model: str = "free", fast: bool = True, granularity="opcode"):
    """The ``Lockstep`` of one warp of hand-made lanes."""
    rows = [np.array(lane, dtype=np.int16) for lane in lanes]
    folded = [fold(r) for r in rows]
    codes = [r[keep] for r, (keep, _) in zip(rows, folded)]
    keys = [segment_keys(c, model) for c in codes]
    lut = path_ids(fast, granularity)
    return warp_lockstep([codes], [s for _, s in folded], keys, [lut])[0]


def test_one_path_for_all_lanes_is_a_full_warp():
    lane = [FRAME, SLICE, 0x3C, 0x05, 0x20, SYNC, 0x3C]
    ls = run([lane] * WARP)
    assert ls.units == WARP * 6  # the sync folds into the unit before it
    assert ls.rounds == 6
    assert ls.slots == 7  # 6 rounds on one path, plus the sync's pass
    assert ls.occupancy == 1.0
    assert ls.active == pytest.approx(WARP * 6 / (WARP * 7))


def test_32_different_opcodes_issue_32_times():
    ls = run([[op] for op in range(WARP)])  # general route, 32 different opcodes
    assert (ls.rounds, ls.slots) == (1, WARP)
    assert ls.active == pytest.approx(1 / WARP)
    same_group = run([[0x40 + k] for k in range(WARP)], fast=False, granularity="handler")
    assert same_group.slots == 1  # LD r,r' all run cpu_general's ld-alu group


def test_lanes_that_finish_early_leave_the_warp_part_empty():
    lanes = [[FRAME] + [0x00] * n for n in range(1, 5)]  # 4 lanes of 2..5 units, one path
    ls = run(lanes)
    assert ls.rounds == 5
    assert ls.units == 2 + 3 + 4 + 5
    assert ls.path == 1.0
    assert ls.occupancy == pytest.approx(14 / (WARP * 5))


def test_fast_routes_split_a_warp_that_the_general_path_keeps_together():
    inc_a, ld_a_hl = (ROUTE_FAST << 9) | 0x3C, (ROUTE_FAST_MEM << 9) | 0x7E
    lanes = [[inc_a], [ld_a_hl]]
    assert run(lanes, fast=True, granularity="route").slots == 2
    assert run(lanes, fast=False, granularity="route").slots == 1
    assert run(lanes, fast=False, granularity="handler").slots == 2  # x0-r8 vs ld-alu


def test_the_hot_loop_runs_the_fast_routes_as_one_path():
    """Issue #41's GPU shape: cpu_hot_loop holds the register, memory and CB fast paths,
    so by route they are one path; by handler, lanes split only by the opcode's branch."""
    inc_a, ld_a_hl = (ROUTE_FAST << 9) | 0x3C, (ROUTE_FAST_MEM << 9) | 0x7E
    general = 0x76  # HALT, the general route
    assert run([[inc_a], [ld_a_hl]], granularity="hot-route").slots == 1
    assert run([[inc_a], [ld_a_hl], [general]], granularity="hot-route").slots == 2
    ld_b_c, ld_b_hl = (ROUTE_FAST << 9) | 0x41, (ROUTE_FAST_MEM << 9) | 0x46
    assert run([[ld_b_c], [(ROUTE_FAST << 9) | 0x78]], granularity="hot-handler").slots == 1
    assert run([[ld_b_c], [ld_b_hl]], granularity="hot-handler").slots == 2  # [HL] or not
    assert run([[ld_b_c], [ld_b_hl]], granularity="handler").slots == 2
    # with the fast paths off every instruction is general: the hot granularities agree
    assert run([[inc_a], [ld_a_hl]], fast=False, granularity="hot-route").slots == 1


def test_closed_halt_collapses_each_run_of_halt_passes():
    units = np.array([FRAME, HALT_LCD, HALT_LCD, HALT_LCD, HALT_END, SLICE, HALT_LCD, HALT_END])
    kept = collapse_halt(units)
    assert units[kept].tolist() == [FRAME, HALT_LCD, HALT_END, SLICE, HALT_LCD, HALT_END]
    plain = np.array([FRAME, SLICE, 0x3C])
    assert collapse_halt(plain).tolist() == [0, 1, 2]


def test_frame_model_waits_for_the_slowest_lane_of_each_frame():
    a = [FRAME, SLICE, 1, 2, 3, FRAME, SLICE, 1]
    b = [FRAME, SLICE, 1, FRAME, SLICE, 1, 2, 3, 4]
    assert run([a, b], "free").rounds == 9
    frame = run([a, b], "frame")
    assert frame.rounds == 5 + 6
    assert frame.units == 8 + 9
    # aligned frames: every round of frame 0 has one path; frame 1's rounds too
    assert frame.slots == frame.rounds


def test_slice_model_runs_halted_lanes_and_running_lanes_one_after_the_other():
    halted = [FRAME, HALT_LCD, HALT_LCD, HALT_END]
    running = [FRAME, DISPATCH, 0x00, 0x00]
    assert run([halted, running], "free").rounds == 4
    ls = run([halted, running], "slice")
    assert ls.rounds == 1 + 3 + 3
    assert ls.slots == 7  # no round mixes the two branches
    assert run([halted, running], "free").slots == 1 + 3 * 2


@pytest.fixture(scope="module")
def demo_rom() -> str:
    from gbxcule.demo.rom import demo_rom_path

    return str(demo_rom_path())


def test_traced_steps_equal_the_step_kernel(demo_rom):
    """run_rom checks every traced step (fast paths on and off) against a backend stepped by
    step_kernel, field by field, and raises on any difference."""
    from bench.divergence import run_rom

    rows, mixes = run_rom(demo_rom, 3, 1, 1, 0, ("index", "pc"), verify=True)
    assert {r["step"] for r in rows} == {1}
    fast = [m for m in mixes if m["step"] == 1][0]
    assert fast["fast"] > 0 and fast["fast-mem"] > 0 and fast["halt-lcd"] > 0
    assert fast["frame"] == 3 * 24


def test_gpu_shape_trace_routes_non_wram_accesses_the_general_way(demo_rom):
    """The GPU shape's trace (kernels/step/step_cuda.py's fast memory path) changes the machine
    as step_kernel does, and runs fewer opcodes on the fast memory path (LDH and other IO
    accesses go the general way)."""
    from bench.divergence import run_rom

    _, cpu = run_rom(demo_rom, 3, 1, 1, 0, ("index",), verify=True)
    _, gpu = run_rom(demo_rom, 3, 1, 1, 0, ("index",), verify=True, gpu_shape=True)
    cpu_mix, gpu_mix = cpu[-1], gpu[-1]
    assert gpu_mix["units"] == cpu_mix["units"]
    assert 0 < gpu_mix["fast-mem"] < cpu_mix["fast-mem"]
    assert gpu_mix["general"] > cpu_mix["general"]


def test_the_state_check_sees_a_different_step(demo_rom):
    from bench.divergence import TracedEnv, state_diff

    a, b = TracedEnv(demo_rom, 2, True), TracedEnv(demo_rom, 2, False)
    try:
        a.env.reset(0)
        b.env.reset(0)
        trace_on, lens = a.step(np.array([1, 2]))
        trace_off, lens_off = b.step(np.array([1, 2]))
        assert np.array_equal(lens, lens_off)
        assert state_diff(a.env, b.env) == []
        on, off = trace_on[0, : lens[0]], trace_off[0, : lens[0]]
        assert np.any((on >> 9) == ROUTE_FAST)
        assert not np.any((off >= 0) & (off < FRAME) & (off >= 512))  # off: general only
        b.step(np.array([3, 3]))  # another step on one of them
        assert state_diff(a.env, b.env) != []
    finally:
        a.close()
        b.close()


def test_bit_and_sort_counts_agree():
    from bench.divergence_model import groups_per_round

    rng = np.random.default_rng(3)
    ids = rng.integers(-1, 40, size=(WARP, 500)).astype(np.int16)
    shifted = np.where(ids >= 0, ids + 100, -1).astype(np.int16)  # ids >= 64: the sort
    want = [len(set(col[col >= 0].tolist())) for col in ids.T]
    assert groups_per_round(ids).tolist() == want
    assert groups_per_round(shifted).tolist() == want
