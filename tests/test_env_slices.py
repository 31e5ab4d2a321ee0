"""EnvSlices: the first launch of a kernel over several threads loads its module once, and
a Warp graph captured around ``step()`` holds every slice's launches."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.demo.rom import demo_rom_path

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]

# A fresh process, so no module is loaded yet; Warp reports every module load.
PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import warp as wp
    wp.config.quiet = False
    wp.init()
    from gbxcule.backends.warp_vec import WarpVecCpuBackend
    from gbxcule.demo.rom import demo_rom_path
    env = WarpVecCpuBackend(str(demo_rom_path()), num_envs=4, threads=2, render_pixels=True)
    env.step(np.zeros(4, dtype=np.int64))
    env.close()
    print("done")
    """
)


def test_threads_load_each_module_once() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "done" in out.stdout
    loads = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("Module ")]
    for module in ("gbxcule.kernels.reset", "gbxcule.kernels.step_cpu", "gbxcule.kernels.render"):
        assert loads.count(module) == 1, f"{module} loaded {loads.count(module)} times: {loads}"


def _state(env) -> list[np.ndarray]:
    return [a.numpy().copy() for _, a in per_env_arrays(env.machine)] + [env.pixels_wp().numpy()]


def test_graph_captured_on_threads_replays_every_slice() -> None:
    """Without the calling-thread rule the worker slice ran at capture time with the
    previous step's buttons and was missing from the graph (found by bench/launch_gaps.py)."""
    n, steps = 4, 3
    envs = [
        WarpVecCpuBackend(str(demo_rom_path()), num_envs=n, threads=2, render_pixels=True)
        for _ in range(2)
    ]
    try:
        assert len(envs[1]._slices.ranges) == 2
        ids = np.random.default_rng(1).integers(0, 7, size=(steps, n)).astype(np.int32)
        acts = wp.array(ids, dtype=wp.int32, device="cpu")
        for k in range(steps):
            envs[0].step(acts[k])
        before = _state(envs[1])
        with wp.ScopedCapture(device="cpu") as capture:
            for k in range(steps):
                envs[1].step(acts[k])
        assert all(np.array_equal(a, b) for a, b in zip(before, _state(envs[1]), strict=True))
        wp.capture_launch(capture.graph)
        for a, b in zip(_state(envs[0]), _state(envs[1]), strict=True):
            assert np.array_equal(a, b)
        assert not np.array_equal(before[0], _state(envs[1])[0])
    finally:
        for env in envs:
            env.close()
