"""``bench.cpu_train`` writes its rows, table and plot from real training runs."""

from __future__ import annotations

import json

import pytest

from bench import cpu_train

pytestmark = pytest.mark.api


def test_the_cpu_training_bench_writes_rows_a_table_and_a_plot(tmp_path):
    argv = ["--tasks", "demo-coins", "--configs", "sync,async bf16", "--envs", "4"]
    assert cpu_train.main([*argv, "--updates", "1", "--warmup", "1", "--out", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["config"], r["updates"]) for r in rows] == [("sync", 1), ("async bf16", 1)]
    for r in rows:
        assert r["sps"] > 0 and r["emulator_sps"] > 0
        assert r["vs_emulator"] == pytest.approx(r["sps"] / r["emulator_sps"], rel=0.2)
    assert rows[1]["precision"] == "bf16" and "cores" in rows[0]["device"]
    assert "| demo-coins | async bf16 |" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "vs_emulator.png").stat().st_size > 1000
