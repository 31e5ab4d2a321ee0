"""The Stable-Baselines3 VecEnv: its contract, step-by-step equality with the Gymnasium
vector env it wraps, and Stable-Baselines3's own PPO training on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from gbxcule.envs import make_sb3_env, make_vector_env  # noqa: E402

from .support.sb3_support import assert_sb3_envs_agree  # noqa: E402

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]


def test_spaces_reset_and_step_shapes(demo) -> None:
    env = make_sb3_env(demo, 3, "demo-coins", threads=1)
    try:
        assert env.num_envs == 3 and env.action_space.n == 7
        space = env.observation_space
        assert space.shape == (1, 72, 80) and space.dtype == np.uint8 and space.high.max() == 3
        obs = env.reset()
        assert obs.shape == (3, 1, 72, 80) and obs.dtype == np.uint8
        assert not obs.any()  # an episode's first observation is blank
        obs, rewards, dones, infos = env.step(np.array([0, 1, 2]))
        assert obs.shape == (3, 1, 72, 80) and obs.any()
        assert rewards.shape == (3,) and rewards.dtype == np.float32
        assert dones.shape == (3,) and dones.dtype == np.bool_
        assert infos == [{}, {}, {}]
        assert env.get_attr("render_mode") == ["rgb_array"] * 3
        assert env.get_attr("obs_format", indices=[0, 2]) == ["u8", "u8"]
        assert env.env_is_wrapped(object) == [False] * 3
        images = env.get_images()
        assert len(images) == 3 and images[0].shape == (144, 160, 3)
        assert env.render().ndim == 3  # Stable-Baselines3 tiles get_images()
    finally:
        env.close()


@pytest.mark.parametrize(("obs", "stack"), [("u8", 1), ("packed2", 3)])
def test_equals_the_same_step_vector_env(demo, obs, stack) -> None:
    """Same actions: same observations, rewards and dones; a finished env's last
    observation in terminal_observation; truncation by max_steps flagged."""
    kw = dict(obs=obs, stack=stack, max_steps=4, threads=1)
    sb3 = make_sb3_env(demo, 4, "demo-coins", **kw)
    gym = make_vector_env(demo, 4, "demo-coins", autoreset_mode="same_step", **kw)
    shape = sb3.observation_space.shape
    try:
        a = sb3.reset()
        b, _ = gym.reset()
        np.testing.assert_array_equal(a, b.reshape(4, *shape))
        rng = np.random.default_rng(3)
        ends = 0
        for t in range(10):
            act = rng.integers(0, 7, size=4)
            obs_a, rew_a, done_a, infos = sb3.step(act)
            obs_b, rew_b, term, trunc, info = gym.step(act)
            np.testing.assert_array_equal(obs_a, obs_b.reshape(4, *shape), err_msg=f"t={t}")
            np.testing.assert_array_equal(rew_a, rew_b.astype(np.float32))
            np.testing.assert_array_equal(done_a, term | trunc)
            for e in range(4):
                if done_a[e]:
                    ends += 1
                    final = info["final_obs"][e].reshape(shape)
                    np.testing.assert_array_equal(infos[e]["terminal_observation"], final)
                    assert infos[e]["TimeLimit.truncated"] == bool(trunc[e] and not term[e])
                else:
                    assert "terminal_observation" not in infos[e]
        assert ends >= 8  # every env ran into max_steps twice
    finally:
        sb3.close()
        gym.close()


@pytest.mark.parametrize("policy", ["CnnPolicy", "MlpPolicy"])
def test_stable_baselines3_ppo_trains_on_it(demo, policy) -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    env = VecMonitor(make_sb3_env(demo, 4, "demo-coins", stack=2, max_steps=8, threads=1))
    try:
        kwargs = {"normalize_images": False} if policy == "CnnPolicy" else {}
        model = PPO(
            policy, env, n_steps=16, batch_size=32, n_epochs=1, seed=0, policy_kwargs=kwargs
        )
        model.learn(total_timesteps=128)
        assert model.num_timesteps == 128
        assert len(model.ep_info_buffer) >= 8  # VecMonitor saw the 8-step episodes end
        assert all(ep["l"] == 8 for ep in model.ep_info_buffer)
        actions, _ = model.predict(env.reset(), deterministic=True)
        assert actions.shape == (4,) and ((actions >= 0) & (actions < 7)).all()
    finally:
        env.close()


def test_refusals(demo) -> None:
    with pytest.raises(TypeError, match="autoreset_mode"):
        make_sb3_env(demo, 2, "demo-coins", autoreset_mode="next_step")
    env = make_sb3_env(demo, 2, "demo-coins", threads=1)
    try:
        env.reset()
        with pytest.raises(RuntimeError, match="step_async"):
            env.step_wait()
        with pytest.raises(NotImplementedError, match="share one backend"):
            env.set_attr("render_mode", None)
        with pytest.raises(NotImplementedError, match="share one backend"):
            env.env_method("reset")
        with pytest.raises(AttributeError):
            env.get_attr("no_such_attribute")
        with pytest.raises(ValueError, match="action"):
            env.step(np.array([0, 99]))
    finally:
        env.close()


def test_hook_hits_reach_each_envs_info(demo) -> None:
    env = make_sb3_env(demo, 2, "demo-coins", threads=1, hooks=["VBlankIsr", "TileData"])
    try:
        env.reset()
        *_, infos = env.step(np.zeros(2, dtype=np.int64))
        for info in infos:
            assert info["hook_hits"].shape == (2,)
            assert info["hook_hits"][0] > 0 and info["hook_hits"][1] == 0
    finally:
        env.close()


def test_without_stable_baselines3_the_error_says_what_to_install() -> None:
    program = (
        "import sys; sys.modules['stable_baselines3'] = None\n"
        "import gbxcule.envs as e\n"
        "try:\n"
        "    e.make_sb3_env\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert "pip install 'gbxcule[sb3]'" in out.stdout, out.stderr[-2000:]


def test_tensor_results_take_the_same_way_to_numpy(demo) -> None:
    """On CUDA the wrapped env returns tensors (final_obs one [N, ...] tensor): the same
    code runs here on CPU tensors, with the vector env told it is on a GPU."""
    kw = dict(stack=2, max_steps=3, threads=1)
    tensors = make_sb3_env(demo, 3, "demo-coins", **kw)
    tensors.venv.on_cuda = True  # its results are then CPU tensors, as on CUDA
    arrays = make_sb3_env(demo, 3, "demo-coins", **kw)
    try:
        assert_sb3_envs_agree(tensors, arrays, steps=7, seed=5)
    finally:
        tensors.close()
        arrays.close()


def _features_task():
    from dataclasses import replace

    from gbxcule.tasks import U8, load_task

    task = load_task("demo-coins")
    reads = {**task.reads, "x": U8(0xC100), "y": U8(0xC101)}
    return replace(task, name="coins-sees-xy", reads=reads, features={"x": 1 / 255, "y": 1 / 255},
                   max_steps=4)  # fmt: skip


def test_a_features_task_observes_a_dict_like_the_vector_env(demo) -> None:
    """RAM features: a Dict observation, equal to the Gymnasium env's at every step (the
    terminal observation too), and Stable-Baselines3's MultiInputPolicy trains on it."""
    from stable_baselines3 import PPO

    task = _features_task()
    sb3 = make_sb3_env(demo, 3, task, threads=1)
    gym = make_vector_env(demo, 3, task, autoreset_mode="same_step", threads=1)
    shape = sb3.observation_space["screen"].shape
    try:
        assert set(sb3.observation_space.spaces) == {"screen", "features"}
        a = sb3.reset()
        b, _ = gym.reset()
        np.testing.assert_array_equal(a["screen"], b["screen"].reshape(3, *shape))
        np.testing.assert_array_equal(a["features"], b["features"])
        rng = np.random.default_rng(5)
        ends, seen_features = 0, False
        for _ in range(9):
            act = rng.integers(0, 7, size=3)
            obs_a, rew_a, done_a, infos = sb3.step(act)
            obs_b, rew_b, term, trunc, info = gym.step(act)
            np.testing.assert_array_equal(obs_a["features"], obs_b["features"])
            np.testing.assert_array_equal(obs_a["screen"], obs_b["screen"].reshape(3, *shape))
            np.testing.assert_array_equal(rew_a, rew_b.astype(np.float32))
            seen_features = seen_features or bool(obs_a["features"].any())
            for e in np.flatnonzero(done_a):
                ends += 1
                final = infos[e]["terminal_observation"]
                np.testing.assert_array_equal(final["features"], info["final_obs"][e]["features"])
                assert sb3.observation_space.contains(final)
        assert ends == 6 and seen_features
        model = PPO("MultiInputPolicy", sb3, n_steps=8, batch_size=24, n_epochs=1, seed=0,
                    policy_kwargs={"normalize_images": False})  # fmt: skip
        model.learn(total_timesteps=48)
        assert model.num_timesteps == 48
    finally:
        sb3.close()
        gym.close()
