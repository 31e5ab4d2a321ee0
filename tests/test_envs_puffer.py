"""The PufferLib adapter: PufferLib 3.0's native-env buffer contract, and (when PufferLib
is installed in ``.pufferlib/`` or ``$GBXCULE_PUFFERLIB_PATH``, see history/ecosystem.md)
``pufferlib.vector.make`` with the native and Serial backends and the example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gbxcule.envs import make_puffer_env  # noqa: E402

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]
PUFFER = Path(os.environ.get("GBXCULE_PUFFERLIB_PATH", ROOT / ".pufferlib"))


def test_native_env_buffer_contract(demo) -> None:
    env = make_puffer_env(demo, 3, "demo-coins", obs="packed2", threads=1, max_steps=2)
    try:
        assert env.single_observation_space.shape == (72, 20)
        assert env.single_action_space.n == 7 and env.num_agents == 3
        bufs = [env.observations, env.rewards, env.terminals, env.truncations]
        assert env.observations.shape == (3, 72, 20) and env.observations.dtype == np.uint8
        assert env.rewards.dtype == np.float32 and env.terminals.dtype == np.bool_
        obs, infos = env.reset()
        assert obs is env.observations and infos == []
        out = env.step(np.array([2, 2, 2], dtype=np.int32))
        assert all(a is b for a, b in zip(out[:4], bufs))  # filled in place
        assert env.observations.any() and not env.truncations.any()
        env.step(np.array([2, 2, 2], dtype=np.int32))
        assert env.truncations.all()  # the episode ended at step 2 ...
        assert not env.observations.any()  # ... and the next one's first frame is blank
    finally:
        env.close()


def test_puffer_env_equals_the_gymnasium_env_step_by_step(demo) -> None:
    """Observations, rewards, terminals and truncations equal the Gymnasium vector env's
    (same task, same_step autoreset) at every step, across episode ends: the adapter
    emulates, it does not only fill its buffers."""
    from dataclasses import replace

    from gbxcule.envs import make_vector_env
    from gbxcule.tasks import load_task

    task = replace(load_task("demo-coins"), max_steps=5, terminated=lambda r: r["coins"] >= 1)
    kw = dict(obs="packed2", threads=1)
    puffer = make_puffer_env(demo, 3, task, **kw)
    gym_env = make_vector_env(demo, 3, task, autoreset_mode="same_step", **kw)
    rng = np.random.default_rng(4)
    try:
        puffer.reset()
        first, _ = gym_env.reset(seed=0)
        np.testing.assert_array_equal(puffer.observations, first)
        ends, shown = 0, False
        for t in range(40):
            actions = rng.integers(0, 7, size=3)
            puffer.step(actions.astype(np.int32))
            obs, reward, term, trunc, _ = gym_env.step(actions)
            np.testing.assert_array_equal(puffer.observations, obs, err_msg=f"t={t}")
            np.testing.assert_array_equal(puffer.rewards, reward.astype(np.float32))
            np.testing.assert_array_equal(puffer.terminals, term)
            np.testing.assert_array_equal(puffer.truncations, trunc)
            ends += int((term | trunc).sum())
            shown |= bool(puffer.observations.any())
        assert ends >= 3 * 7 and shown
    finally:
        puffer.close()
        gym_env.close()


def test_external_buffers_are_filled(demo) -> None:
    n = 2
    buf = {
        "observations": np.zeros((n, 72, 80), np.uint8),
        "rewards": np.zeros(n, np.float32),
        "terminals": np.zeros(n, bool),
        "truncations": np.zeros(n, bool),
        "masks": np.ones(n, bool),
        "actions": np.zeros(n, np.int32),
        "teacher_actions": np.zeros(n, np.int32),
    }
    env = make_puffer_env(demo, n, buf=buf, threads=1)
    try:
        env.reset()
        env.step(np.array([1, 2], dtype=np.int32))
        assert buf["observations"].any()
    finally:
        env.close()


PUFFER_SCRIPT = """
import sys, numpy as np, pufferlib, pufferlib.vector
from gbxcule.envs import make_puffer_env
from gbxcule.envs.puffer import GbxPufferEnv
rom = sys.argv[1]
kw = dict(rom=rom, num_envs=2, threads=1, max_steps=3)
env = pufferlib.vector.make(make_puffer_env, env_kwargs=kw, backend=pufferlib.vector.PufferEnv)
assert isinstance(env, pufferlib.PufferEnv) and isinstance(env, GbxPufferEnv)
env.async_reset(0)
env.recv()
for t in range(3):
    env.send(np.array([2, 1], dtype=np.int32))
    out = env.recv()
