"""The Gymnasium vector env on CUDA: device tensors out, equal to the CPU env step by step,
and swarm copies on the device (skipped without CUDA; ``make test-gpu``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium")

from gbxcule.envs import make_vector_env  # noqa: E402

from .support.sb3_support import assert_sb3_envs_agree  # noqa: E402

pytestmark = [
    pytest.mark.l3,
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_cuda_env_equals_cpu_env(demo, mode) -> None:
    kw = dict(obs="packed2", stack=2, autoreset_mode=mode, max_steps=5)
    gpu = make_vector_env(demo, 8, "demo-coins", device="cuda", **kw)
    cpu = make_vector_env(demo, 8, "demo-coins", threads=1, **kw)
    try:
        a, _ = gpu.reset()
        b, _ = cpu.reset()
        assert a.device.type == "cuda"
        np.testing.assert_array_equal(a.cpu().numpy(), b)
        rng = np.random.default_rng(0)
        for t in range(14):
            act = rng.integers(0, 7, size=8)
            g = gpu.step(torch.as_tensor(act, device="cuda"))
            c = cpu.step(act)
            for k in range(4):
                assert g[k].device.type == "cuda"
                np.testing.assert_array_equal(g[k].cpu().numpy(), c[k], err_msg=f"t={t} k={k}")
            if mode == "same_step" and "final_obs" in c[4]:
                np.testing.assert_array_equal(g[4]["_final_obs"].cpu().numpy(), c[4]["_final_obs"])
            if mode == "disabled":
                done = c[2] | c[3]
                if done.any():
                    gpu.reset(options={"reset_mask": torch.as_tensor(done, device="cuda")})
                    cpu.reset(options={"reset_mask": done})
        src = torch.zeros(8, dtype=torch.int64, device="cuda")
        mask = torch.arange(8, device="cuda") >= 4
        gpu.copy_envs(src, mask)
        g = gpu.step(torch.full((8,), 2, device="cuda"))
        assert torch.equal(g[0][4], g[0][0]) and torch.equal(g[0][7], g[0][0])
    finally:
        gpu.close()
        cpu.close()


def test_sb3_env_on_cuda_equals_the_cpu_one(demo) -> None:
    """Stable-Baselines3 works on NumPy: the CUDA env hands it host arrays, equal to the
    CPU env's, terminal observations included."""
    pytest.importorskip("stable_baselines3")
    from gbxcule.envs import make_sb3_env

    kw = dict(obs="u8", stack=2, max_steps=5)
    gpu = make_sb3_env(demo, 8, "demo-coins", device="cuda", **kw)
    cpu = make_sb3_env(demo, 8, "demo-coins", threads=1, **kw)
    try:
        assert_sb3_envs_agree(gpu, cpu, steps=12, seed=1)
    finally:
        gpu.close()
        cpu.close()
