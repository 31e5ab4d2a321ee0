"""The backend API on CUDA: device tensors in, device views out, same results as the CPU.

CUDA tensors (actions, masks, slots) are consumed on the current Torch stream with no
host synchronisation from Torch (``torch.cuda.set_sync_debug_mode("error")`` would raise);
results must equal the CPU backend's for the same inputs given as NumPy arrays.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from gbxcule.backends.warp_vec import WarpVecCpuBackend, WarpVecCudaBackend
from gbxcule.core.actions import ActionRangeError

from .support.backend_api_support import write_rom

pytestmark = [pytest.mark.api, pytest.mark.gpu]

N = 8
PACE = {"frames_per_step": 4, "release_after_frames": 2}
STATES = Path(__file__).parent / "fixtures" / "states"


def states(b):
    return [b.capture_state(e) for e in range(b.num_envs)]


def assert_same(a, b):
    for x, y in zip(a, b):
        bad = [k for k in x if not np.array_equal(x[k], y[k])]
        assert not bad, bad


def test_cuda_tensor_actions_and_masks_match_the_cpu(demo):
    plan = np.random.default_rng(1).integers(0, 7, size=(10, N))
    with (
        WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as cpu,
        WarpVecCudaBackend(demo, num_envs=N, **PACE) as gpu,
    ):
        side = torch.cuda.Stream()
        for k, row in enumerate(plan):
            cpu.step(row)
            actions = torch.tensor(row, device="cuda")
            torch.cuda.set_sync_debug_mode("error")
            try:
                if k % 2:
                    with torch.cuda.stream(side):
                        gpu.step(actions)
                else:
                    gpu.step(actions)
            finally:
                torch.cuda.set_sync_debug_mode("default")
            if k == 4:
                cpu.capture_start_state(3)
                gpu.capture_start_state(3)
        mask = np.array([1, 0, 1, 0, 0, 1, 0, 0], dtype=bool)
        cpu.reset_envs(mask, slots=0)
        gpu.reset_envs(
            torch.tensor(mask, device="cuda"),
            slots=torch.zeros(N, dtype=torch.int64, device="cuda"),
        )
        assert_same(states(cpu), states(gpu))


def test_bad_cuda_action_is_reported_later(demo):
    with WarpVecCudaBackend(demo, num_envs=N, **PACE) as gpu:
        ids = torch.zeros(N, dtype=torch.int64, device="cuda")
        ids[5] = 99
        gpu.step(ids)
        with pytest.raises(ActionRangeError, match="env 5"):
            gpu.check_errors()
        gpu.step(torch.zeros(N, dtype=torch.int64, device="cuda"))
        gpu.check_errors()


def test_cuda_ram_views_and_load_state(demo):
    probe_rom = gzip.decompress((STATES / "probe.gb.gz").read_bytes())
    path = write_rom(demo.parent, "probe.gb", probe_rom)
    state = gzip.decompress((STATES / "pyboy-2.8.1-v29.state.gz").read_bytes())
    with (
        WarpVecCpuBackend(path, num_envs=2, threads=1, **PACE) as cpu,
        WarpVecCudaBackend(path, num_envs=2, **PACE) as gpu,
    ):
        cpu.load_state(state)
        gpu.load_state(state)
        wram = gpu.wram_torch()
        assert wram.is_cuda and wram.shape == (2, 8192)
        ptr = wram.data_ptr()
        for _ in range(5):
            cpu.step(np.array([1, 2]))
            gpu.step(np.array([1, 2]))
        torch.cuda.synchronize()
        assert gpu.wram_torch().data_ptr() == ptr
        assert np.array_equal(wram.cpu().numpy(), cpu.wram_torch().numpy())
        assert np.array_equal(gpu.cart_ram_torch().cpu().numpy(), cpu.cart_ram_torch().numpy())
        assert gpu.export_pyboy_state(1) == cpu.export_pyboy_state(1)
