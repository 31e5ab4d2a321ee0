"""Event hooks against PyBoy 2.8.1's ``hook_register``: hit counts every step, in lockstep.

Both backends run the same actions; after every step our per-step hit counts equal the
growth of PyBoy's callback counts, and the CPU registers (cycle count included) are
equal, so the slicing a hook imposes (kernels/step/hooks.py) is PyBoy's too. Covers interrupt
vectors, the same address in several ROM banks, and a timer interrupt that pre-empts
hooked code. Not a hooked HALT a game waits in: PyBoy 2.8.1 never returns from ``tick``
when a frame ends while the PC sits on a hook (kernels/step/hooks.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.hooks_cost import DEMO_HOOKS
from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.warp_vec import WarpVecCpuBackend

from .support.hooks_support import PyBoyHookCounter, banked_rom

pytestmark = pytest.mark.l2

PACE = {"frames_per_step": 3, "release_after_frames": 1}
BANKED_HOOKS = [  # never two in a row: PyBoy hangs if a frame ends between them
    "01:4000",
    "02:4000",
    "03:4000",
    "Bank2Loop",
    0x0050,
    "VBlankIsr",
    "MainLoop",
    "AfterHalt",
]


def _lockstep(rom: Path, hooks: list, steps: int, seed: int) -> np.ndarray:
    """Step both backends ``steps`` times with random actions; returns the summed counts."""
    rng = np.random.default_rng(seed)
    with (
        PyBoySingleBackend(rom, num_envs=1, **PACE) as ref,
        WarpVecCpuBackend(rom, num_envs=2, threads=1, **PACE) as dut,
    ):
        keys = dut.set_hooks(hooks)
        counter = PyBoyHookCounter(ref.pyboy(0), keys)
        total = np.zeros(len(keys), np.int64)
        for step in range(steps):
            action = int(rng.integers(ref.codec.num_actions))
            before = counter.counts.copy()
            ref.step(np.array([action], np.int32))
            dut.step(np.array([action, action], np.int32))
            hits = dut.hook_hits_torch().numpy()
            want = counter.counts - before
            assert hits[0].tolist() == want.tolist(), f"step {step}: {hits[0]} != {want}"
            assert hits[1].tolist() == want.tolist()
            assert dut.get_cpu_state(0) == ref.get_cpu_state(0), f"step {step}"
            assert not dut.hook_stopped_torch().any()
            total += want
        return total


def test_demo_hook_counts_match_pyboy(demo: Path) -> None:
    total = _lockstep(demo, DEMO_HOOKS, steps=14, seed=3)
    assert total[0] == total[1] > 0  # every VBlank dispatch
    assert total[-1] == 0


def test_banked_hook_counts_match_pyboy(tmp_path: Path) -> None:
    total = _lockstep(banked_rom(tmp_path), BANKED_HOOKS, steps=10, seed=5)
    assert (total > 0).all() and total[3] > total[1]


def test_stop_on_hit_stops_where_pyboy_calls_back(demo: Path) -> None:
    """With ``stop_on_hit`` and no buttons, each stopped step ends in the state PyBoy's
    callback sees at the same hit (PyBoy running on, with the hook registered)."""
    hooks = ["VBlankIsr", "Rng"]
    with (
        PyBoySingleBackend(demo, num_envs=1, frames_per_step=1) as ref,
        WarpVecCpuBackend(demo, num_envs=1, threads=1, **PACE) as dut,
    ):
        keys = dut.set_hooks(hooks, stop_on_hit=True)
        seen: list[tuple[int, dict[str, int]]] = []
        PyBoyHookCounter(
            ref.pyboy(0), keys, on_hit=lambda k: seen.append((k, ref.get_cpu_state(0)))
        )
        stops: list[tuple[int, dict[str, int]]] = []
        for _ in range(12):
            dut.step(np.zeros(1, np.int32))
            hits = dut.hook_hits_torch().numpy()[0]
            if dut.hook_stopped_torch().numpy()[0]:
                assert hits.sum() == 1
                stops.append((int(np.argmax(hits)), dut.get_cpu_state(0)))
            else:
                assert hits.sum() == 0  # the step stops at the first hit
        while len(seen) < len(stops):
            ref.step(np.zeros(1, np.int32))
        assert len(stops) >= 6 and {k for k, _ in stops} == {0, 1}
        assert stops == seen[: len(stops)]
        assert stops[0][1]["pc"] in {b_a[1] for b_a in keys}
