"""How the CPU device compiles the step kernel (kernels/codegen.py): the options of each
codegen, the switch between them, and that both builds compute the same thing."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from bench import sweep
from bench.busy_rom import busy_rom_path
from gbxcule.backends.registry import make_backend
from gbxcule.kernels import codegen

pytestmark = pytest.mark.tooling


@pytest.fixture
def restore_codegen():
    before = codegen.cpu_codegen()
    yield
    codegen.set_cpu_codegen(before)


def test_tuned_adds_its_flags_to_warps_own_and_plain_is_warps_default(monkeypatch):
    monkeypatch.setattr(wp.config, "cpu_compiler_flags", None)
    tuned = codegen.step_module_options("tuned")
    assert tuned == {
        "enable_backward": False,
        "cpu_compiler_flags": "-march=native " + codegen.CPU_TUNING_FLAGS,
    }
    monkeypatch.setattr(wp.config, "cpu_compiler_flags", "-march=x86-64-v3")
    flags = codegen.step_module_options("tuned")["cpu_compiler_flags"]
    assert flags == "-march=x86-64-v3 " + codegen.CPU_TUNING_FLAGS
    plain = codegen.step_module_options("plain")
    assert plain == {"enable_backward": False, "cpu_compiler_flags": None}
    for name in ("tuned", "plain"):
        dispatch = codegen.step_module_options(name, opcode_dispatch=True)
        assert dispatch == codegen.step_module_options(name) | {"max_unroll": 256}


def test_every_step_module_is_built_with_the_current_codegen():
    import gbxcule.kernels.step.step_cpu as step_cpu
    import gbxcule.kernels.step.step_cuda as step_cuda
    from gbxcule.kernels.step.step import step_kernel, step_kernel_variant

    flags = codegen.step_module_options()["cpu_compiler_flags"]
    kernels = (step_kernel, step_cpu.step_kernel, step_cuda.step_kernel)
    for kernel in (*kernels, step_kernel_variant(hooks=True, opcode_dispatch=True)):
        assert kernel.module.options["cpu_compiler_flags"] == flags
    if codegen.cpu_codegen() == "tuned":
        assert codegen.CPU_TUNING_FLAGS in flags
    # the CPU dispatch's loop over the 256 opcodes unrolls whole; nothing else changes
    for kernel in (step_cpu.step_kernel, step_kernel_variant(hooks=True, opcode_dispatch=True)):
        assert kernel.module.options["max_unroll"] == codegen.DISPATCH_UNROLL == 256
    for kernel in (step_kernel, step_cuda.step_kernel):
        assert kernel.module.options["max_unroll"] == wp.config.max_unroll


def test_unknown_codegens_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="'fast'"):
        codegen.step_module_options("fast")
    with pytest.raises(ValueError, match="'fast'"):
        codegen.set_cpu_codegen("fast")
    monkeypatch.setenv(codegen.CODEGEN_ENV, "O3")
    with pytest.raises(ValueError, match="GBXCULE_CPU_CODEGEN='o3'"):
        codegen.cpu_codegen()
    monkeypatch.setenv(codegen.CODEGEN_ENV, " Plain ")
    assert codegen.cpu_codegen() == "plain"
    monkeypatch.delenv(codegen.CODEGEN_ENV)
    assert codegen.cpu_codegen() == "tuned"


def _run_busy_rom(steps: int = 3):
    env = make_backend("warp-cpu", str(busy_rom_path()), num_envs=2, frames_per_step=4, threads=1)
    try:
        env.reset(seed=0)
        for k in range(steps):
            env.step(np.array([k % 3, 1], dtype=np.int64))
        module_hash = env._step_kernel().module.get_module_hash()
        state = [(env.get_cpu_state(e), env.read_memory(e, 0x8000, 0x10000)) for e in range(2)]
        return module_hash, state
    finally:
        env.close()


def test_switching_the_codegen_rebuilds_the_step_kernel_with_the_same_results(restore_codegen):
    import gbxcule.kernels.step.step_cpu  # noqa: F401 - the module whose options the switch sets

    runs = {}
    for name in ("plain", "tuned"):
        codegen.set_cpu_codegen(name)
        options = wp.get_module("gbxcule.kernels.step.step_cpu").options
        tuned = codegen.CPU_TUNING_FLAGS in (options["cpu_compiler_flags"] or "")
        assert tuned == (name == "tuned")
        assert options["max_unroll"] == codegen.DISPATCH_UNROLL  # whatever the codegen
        runs[name] = _run_busy_rom()
    assert runs["plain"][0] != runs["tuned"][0]  # two builds
    (_, plain), (_, tuned) = runs["plain"], runs["tuned"]
    for (regs_p, mem_p), (regs_t, mem_t) in zip(plain, tuned):
        assert regs_p == regs_t
        np.testing.assert_array_equal(mem_p, mem_t)
    assert plain[0][0]["cycles"] > 0


def test_sweep_times_each_codegen_and_labels_the_plain_rows(tmp_path, restore_codegen):
    out = tmp_path / "codegen"
    envs = {"warp-cpu": [1]}
    rows = sweep.run_sweep(
        ["warp-cpu"], str(busy_rom_path()), envs, 1, 2, 0, out, cpu_codegens=("tuned", "plain")
    )
    assert [(r.backend, r.cpu_codegen) for r in rows] == [
        ("warp-cpu", "tuned"),
        ("warp-cpu:plain", "plain"),
    ]
    with pytest.raises(ValueError, match="'fast'"):
        sweep.run_sweep(
            ["warp-cpu"], str(busy_rom_path()), envs, 1, 2, 0, out, cpu_codegens=("fast",)
        )


@wp.func
def _branchy(a: int) -> int:  # a func of this test module: not gbxcule's
    b = a
    if a > 3:
        b = a * 2
    return b


@wp.kernel
def _branchy_kernel(x: wp.array(dtype=wp.int32)):
    i = wp.tid()
    x[i] = _branchy(x[i])


def _cuda_source(module, tmp_path) -> str:
    wp.compile_aot_module(module, arch=90, module_dir=str(tmp_path), use_ptx=True)
    return "\n".join(p.read_text() for p in tmp_path.glob("*.cu"))


def test_cuda_locals_are_value_initialized_in_our_functions_only(tmp_path):
    """CUDA builds of gbxcule's kernels declare every non-constant local ``{}``; a Warp
    module of someone else's keeps Warp's own text (kernels/codegen.py)."""
    import importlib
    import re
    import sys

    assert codegen.cuda_value_init(), "this Warp's codegen_func_forward could not be wrapped"
    ours = _cuda_source(importlib.import_module("gbxcule.kernels.action_masks"), tmp_path / "a")
    decls = [
        ln.strip()
        for part in ours.split("// primal vars")[1:]
        for ln in part.partition("// forward")[0].splitlines()
        if "var_" in ln and not ln.strip().startswith(("const", "//", "#"))
    ]
    assert decls and all(d.endswith("{};") for d in decls), decls[:5]
    theirs = _cuda_source(sys.modules[__name__], tmp_path / "b")
    assert "_branchy" in theirs and re.search(r"var_\d+\{\};", theirs) is None


def test_value_initialized_leaves_constants_comments_and_the_body_alone():
    body = (
        "    // primal vars\n    wp::int32 var_0;\n    const wp::int32 var_1 = 3;\n"
        '    wp::uint8* var_2;\n#line 7 "x.py"\n    Foo_0a1b2c3d var_3;\n'
        "    // forward\n    var_0 = var_1;\n    return var_0;\n"
    )
    out = codegen.value_initialized(body)
    assert "wp::int32 var_0{};" in out and "wp::uint8* var_2{};" in out
    assert "Foo_0a1b2c3d var_3{};" in out and "const wp::int32 var_1 = 3;" in out
    assert out.endswith("    var_0 = var_1;\n    return var_0;\n")
    assert codegen.value_initialized("no sections here") == "no sections here"
