#!/usr/bin/env bash
# Here, before the first device call of a session with a lent GPU: what the calls of
# tools/gpu_session.sh carry (both folders are git-ignored).
#   .devcarry/a, .devcarry/b   warp-lang 1.19 in two halves, from ../shared/device/carry/
#   .whl/                      gymnasium, stable-baselines3 and what the device's Python 3.12
#                              lacks of their needs
#   .gpucache/                 sm_90 CUBINs of every CUDA kernel (tools/gpu_precompile.py)
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
rm -rf .gpucache
PYTHONPATH=src:. "$py" tools/gpu_precompile.py --out .gpucache
du -sh .devcarry/a .devcarry/b .whl .gpucache
bash tools/gpu_session.sh --plan
