# gbxcule — every gate a developer or CI runs goes through here.
PY        ?= python3
VENV      := .venv
VPY       := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
TORCH_CPU := torch==2.13.0
PYTEST    := $(VPY) -m pytest
ENVS      ?= 64
# PufferLib's pure-Python parts, beside the venv: its wheels pin another Torch
# (history/ecosystem.md). tests/test_envs_puffer.py runs PufferLib's vector API on them.
PUFFERLIB := pufferlib-core==3.0.23 psutil==7.2.2 rich==15.0.0 rich-argparse==1.8.0 \
             markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0

.PHONY: setup test test-slow test-cuda-build test-gpu lint typecheck check roms verify bench demo clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# torch first: on a machine without it take the CPU build, never the CUDA bundle.
	$(VPY) -c "import torch" 2>/dev/null || $(VPY) -m pip install -q $(TORCH_CPU)
	$(VPY) -m pip install -q -e ".[dev]"
	test -d .pufferlib/pufferlib || $(VPY) -m pip install -q --no-deps --target .pufferlib \
	    $(PUFFERLIB) || echo "PufferLib not installed: its tests in test_envs_puffer.py skip"
	touch $(STAMP)

roms: setup
	$(VPY) -m bench.roms.build

# The CPU gates: fast, representative slice (slow soaks and GPU tests excluded).
test: roms
	$(PYTEST) -q -m "not slow and not gpu" -n 2 --dist loadgroup tests

# Soak: the PyBoy comparisons of `make test`, much longer (tests/test_soak.py).
test-slow: roms
	$(PYTEST) -q -m "slow" -n 2 tests --ignore tests/test_cuda_aot.py \
	    --ignore tests/test_gpu_session_script.py

# What CI checks of the GPU path with no GPU: NVRTC builds sm_90 PTX of every kernels
# module, and the GPU session's plan runs every command on the CPU (GBX_DRY_RUN).
test-cuda-build: roms
	$(PYTEST) -q -s -m slow tests/test_cuda_aot.py
	$(PYTEST) -q -m slow tests/test_gpu_session_script.py

test-gpu: roms
	$(VPY) -c "import warp as wp; wp.init(); import sys; sys.exit(0 if wp.is_cuda_available() else 'test-gpu: no CUDA device visible to Warp')"
	$(PYTEST) -q -m "gpu" tests

lint: setup
	$(VPY) -m ruff check src bench tools tests examples
	$(VPY) -m ruff format --check src bench tools tests examples

typecheck: setup
	$(VPY) -m pyright

check: lint typecheck test

verify: roms
	$(VPY) -m gbxcule verify --all

bench: roms
	$(VPY) -m gbxcule bench --repeats 3

demo: roms
	$(VPY) -m gbxcule demo

clean:
	rm -rf bench/roms/out .pytest_cache .ruff_cache
