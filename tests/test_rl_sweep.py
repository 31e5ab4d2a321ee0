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
