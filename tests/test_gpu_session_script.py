"""tools/gpu_session.sh's flow on a machine without a GPU: the plan's budget, phase names,
failure, packing, and every command dry-run on the CPU."""

from __future__ import annotations

import json
import os
import re
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
    got = _run(tmp_path, "parity", "goals")
    assert got.returncode == 3
    assert "needs warp-lang and a CUDA device" in got.stderr
    assert "gpu_session parity:" in got.stdout and "exit 3" in got.stdout
    assert "gpu_session goals" not in got.stdout


def _plan() -> list[list[str]]:
    got = subprocess.run(["bash", str(SCRIPT), "--plan"], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    rows = [line.split() for line in got.stdout.splitlines() if line.strip().endswith(" s")]
    assert got.stdout.strip().endswith("min)"), got.stdout
    return rows


def _phase_caps() -> dict[str, int]:
    """Each phase's commands' caps (``capped N``, ``gpu_tests NAME N``), summed."""
    text = SCRIPT.read_text()
    body = text[text.index("run_phase() {") :]
    caps: dict[str, int] = {}
    for m in re.finditer(r"^    ([a-z]+)\)\n(.*?)^      ;;", body, re.S | re.M):
        numbers = re.findall(r"(?:capped|gpu_tests [\w-]+) (\d+) ", m.group(2))
        caps[m.group(1)] = sum(int(n) for n in numbers)
    return caps


def test_the_plan_fits_three_calls_and_twelve_minutes():
    """Issue #33: at most three calls, the budget printed adds to <= 12 minutes, each call's
    phases' caps fit its budget and its budget its timeout_s; issue #41: the session opens
    with its A/B call (call 2, after the stage), at most 8 minutes (call 3 <= 4)."""
    rows = _plan()
    assert sum(int(r[-2]) for r in rows) <= 12 * 60
    calls = {r[0]: r for r in rows if r[0].isdigit()}
    assert sorted(calls) == ["1", "2", "3"]
    caps = _phase_caps()
    assert set(caps) == {
        "stage",
        "install",
        "ab",
        "parity",
        "sweep",
        "rl",
        "profile",
        "api",
        "goals",
    }
    install_cap = 25  # the install phase runs no capped command: 18 s on the second H100
    named = []
    for call, row in calls.items():
        timeout_s, budget = int(row[1]), int(row[-2])
        phases = [w for w in row[2:-2] if w in caps]
        named += phases
        spent = sum(caps[p] for p in phases) + (install_cap if "install" in phases else 0)
        assert spent <= budget <= timeout_s, (call, phases, spent, budget, timeout_s)
    assert int(calls["2"][1]) <= 480 and int(calls["3"][1]) <= 240
    assert named == ["stage", "install", "ab", "parity", "goals"]


@pytest.mark.slow
def test_dry_run_runs_every_phase_on_the_cpu(tmp_path):
    """GBX_DRY_RUN=1: every command of the plan with tiny sizes on warp-cpu, so a broken
    command is found here and not in a lent GPU's minutes. About 40 s (a dozen
    interpreters at 3 s each): ``make test-cuda-build`` runs it in CI, after ``make test``,
    which keeps the plan's structure and budget checks above."""
    phases = "stage install ab parity sweep rl profile api goals"
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
    assert packed == [f"gpu-{p}.tar.gz" for p in ("ab", "goals", "profile", "rl", "sweep")]
    with tarfile.open(tmp_path / "out" / "gpu-ab.tar.gz") as tar:
        names = set(tar.getnames())
    assert {"./shape-ab/summary.md", "./shape-ab/results.jsonl"} <= names
    # every configuration of bench.gpu_shape_ab ran: one column each, the ratio to "before"
    from bench.gpu_shape_ab import CONFIGS

    assert "| ROM | envs | " + " | ".join(CONFIGS) + " |" in got.stdout
    assert "x) |" in got.stdout
    with tarfile.open(tmp_path / "out" / "gpu-sweep.tar.gz") as tar:
        names = set(tar.getnames())
    for folder in ("sweep-demo", "sweep-busy", "sweep-quest", "sweep-game"):
        assert f"./{folder}/summary.md" in names
    with tarfile.open(tmp_path / "out" / "gpu-profile.tar.gz") as tar:
        names = set(tar.getnames())
    for folder in ("knob-shapes", "render"):
        assert f"./{folder}/summary.md" in names or f"./{folder}/results.jsonl" in names
    assert "tests collected" in got.stdout  # the gpu tests were collected, not run
