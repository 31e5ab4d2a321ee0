"""Two Stable-Baselines3 VecEnvs stepped side by side (tests/test_envs_sb3.py, test_envs_cuda.py)."""

from __future__ import annotations

import numpy as np


def assert_sb3_envs_agree(a, b, steps: int, seed: int) -> None:
    """Reset both, then ``steps`` seeded random actions: observations, rewards and dones are
    NumPy arrays of the same dtype and values, infos have the same keys and terminal
    observations."""
    np.testing.assert_array_equal(a.reset(), b.reset())
    rng = np.random.default_rng(seed)
    for t in range(steps):
        act = rng.integers(0, 7, size=a.num_envs)
        got, want = a.step(act), b.step(act)
        for k in range(3):
            assert type(got[k]) is np.ndarray and got[k].dtype == want[k].dtype
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"t={t} k={k}")
        for x, y in zip(got[3], want[3], strict=True):
            assert x.keys() == y.keys()
            if "terminal_observation" in x:
                np.testing.assert_array_equal(x["terminal_observation"], y["terminal_observation"])
