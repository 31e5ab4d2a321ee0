"""A user's Game Boy Color game through a task file: the trainer, the vector env and the
Gymnasium spaces take its colour observations ("luma", "rgb"), and a DMG observation
format is refused by name, before any run folder is made.

The game is a CGB screen fuzz ROM of our own (tests/support/cgb_pixel_fuzz.py, header $C0:
Color only) whose scene counter sits at $C000."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.cli import main
from gbxcule.core import pixels as px

from .support import cgb_pixel_fuzz as fuzz

pytestmark = pytest.mark.api

TRAIN = ["train", "--envs", "2", "--steps", "4", "--minibatch", "8", "--total-steps", "8"]


@pytest.fixture(scope="module")
def colour_task(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cgb_task")
    rom = folder / "scenes.gbc"
    rom.write_bytes(fuzz.fuzz_rom(11))
    task = folder / "scenes.toml"
    task.write_text(
        f'name = "scenes"\nrom = "{rom}"\nactions = ["a", "noop"]\nmax_steps = 40\n'
        "frames_per_step = 4\nrelease_after_frames = 2\n"
        '[reads.scene]\ntype = "U8"\nat = 0xC000\n'
        '[reward.scene]\ntype = "Progress"\nread = "scene"\nweight = 1.0\n'
    )
    return task


@pytest.mark.parametrize("obs", ["luma", "rgb"])
def test_the_trainer_and_eval_run_a_colour_game(tmp_path, capsys, colour_task, obs):
    """Train on the Warp backend, then evaluate the policy there and on PyBoy (a Game Boy
    Color machine by the header, as the Warp one), with a colour GIF of the episodes."""
    out = tmp_path / "runs"
    code = main([*TRAIN, "--task", str(colour_task), "--obs-format", obs, "--out", str(out),
                 "--no-report"])  # fmt: skip
    assert code == 0, capsys.readouterr().err[-2000:]
    (run,) = out.iterdir()
    assert (run / "metrics.jsonl").is_file()
    for backend in ("warp", "pyboy"):
        gif = tmp_path / f"{backend}.gif"
        code = main(["eval", str(run), "--episodes", "2", "--backend", backend, "--gif", str(gif)])
        assert code == 0, capsys.readouterr().err[-2000:]
        assert gif.stat().st_size > 0
    # L4: the policy acts on PyBoy exactly as on ours, step by step, state and all
    code = main(["l4", str(run), "--episodes", "2", "--reference", "stock",
                 "--bundles", str(tmp_path / "repro")])  # fmt: skip
    out_text = capsys.readouterr()
    assert code == 0, (out_text.out[-2000:], out_text.err[-2000:])


def test_a_dmg_observation_of_a_colour_game_is_refused_by_name(tmp_path, capsys, colour_task):
    out = tmp_path / "runs"
    code = main([*TRAIN, "--task", str(colour_task), "--obs-format", "packed2", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert "'packed2' is not drawn by a Game Boy Color machine" in err
    assert not out.exists() or not any(out.iterdir())


def test_the_vector_env_shows_a_colour_game_as_the_backend_draws_it(colour_task):
    from gbxcule.envs.vector import make_vector_env

    env = make_vector_env(None, 2, str(colour_task), obs="rgb", stack=2, threads=1)
    try:
        assert env.single_observation_space.shape == (2, 72, 80, 3)
        obs, _ = env.reset(seed=0)
        for _ in range(30):
            obs, *_ = env.step(np.zeros(2, dtype=np.int64))
        assert obs.shape == (2, 2, 72, 80, 3) and env.observation_space.contains(obs)
        screens = env.backend.screens([0, 1])
        assert np.array_equal(obs[:, -1], screens[:, ::2, ::2])
        assert len(np.unique(obs[0, -1].reshape(-1, 3), axis=0)) > 8  # in colour
        frame = env.render()
        assert frame.ndim == 3 and frame.shape[-1] == 3
    finally:
        env.close()
    luma = make_vector_env(None, 2, str(colour_task), obs="luma", threads=1)
    try:
        assert luma.single_observation_space.shape == (72, 80)
        assert luma.single_observation_space.high.max() == 255
        obs, _ = luma.reset(seed=0)
        for _ in range(30):
            obs, *_ = luma.step(np.zeros(2, dtype=np.int64))
        rgb = luma.backend.screens([0, 1])[:, ::2, ::2]
        assert np.array_equal(obs, px.luma(np.ascontiguousarray(rgb)))
    finally:
        luma.close()


def test_the_adapters_take_a_colour_game(colour_task):
    """Stable-Baselines3 (rgb as 3 planes a frame, channel first: CnnPolicy learns on it
    as an image) and PufferLib (rgb [72, 80, 3]) on the Color-only game."""
    from stable_baselines3 import PPO

    from gbxcule.envs.puffer import make_puffer_env
    from gbxcule.envs.sb3 import make_sb3_env

    sb3 = make_sb3_env(None, 2, str(colour_task), obs="rgb", stack=2, threads=1)
    try:
        assert sb3.observation_space.shape == (6, 72, 80)
        obs = sb3.reset()
        for _ in range(20):
            sb3.step_async(np.zeros(2, dtype=np.int64))
            obs, *_ = sb3.step_wait()
        screens = sb3.venv.backend.screens([0, 1])[:, ::2, ::2]
        assert np.array_equal(obs[:, 3:], np.moveaxis(screens, -1, 1))
        assert sb3.get_images()[0].shape == (144, 160, 3)
        model = PPO("CnnPolicy", sb3, n_steps=8, batch_size=16, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=32)
    finally:
        sb3.close()
    puffer = make_puffer_env(None, 2, str(colour_task), obs="rgb", threads=1)
    try:
        assert puffer.single_observation_space.shape == (72, 80, 3)
        puffer.reset(seed=0)
        for _ in range(3):
            puffer.step(np.zeros(2, dtype=np.int64))
        assert puffer.observations.shape == (2, 72, 80, 3) and puffer.observations.any()
    finally:
        puffer.close()
