"""bench/launch_gaps.py: the gap analysis on known intervals, and a CPU dry run end to end."""

from __future__ import annotations

import json

import pytest

from bench import launch_gaps

pytestmark = pytest.mark.tooling


def test_analyse_merges_overlaps_and_names_the_gaps():
    intervals = [
        (0.0, 10.0, "a"),
        (5.0, 12.0, "b"),  # overlaps a: busy 0-12
        (14.0, 20.0, "c"),  # 2 µs gap: a launch's latency, not counted
        (50.0, 60.0, "step_kernel"),  # 30 µs gap after c
        (55.0, 58.0, "d"),  # inside step_kernel
        (160.0, 170.0, "c"),  # 100 µs gap after step_kernel
    ]
    got = launch_gaps.analyse(intervals)
    assert got["intervals"] == 6
    assert got["span_ms"] == pytest.approx(0.170)
    assert got["busy_ms"] == pytest.approx((12 + 6 + 10 + 10) / 1e3)
    assert got["idle_fraction"] == pytest.approx(1 - 38 / 170)
    assert got["gaps_over_5us"] == 2
    assert got["gap_ms_over_5us"] == pytest.approx(0.130)
    assert got["largest_gaps"] == [
        {"us": 100.0, "after": "step_kernel", "before": "c"},
        {"us": 30.0, "after": "c", "before": "step_kernel"},
    ]
    names = {t["name"]: (t["count"], t["ms"]) for t in got["top_names"]}
    assert names["c"] == (2, pytest.approx(0.016))
    assert launch_gaps.analyse([]) == {"intervals": 0}


def test_device_intervals_reads_complete_events_of_the_asked_kinds():
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 1, "dur": 3},
            {"ph": "i", "cat": "kernel", "name": "instant", "ts": 9},
        ]
    }
    assert launch_gaps.device_intervals(trace, launch_gaps.DEVICE_CATS) == [
        (1.0, 4.0, "Memcpy DtoH"),
        (5.0, 7.0, "k"),
    ]


def test_cpu_dry_run_writes_rows_traces_and_an_identical_graph(tmp_path, capsys):
    out = tmp_path / "gaps"
    argv = ["--device", "cpu", "--envs", "3", "--steps", "2", "--rl-envs", "4", "--out", str(out)]
    assert launch_gaps.main(argv) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["what"] for r in rows] == ["emulator", "rl-update", "graph"]
    emu, rl, graph = rows
    assert emu["intervals"] >= 2 and emu["busy_ms"] <= emu["span_ms"]
    assert any(t["name"] == "gbx_step" and t["count"] == 2 for t in emu["top_names"])
    assert graph["identical"] is True and graph["graph_sps"] > 0 and graph["eager_sps"] > 0
    assert rl["intervals"] > 0
    for r in (emu, rl):
        assert json.loads((out / r["trace"]).read_text())["traceEvents"]
    text = (out / "summary.md").read_text()
    assert "| Warp graph | 3 | 2 |" in text and "| yes |" in text
    assert "CPU dry run" in text
    assert text in capsys.readouterr().out


def test_cli_refuses_cuda_without_a_gpu_and_bad_counts(tmp_path, capsys, monkeypatch):
    import gbxcule.cli.playback as playback  # noqa: PLR0402

    monkeypatch.setattr(playback, "cuda_available", lambda: False)
    with pytest.raises(SystemExit):
        launch_gaps.main(["--device", "cuda", "--out", str(tmp_path)])
    assert "needs a CUDA device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch_gaps.main(["--device", "cpu", "--envs", "0", "--out", str(tmp_path)])
    assert "num_envs" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_a_failing_measurement_is_kept_as_an_error_row(tmp_path, monkeypatch, capsys):
    def broken(*args):
        raise RuntimeError("cudaErrorStreamCaptureInvalidated")

    monkeypatch.setattr(launch_gaps, "graph_vs_eager", broken)
    monkeypatch.setattr(launch_gaps, "rl_timeline", broken)
    rows = launch_gaps.run("cpu", [2], 2, [4], tmp_path)
    assert [(r["what"], "error" in r) for r in rows] == [
        ("emulator", False),
        ("rl-update", True),
        ("graph", True),
    ]
    kept = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert kept[2]["error"] == "RuntimeError: cudaErrorStreamCaptureInvalidated"
    text = (tmp_path / "summary.md").read_text()
    assert "| graph | 2 | 2 | failed: RuntimeError: cudaErrorStreamCaptureInvalidated |" in text
    assert "graph at 2 envs failed" in capsys.readouterr().err
