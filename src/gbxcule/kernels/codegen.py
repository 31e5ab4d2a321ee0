"""How clang compiles the step kernel for the CPU device (Warp module options).

The step kernel's instruction loop decodes each opcode by its fields, and its first
test is a four-way one on ``x`` (``op >> 6``). clang's default turns every switch of
four or more cases into a jump table, so each instruction went through an indirect
jump whose target the branch predictor sees only through global history: the hottest
spot of the kernel on every ROM profiled (history/performance.md). With jump tables
only for five cases or more, ``x`` and the other four-way decodes are two conditional
branches each, predicted per site. Timed against Warp's own flags (process time, 1 env,
alternating rounds): the game-like ROM -12 %, the busy ROM and the demo game unchanged
(their few opcodes already predicted well); more cases (9, or no jump tables at all)
and a dozen other LLVM options did no better. ``-O3`` (Warp builds CPU code at ``-O2``)
did nothing for the field decode, but once the CPU's own kernel dispatched by opcode
(kernels/step/step_cpu.py) it took 4 % off the busy and game-like ROMs and 2 % off the demo
game, with the same build time (history/cpu-instruction-count.md).

The CPU run's instruction loop (kernels/cpu/cpu_step.py, ``cpu_run_fast``) is an innermost
loop, and where its head falls in a 64-byte line moved its time by up to 12 % from build to
build: a change anywhere in the module shifts the function, and identical loop code ran
7 % slower on the busy ROM after an unrelated timer edit. Innermost loops aligned to 64
bytes keep the head where the fastest builds had it (A/B against such a build: busy ROM
+0.6 %, game-like -0.9 %, demo -1.6 %; the timer edit then within 2 %); 32 bytes did worse
(history/cpu-instruction-count.md).

These are codegen choices only: the same source, the same results (every test runs on
them). ``GBXCULE_CPU_CODEGEN=plain`` in the environment builds with Warp's defaults
instead, and ``set_cpu_codegen`` switches a running process (``bench.sweep --cpu-codegen
tuned,plain`` times both in one run).

For CUDA, one change to the C++ Warp writes (``cuda_value_init``). Warp declares every
local of a function uninitialized at its top, and a variable assigned in an ``if`` is
merged after it by ``wp::where(cond, value_from_the_branch, value_before)``. On the path
that skips the branch the first operand is undefined, and ptxas keeps the register of
every such value occupied from the kernel's entry on (it cannot tell the undefined read
is never selected): in the step kernel these held most of its 255 registers for the whole
run, and the instruction loop spilled around them. Declared value-initialized (``{}``),
each is a zero on that path: the GPU shape's step went from 255 registers, 2,096 B of
stack, 896 B of spill stores and 333 local-memory sites in its instruction loop to 228,
168 B, 0 and 0 (sm_90, history/performance.md). Only functions of gbxcule's own modules
and only CUDA builds get it (the CPU build and a user's Warp modules are untouched). It is
on wherever this Warp's codegen has the function it wraps (Warp 1.19), so a kernel cache
(one per Warp version) never holds both builds of the same source; ``GBXCULE_CUDA_VALUE_INIT=0``
in the environment turns it off for timing both (bench/gpu_shape_ab.py), and that process
then keeps its kernels in a cache folder of their own (``value-init-off`` under Warp's).
"""

from __future__ import annotations

import os
import re

import warp as wp

# what the CPU build of the step kernel adds to Warp's clang flags (-mllvm: an LLVM option)
CPU_TUNING_FLAGS = (
    "-O3 -mllvm -min-jump-table-entries=5 -mllvm -x86-experimental-pref-innermost-loop-alignment=6"
)
CODEGEN_ENV = "GBXCULE_CPU_CODEGEN"
CODEGENS = ("tuned", "plain")
# the Warp modules of the plain step kernel, the GPU shape (kernels/step/step_cuda.py) and the
# CPU's dispatch (kernels/step/step_cpu.py)
STEP_MODULES = (
    "gbxcule.kernels.step.step",
    "gbxcule.kernels.step.step_cuda",
    "gbxcule.kernels.step.step_cpu",
)
STEP_CUDA_MODULE, STEP_CPU_MODULE = STEP_MODULES[1:]
# Warp unrolls constant loops up to 16 iterations; the CPU dispatch's loop over the 256
# opcodes (kernels/cpu/cpu_step.py, fast_by_opcode) must unroll whole, so each copy of the
# fast paths gets its opcode as a constant (one loop of 256, not 16 of 16: -2 % busy ROM,
# -3 % game-like). Not a tuning flag: rolled, the dispatch would test 256 opcodes.
DISPATCH_UNROLL = 256
# The GPU shape's register cap (its kernel's ``cuda_max_registers``): 16 warps an SM. What
# the caps cost in stack and in local sites of the instruction loop: history/performance.md.
STEP_CUDA_MAX_REGISTERS = 128


def check_codegen(name: str) -> str:
    """``name`` if it is one of ``CODEGENS``, else a ValueError."""
    if name not in CODEGENS:
        raise ValueError(f"CPU codegen {name!r}: expected one of {', '.join(CODEGENS)}")
    return name