assert out[3].all(), out[3]
env.close()
ser = pufferlib.vector.make(make_puffer_env, env_kwargs=kw, backend=pufferlib.vector.Serial,
                            num_envs=2)
ser.async_reset(0)
ser.recv()
ser.send(np.array([2, 1, 0, 3], dtype=np.int32))
obs = ser.recv()[0]
assert obs.shape == (4, 72, 80) and obs.any()
ser.close()
print("pufferlib ok")
"""


@pytest.mark.skipif(not (PUFFER / "pufferlib").is_dir(), reason=f"no PufferLib in {PUFFER}")
def test_with_pufferlib_vector_and_example(demo) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PUFFER), str(ROOT / "src"), str(ROOT)])
    run = subprocess.run(
        [sys.executable, "-c", PUFFER_SCRIPT, str(demo)], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0 and "pufferlib ok" in run.stdout, run.stderr[-3000:]
    args = ["--rom", str(demo), "--num-envs", "2", "--num-steps", "4", "--total-updates", "2"]
    example = [sys.executable, str(ROOT / "examples" / "pufferlib_ppo.py"), *args]
    run = subprocess.run(example, env=env, capture_output=True, text=True)
    assert run.returncode == 0 and "update 2 sps" in run.stdout, run.stderr[-3000:]


def test_a_features_task_carries_records_of_screen_and_features(demo) -> None:
    """RAM features: each agent's observation is one ``obs_dtype`` record, whose screen and
    features equal the Gymnasium env's Dict observation at every step."""
    from dataclasses import replace

    from gbxcule.envs import make_vector_env
    from gbxcule.envs.puffer import unpack_observations
    from gbxcule.tasks import U8, load_task

    task = load_task("demo-coins")
    task = replace(task, name="sees-xy", reads={**task.reads, "x": U8(0xC100), "y": U8(0xC101)},
                   features=["x", "y"], max_steps=3)  # fmt: skip
    puffer = make_puffer_env(demo, 2, task, threads=1)
    gym_env = make_vector_env(demo, 2, task, autoreset_mode="same_step", threads=1)
    try:
        dtype = puffer.obs_dtype
        assert dtype is not None and dtype.names == ("screen", "features")
        assert puffer.single_observation_space.shape == (dtype.itemsize,)
        assert puffer.observations.shape == (2, dtype.itemsize)
        puffer.reset()
        gym_env.reset(seed=0)
        rng = np.random.default_rng(2)
        for t in range(7):
            actions = rng.integers(0, 7, size=2)
            puffer.step(actions.astype(np.int32))
            obs, reward, term, trunc, _ = gym_env.step(actions)
            got = unpack_observations(puffer.observations, dtype)
            np.testing.assert_array_equal(got["screen"], obs["screen"], err_msg=f"t={t}")
            np.testing.assert_array_equal(got["features"], obs["features"], err_msg=f"t={t}")
            np.testing.assert_array_equal(puffer.rewards, reward.astype(np.float32))
            np.testing.assert_array_equal(puffer.truncations, trunc)
        assert got["features"].any()
    finally:
        puffer.close()
        gym_env.close()
