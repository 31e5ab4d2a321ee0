"""bench/gpu_goals.py reads a GPU session's results into issue #16's goals (synthetic rows)."""

from __future__ import annotations

import json

import pytest

from bench import gpu_goals

pytestmark = pytest.mark.tooling


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _sweep(render, n, sps, backend="warp-cuda"):
    return {
        "backend": backend,
        "render": render,
        "num_envs": n,
        "sps": sps,
        "device": "NVIDIA H100",
    }


def test_goals_met_missed_and_not_measured(tmp_path, capsys):
    root = tmp_path / "gpu"
    _write(
        root / "sweep-demo" / "results.jsonl",
        [
            _sweep("off", 1024, 90_000),
            _sweep("off", 16384, 300_000),
            _sweep("off", 16384, 280_000),  # a repeat: the median is 290,000
            _sweep("off", 65536, 250_000),  # 0.86x of 16k: not flat
            _sweep("pixels", 16384, 270_000),  # 6.9 % below render off
            _sweep("off", 16384, 10, backend="warp-cpu"),  # the CPU reference is not a GPU row
        ],
    )
    _write(root / "sweep-busy" / "results.jsonl", [_sweep("off", 16384, 60_000)])
    _write(
        root / "render" / "results.jsonl",
        [
            {"backend": "warp-cuda", "num_envs": 16384, "packed": False, "render_over_step": 0.04},
            {"backend": "warp-cuda", "num_envs": 16384, "packed": True, "render_over_step": 0.12},
            {"backend": "warp-cuda", "num_envs": 1024, "packed": True, "render_over_step": 0.5},
        ],
    )
    rl = {"feeder": "warp", "mode": "async", "device": "cuda", "obs_format": "packed2"}
    _write(
        root / "rl" / "results.jsonl",
        [
            {**rl, "envs": 4096, "sps": 90_000, "overlap_efficiency": 1.5},
            {**rl, "envs": 16384, "sps": 120_000, "overlap_efficiency": 1.2},
            {**rl, "envs": 16384, "mode": "sync", "sps": 500_000, "overlap_efficiency": 1.0},
        ],
    )
    cpu = _sweep("off", 4096, 29_000, backend="warp-cpu")
    _write(root / "cpu-demo" / "results.jsonl", [{**cpu, "cores": 16}])
    assert gpu_goals.main(["--root", str(root)]) == 0
    table = {g: (m, v) for g, m, v in gpu_goals.goals(root)[0]}
    assert table["demo game, render off: ≥ 250,000 env-steps/s at ≥ 16,384 envs"] == (
        "290,000 env-steps/s at 16,384 envs",
        "met",
    )
    flat = table["demo game, render off: flat from 16,384 to 65,536 envs (≥ 90%)"]
    assert flat[0].startswith("0.86×") and flat[1] == "**missed**"
    assert table["demo game, render pixels: ≥ 250,000 env-steps/s at ≥ 16,384 envs"][1] == "met"
    assert table["busy ROM, render off: ≥ 100,000 env-steps/s at ≥ 16,384 envs"][1] == "**missed**"
    assert table["busy ROM: flat from 16,384 to 65,536 envs"][1] == "not measured"
    assert table["shades cost ≤ 10% of a step"][1] == "met"
    assert table["packed2 cost ≤ 10% of a step"] == (
        "12.0% of a step at 16,384 envs (render_cost)",
        "**missed**",
    )
    pixels = table["pixels in the sweep: steps/s lost against render off at 16,384 envs"]
    assert pixels == ("6.9%", "met")
    # the fastest async config has too little overlap; sync rows do not count
    assert table["async PPO ≥ 100,000 SPS with overlap > 1.3"] == (
        "120,000 SPS, overlap 1.20 (16,384 envs, packed2)",
        "**missed**",
    )
    ref = table["demo, render off: warp-cuda against warp-cpu on 16 cores (best of each)"]
    assert ref == ("10.0× (290,000 / 29,000 env-steps/s)", "reference")
    text = (root / "goals.md").read_text()
    assert "device: NVIDIA H100" in text and text in capsys.readouterr().out


def test_an_empty_session_measures_nothing(tmp_path, capsys):
    table, text = gpu_goals.goals(tmp_path)
    assert table and all(v == "not measured" for _, _, v in table)
    assert "device: none recorded" in text
    with pytest.raises(SystemExit):
        gpu_goals.main(["--root", str(tmp_path / "missing")])
    assert "is not a folder" in capsys.readouterr().err
