"""``gbxcule train`` under torchrun (gloo, CPU): 2 ranks learn like 1 process with all the
envs, the run directory records the world, a resume under another world size is refused,
and a rank killed mid-run takes the job down with a bundle naming it; ``--resume`` then
completes the run with continuous update indices."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gbxcule.rl.distributed import KILL_ENV, WorldSizeMismatch
from gbxcule.rl.experiment import Run, load_checkpoint
from gbxcule.rl.train import train

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
ENV.pop("RANK", None)
ENV.pop("WORLD_SIZE", None)
# Same seeds, T=16, minibatch 256: every minibatch mixes both ranks' envs unevenly.
COMMON = ["--steps", "16", "--minibatch", "256", "--epochs", "2", "--no-report", "--seed", "3",
          "--precision", "fp32",
          "--mode", "sync"]  # fmt: skip
LOSSES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac")
ATOL, RTOL = 1e-6, 1e-4  # float reduction order differs (per-rank sums + all-reduce)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(nproc: int, args: list[str], env: dict | None = None, timeout: float = 240):
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
    cmd += ["--master-addr=127.0.0.1", f"--master-port={_free_port()}", "--monitor-interval=0.2"]
    return subprocess.run(
        [*cmd, "-m", "gbxcule", "train", *args],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _nproc(nproc: int, args: list[str], env: dict | None = None, timeout: float = 240):
    """``gbxcule train --nproc P``: the ranks started by our launcher (``rl/launch.py``)."""
    return subprocess.run(
        [sys.executable, "-m", "gbxcule", "train", "--nproc", str(nproc), *args],
        env={**ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


LAUNCHERS = {"torchrun": _torchrun, "nproc": _nproc}


def _single(args: list[str]) -> int:
    """``gbxcule train`` in this process (a world of 1): one interpreter start less."""
    from gbxcule.cli import main

    return main(["train", *args])


def _run_dir(out: Path) -> Path:
    (run,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run


def test_two_ranks_learn_like_one_process_with_all_envs(tmp_path):
    """Started by ``--nproc 2``; torchrun starts the ranks of the killed-rank test."""
    budget = ["--total-steps", str(2 * 32 * 16)]  # 2 updates of 32 envs x 16 steps
    two = _nproc(2, [*COMMON, *budget, "--envs", "16", "--out", str(tmp_path / "two")])
    assert two.returncode == 0, two.stderr[-3000:]
    assert _single([*COMMON, *budget, "--envs", "32", "--out", str(tmp_path / "one")]) == 0
    r2, r1 = Run.open(_run_dir(tmp_path / "two")), Run.open(_run_dir(tmp_path / "one"))
    m2, m1 = r2.metrics(), r1.metrics()
    assert [r["update"] for r in m2] == [r["update"] for r in m1] == [0, 1]
    for a, b in zip(m1, m2):
        assert a["env_steps"] == b["env_steps"]
        for k in LOSSES:
            assert abs(a[k] - b[k]) <= ATOL + RTOL * abs(a[k]), (a["update"], k, a[k], b[k])
    meta, cfg = r2.meta(), r2.config()
    assert meta["world_size"] == cfg.world_size == 2 and cfg.num_envs == 16
    assert [(i["rank"], i["device"], i["env_range"]) for i in meta["ranks"]] == [
        (0, "cpu", [0, 16]),
        (1, "cpu", [16, 32]),
    ]
    ckpt = load_checkpoint(r2.path)
    assert ckpt["world_size"] == 2 and [p["rank"] for p in ckpt["ranks"]] == [0, 1]
    assert all(p["start_states"] and p["rng"] for p in ckpt["ranks"])
    with pytest.raises(WorldSizeMismatch, match="world size 2.*world size 1"):
        train(resume=r2.path)  # this process is a world of 1


@pytest.mark.slow
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_killed_rank_takes_the_job_down_and_resume_completes(tmp_path, launcher):
    args = [*COMMON, "--envs", "8", "--total-steps", str(5 * 16 * 16), "--out", str(tmp_path)]
    args += ["--dist-timeout", "60"]
    launch = LAUNCHERS[launcher]
    killed = launch(2, args, env={KILL_ENV: "1:2"})
    assert killed.returncode != 0
    run = _run_dir(tmp_path)
    assert [r["update"] for r in Run.open(run).metrics()] == [0, 1]
    (bundle,) = (run / "failures").iterdir()
    error = json.loads((bundle / "error.json").read_text())
    assert error["type"] == "RankFailed" and error["failed_ranks"] == [1], error
    assert "rank 1 " in error["message"] and error["rank"] == 0
    resumed = launch(2, ["--resume", str(run), "--no-report"])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    updates = [r["update"] for r in Run.open(run).metrics()]
    assert updates == [0, 1, 2, 3, 4]
    assert load_checkpoint(run)["update"] == 5
    assert not [p for p in run.rglob(".*") if p.is_file()]


def test_the_local_launcher_serves_its_store_on_loopback_only():
    from gbxcule.rl.launch import loopback_store, rank_env

    store, (host, port) = loopback_store(2, timeout_s=5)
    try:
        assert host == "127.0.0.1"
        store.set("probe", "1")  # the store answers on that socket
        assert store.get("probe") == b"1"
        env = rank_env(1, 2, port)
        assert (env["RANK"], env["WORLD_SIZE"], env["MASTER_ADDR"]) == ("1", "2", "127.0.0.1")
        assert env["TORCHELASTIC_USE_AGENT_STORE"] == "True"  # no rank starts a server
    finally:
        del store


def test_nproc_under_torchrun_is_refused(capsys, monkeypatch):
    from gbxcule.cli import main

    monkeypatch.setenv("RANK", "0")
    assert main(["train", "--nproc", "2", "--total-steps", "8"]) == 2
    assert "under torchrun, leave it out" in capsys.readouterr().err
