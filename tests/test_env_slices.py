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
    for module in (
        "gbxcule.kernels.step.reset",
        "gbxcule.kernels.step.step_cpu",
        "gbxcule.kernels.ppu.render",
    ):
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


def test_block_dim_reaches_every_launch_and_bad_values_are_refused(monkeypatch) -> None:
    """``block_dim`` (CUDA threads per block) goes into each slice's ``wp.launch``; Warp's
    default is left alone without it; a CUDA backend naming none gets ``CUDA_BLOCK_DIM``;
    the CPU device and odd sizes are refused up front."""
    from types import SimpleNamespace

    from gbxcule.backends import env_slices
    from gbxcule.backends.checks import CUDA_BLOCK_DIM, check_block_dim

    seen: list[dict] = []
    monkeypatch.setattr(env_slices.wp, "launch", lambda kernel, **kw: seen.append(kw))
    for block_dim, expected in ((64, 64), (None, None)):
        seen.clear()
        slices = env_slices.EnvSlices(8, parts=2, block_dim=block_dim)
        for k in (0, 1):
            slices._launch_one("kernel", [], k, "cuda:0", ())
        slices.close()
        assert [kw.get("block_dim") for kw in seen] == [expected, expected]
        assert sorted(kw["dim"] for kw in seen) == [(4,), (4,)]
    cuda = SimpleNamespace(is_cuda=True)
    assert check_block_dim(None, cuda) == CUDA_BLOCK_DIM == 64 and check_block_dim(96, cuda) == 96
    assert check_block_dim(None, SimpleNamespace(is_cuda=False)) is None
    for bad in (16, 100, 2048, 0):
        with pytest.raises(ValueError, match="multiple of 32"):
            check_block_dim(bad, cuda)
    with pytest.raises(TypeError, match="block_dim"):
        check_block_dim(64.0, cuda)
    with pytest.raises(ValueError, match="CUDA devices"):
        WarpVecCpuBackend(str(demo_rom_path()), num_envs=2, block_dim=64)
