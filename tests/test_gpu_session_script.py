"""tools/gpu_session.sh's flow on a machine without a GPU: phase names, failure, packing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.tooling

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_session.sh"


def _run(tmp_path: Path, *phases: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",  # python3: this one
        "OUT": str(tmp_path / "out"),
        "GBX_RES": str(tmp_path / "res"),
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *phases],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_unknown_phase_is_refused_before_anything_runs(tmp_path):
    got = _run(tmp_path, "goals", "benchmark")
    assert got.returncode == 2
    assert "unknown phase benchmark" in got.stderr
    assert not (tmp_path / "out").exists()


def test_goals_phase_packs_what_it_wrote(tmp_path):
    sweep = tmp_path / "res" / "sweep-demo"
    sweep.mkdir(parents=True)
    row = {"backend": "warp-cuda", "render": "off", "num_envs": 16384, "sps": 3e5, "device": "X"}
    (sweep / "results.jsonl").write_text(json.dumps(row) + "\n")
    got = _run(tmp_path, "goals")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "gpu_session goals:" in got.stdout and "exit 0" in got.stdout
    assert "==== ./goals.md" in got.stdout and "300,000 env-steps/s at 16,384 envs" in got.stdout
    with tarfile.open(tmp_path / "out" / "gpu-goals.tar.gz") as tar:
        assert tar.getnames() == ["./goals.md"]  # the older results.jsonl is not this phase's


def test_a_phase_without_cuda_fails_clearly_and_stops_the_rest(tmp_path):
    got = _run(tmp_path, "parity1", "goals")
    assert got.returncode == 3
    assert "needs warp-lang and a CUDA device" in got.stderr
    assert "gpu_session parity1:" in got.stdout and "exit 3" in got.stdout
    assert "gpu_session goals" not in got.stdout


@pytest.mark.slow
def test_dry_run_runs_every_phase_on_the_cpu(tmp_path):
    """GBX_DRY_RUN=1: every command of the plan with tiny sizes on warp-cpu (about 70 s on
    2 cores), so a broken command is found here and not in a lent GPU's minutes."""
    phases = "stage install parity1 parity2 parity3 bench-demo bench-busy rl profile knobs goals"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "OUT": str(tmp_path / "out"),
        "GBX_RES": str(tmp_path / "res"),
        "GBX_DRY_RUN": "1",
    }
    got = subprocess.run(
        ["bash", str(SCRIPT), *phases.split()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert got.returncode == 0, (got.stdout[-3000:], got.stderr[-3000:])
    for phase in phases.split():
        assert f"gpu_session {phase}: " in got.stdout
    packed = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert packed == [
        f"gpu-{p}.tar.gz" for p in ("bench-busy", "bench-demo", "goals", "knobs", "profile", "rl")
    ]
    with tarfile.open(tmp_path / "out" / "gpu-knobs.tar.gz") as tar:
        names = set(tar.getnames())
    for folder in ("regs-0", "regs-168", "regs-128", "knob-fastpaths", "knob-shapes"):
        assert f"./{folder}/summary.md" in names
    assert "tests collected" in got.stdout  # the gpu tests were collected, not run
