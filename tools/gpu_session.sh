#!/usr/bin/env bash
# Everything a session with a lent GPU runs (issues #33, #41), in three device calls back to back:
# 15 device minutes in all, the machine's start (1-2 min), transfers and idle waits counted,
# and the machine goes cold ~30 s after a call. Run from the repo root on the device:
#
#   bash tools/gpu_session.sh PHASE [PHASE ...]     (or: bash tools/gpu_session.sh --plan)
#
# Prepare here first: `bash tools/gpu_prepare.sh` (warp-lang's two halves, the wheels, and
# the sm_90 CUBINs of every kernel, so no device minute pays for NVRTC). The plan, the most
# valuable first; each phase stops its commands at its own cap, so a call cut short still
# packs what ran (a verdict before a number, a number before a profile):
PLAN='
  call  timeout_s  carry                       phases                  budget
  -     -          (machine start)             -                         120 s
  1     60         .devcarry/a .gpucache       stage                      20 s
  2     480        .devcarry/b .whl            install ab                345 s
  3     240        -                           parity goals              195 s
  -     -          (transfers, 3 calls)        -                          40 s
'
# Issue #41's call opens the session (call 2, at most 8 minutes with the install): ab 320,
# bench.gpu_shape_ab 240 (the step before and after the issue, env-major and interleaved,
# no register cap and 96: demo, busy ROM and quest at 16,384 and 65,536 envs, 3 steps
# each, the game-like ROM at 16,384, 2 steps; ~40 s a configuration at the old speeds,
# each configuration a child process loading its staged CUBINs; its budget skips the last
# configurations where the old ones run long), then Nsight Compute on one step of the new
# kernel, interleaved: demo at 16,384 envs 40, quest at 4,096 40
# (one step each; quest at 16,384 took over 30 s). Then parity on the new kernels (call
# 3): they have run on no GPU yet. The sweep, rl, profile and api phases stay, for a
# session with minutes left (run them with one more call: `bash tools/gpu_session.sh
# sweep rl profile api goals`).
# Phase caps (seconds), sized on the two H100 sessions (2026-11-27, history/gpu-parity.md):
# install 25 (18 s measured); parity 190: the RL and Gymnasium/SB3 tests 75 (never reached
# in the first two sessions: each of their steps waits on a ~150 ms GPU step, and the first
# test to build a CPU backend pays ~32 s of warp-cpu's compile), every golden on one env 85
# (~1.3 s a golden once that compile is cached), the 1,024-env batches 30 (about 4 s each);
# runs no committed report shows passing go first (GBXCULE_GPU_PRIOR), so sessions together
# cover them all; sweep 115 (demo 30, busy ROM 30 and quest, the second game, 35 at 1,024 /
# 16,384 / 65,536 envs, render off and packed2; the game-like ROM 20, render off, 5 steps:
# 20x slower a step); rl 70 (u8 vs packed2, sync vs async, 4,096 and 16,384 envs, 16-step
# rollouts: 69 s in the second session); profile 105 (Nsight Compute on one step, demo at
# 16,384 envs 35 and quest at 4,096 30: 16,384 took over 30 s; render cost 15; block_dim 32
# against the default 64, 25); api 30 (the emulator, backend API and pixel tests against
# the CPU: all passed in the second session); goals 5. Launch gaps (bench.launch_gaps) are
# left out: a step's kernel runs for 150 ms and more, so microseconds between launches do
# not show.
#
# Each phase packs what it wrote into $OUT/gpu-PHASE.tar.gz (a call brings back at most 8
# files) and prints its summaries. Here: `tar -xzf FILES_AT/gpu-PHASE.tar.gz -C
# bench/results/gpu/` in call order, then `python -m bench.gpu_goals`, and commit with the
# device name. A failing phase does not stop the next (a parity failure still leaves the
# throughput numbers), except a missing warp or CUDA device (exit 3), which stops the call.
# GBX_DRY_RUN=1 runs every phase here, on the CPU with tiny sizes (warp-cpu for warp-cuda,
# no install, the gpu tests collected only): a broken command shows before a GPU is lent.
# The procedure and what the tests check: history/gpu-parity.md.
set -euo pipefail

PHASES="stage install ab parity sweep rl profile api goals"
if [ "${1:-}" = --plan ]; then
  echo "$PLAN"
  awk '$NF == "s" { total += $(NF-1) } END { printf "total budget: %d s (%.1f min)\n", total, total / 60 }' <<< "$PLAN"
  exit 0
fi
one=""
if [ "${1:-}" = --one ]; then one=$2; shift 2; set -- "$one"; fi
[ $# -ge 1 ] || { echo "usage: bash tools/gpu_session.sh PHASE [PHASE ...] | --plan; phases: $PHASES" >&2; exit 2; }
for phase in "$@"; do
  case " $PHASES " in *" $phase "*) ;; *) echo "unknown phase $phase; phases: $PHASES" >&2; exit 2;; esac
done

