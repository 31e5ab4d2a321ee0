"""bench/gpu_knobs.py on the CPU: alternating rounds, one backend per run, the ratio."""

from __future__ import annotations

import json

import pytest

from bench import gpu_knobs, sweep

pytestmark = pytest.mark.tooling


def test_fastpaths_rounds_alternate_and_reach_the_backend(tmp_path, monkeypatch, capsys):
    made = []
    real = sweep.make_backend  # gpu_knobs measures through bench.sweep.measure

    def spy(name, path, **kwargs):
        made.append((name, kwargs["num_envs"], kwargs["cpu_fast_paths"]))
        return real(name, path, **kwargs)

    monkeypatch.setattr(sweep, "make_backend", spy)
    out = tmp_path / "knob"
    argv = ["--knob", "fastpaths", "--device", "cpu", "--rom", "busy", "--envs", "2"]
    assert gpu_knobs.main([*argv, "--rounds", "2", "--steps", "2", "--out", str(out)]) == 0
    assert made == [("warp-cpu", 2, on) for on in (True, False, True, False)]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["cpu_fast_paths"] for r in rows] == [True, False, True, False]
    assert all(r["sps"] > 0 and r["rom"] == "busy" and r["envs"] == 2 for r in rows)
    text = (out / "summary.md").read_text()
    on = sorted(r["sps"] for r in rows if r["cpu_fast_paths"])
    off = sorted(r["sps"] for r in rows if not r["cpu_fast_paths"])
    ratio = (sum(on) / 2) / (sum(off) / 2)
    assert f"| busy | 2 | {sum(on) / 2:,.0f} | {sum(off) / 2:,.0f} | {ratio:.3f} | 2 |" in text
    assert text in capsys.readouterr().out


def test_shapes_knob_is_units_out_of_line_and_bad_input_is_refused(tmp_path, monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(
        gpu_knobs,
        "measure",
        lambda dev, rom, n, steps, knob, on: seen.append((gpu_knobs.KNOBS[knob][0], on)) or 1.0,
    )
    argv = ["--knob", "shapes", "--device", "cpu", "--rom", "demo", "--envs", "1"]
    assert gpu_knobs.main([*argv, "--rounds", "1", "--out", str(tmp_path)]) == 0
    assert seen == [("units_out_of_line", True), ("units_out_of_line", False)]
    with pytest.raises(SystemExit):
        gpu_knobs.main([*argv, "--rounds", "0", "--out", str(tmp_path)])
    assert "rounds" in capsys.readouterr().err


def test_block64_knob_passes_block_dim_64_against_warps_default(tmp_path, monkeypatch):
    seen = []

    def fake(backend, rom, n, steps, fps, seed, backend_options):
        seen.append(backend_options)
        return type("Row", (), {"sps": 2.0 if backend_options["block_dim"] == 64 else 1.0})()

    monkeypatch.setattr(gpu_knobs, "sweep_measure", fake)
    monkeypatch.setattr("gbxcule.cli.playback.cuda_available", lambda: True)
    argv = ["--knob", "block64", "--device", "cuda", "--rom", "demo", "--envs", "4"]
    assert gpu_knobs.main([*argv, "--rounds", "1", "--out", str(tmp_path)]) == 0
    assert seen == [{"block_dim": 64}, {"block_dim": 256}]
    text = (tmp_path / "summary.md").read_text()
    assert "`block_dim` on (64) vs off (256)" in text and "| 2.000 |" in text
    seen.clear()
    argv[1] = "block32"
    assert gpu_knobs.main([*argv, "--rounds", "1", "--out", str(tmp_path / "b32")]) == 0
    assert seen == [{"block_dim": 32}, {"block_dim": 64}]
    assert "`block_dim` on (32) vs off (64)" in (tmp_path / "b32" / "summary.md").read_text()
    for knob in ("block64", "block32"):
        with pytest.raises(SystemExit):
            gpu_knobs.main(["--knob", knob, "--device", "cpu", "--out", str(tmp_path)])
