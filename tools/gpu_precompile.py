"""Build the CUDA kernels for sm_90 here, so a lent GPU's minutes do not pay for NVRTC.

NVRTC takes minutes on the step kernel, and a device machine starts bare: without this,
every GPU session would compile it again on the clock. This writes sm_90 CUBINs of every
kernels module (and the hooked GPU shape the RL harness launches) into a Warp kernel cache
laid out as ``Module.load`` looks it up (``<dir>/<warp version>/<module id>/``). On the
device, ``WARP_CACHE_PATH=<dir>`` with ``warp.config.cuda_output = "cubin"``
(tools/gpu_session.sh sets both) makes Warp load them: its log says "(cached)", not
"(compiled)". A module whose source changed after this ran has another hash and simply
compiles there again.

Usage: python tools/gpu_precompile.py [--out .gpucache] [--arch 90]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path


def cuda_modules():
    """(name, warp module) for everything the CUDA backends and the RL harness launch."""
    from gbxcule.kernels import KERNEL_MODULES
    from gbxcule.kernels.step import step_kernel_variant

    for name in KERNEL_MODULES:
        yield name, importlib.import_module(name)
    hooked = step_kernel_variant(hooks=True, units_out_of_line=True)
    yield "hooked GPU shape", hooked.module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".gpucache", help="the kernel cache's base directory")
    parser.add_argument("--arch", type=int, default=90, help="the SM architecture (H100: 90)")
    args = parser.parse_args(argv)
    os.environ["WARP_CACHE_PATH"] = str(Path(args.out).resolve())
    import warp as wp

    wp.config.quiet = True
    wp.init()
    print(f"kernel cache: {wp.config.kernel_cache_dir}")
    total = time.perf_counter()
    for name, module in cuda_modules():
        start = time.perf_counter()
        paths = wp.compile_aot_module(module, arch=args.arch, use_ptx=False)
        size = sum(p.stat().st_size for p in paths if p.exists())
        print(f"{name}: {time.perf_counter() - start:.0f} s, {size / 1e6:.2f} MB", flush=True)
    print(f"all built in {time.perf_counter() - total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
