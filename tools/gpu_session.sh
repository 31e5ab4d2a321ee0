#!/usr/bin/env bash
# Everything a session with a lent GPU runs (issue #16), in phases that each fit one device
# call (10 minutes at most; the machine goes cold ~30 s after a call, so run them back to
# back). Run from the repo root on the device machine; several phases may share one call:
#
#   bash tools/gpu_session.sh PHASE [PHASE ...]
#
# Prepare here first: `bash tools/gpu_prepare.sh` (warp-lang's two halves, gymnasium's wheels).
# The plan, in the order of what the issue needs most. About 30 minutes of device time a
# session, a machine's start (1-2 min) and every call's transfers included: the sweeps'
# time budgets (--budget-s) add up to about 16 minutes, so go call to call without pause,
# and drop the last calls rather than the first if time runs short.
#
#   call  carry               phases            what                                  budget
#   1     .devcarry/a         stage             warp-lang, first half                      -
#   2     .devcarry/b .whl    install parity1   second half, wheels; every golden on       -
#                                               1 env, CUDA vs CPU (pays the CUDA build)
#   3                         parity2 parity3   1024 envs, the cases' own and mixed        -
#                                               actions; API, pixel, RL and env tests
#   4                         bench-demo        demo sweep 1..65,536 envs, off / pixels /  5 min
#                                               packed2; warp-cpu on 16 cores; render cost
#   5                         bench-busy        busy ROM sweep; state layouts            4.5 min
#   6                         rl                RL sweep, 1,024-16,384 envs; goals table   4 min
#   7                         profile           launch gaps, step graph, Nsight Compute    -
#   8                         knobs             register caps, fast paths, shapes        3.5 min
#
# Each phase packs what it wrote into $OUT/gpu-PHASE.tar.gz (a call brings back at most 8
# files) and prints its summaries. Here: `tar -xzf FILES_AT/gpu-PHASE.tar.gz -C
# bench/results/gpu/` in call order, then `python -m bench.gpu_goals`, and commit with the
# device name. A phase re-run on a fresh machine replaces its folders' rows.
# GBX_DRY_RUN=1 runs every phase here, on the CPU with tiny sizes (warp-cpu for warp-cuda,
# no install, the gpu tests skipped): it catches a broken command before a GPU is lent.
# The procedure and what the tests check: history/gpu-parity.md.
set -euo pipefail

PHASES="stage install parity1 parity2 parity3 bench-demo bench-busy rl profile knobs goals"
one=""
if [ "${1:-}" = --one ]; then one=$2; shift 2; set -- "$one"; fi
[ $# -ge 1 ] || { echo "usage: bash tools/gpu_session.sh PHASE [PHASE ...]; phases: $PHASES" >&2; exit 2; }
for phase in "$@"; do
  case " $PHASES " in *" $phase "*) ;; *) echo "unknown phase $phase; phases: $PHASES" >&2; exit 2;; esac
done

OUT=${OUT:-/tmp/gbx-out}
RES=${GBX_RES:-/tmp/gbx-res}  # every phase's results on this machine, in bench/results/gpu/'s layout
export PYTHONPATH=/tmp/gbx-site:/tmp/gbx-whl:$PWD/src:$PWD
export PYTHONUNBUFFERED=1
export GBXCULE_GPU_REPORT=$RES/parity
mkdir -p "$OUT" "$RES/parity"

if [ -n "${GBX_DRY_RUN:-}" ]; then
  BK=warp-cpu DEV=cpu STEPS=2 ALL=1,4 BIG=2,4 RL=8 GAPS=2,4 RLGAP=8 BUDGET=60
else
  BK=warp-cuda DEV=cuda STEPS=20 ALL=1,64,1024,4096,16384,65536 BIG=16384,65536
  RL=1024,4096,16384 GAPS=1024,16384 RLGAP=4096 BUDGET=
fi
budget() { echo "${BUDGET:-$1}"; }  # a phase's time cap for one sweep, in seconds

need_warp() {
  if [ -n "${GBX_DRY_RUN:-}" ]; then return 0; fi
  python3 -c "import warp as wp; wp.config.quiet = True; wp.init(); import sys; \
sys.exit(0 if wp.is_cuda_available() else 'no CUDA device visible to Warp')" || {
    echo "needs warp-lang and a CUDA device: on a fresh (or cold again) device machine run" \
      "the stage and install phases first" >&2
    exit 3
  }
}

pack() {  # the files written since the phase's marker, into $OUT; their summaries to the log
  local phase=$1 marker=$2
  (cd "$RES" && find . -type f -newer "$marker" | sort > "/tmp/gbx-$phase.list")
  if [ -s "/tmp/gbx-$phase.list" ]; then
    tar -czf "$OUT/gpu-$phase.tar.gz" -C "$RES" -T "/tmp/gbx-$phase.list"
    grep '\.md$' "/tmp/gbx-$phase.list" | while read -r f; do
      echo "==== $f"; cat "$RES/$f"
    done
  fi
}

sweep() { python3 -m bench.sweep --steps "$STEPS" "$@"; }

gpu_tests() {  # the gpu-marked tests; a dry run only collects them (they need CUDA)
  if [ -n "${GBX_DRY_RUN:-}" ]; then
    python3 -m pytest -q -m gpu --collect-only "$@" | tail -1
    return "${PIPESTATUS[0]}"
  fi
  python3 -m pytest -q -m gpu "$@"
}

