"""bench/rl_sweep.py writes its rows, summary and plots (tiny sizes)."""

from __future__ import annotations

import json

import pytest

from bench import rl_sweep

pytestmark = pytest.mark.tooling


def test_the_rl_sweep_writes_results_and_summary(tmp_path):
    argv = ["--device", "cpu", "--envs", "4", "--steps", "8", "--minibatch", "16", "--updates", "1"]
    argv += ["--warmup", "0", "--formats", "u8,packed2", "--modes", "sync", "--pyboy-envs", ""]
    assert rl_sweep.main([*argv, "--out", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {(r["obs_format"], r["mode"], r["envs"]) for r in rows} == {
        ("u8", "sync", 4),
        ("packed2", "sync", 4),
    }
    assert all(r["sps"] > 0 and 0 < r["obs_fraction"] < 1 for r in rows)
    summary = (tmp_path / "summary.md").read_text()
    assert "packed2 / u8 SPS" in summary
    assert (tmp_path / "sps_vs_envs.png").is_file() and (tmp_path / "packed2_speedup.png").is_file()


def test_the_rl_sweep_budget_skips_configurations_projected_past_it(tmp_path, monkeypatch, capsys):
    real = rl_sweep.measure

    def slow_on_paper(cfg, feeder, warmup, updates):
        rows = real(cfg, feeder, warmup, updates)
        for r in rows:
            r["sps"] = 1.0  # 8 steps x envs take 8 x envs seconds on paper
        return rows

    monkeypatch.setattr(rl_sweep, "measure", slow_on_paper)
    argv = ["--device", "cpu", "--envs", "2,64", "--steps", "8", "--minibatch", "16"]
    argv += ["--updates", "1", "--warmup", "0", "--formats", "u8", "--modes", "sync"]
    argv += ["--pyboy-envs", "", "--budget-s", "60"]
    assert rl_sweep.main([*argv, "--out", str(tmp_path)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["envs"] for r in rows] == [2]  # 64 envs: 512 s projected
    summary = (tmp_path / "summary.md").read_text()
    assert "## Skipped to stay inside the time budget" in summary
    assert "- warp × 64 u8 sync: projected 5" in summary  # 512 s plus the first run's setup
    assert "skipped for the time budget" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        rl_sweep.main([*argv[:-2], "--budget-s", "0", "--out", str(tmp_path)])
