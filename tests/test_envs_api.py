"""The Gymnasium vector env's contract: spaces, metadata, wrappers, render, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

gym = pytest.importorskip("gymnasium")

from gbxcule.envs import PyBoyTaskEnv, make_vector_env  # noqa: E402

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def env(demo):
    e = make_vector_env(demo, 4, "demo-coins", obs="packed2", stack=2, threads=1)
    yield e
    e.close()


def test_spaces_and_metadata(env) -> None:
    assert env.single_observation_space == gym.spaces.Box(0, 255, (2, 72, 20), np.uint8)
    assert env.observation_space.shape == (4, 2, 72, 20)
    assert env.single_action_space == gym.spaces.Discrete(7)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, info = env.reset(seed=1)
    assert obs.shape == (4, 2, 72, 20) and obs.dtype == np.uint8 and not obs.any()
    assert info == {}
    obs, rew, term, trunc, info = env.step(np.zeros(4, dtype=np.int64))
    assert obs in env.observation_space
    assert rew.dtype == np.float64 and term.dtype == np.bool_ and trunc.dtype == np.bool_
    assert obs[:, 1].any() and not obs[:, 0].any()  # one frame seen, the older one blank


def test_u8_single_frame_shape(demo) -> None:
    e = make_vector_env(demo, 2, "demo-coins", threads=1)
    try:
        assert e.single_observation_space == gym.spaces.Box(0, 3, (72, 80), np.uint8)
        obs, _ = e.reset()
        assert obs.shape == (2, 72, 80)
    finally:
        e.close()


def test_render_is_an_rgb_grid(env) -> None:
    env.reset()
    env.step(np.full(4, 2))
    img = env.render()
    assert img.shape == (2 * 144, 2 * 160, 3) and img.dtype == np.uint8
    assert len(np.unique(img)) > 1


def test_gymnasium_wrappers(demo) -> None:
    from gymnasium.wrappers.vector import NumpyToTorch, RecordEpisodeStatistics

    e = NumpyToTorch(
        RecordEpisodeStatistics(make_vector_env(demo, 2, "demo-coins", threads=1, max_steps=3))
    )
    try:
        obs, _ = e.reset()
        assert isinstance(obs, torch.Tensor) and obs.shape == (2, 72, 80)
        for _ in range(3):
            obs, rew, term, trunc, info = e.step(torch.tensor([2, 0]))
        assert bool(trunc.all())
        assert info["_episode"].tolist() == [True, True]
        assert info["episode"]["l"].tolist() == [3, 3]
    finally:
        e.close()


def test_reset_mask_checks_and_disabled_mode(demo) -> None:
    e = make_vector_env(demo, 2, "demo-coins", threads=1, max_steps=1, autoreset_mode="disabled")
    try:
        e.reset()
        _, _, _, trunc, _ = e.step(np.array([1, 2]))
        assert trunc.tolist() == [True, True]
        with pytest.raises(RuntimeError, match="reset_mask"):
            e.step(np.array([1, 2]))
        with pytest.raises(ValueError, match="bool array"):
            e.reset(options={"reset_mask": np.array([1, 0])})
        with pytest.raises(ValueError, match="at least one"):
            e.reset(options={"reset_mask": np.zeros(2, dtype=bool)})
        obs, _ = e.reset(options={"reset_mask": np.array([True, False])})
        assert not obs[0].any() and obs[1].any()
        with pytest.raises(RuntimeError, match="reset_mask"):
            e.step(np.array([1, 2]))  # env 1 is still finished
    finally:
        e.close()


def test_bad_arguments(demo) -> None:
    with pytest.raises(ValueError, match="obs must be"):
        make_vector_env(demo, 2, obs="colour")
    with pytest.raises(ValueError, match="'rgb' is not drawn by a DMG"):
        make_vector_env(demo, 2, obs="rgb")  # a Game Boy Color game's observation
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_vector_env(demo, 2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="unknown task"):
        make_vector_env(demo, 2, task="no-such-task")


def test_reference_env_passes_gymnasium_checker(demo) -> None:
    from gymnasium.utils.env_checker import check_env

    e = PyBoyTaskEnv(demo, "demo-coins", obs="packed2", max_steps=4)
    try:
        check_env(e, skip_render_check=True)
    finally:
        e.close()


def test_swarm_reset_copies_the_best_env(demo) -> None:
    e = make_vector_env(demo, 3, "demo-coins", threads=1, stack=2)
    try:
        e.reset()
        for t in range(4):
            e.step(np.array([2, 0, 3]) if t % 2 else np.array([1, 1, 2]))
        e.swarm_reset(np.array([True, False, True]), progress=torch.tensor([0, 5, 1]))
        assert e.task.steps.tolist() == [4, 4, 4]
        for _ in range(3):
            obs, rew, term, trunc, _ = e.step(np.array([3, 3, 3]))
            assert (obs[0] == obs[1]).all() and (obs[2] == obs[1]).all()
            assert rew[0] == rew[1] == rew[2]
    finally:
        e.close()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_hook_hits_in_infos(demo, mode) -> None:
    hooks = ["VBlankIsr", "ReadJoypad", "TileData"]  # TileData: data, never executed
    e = make_vector_env(
        demo, 2, "demo-coins", threads=1, max_steps=2, autoreset_mode=mode, hooks=hooks
    )
    try:
        assert len(e.hooks) == 3
        e.reset()
        for t in range(3):
            *_, info = e.step(np.zeros(2, dtype=np.int64))
            hits, valid = info["hook_hits"], info["_hook_hits"]
            assert hits.shape == (2, 3) and hits.dtype == np.int32 and valid.dtype == np.bool_
            assert (hits[:, 2] == 0).all()
            if mode == "next_step" and t == 2:  # both envs ended at step 2: restored now
                assert not valid.any() and not hits.any()
            else:
                assert valid.all() and (hits[:, :2] > 0).all() and (hits[0] == hits[1]).all()
            if mode == "same_step" and t == 1:
                assert info["_final_obs"].all()
    finally:
        e.close()
