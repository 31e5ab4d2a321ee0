"""The CUDA build of the step kernel compiles on a machine without a GPU (NVRTC, PTX for sm_90).

CPU-only CI runs the emulator on Warp's CPU device, so CUDA-only codegen errors
(types, intrinsics, code the CPU compiler accepts and NVRTC does not) would
otherwise go unseen until someone has a GPU. This builds PTX for Hopper ahead
of time; it needs no CUDA driver.
"""

from __future__ import annotations

import importlib
import time

import pytest
import warp as wp

from gbxcule.kernels import KERNEL_MODULES

# Not in `make test` (the modules together take a minute in NVRTC); CI runs it through
# `make test-cuda-build` right after `make test`.
pytestmark = [pytest.mark.tooling, pytest.mark.slow]
# CONSTITUTION.md's latency budget for a CUDA PTX build, held: the largest module, the
# step, builds in about 13 s here (bench/results/cuda-build/results.jsonl), so only a
# change that makes NVRTC take many times longer (an inlined unit copied into every call
# site once did: 4x) fails it.
PTX_BUILD_BUDGET_S = 180


def _build_ptx(module, tmp_path, entry: str, name: str) -> None:
    wp.init()
    start = time.perf_counter()
    paths = wp.compile_aot_module(module, arch=90, module_dir=str(tmp_path), use_ptx=True)
    seconds = time.perf_counter() - start
    ptx = [p for p in paths if str(p).endswith(".ptx")]
    assert ptx, f"no PTX among the artifacts {paths}"
    text = ptx[0].read_text()
    assert ".target sm_90" in text
    assert entry in text, f"{entry} is missing from the PTX of {name}"
    print(f"{name} PTX for sm_90 built in {seconds:.0f} s")
    assert seconds <= PTX_BUILD_BUDGET_S, f"{name}: PTX took {seconds:.0f} s"


@pytest.mark.parametrize("module_name", list(KERNEL_MODULES))
def test_kernel_module_builds_ptx_for_sm90(tmp_path, module_name: str) -> None:
    module = importlib.import_module(module_name)
    _build_ptx(module, tmp_path, KERNEL_MODULES[module_name], module_name)


def test_hooked_step_kernel_builds_ptx_for_sm90(tmp_path) -> None:
    """The hooked variant of the step kernel (a Warp module of its own, kernels/step/step.py)."""
    from gbxcule.kernels.step.step import step_kernel_variant

    kernel = step_kernel_variant(hooks=True)
    _build_ptx(kernel.module, tmp_path, "step_kernel", "hooked step kernel")


def test_gpu_shape_stays_within_the_budget(tmp_path) -> None:
    """Issue #15's sm_90 budget for the step kernel CUDA launches (kernels/step/step_cuda.py):
    <= 512 B of stack (2,048 before issue #41), <= 128 registers, <= 1,000 B of spill stores,
    each out-of-line function <= 500 B, and (issue #41) its instruction loop with no call, no
    descriptor load from global memory and <= 16 local-memory sites
    (``python -m bench.cuda_build_report --budget``; ptxas from the dev extra)."""
    from bench.cuda_build_report import (
        BUDGET_MODULE,
        build_module,
        check_budget,
        find_ptxas,
        ptxas_ptx_version,
    )

    ptxas = find_ptxas()
    assert ptxas is not None, "no ptxas: install the dev extra (nvidia-cuda-nvcc-cu12)"
    row = build_module(BUDGET_MODULE, ptxas, ptxas_ptx_version(ptxas), tmp_path)
    entry = next(f for f in row["functions"] if f["kind"] == "entry")
    print(f"step_cuda: {entry['stack_frame']} B stack, {entry['spill_stores']} B spill stores")
    print(f"step_cuda hot loop: {row.get('hot_loop')}")
    # issue #41: the instruction loop's census must be taken (cuobjdump + nvdisasm from the
    # dev extra), and it has no call and no descriptor load from global memory
    assert isinstance(row.get("hot_loop"), dict), row.get("hot_loop")
    assert check_budget(row) == []


def test_the_cgb_variant_stays_within_its_budget(tmp_path) -> None:
    """The GPU shape's Game Boy Color variant (``cuda_build_report --cgb --budget``): the DMG
    budget with a 640 B stack (issue #46's own budget, history/cgb.md); the DMG kernel's is
    the test above."""
    from bench.cuda_build_report import (
        BUDGET_MODULE,
        build_module,
        check_budget,
        find_ptxas,
        ptxas_ptx_version,
    )

    ptxas = find_ptxas()
    assert ptxas is not None, "no ptxas: install the dev extra (nvidia-cuda-nvcc-cu12)"
    row = build_module(BUDGET_MODULE, ptxas, ptxas_ptx_version(ptxas), tmp_path, cgb=True)
    entry = next(f for f in row["functions"] if f["kind"] == "entry")
    print(f"step_cuda (CGB): {entry['stack_frame']} B stack, hot loop: {row.get('hot_loop')}")
    assert isinstance(row.get("hot_loop"), dict), row.get("hot_loop")
    assert check_budget(row) == []