def cpu_codegen() -> str:
    """``tuned`` (the default) or ``plain``, from ``GBXCULE_CPU_CODEGEN``."""
    name = os.environ.get(CODEGEN_ENV, "tuned").strip().lower() or "tuned"
    if name not in CODEGENS:
        raise ValueError(f"{CODEGEN_ENV}={name!r}: expected one of {', '.join(CODEGENS)}")
    return name


def set_cpu_codegen(name: str) -> None:
    """Build the step kernels of this process with codegen ``name`` from now on: the
    modules in ``STEP_MODULES`` get its options (the next launch loads, or compiles, that
    build), and so do variants built later (``GBXCULE_CPU_CODEGEN`` is set); a variant
    already built (``step_kernel_variant``, each in a module of its own) keeps its own."""
    check_codegen(name)
    os.environ[CODEGEN_ENV] = name
    for module in STEP_MODULES:
        dispatch = module == STEP_CPU_MODULE
        wp.set_module_options(step_module_options(name, opcode_dispatch=dispatch), module=module)


def step_module_options(codegen: str | None = None, opcode_dispatch: bool = False) -> dict:
    """Warp module options of a step-kernel module: no backward pass, and for the
    ``tuned`` codegen the CPU flags above on top of ``wp.config.cpu_compiler_flags`` as
    it is now (Warp's default: host features and raised inlining thresholds); for
    ``plain`` Warp's own. ``opcode_dispatch``: a module with the CPU's dispatch in it,
    whatever the codegen (``DISPATCH_UNROLL``)."""
    options: dict = {"enable_backward": False, "cpu_compiler_flags": None}
    if opcode_dispatch:
        options["max_unroll"] = DISPATCH_UNROLL
    if check_codegen(codegen or cpu_codegen()) == "plain":
        return options
    base = wp.config.cpu_compiler_flags
    base = "-march=native" if base is None else base
    options["cpu_compiler_flags"] = f"{base} {CPU_TUNING_FLAGS}".strip()
    return options


_DECLARATION = re.compile(r"^(\s*)(?!const\b|//|#)(\S.*?\s\**var_\w+);$")


def value_initialized(body: str) -> str:
    """A function body as Warp writes it with each non-constant local of its "primal vars"
    section declared value-initialized (``wp::int32 var_3;`` -> ``wp::int32 var_3{};``)."""
    head, marker, rest = body.partition("// primal vars")
    if not marker:
        return body
    decls, forward, tail = rest.partition("// forward")
    lines = [_DECLARATION.sub(r"\1\2{};", line) for line in decls.split("\n")]
    return head + marker + "\n".join(lines) + forward + tail


def _is_ours(adj) -> bool:
    func = getattr(adj, "func", None)
    return getattr(func, "__module__", "").startswith("gbxcule.")


VALUE_INIT_ENV = "GBXCULE_CUDA_VALUE_INIT"


def _install_cuda_value_init() -> bool:
    """Wrap Warp's ``codegen_func_forward`` (warp._src.codegen, Warp 1.19) so that CUDA
    bodies of gbxcule's functions are ``value_initialized``; False (nothing changed) where
    this Warp has no such function, or ``GBXCULE_CUDA_VALUE_INIT=0`` says not to (that
    process's kernel cache is then a folder of its own)."""
    if os.environ.get(VALUE_INIT_ENV, "1").strip() == "0":
        _separate_kernel_cache("value-init-off")
        return False
    try:
        from warp._src import codegen as warp_codegen  # type: ignore[attr-defined]
    except ImportError:
        return False
    original = getattr(warp_codegen, "codegen_func_forward", None)
    if original is None:
        return False
    if getattr(original, "_gbxcule_value_init", False):
        return True

    def codegen_func_forward(adj, func_type="kernel", device="cpu", grid_stride=False):
        body = original(adj, func_type=func_type, device=device, grid_stride=grid_stride)
        if device == "cuda" and _is_ours(adj):
            return value_initialized(body)
        return body

    codegen_func_forward._gbxcule_value_init = True  # type: ignore[attr-defined]
    warp_codegen.codegen_func_forward = codegen_func_forward
    return True


def _separate_kernel_cache(name: str) -> None:
    """Warp's kernel cache moved to a folder ``name`` under its base (``WARP_CACHE_PATH``, or
    Warp's default), so builds of the same source made another way never meet."""
    from warp._src import build  # type: ignore[attr-defined]

    base = os.environ.get("WARP_CACHE_PATH")
    if base is None:
        base = build.appdirs.user_cache_dir(appname="warp", appauthor="NVIDIA")
    path = os.path.join(base, name)
    wp.config.kernel_cache_dir = path
    if getattr(build, "_resolved_kernel_cache_dir", None) is not None:  # Warp already started
        build.init_kernel_cache(path)


_CUDA_VALUE_INIT = _install_cuda_value_init()


def cuda_value_init() -> bool:
    """True when CUDA builds of gbxcule's kernels declare their locals value-initialized
    (this Warp's codegen could be wrapped; see the module's docstring)."""
    return _CUDA_VALUE_INIT
