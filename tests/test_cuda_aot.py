"""The CUDA build of the step kernel compiles on a machine without a GPU (NVRTC, PTX for sm_90).

CPU-only CI runs the emulator on Warp's CPU device, so CUDA-only codegen errors
(types, intrinsics, code the CPU compiler accepts and NVRTC does not) would
otherwise go unseen until someone has a GPU. This builds PTX for Hopper ahead
of time; it needs no CUDA driver.
"""

from __future__ import annotations

import time

import pytest
import warp as wp

pytestmark = pytest.mark.slow


def test_step_module_builds_ptx_for_sm90(tmp_path) -> None:
    import gbxcule.kernels.step as step

    wp.init()
    start = time.perf_counter()
    paths = wp.compile_aot_module(step, arch=90, module_dir=str(tmp_path), use_ptx=True)
    seconds = time.perf_counter() - start
    ptx = [p for p in paths if str(p).endswith(".ptx")]
    assert ptx, f"no PTX among the artifacts {paths}"
    text = ptx[0].read_text()
    assert ".target sm_90" in text
    assert "step_kernel" in text, "the step kernel's entry point is missing from the PTX"
    print(f"step module PTX for sm_90 built in {seconds:.0f} s")