OUT=${OUT:-/tmp/gbx-out}
RES=${GBX_RES:-/tmp/gbx-res}  # every phase's results on this machine, in bench/results/gpu/'s layout
export PYTHONPATH=/tmp/gbx-boot:/tmp/gbx-site:/tmp/gbx-whl:$PWD/src:$PWD
export PYTHONUNBUFFERED=1
export GBXCULE_GPU_REPORT=$RES/parity
export GBXCULE_GPU_PRIOR=$PWD/bench/results/gpu/parity  # the committed reports: unproven runs first
mkdir -p "$OUT" "$RES/parity"

if [ -n "${GBX_DRY_RUN:-}" ]; then
  BK=warp-cpu DEV=cpu STEPS=2 SIZES=2,4 BIG=4 BIGGEST=8 RL=4,8 NCU=4 NCU_SMALL=2 SCALE=4
  ABENVS=2,4
  KNOB=shapes  # block32 is CUDA's alone; the dry run checks the same command with another knob
else
  BK=warp-cuda DEV=cuda STEPS=10 SIZES=1024,16384,65536 BIG=16384 BIGGEST=65536
  RL=4096,16384 NCU=16384 NCU_SMALL=4096 SCALE=1 KNOB=block32 ABENVS=16384,65536
  export WARP_CACHE_PATH=/tmp/gbx-cache  # the CUBINs built here (tools/gpu_precompile.py)
fi

# capped SECONDS CMD...: run CMD, interrupted (SIGINT: pytest still writes its reports) after
# SECONDS; a dry run scales the cap up, since 2 CPU cores build and run slower than the GPU.
capped() {
  local cap=$(( $1 * SCALE )); shift
  timeout -s INT -k 10 "$cap" "$@" || {
    local rc=$?
    [ "$rc" = 124 ] && echo "capped: stopped after $cap s: $*"
    return "$rc"
  }
}
# A sweep's own projection (--budget-s) skips what would overrun, a little inside its cap.
budget() { echo $(( $1 * SCALE - 10 )); }

need_warp() {
  if [ -n "${GBX_DRY_RUN:-}" ]; then return 0; fi
  python3 -c "import warp as wp; wp.init(); import sys; \
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
    { grep '\.md$' "/tmp/gbx-$phase.list" || true; } | while read -r f; do
      echo "==== $f"; cat "$RES/$f"
    done
  fi
}

sweep() { python3 -m bench.sweep --steps "$STEPS" "$@"; }

# The gpu-marked test files of the parity phase (a dry run collects them all at once).
GPU_TEST_FILES="tests/test_gpu_parity.py tests/test_emu_cuda.py tests/test_backend_api_cuda.py
  tests/test_pixels_backend.py tests/test_rl_gpu.py tests/test_envs_cuda.py"