run_phase() {
  case "$1" in
    stage)
      if [ -z "${GBX_DRY_RUN:-}" ]; then mkdir -p /tmp/gbx-stage && cp .devcarry/a/* /tmp/gbx-stage/; fi
      ;;
    install)
      if [ -n "${GBX_DRY_RUN:-}" ]; then python3 -m bench.roms.build > /dev/null; return 0; fi
      python3 .devcarry/b/install.py
      if compgen -G ".whl/*.whl" > /dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/gbx-whl .whl/*.whl
      fi
      need_warp
      nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$RES/nvidia-smi.csv"
      (command -v ncu && ncu --version) | tee "$RES/ncu-version.txt" || echo "no ncu on the PATH"
      python3 -m bench.roms.build > /dev/null
      ;;
    parity1)
      need_warp
      gpu_tests tests/test_gpu_parity.py -k one_env
      ;;
    # In a phase of several commands each runs; the phase fails if any does.
    parity2)
      need_warp
      gpu_tests tests/test_gpu_parity.py -k "batch and same" || failed=1
      gpu_tests tests/test_emu_cuda.py tests/test_backend_api_cuda.py \
        tests/test_pixels_backend.py || failed=1
      ;;
    parity3)
      need_warp
      gpu_tests tests/test_gpu_parity.py -k "batch and mixed" || failed=1
      gpu_tests tests/test_rl_gpu.py tests/test_envs_cuda.py || failed=1
      ;;
    bench-demo)
      need_warp
      sweep --backends "$BK" --envs "$ALL" --repeats 2 --render off,pixels,packed2 \
        --budget-s "$(budget 210)" --out "$RES/sweep-demo" || failed=1
      sweep --backends warp-cpu --envs 16,256,4096 --render off,pixels --budget-s "$(budget 45)" \
        --out "$RES/cpu-demo" || failed=1
      python3 -m bench.render_cost --device "$DEV" --envs "$BIG" --out "$RES/render" \
        --label "$( (nvidia-smi --query-gpu=name --format=csv,noheader || echo dry run) | head -1)" \
        || failed=1
      ;;
    bench-busy)
      need_warp
      sweep --backends "$BK" --rom busy --envs "$ALL" --repeats 2 --render off,pixels \
        --budget-s "$(budget 150)" --out "$RES/sweep-busy" || failed=1
      sweep --backends warp-cpu --rom busy --envs 16,256,4096 --render off \
        --budget-s "$(budget 30)" --out "$RES/cpu-busy" || failed=1
      for layout in env_major interleaved; do
        sweep --backends "$BK" --envs "$BIG" --render off --mem-layout "$layout" \
          --budget-s "$(budget 40)" --out "$RES/layouts-$layout" || failed=1
      done
      ;;
    rl)
      need_warp
      python3 -m bench.rl_sweep --device "$DEV" --envs "$RL" --pyboy-envs "" \
        --budget-s "$(budget 240)" --out "$RES/rl" || failed=1
      python3 -m bench.gpu_goals --root "$RES"
      ;;
    profile)
      need_warp
      python3 -m bench.launch_gaps --device "$DEV" --envs "$GAPS" --steps 16 --rl-envs "$RLGAP" \
        --out "$RES/launch-gaps" || failed=1
      for rom in demo busy; do  # no ncu on the PATH is not a failure of the phase
        python3 -m bench.ncu_step --rom "$rom" --envs "${BIG%%,*}" --out "$RES/ncu" || true
      done
      ;;
    knobs)
      # Register caps: bench.cuda_build_report reads 255 registers uncapped; a cap of 128
      # adds spill code and doubles the warps an SM holds. Each cap is a patched copy.
      need_warp
      for cap in 0 168 128; do
        dir=/tmp/gbx-regs-$cap
        rm -rf "$dir" && mkdir -p "$dir" && cp -r src bench "$dir/"
        if [ "$cap" != 0 ]; then
          sed -i "s/@wp.kernel(name=\"step_kernel\", /@wp.kernel(name=\"step_kernel\", cuda_max_registers=$cap, /" \
            "$dir/src/gbxcule/kernels/step.py"
          grep -q "cuda_max_registers=$cap" "$dir/src/gbxcule/kernels/step.py"
        fi
        (cd "$dir" && PYTHONPATH=/tmp/gbx-site:$dir/src:$dir python3 -m bench.sweep \
          --steps "$STEPS" --render off --backends "$BK" --envs "$BIG" \
          --budget-s "$(budget 45)" --out "$RES/regs-$cap") || failed=1
      done
      for knob in fastpaths shapes; do
        python3 -m bench.gpu_knobs --knob "$knob" --device "$DEV" --rom demo,busy --envs "${BIG%%,*}" \
          --steps "$STEPS" --out "$RES/knob-$knob" || failed=1
      done
      ;;
    goals)
      python3 -m bench.gpu_goals --root "$RES"
      ;;
  esac
}

if [ -n "$one" ]; then  # one phase in its own shell: the first failing command ends it
  failed=0
  run_phase "$one"
  exit "$failed"
fi

# Each phase runs in a child shell, so a failing one still packs what it wrote; the
# phases after a failed one do not run.
for phase in "$@"; do
  start=$(date +%s)
  marker=/tmp/gbx-$phase.start && touch "$marker"
  rc=0
  bash "$0" --one "$phase" || rc=$?
  pack "$phase" "$marker"
  echo "gpu_session $phase: $(( $(date +%s) - start )) s, exit $rc"
  [ "$rc" = 0 ] || exit "$rc"
done
