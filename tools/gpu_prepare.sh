#!/usr/bin/env bash
# Here, before the first device call of a session with a lent GPU: what the calls of
# tools/gpu_session.sh carry (both folders are git-ignored).
#   .devcarry/a, .devcarry/b   warp-lang 1.19 in two halves, from ../shared/device/carry/
#   .whl/                      gymnasium, stable-baselines3 and what the device's Python 3.12
#                              lacks of their needs
#   .gpucache/cubins.tar.gz    sm_90 CUBINs of every CUDA kernel (tools/gpu_precompile.py),
#                              packed: unpacked they took call 1 past the 64 MiB a call carries
# Usage: bash tools/gpu_prepare.sh [CARRY_DIR]
set -euo pipefail
src=${1:-../shared/device/carry}
py=${PY:-.venv/bin/python}
if [ ! -d "$src/a" ] || [ ! -d "$src/b" ]; then
  echo "no warp-lang halves under $src (a/ and b/ expected)" >&2
  exit 2
fi
rm -rf .devcarry .whl && mkdir -p .devcarry .whl
cp -r "$src/a" "$src/b" .devcarry/
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 -d .whl \
  gymnasium==1.4.0 farama-notifications==0.0.6 array-api-compat==1.16.0 \
  stable-baselines3==2.9.2
rm -rf .gpucache /tmp/gbx-precompiled
PYTHONPATH=src:. "$py" tools/gpu_precompile.py --out /tmp/gbx-precompiled
mkdir -p .gpucache && tar -czf .gpucache/cubins.tar.gz -C /tmp/gbx-precompiled .
du -sh .devcarry/a .devcarry/b .whl .gpucache
# What each call sends: the working tree (tracked and untracked-not-ignored files) and its
# carry, at most 64 MiB (the device tool refuses more, after a machine start).
"$py" - <<'PY'
import os, subprocess, sys
def size(paths):
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for root, _, files in os.walk(p):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total
tree = size(subprocess.run(["git", "ls-files", "-co", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.splitlines())
calls = {"call 1": [".devcarry/a", ".gpucache"], "call 2": [".devcarry/b", ".whl"], "call 3": []}
over = False
for call, carry in calls.items():
    mib = (tree + size(carry)) / 2**20
    over |= mib > 64
    print(f"{call} sends {mib:.1f} MiB (tree {tree / 2**20:.1f} + {' '.join(carry) or 'no carry'})")
sys.exit("a call would send more than 64 MiB" if over else 0)
PY
bash tools/gpu_session.sh --plan
