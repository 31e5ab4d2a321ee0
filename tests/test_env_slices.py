"""EnvSlices: the first launch of a kernel over several threads loads its module once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
