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
        "0",
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
