"""GPU parity (``make test-gpu``): the CUDA backend against the goldens and the Warp CPU backend.

For every golden case (each suite ROM with its own inputs, and the demo game under
seeded random actions; see ``bench/goldens.py``):

* **1 env**: ``warp-cuda`` and ``warp-cpu`` run side by side; env 0's state digest
  (registers incl. cycles, CPU-visible memory, serial, frame shades) must equal the
  CPU backend's at every step and the committed golden (PyBoy's) at the end.
* **1024 envs**, variant ``same`` (the case's actions: a ROM's inputs on every env,
  the demo's seed k on env k) and, for ROMs, ``mixed`` (env 0 the ROM's inputs,
  env k seeded random buttons, seed k): CUDA (interleaved memory layout) and the CPU
  backend (env-major, one worker per core) must hold bit-identical ``Machine``
  arrays for all envs (registers, RAM, timers, PPU latches, ...) at checkpoints,
  identical frame shades of all envs and identical state digests of sampled envs at
  the end, and env 0 must reproduce the golden on both.

The tests skip without CUDA; ``make test-gpu`` refuses to run without it. With
``GBXCULE_GPU_REPORT=DIR`` a JSON and a Markdown report (device name, versions,
commit, one row per test) are written into DIR (commit them under bench/results/gpu/).
With ``GBXCULE_GPU_PRIOR=DIR`` runs no report in DIR shows passing go first.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.goldens import (
    DEMO_CASE,
    GoldenCase,
    Rollout,
    capture_state,
    check_record,
    describe_difference,
    golden_cases,
    mismatch_message,
    run_rollouts,
    state_digest,
)
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.files import write_atomic
from gbxcule.lockstep import _git_commit, package_versions

pytestmark = pytest.mark.l3

NUM_ENVS = 1024
CASES = golden_cases()
ROM_CASES = [c for c in CASES if c.actions == "spec"]
# The strongest runs first, so a session's time cap cuts the weakest: the demo game under
# per-env random actions, then every ROM with distinct per-env buttons, then the ROMs'
# own inputs on every env.
BATCH_RUNS = (
    [(c, "same") for c in CASES if c.actions != "spec"]
    + [(c, "mixed") for c in ROM_CASES]
    + [(c, "same") for c in ROM_CASES]
)
REPORT: list[dict[str, Any]] = []
REPORT_STAMP = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def cuda_available() -> bool:
    try:
        import warp as wp

        wp.init()
        return bool(wp.is_cuda_available())
    except Exception:  # no usable Warp install counts as no CUDA
        return False


requires_cuda = pytest.mark.skipif(
    not cuda_available(), reason="no CUDA device visible to Warp (run `make test-gpu` on a GPU)"
)


# ---------------------------------------------------------------- report


def device_name() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # torch without CUDA: ask Warp
        pass
    import warp as wp

    return str(wp.get_device("cuda:0").name)


@contextlib.contextmanager
def reported(test: str, case: GoldenCase, variant: str, num_envs: int):
    """Time the block and record its outcome (failures too) for the report."""
    row: dict[str, Any] = {
        "test": test,
        "case": case.name,
        "variant": variant,
        "num_envs": num_envs,
        "steps": case.steps,
        "frames_per_step": case.frames_per_step,
    }
    start = time.perf_counter()
    try:
        yield row
        row["result"] = "pass"
    except BaseException as exc:
        # KeyboardInterrupt: tools/gpu_session.sh's cap (SIGINT) fell during the test: no verdict
        row["result"] = "cut" if isinstance(exc, KeyboardInterrupt) else "fail"
        row["detail"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise
    finally:
        row["seconds"] = round(time.perf_counter() - start, 3)
        REPORT.append(row)
        out = os.environ.get("GBXCULE_GPU_REPORT")
        if out and cuda_available():  # after every test: a run stopped at its cap keeps its rows
            write_report(Path(out), REPORT, device_name())


def write_report(
    out_dir: Path, rows: list[dict[str, Any]], device: str, stamp: str = REPORT_STAMP
) -> tuple[Path, Path]:
    """``gpu-parity-<device>-<UTC time of the session's start>.json`` and ``.md`` in
    ``out_dir``, written atomically (rewritten after every test)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", device).strip("-").lower()
    base = out_dir / f"gpu-parity-{slug}-{stamp}"
    failed = [r for r in rows if r["result"] == "fail"]
    cut = [r for r in rows if r["result"] == "cut"]
    doc = {
        "device": device,
        "created_utc": stamp,
        "git_commit": _git_commit(),
        "versions": package_versions(),
        "batch_envs": NUM_ENVS,
        "passed": len(rows) - len(failed) - len(cut),
        "failed": len(failed),
        "cut": len(cut),
        "results": rows,
    }
    json_path, md_path = base.with_suffix(".json"), base.with_suffix(".md")
    write_atomic(json_path, (json.dumps(doc, indent=1) + "\n").encode())
    lines = [
        f"# GPU parity on {device}",
        "",
        f"{stamp}, commit {doc['git_commit']}, warp {doc['versions'].get('warp-lang')}, "
        f"{doc['passed']} passed, {doc['failed']} failed, {doc['cut']} cut by the session's cap "
        "(tests/test_gpu_parity.py).",
        "",
        "| test | case | variant | envs | steps | result | seconds | detail |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for r in rows:
        detail = r.get("detail", "").replace("|", "/")
        lines.append(
            f"| {r['test']} | {r['case']} | {r['variant']} | {r['num_envs']} | {r['steps']} "
            f"| {r['result']} | {r['seconds']} | {detail} |"
        )
    write_atomic(md_path, ("\n".join(lines) + "\n").encode())
    return json_path, md_path


# ---------------------------------------------------------------- comparisons


def machine_differences(cpu: Any, cuda: Any, step: int) -> list[str]:
    """Every ``Machine`` array that differs between the two backends, for all envs."""
    out = []
    for (name, a), (_, b) in zip(per_env_arrays(cpu.machine), per_env_arrays(cuda.machine)):
        x, y = a.contiguous().numpy(), b.contiguous().numpy()  # CUDA mem is interleaved
        if x.shape != y.shape:
            out.append(f"step {step}: Machine.{name} shape cpu {x.shape} cuda {y.shape}")
            continue
        bad = np.argwhere(x != y)
        if len(bad):
            where = tuple(int(v) for v in bad[0])
            envs = len(np.unique(bad[:, 0]))
            out.append(
                f"step {step}: Machine.{name} differs in {envs} envs, first env {where[0]} "
                f"at {where[1:]}: cpu {x[where]} cuda {y[where]}"
            )
    return out


def all_frames(backend: Any) -> np.ndarray:
    m = backend.machine
    envs = range(backend.num_envs)
    return backend.pixels.render_full(m.frame_video, m.line_latch, envs, video_log=m.video_log)


def lockstep_problems(cpu_rolls: dict[int, Rollout], cuda_rolls: dict[int, Rollout], step: int):
    """Per-step digest comparison of the observed envs, with what differs."""
    out = []
    for env, c in cpu_rolls.items():
        g = cuda_rolls[env]
        if c.steps[-1] != g.steps[-1]:
            diff = describe_difference(c.last_view, g.last_view)  # type: ignore[arg-type]
            out.append(f"step {step} env {env}: cuda != cpu: {'; '.join(diff)}")
    return out


def make_pair(case: GoldenCase, num_envs: int, cuda_layout: str) -> tuple[Any, Any]:
    """(warp-cpu, warp-cuda) on ``case``; the CPU backend uses one worker per core."""
    cpu = case.make_backend("warp-cpu", num_envs, threads=os.cpu_count())
    try:
        cuda = case.make_backend("warp-cuda", num_envs, mem_layout=cuda_layout)
    except BaseException:
        cpu.close()
        raise
    return cpu, cuda


# ---------------------------------------------------------------- tests


def unverified_first(test: str, runs: list[tuple[GoldenCase, str]]) -> list[tuple[GoldenCase, str]]:
    """``runs`` with those that never passed in a report under ``$GBXCULE_GPU_PRIOR`` (the
    committed reports, bench/results/gpu/parity) moved first, each group in its own order: a
    session's cap then cuts runs that an earlier session proved, and sessions together
    cover every run. Without the variable, ``runs`` as they are."""
    prior = os.environ.get("GBXCULE_GPU_PRIOR")
    if not prior:
        return runs
    passed = set()
    for path in sorted(Path(prior).glob("gpu-parity-*.json")):
        for r in json.loads(path.read_text())["results"]:
            if r["test"] == test and r["result"] == "pass":
                passed.add((r["case"], r["variant"]))
    return sorted(runs, key=lambda run: (run[0].name, run[1]) in passed)


# The demo game under random actions first: the longest case, the one a cap cut on the H100.
ONE_ENV_CASES = [
    c
    for c, _ in unverified_first(
        "one_env", [(c, "same") for c in sorted(CASES, key=lambda c: c.actions == "spec")]
    )
]
BATCH_RUNS = unverified_first("batch", BATCH_RUNS)


@pytest.mark.parametrize("case", ONE_ENV_CASES, ids=[c.name for c in ONE_ENV_CASES])
@pytest.mark.gpu
@requires_cuda
def test_cuda_one_env_matches_cpu_and_golden(case: GoldenCase, goldens) -> None:
    with reported("one_env", case, "same", 1):
        record = goldens[case.name]
        check_record(case, record)
        cpu, cuda = make_pair(case, 1, "env_major")
        problems: list[str] = []
        try:

            def compare(step: int, rolls: list[dict[int, Rollout]]) -> None:
                if not problems:
                    problems.extend(lockstep_problems(rolls[0], rolls[1], step))

            cpu_rolls, cuda_rolls = run_rollouts([cpu, cuda], case.action_array(), on_step=compare)
        finally:
            cpu.close()
            cuda.close()
        assert not problems, problems[0]
        for name, rolls in (("warp-cpu", cpu_rolls), ("warp-cuda", cuda_rolls)):
            message = mismatch_message(case, name, record, rolls[0])
            assert not message, message


@pytest.mark.parametrize(
    ("case", "variant"), BATCH_RUNS, ids=[f"{c.name}-{v}" for c, v in BATCH_RUNS]
)
@pytest.mark.gpu
@requires_cuda
def test_cuda_batch_matches_cpu_and_golden(case: GoldenCase, variant: str, goldens) -> None:
    n = NUM_ENVS
    with reported("batch", case, variant, n) as row:
        record = goldens[case.name]
        check_record(case, record)
        actions = case.action_array(n, random_others=variant == "mixed")
        checkpoints = {0, case.steps, *range(0, case.steps, max(1, case.steps // 4))}
        cpu, cuda = make_pair(case, n, "interleaved")
        problems: list[str] = []
        try:

            def compare(step: int, rolls: list[dict[int, Rollout]]) -> None:
                if problems:
                    return
                problems.extend(lockstep_problems(rolls[0], rolls[1], step))
                if step in checkpoints:
                    problems.extend(machine_differences(cpu, cuda, step))

            cpu_rolls, cuda_rolls = run_rollouts([cpu, cuda], actions, on_step=compare)
            if not problems:
                a, b = all_frames(cpu), all_frames(cuda)
                bad = np.unique(np.argwhere(a != b)[:, 0])
                if len(bad):
                    problems.append(f"frame shades differ in {len(bad)} envs, first {bad[0]}")
                rng = np.random.default_rng(0)
                sample = sorted({0, 1, n // 2, n - 1, *rng.integers(0, n, 4).tolist()})
                for env in sample:
                    vc = capture_state(cpu, env, with_frame=True)
                    vg = capture_state(cuda, env, with_frame=True)
                    if state_digest(vc) != state_digest(vg):
                        diff = "; ".join(describe_difference(vc, vg))
                        problems.append(f"final state env {env}: cuda != cpu: {diff}")
                row["checkpoints"] = sorted(checkpoints)
                row["digest_envs"] = sample
        finally:
            cpu.close()
            cuda.close()
        assert not problems, f"{case.name} {variant}: {problems[0]} ({len(problems)} problems)"
        for name, rolls in (("warp-cpu", cpu_rolls), ("warp-cuda", cuda_rolls)):
            message = mismatch_message(case, f"{name} x{n} env 0", record, rolls[0])
            assert not message, message


def test_batch_runs_cover_every_case_and_actions_differ_per_env() -> None:
    """CPU-side check of the parity plan: every golden case runs, and env k's actions are
    env k's own (seed k), so the batch runs compare distinct machines."""
    assert {c.name for c, _ in BATCH_RUNS} == {c.name for c in CASES}
    assert any(c.name == DEMO_CASE for c, _ in BATCH_RUNS)
    rom = next(c for c in ROM_CASES if c.name == "demo_game")
    mixed = rom.action_array(8, random_others=True)
    assert np.array_equal(mixed[:, 0], rom.action_array(1)[:, 0])
    assert len({mixed[:, k].tobytes() for k in range(8)}) == 8
    demo_case = next(c for c in CASES if c.name == DEMO_CASE)
    demo = demo_case.action_array(8)
    assert len({demo[:, k].tobytes() for k in range(8)}) == 8
    assert np.array_equal(demo[:, 0], demo_case.action_array(1)[:, 0])


def test_report_names_the_device_and_every_result(tmp_path) -> None:
    case = CASES[0]
    before = len(REPORT)
    with reported("one_env", case, "same", 1):
        pass
    with pytest.raises(AssertionError), reported("batch", case, "mixed", NUM_ENVS):
        raise AssertionError("step 3 env 5: cuda != cpu: register a: 0x1 vs 0x2")
    with pytest.raises(KeyboardInterrupt), reported("batch", case, "same", NUM_ENVS):
        raise KeyboardInterrupt  # the session's cap
    rows = REPORT[before:]
    del REPORT[before:]
    json_path, md_path = write_report(tmp_path, rows, "NVIDIA Test GPU 80GB")
    doc = json.loads(json_path.read_text())
    assert doc["device"] == "NVIDIA Test GPU 80GB" and json_path.name.startswith(
        "gpu-parity-nvidia-test-gpu-80gb-"
    )
    assert (doc["passed"], doc["failed"], doc["cut"]) == (1, 1, 1)
    assert [r["result"] for r in doc["results"]] == ["pass", "fail", "cut"]
    assert doc["results"][1]["detail"].startswith("step 3 env 5")
    md = md_path.read_text()
    assert md.startswith("# GPU parity on NVIDIA Test GPU 80GB")
    assert f"| {case.name} | mixed | {NUM_ENVS} |" in md and "| fail |" in md
    assert "| cut |" in md and "1 failed, 1 cut by the session's cap" in md


def test_runs_no_earlier_report_passed_go_first(tmp_path, monkeypatch) -> None:
    runs = [(c, "mixed") for c in ROM_CASES[:4]]
    monkeypatch.delenv("GBXCULE_GPU_PRIOR", raising=False)
    assert unverified_first("batch", runs) == runs
    rows = [
        {"test": "batch", "case": ROM_CASES[0].name, "variant": "mixed", "result": "pass"},
        {"test": "batch", "case": ROM_CASES[1].name, "variant": "mixed", "result": "cut"},
        {"test": "one_env", "case": ROM_CASES[2].name, "variant": "mixed", "result": "pass"},
        {"test": "batch", "case": ROM_CASES[3].name, "variant": "same", "result": "pass"},
    ]
    (tmp_path / "gpu-parity-x-1.json").write_text(json.dumps({"results": rows}))
    monkeypatch.setenv("GBXCULE_GPU_PRIOR", str(tmp_path))
    assert unverified_first("batch", runs) == runs[1:] + runs[:1]