gpu_tests() {  # NAME CAP ARGS...: gpu-marked tests; a dry run only collects them (they need CUDA)
  local name=$1 cap=$2; shift 2
  if [ -n "${GBX_DRY_RUN:-}" ]; then  # one collection of every file (3 s an interpreter)
    local files
    files=" $(echo $GPU_TEST_FILES) "  # one space between names
    for arg in "$@"; do
      case "$arg" in tests/*) case "$files" in *" $arg "*) ;; *)
        echo "gpu_tests: $arg is not in GPU_TEST_FILES" >&2; return 2;; esac;; esac
    done
    [ -e /tmp/gbx-collected ] && return 0
    # shellcheck disable=SC2086
    python3 -m pytest -q -p no:cacheprovider -m gpu --collect-only $GPU_TEST_FILES | tail -1
    local rc=${PIPESTATUS[0]}
    touch /tmp/gbx-collected
    return "$rc"
  fi
  capped "$cap" python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
    --junitxml="$RES/parity/junit-$name.xml" "$@"
}

run_phase() {
  case "$1" in
    stage)
      if [ -z "${GBX_DRY_RUN:-}" ]; then
        mkdir -p /tmp/gbx-stage /tmp/gbx-cache && cp .devcarry/a/* /tmp/gbx-stage/
        if [ -e .gpucache/cubins.tar.gz ]; then tar -xzf .gpucache/cubins.tar.gz -C /tmp/gbx-cache
        else echo "no .gpucache/cubins.tar.gz: CUDA builds there"; fi
      fi
      ;;
    install)
      if [ -n "${GBX_DRY_RUN:-}" ]; then  # make test built them already
        [ -e bench/roms/out/manifest.json ] || python3 -m bench.roms.build > /dev/null
        rm -f /tmp/gbx-collected
        return 0
      fi
      python3 .devcarry/b/install.py
      if compgen -G ".whl/*.whl" > /dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
          --target /tmp/gbx-whl .whl/*.whl
      fi
      # Warp would pick PTX where the driver is as new as its NVRTC, and JIT it at every
      # start; the CUBINs staged from here load as they are.
      mkdir -p /tmp/gbx-boot
      printf 'try:\n    import warp\n    warp.config.cuda_output = "cubin"\nexcept ImportError:\n    pass\n' \
        > /tmp/gbx-boot/sitecustomize.py
      need_warp
      nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$RES/nvidia-smi.csv"
      (command -v ncu && ncu --version) | tee "$RES/ncu-version.txt" || echo "no ncu on the PATH"
      python3 -m bench.roms.build > /dev/null
      ;;
    # In a phase of several commands each runs; the phase fails if any does.
    parity)
      need_warp
      gpu_tests rl-env 75 tests/test_rl_gpu.py tests/test_envs_cuda.py || failed=1
      gpu_tests one-env 85 tests/test_gpu_parity.py -k one_env || failed=1
      gpu_tests batch 30 tests/test_gpu_parity.py -k batch || failed=1
      ;;
    api)
      need_warp
      gpu_tests api 30 tests/test_emu_cuda.py tests/test_backend_api_cuda.py \
        tests/test_pixels_backend.py || failed=1
      ;;
    ab)
      need_warp
      capped 240 python3 -m bench.gpu_shape_ab --device "$DEV" --envs "$ABENVS" \
        --game-envs "$BIG" --steps 3 --game-steps 2 --budget-s "$(budget 240)" \
        --out "$RES/shape-ab" || failed=1
      if [ -z "${GBX_DRY_RUN:-}" ]; then
        capped 40 python3 -m bench.ncu_step --rom demo --envs "$NCU" --mem-layout interleaved \
          --out "$RES/ncu" || true
        capped 40 python3 -m bench.ncu_step --rom quest --envs "$NCU_SMALL" \
          --mem-layout interleaved --out "$RES/ncu" || true
      fi
      ;;
    sweep)
      need_warp
      capped 30 python3 -m bench.sweep --steps "$STEPS" --backends "$BK" --rom demo \
        --envs "$SIZES" --render off,packed2 --budget-s "$(budget 30)" \
        --out "$RES/sweep-demo" || failed=1
      capped 30 python3 -m bench.sweep --steps "$STEPS" --backends "$BK" --rom busy \
        --envs "$SIZES" --render off,packed2 --budget-s "$(budget 30)" \
        --out "$RES/sweep-busy" || failed=1
      capped 35 python3 -m bench.sweep --steps "$STEPS" --backends "$BK" --rom quest \
        --envs "$SIZES" --render off,packed2 --budget-s "$(budget 35)" \
        --out "$RES/sweep-quest" || failed=1
      capped 20 python3 -m bench.sweep --steps 5 --backends "$BK" --rom game --envs "$SIZES" \
        --render off --budget-s "$(budget 20)" --out "$RES/sweep-game" || failed=1
      ;;
    rl)
      need_warp
      capped 70 python3 -m bench.rl_sweep --device "$DEV" --envs "$RL" --steps 16 --updates 1 \
        --warmup 1 --pyboy-envs "" --budget-s "$(budget 70)" --out "$RES/rl" || failed=1
      ;;
    profile)
      need_warp
      # no ncu on the PATH is not a failure of the phase (a dry run has none: skipped;
      # tests/test_ncu_step.py runs the tool against a stand-in ncu)
      if [ -z "${GBX_DRY_RUN:-}" ]; then
        capped 35 python3 -m bench.ncu_step --rom demo --envs "$NCU" --out "$RES/ncu" || true
        capped 30 python3 -m bench.ncu_step --rom quest --envs "$NCU_SMALL" --out "$RES/ncu" || true
      fi
      capped 15 python3 -m bench.render_cost --device "$DEV" --envs "$BIG" --out "$RES/render" \
        --label "$( (nvidia-smi --query-gpu=name --format=csv,noheader || echo dry run) | head -1)" \
        || failed=1
      # Blocks of 32 against the default 64 (blocks of 64 ran 1.2-1.4x Warp's 256 at 16,384
      # envs in the second session): one warp a block reaches twice the SMs at 1,024 envs.
      capped 25 python3 -m bench.gpu_knobs --knob "$KNOB" --device "$DEV" --rom demo \
        --envs "$BIG,$BIGGEST" --rounds 1 --steps 5 --out "$RES/knob-$KNOB" || failed=1
      ;;
    goals)
      python3 -m bench.gpu_goals --root "$RES"
      ;;
  esac
}

if [ -n "$one" ]; then  # one phase in its own shell
  failed=0
  run_phase "$one"
  exit "$failed"
fi

# Each phase runs in a child shell and packs what it wrote, failed or not; a phase that
# finds no warp or no CUDA device (exit 3) stops the call, since every later phase needs them.
status=0
for phase in "$@"; do
  start=$(date +%s)
  marker=/tmp/gbx-$phase.start && touch "$marker"
  rc=0
  bash "$0" --one "$phase" || rc=$?
  pack "$phase" "$marker"
  echo "gpu_session $phase: $(( $(date +%s) - start )) s, exit $rc"
  [ "$rc" = 3 ] && exit 3
  [ "$status" != 0 ] || status=$rc
done
exit "$status"
