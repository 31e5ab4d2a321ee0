#!/usr/bin/env bash
# Everything a session with a lent GPU runs, in phases that each fit one device call
# (10 minutes at most; the machine goes cold ~30 s after a call, so run them back to back).
# Run from the repo root on the device machine; results land under $OUT/gpu (copy them
# into bench/results/gpu/ here and commit them with the device name).
#
#   bash tools/gpu_session.sh stage     # carry [".devcarry/a"]: warp-lang, first half
#   bash tools/gpu_session.sh install   # carry [".devcarry/b"]: second half, then CUDA check
#   bash tools/gpu_session.sh parity1   # make test-gpu, part 1: every case on 1 env (+ CUDA build)
#   bash tools/gpu_session.sh parity2   # part 2: 1024 envs, the cases' own actions; API tests
#   bash tools/gpu_session.sh parity3   # part 3: 1024 envs, mixed per-env actions
#   bash tools/gpu_session.sh bench     # CUDA sweep 1..65,536 envs, layouts, render cost at 16k
#   bash tools/gpu_session.sh regs      # step kernel capped at 128 / 168 registers vs 255
#   bash tools/gpu_session.sh fastpaths # CPU fast paths (kernels/cpu_fast.py) on vs off on CUDA
#   bash tools/gpu_session.sh shapes    # the GPU shape (kernels/step_cuda.py) vs the inlined step on CUDA
#
# `install` may be combined with a later phase in one call: `... install && ... parity1`.
# The procedure and what the tests check: history/gpu-parity.md.
set -euo pipefail

phase=${1:?usage: bash tools/gpu_session.sh stage|install|parity1|parity2|parity3|bench|regs|fastpaths|shapes}
OUT=${OUT:-/tmp/gbx-out}
export PYTHONPATH=/tmp/gbx-site:$PWD/src:$PWD
export GBXCULE_GPU_REPORT=$OUT/gpu
mkdir -p "$OUT/gpu"
start=$(date +%s)

need_warp() {
  python3 -c "import warp as wp; wp.config.quiet = True; wp.init(); import sys; \
sys.exit(0 if wp.is_cuda_available() else 'no CUDA device visible to Warp')" || {
    echo "needs warp-lang and a CUDA device: on a fresh (or cold again) device machine run" \
      "the stage and install phases first" >&2
    exit 3
  }
}

case "$phase" in
  stage)
    mkdir -p /tmp/gbx-stage && cp .devcarry/a/* /tmp/gbx-stage/
    ;;
  install)
    python3 .devcarry/b/install.py
    need_warp
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu/nvidia-smi.csv"
    python3 -m bench.roms.build > /dev/null
    ;;
  parity1)
    need_warp
    python3 -m pytest -q -m gpu tests/test_gpu_parity.py -k one_env
    ;;
  parity2)
    need_warp
    python3 -m pytest -q -m gpu tests/test_gpu_parity.py -k "batch and same"
    python3 -m pytest -q -m gpu tests/test_emu_cuda.py tests/test_backend_api_cuda.py \
      tests/test_pixels_backend.py
    ;;
  parity3)
    need_warp
    python3 -m pytest -q -m gpu tests/test_gpu_parity.py -k "batch and mixed"
    ;;
  bench)
    need_warp
    sweep="python3 -m bench.sweep --steps 20 --render off,pixels --out $OUT/gpu/sweep"
    $sweep --backends warp-cuda --envs 1,64,1024,4096,16384,65536 --repeats 2
    $sweep --backends warp-cpu --envs 1,16,256,4096
    for layout in env_major interleaved; do
      python3 -m bench.sweep --steps 20 --render off --out "$OUT/gpu/layouts" \
        --backends warp-cuda --envs 1024,16384 --mem-layout "$layout"
    done
    python3 -m bench.render_cost --device cuda --envs 1024,16384 --out "$OUT/gpu/render"
    ;;
  regs)
    # bench.cuda_build_report: 255 registers uncapped; a cap of 128 adds ~15 % spill code
    # and doubles the warps an SM holds. Each variant is a patched copy of the source.
    need_warp
    for cap in 0 168 128; do
      dir=/tmp/gbx-regs-$cap
      rm -rf "$dir" && mkdir -p "$dir" && cp -r src bench "$dir/"
      if [ "$cap" != 0 ]; then
        sed -i "s/@wp.kernel(name=\"step_kernel\", /@wp.kernel(name=\"step_kernel\", cuda_max_registers=$cap, /" \
          "$dir/src/gbxcule/kernels/step.py"
        grep -q "cuda_max_registers=$cap" "$dir/src/gbxcule/kernels/step.py"
      fi
      (cd "$dir" && PYTHONPATH=/tmp/gbx-site:$dir/src:$dir python3 -m bench.sweep --steps 20 \
        --render off --backends warp-cuda --envs 4096,16384,65536 --out "$OUT/gpu/regs-$cap")
    done
    ;;
  fastpaths|shapes)
    # fastpaths: divergence may make the per-opcode fast paths a loss on a GPU.
    # shapes: the GPU shape (kernels/step_cuda.py, units out of line) vs the inlined step
    # the CPU runs. Same results either way; alternating rounds.
    need_warp
    kwarg=$([ "$phase" = fastpaths ] && echo cpu_fast_paths || echo units_out_of_line)
    python3 - "$OUT/gpu/$phase.jsonl" "$kwarg" <<'PY'
import json, sys, time
import numpy as np
from bench.sweep import _device_name, default_rom
from gbxcule.backends.warp_vec import WarpVecCudaBackend
kwarg = sys.argv[2]
with open(sys.argv[1], "a") as out:
    for n in (1024, 16384, 65536):
        for on in (True, False, True, False):
            env = WarpVecCudaBackend(default_rom(), num_envs=n, **{kwarg: on})
            acts = np.random.default_rng(0).integers(0, 7, size=(22, n))
            for a in acts[:2]:
                env.step(a)
            env.synchronize()
            t = time.perf_counter()
            for a in acts[2:]:
                env.step(a)
            env.synchronize()
            sps = 20 * n / (time.perf_counter() - t)
            env.close()
            row = {"envs": n, kwarg: on, "sps": sps, "device": _device_name("warp-cuda")}
            print(row, flush=True)
            out.write(json.dumps(row) + "\n")
PY
    ;;
  *)
    echo "unknown phase $phase" >&2
    exit 2
    ;;
esac
echo "gpu_session $phase: $(( $(date +%s) - start )) s"
