"""L3 for the Gymnasium adapter: our vector env against ``SyncVectorEnv`` of the PyBoy
single env (``gbxcule.envs.reference``), step by step, across autoresets, every mode."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gbxcule.demo import game  # noqa: E402
from gbxcule.envs import PyBoyTaskEnv, make_vector_env  # noqa: E402
from gbxcule.tasks import U8, load_task  # noqa: E402

pytestmark = pytest.mark.l3

NUM_ENVS = 3
STEPS = 36
# demo-coins, shortened, and ended at the first coin: both terminations and truncations.
SPEC = replace(
    load_task("demo-coins"),
    max_steps=14,
    frames_per_step=16,
    terminated=lambda r: r["coins"] >= 1,
)
# From the start (128, 128), 8 pixels a step: env 0 walks right 2, up 10 and meets the
# coin at (142, 49) in its first episode; env 1 wanders; env 2 walks up (no coin).
PATTERNS = ([2, 2] + [3] * 10 + [0, 4], [2, 0, 1, 3, 5, 6, 2], [3])


def actions(t: int) -> np.ndarray:
    return np.array([p[t % len(p)] for p in PATTERNS][:NUM_ENVS])


# the same task with RAM features (a Dict observation): the player's position, scaled
WITH_FEATURES = replace(
    SPEC,
    reads={**SPEC.reads, "x": U8(game.W_PLAYER_X), "y": U8(game.W_PLAYER_Y)},
    features={"x": 1 / 256, "y": 1 / 256},
)


def same(got, want, err_msg: str) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want), err_msg
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{err_msg} [{key}]")
    else:
        np.testing.assert_array_equal(got, want, err_msg=err_msg)


def compare(mode: str, obs: str, stack: int, rom, spec=SPEC) -> dict[str, int]:
    ours = make_vector_env(
        rom, NUM_ENVS, spec, obs=obs, stack=stack, autoreset_mode=mode, threads=1
    )
    ref = gym.vector.SyncVectorEnv(
        [lambda: PyBoyTaskEnv(rom, spec, obs=obs, stack=stack)] * NUM_ENVS,
        autoreset_mode=getattr(gym.vector.AutoresetMode, mode.upper()),
    )
    seen = {"reward": 0, "terminated": 0, "truncated": 0}
    try:
        a, _ = ours.reset(seed=0)
        b, _ = ref.reset(seed=0)
        same(a, b, "reset")
        for t in range(STEPS):
            got, want = ours.step(actions(t)), ref.step(actions(t))
            for k, name in enumerate(("obs", "reward", "terminated", "truncated")):
                same(got[k], want[k], err_msg=f"{mode} t={t} {name}")
            if mode == "same_step":
                check_final(got[4], want[4], t)
            done = got[2] | got[3]
            seen["reward"] += int((got[1] > 0).sum())
            seen["terminated"] += int(got[2].sum())
            seen["truncated"] += int(got[3].sum())
            if mode == "disabled" and done.any():
                a, _ = ours.reset(options={"reset_mask": done})
                b, _ = ref.reset(options={"reset_mask": done.copy()})
                same(a, b, err_msg=f"reset_mask t={t}")
    finally:
        ours.close()
        ref.close()
    return seen


def check_final(got: dict, want: dict, t: int) -> None:
    assert set(got) == set(want), (t, sorted(got), sorted(want))
    if "final_obs" in want:
        np.testing.assert_array_equal(got["_final_obs"], want["_final_obs"])
        for e in np.flatnonzero(want["_final_obs"]):
            same(got["final_obs"][e], want["final_obs"][e], f"final_obs t={t} env {e}")


@pytest.mark.parametrize(
    "mode,obs,stack,spec",
    [
        ("next_step", "u8", 1, SPEC),
        ("same_step", "packed2", 3, SPEC),
        ("disabled", "u8", 2, SPEC),
        ("same_step", "u8", 2, WITH_FEATURES),
    ],
    ids=["next_step", "same_step", "disabled", "same_step-features"],
)
def test_vector_env_equals_sync_vector_env_of_pyboy(demo, mode, obs, stack, spec) -> None:
    seen = compare(mode, obs, stack, demo, spec)
    # the run crossed autoresets of both kinds and saw rewards
    assert seen["reward"] > 0 and seen["terminated"] > 0 and seen["truncated"] > 0, seen
