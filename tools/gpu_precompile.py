"""Build the CUDA kernels for sm_90 here, so a lent GPU's minutes do not pay for NVRTC.

NVRTC takes minutes on the step kernel, and a device machine starts bare: without this,
every GPU session would compile it again on the clock. This writes sm_90 CUBINs of every
kernels module (and the hooked GPU shape the RL harness launches) into a Warp kernel cache
laid out as ``Module.load`` looks it up (``<dir>/<warp version>/<module id>/``). On the
device, ``WARP_CACHE_PATH=<dir>`` with ``warp.config.cuda_output = "cubin"``
(tools/gpu_session.sh sets both) makes Warp load them: its log says "(cached)", not
"(compiled)". A module whose source changed after this ran has another hash and simply
compiles there again. Each block size is a variant of its own; by default only 64, the
CUDA default, is built (``--block-dims 64,256,32`` adds the ``block64``/``block32``
knobs' sizes). The step kernels bench.gpu_shape_ab compares are built too, at the
default block size: its register caps here, and in a child process with the locals left
uninitialized (``GBXCULE_CUDA_VALUE_INIT=0``, kernels/codegen.py) every module again and
the step before issue #41, into the cache folder such a process uses (``value-init-off``).

Usage: python tools/gpu_precompile.py [--out .gpucache] [--arch 90] [--block-dims 64]
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path


def cuda_modules():
    """(name, warp module) for everything the CUDA backends and the RL harness launch."""
    import warp as wp

    from gbxcule.kernels import KERNEL_MODULES
    from gbxcule.kernels.step.step import step_kernel_variant

    for name in KERNEL_MODULES:
        importlib.import_module(name)  # defines its kernels in the Warp module of that name
        yield name, wp.get_module(name)
    hooked = step_kernel_variant(hooks=True, units_out_of_line=True)
    yield "hooked GPU shape", hooked.module


def ab_modules(value_init: bool):
    """(name, warp module) of the step kernels bench.gpu_shape_ab times beyond the default
    (a process with ``value_init`` off builds the step before issue #41)."""
    from gbxcule.kernels.step.step import step_kernel_variant

    if value_init:
        for cap in (0, 96):
            kernel = step_kernel_variant(units_out_of_line=True, cuda_max_registers=cap)
            yield f"GPU shape, register cap {cap or 'none'}", kernel.module
    else:
        kernel = step_kernel_variant(units_out_of_line=True, hot_loop=False, cuda_max_registers=0)
        yield "GPU shape before issue #41", kernel.module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".gpucache", help="the kernel cache's base directory")
    parser.add_argument("--arch", type=int, default=90, help="the SM architecture (H100: 90)")
    parser.add_argument(
        "--block-dims",
        default="64",
        help="CUDA block sizes to build (64: the backends' default; 256 and 32 for the "
        "block64/block32 knobs of the profile phase, which compile there otherwise: with "
        "them the CUBINs took call 1 to 63.6 of the 64 MiB a call carries)",
    )
    parser.add_argument("--value-init-off", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ["WARP_CACHE_PATH"] = str(Path(args.out).resolve())
    if args.value_init_off:  # read when gbxcule.kernels is first imported
        os.environ["GBXCULE_CUDA_VALUE_INIT"] = "0"
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    print(f"kernel cache: {wp.config.kernel_cache_dir}")
    total = time.perf_counter()
    block_dims = [int(b) for b in args.block_dims.split(",") if b]
    for name, module in cuda_modules():
        for block_dim in block_dims if not args.value_init_off else [64]:
            start = time.perf_counter()
            build(module, block_dim, args.arch)
            print(f"{name}, block_dim {block_dim}: {time.perf_counter() - start:.0f} s", flush=True)
    for name, module in ab_modules(value_init=not args.value_init_off):
        start = time.perf_counter()
        build(module, 64, args.arch)
        print(f"{name}, block_dim 64: {time.perf_counter() - start:.0f} s", flush=True)
    # Module.load needs the CUBIN and its .meta; the CUDA sources would only weigh on the
    # device call that carries them.
    sources = list(Path(wp.config.kernel_cache_dir).rglob("*.cu"))
    for path in sources:
        path.unlink()
    size = sum(p.stat().st_size for p in Path(wp.config.kernel_cache_dir).rglob("*") if p.is_file())
    print(f"all built in {time.perf_counter() - total:.0f} s: {size / 1e6:.1f} MB")
    if not args.value_init_off:
        child = [sys.executable, __file__, "--out", args.out, "--arch", str(args.arch)]
        subprocess.run([*child, "--value-init-off"], check=True)
    return 0


def build(module, block_dim: int, arch: int) -> None:
    """One block_dim variant's CUBIN where ``Module.load`` looks for it. A launch's
    block_dim is part of the module's hash (EnvSlices launches with the backend's)."""
    module.get_module_hash(block_dim)  # resolves the variant's options
    module._compile(
        None, None, output_arch=arch, use_ptx=False, options=module.resolved_options[block_dim]
    )


if __name__ == "__main__":
    sys.exit(main())
