"""Swarm resets: ``copy_envs`` copies whole machine states between envs in one launch.

Lockstep: after the copy the target, stepped with the source's actions, equals the
source stepped likewise (every per-env field of the Machine), and equals PyBoy 2.8.1
loaded from the source's exported state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.warp_vec import WarpVecCpuBackend

pytestmark = pytest.mark.l3

N = 4


def assert_same_env(b, e1: int, e2: int, where: str) -> None:
    s1, s2 = b.capture_state(e1), b.capture_state(e2)
    for name in s1:
        np.testing.assert_array_equal(
            np.asarray(s1[name]), np.asarray(s2[name]), err_msg=f"{where}: {name}"
        )


def test_copy_envs_lockstep_with_source_and_pyboy(demo) -> None:
    rng = np.random.default_rng(3)
    b = WarpVecCpuBackend(
        demo, num_envs=N, threads=1, render_pixels=True, frames_per_step=8, release_after_frames=4
    )
    try:
        for _ in range(12):  # the envs drift apart
            b.step(rng.integers(0, 7, size=N))
        state_bytes = b.export_pyboy_state(1)
        mask = np.array([False, False, True, True])
        b.copy_envs(np.array([0, 0, 1, 0]), mask)
        assert_same_env(b, 1, 2, "right after the copy")
        assert_same_env(b, 0, 3, "right after the copy")
        assert np.array_equal(b.pixels_torch()[2].numpy(), b.pixels_torch()[1].numpy())
        ref = PyBoySingleBackend(demo, num_envs=1, frames_per_step=8, release_after_frames=4)
        try:
            ref.load_state(state_bytes)
            for t in range(20):
                a = rng.integers(0, 7, size=N)
                a[2], a[3] = a[1], a[0]
                b.step(a)
                ref.step(a[1:2])
                assert b.get_cpu_state(2) == ref.get_cpu_state(0), f"step {t}"
                np.testing.assert_array_equal(
                    b.read_memory(2, 0xC000, 0xE000), ref.read_memory(0, 0xC000, 0xE000)
                )
                if t > 0:  # PyBoy's first frame after load_state draws stale tiles (see
                    # history/ecosystem.md); ours is compared with the source env's below
                    np.testing.assert_array_equal(b.frame_shades(2), ref.frame_shades(0))
            assert_same_env(b, 1, 2, "after 20 steps")
            assert_same_env(b, 0, 3, "after 20 steps")
        finally:
            ref.close()
    finally:
        b.close()


def test_copy_envs_inputs(demo) -> None:
    b = WarpVecCpuBackend(demo, num_envs=N, threads=1)
    try:
        b.step(np.array([0, 1, 2, 3]))
        before = b.capture_state(3)
        b.copy_envs(np.zeros(N, dtype=np.int64), np.zeros(N, dtype=bool))  # nothing selected
        b.copy_envs(torch.tensor([0, 1, 2, 3]), torch.tensor([0, 0, 0, 1]))  # itself: no-op
        assert_same_env_state(before, b.capture_state(3))
        with pytest.raises(ValueError, match="itself overwritten"):
            b.copy_envs(np.array([1, 2, 0, 0]), np.array([True, True, False, False]))
        with pytest.raises(IndexError, match="out of range"):
            b.copy_envs(np.array([0, 9, 0, 0]), np.array([False, True, False, False]))
        with pytest.raises(ValueError, match="integers"):
            b.copy_envs(np.zeros(N), np.ones(N, dtype=bool))
        # Warp arrays are device inputs: checked by the kernel, reported by check_errors
        import warp as wp

        src = wp.array(np.array([1, 2, 0, 0], dtype=np.int32), dtype=wp.int32, device="cpu")
        env0 = b.capture_state(0)
        b.copy_envs(src, np.array([True, True, False, False]))
        with pytest.raises(ValueError, match="copy_envs sources"):
            b.check_errors()
        assert_same_env(b, 1, 2, "env 1 copied env 2")
        assert_same_env_state(env0, b.capture_state(0))  # refused: its source is masked
    finally:
        b.close()


def assert_same_env_state(s1: dict, s2: dict) -> None:
    for name in s1:
        np.testing.assert_array_equal(np.asarray(s1[name]), np.asarray(s2[name]), err_msg=name)
