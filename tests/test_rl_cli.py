"""``gbxcule train`` / ``gbxcule eval``: exit codes, failure bundles, resume after kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gbxcule.cli import main
from gbxcule.rl.experiment import Run, load_checkpoint

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--envs", "4", "--steps", "8", "--minibatch", "16", "--epochs", "1", "--no-report"]


def _runs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_train_then_eval(tmp_path, capsys):
    assert (
        main(["train", *SMALL, "--total-steps", "64", "--out", str(tmp_path), "--tag", "cli"]) == 0
    )
    (run,) = _runs(tmp_path)
    assert [r["update"] for r in Run.open(run).metrics()] == [0, 1]
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "2"]) == 0
    assert "mean return" in capsys.readouterr().out


def test_a_nan_exits_non_zero_naming_the_bundle(tmp_path, capsys):
    argv = [
        "train",
        *SMALL,
        "--total-steps",
        "64",
        "--out",
        str(tmp_path),
        "--debug-nan-at-update",
        "1",  # (async: update 0 trains nothing yet)
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    (run,) = _runs(tmp_path)
    (bundle,) = (run / "failures").iterdir()
    assert f"failure bundle: {bundle}" in err and (bundle / "repro.sh").is_file()


def test_resume_after_kill_9_keeps_update_indices_continuous(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "gbxcule", "train", *SMALL, "--checkpoint-every", "2"]
    proc = subprocess.Popen(
        [*cmd, "--total-steps", "1000000", "--out", str(tmp_path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            runs = _runs(tmp_path) if tmp_path.exists() else []
            if runs and len(Run.open(runs[0]).metrics()) >= 3:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the training subprocess wrote no 3 metrics records in 300 s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (run,) = _runs(tmp_path)
    killed_at = load_checkpoint(run)["update"]
    from gbxcule.cli import main  # the resume in this process: one interpreter start less

    assert main(["train", "--resume", str(run), "--minutes", "0.02"]) == 0
    updates = [r["update"] for r in Run.open(run).metrics()]
    assert updates == list(range(len(updates))), (killed_at, updates)  # continuous, no duplicates
    assert len(updates) > killed_at
    assert load_checkpoint(run)["update"] == len(updates)
    assert not list(run.rglob(".*"))  # a temp file a kill left mid-write was cleaned up


def test_every_flagged_config_field_is_a_train_option_that_lands_in_the_config():
    """``TrainConfig`` declares each setting once: a flagged field is a ``gbxcule train``
    option, and a value given on the command line is the run's config value."""
    import argparse
    import dataclasses

    from gbxcule.cli import train as train_cli
    from gbxcule.rl.schemas import TrainConfig

    parser = argparse.ArgumentParser()
    train_cli.configure(parser)
    fields = train_cli.config_fields()
    assert {f.name for f in fields} >= {"num_envs", "num_steps", "lr", "env_backend", "wandb"}
    values = {  # a non-default value for every flagged field, as text
        "task": "quest-score", "rom": "x.gb", "state": "s.state", "num_envs": "8",
        "device": "cuda:1", "env_backend": "pyboy-mp", "mode": "sync", "obs_format": "u8",
        "stack": "3", "num_steps": "7", "total_steps": "99", "seed": "5", "lr": "0.5",
        "update_epochs": "3", "minibatch_size": "9", "learner_chunk": "4", "ent_coef": "0.2",
        "checkpoint_every": "4",
        "keep_checkpoints": "8", "channels": "8,16", "hidden": "64",
        "precision": "bf16",
        "torch_threads": "2", "threads": "3", "tag": "t", "wandb": "online",
        "media_every": "6", "dist_timeout_s": "7.5", "debug_nan_at_update": "2",
    }  # fmt: skip
    argv = []
    for f in fields:
        flag = f.metadata["flag"]["name"]
        if f.name == "tensorboard":
            argv.append(flag)
        elif f.name != "minutes":  # one of the budget pair
            argv += [flag, values[f.name]]
    config = train_cli._config(parser.parse_args(argv))
    typed = {f.name: type(f.default) for f in fields if f.default is not None}
    parse = {"channels": lambda v: tuple(int(c) for c in v.split(","))}
    want = {k: parse.get(k, typed.get(k, str))(v) for k, v in values.items()}
    want |= {"tensorboard": False, "minutes": 0.0}
    assert {k: getattr(config, k) for k in want} == want
    assert dataclasses.replace(config) == config
    assert train_cli._config(parser.parse_args(["--minutes", "2"])) == TrainConfig(
        total_steps=0, minutes=2.0
    )
