"""The examples run: a few updates each, in-process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.api

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cleanrl_ppo_runs_two_updates(demo, capsys) -> None:
    log = load("cleanrl_ppo").main(
        ["--rom", str(demo), "--num-envs", "4", "--num-steps", "8", "--total-updates", "2"]
    )
    assert [r["update"] for r in log] == [1, 2]
    assert all(r["sps"] > 0 and r["v_loss"] == r["v_loss"] for r in log)
    assert "update 2 sps" in capsys.readouterr().out


def test_sb3_ppo_runs_and_saves(demo, tmp_path, capsys) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    saved = tmp_path / "model.zip"
    argv = ["--rom", str(demo), "--num-envs", "4", "--n-steps", "16", "--batch-size", "32"]
    model = load("sb3_ppo").main([*argv, "--total-timesteps", "128", "--save", str(saved)])
    assert model.num_timesteps == 128
    assert "128 steps in" in capsys.readouterr().out
    again = PPO.load(saved)
    assert again.observation_space.shape == (4, 72, 80)
