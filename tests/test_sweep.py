"""bench/sweep.py and bench/render_cost.py on a tiny config: JSONL rows, summary table, plots, the CLI."""

from __future__ import annotations

import json
import os
import re
from dataclasses import fields
from importlib import metadata
from pathlib import Path

import pytest

from bench import rom_names, sweep
from gbxcule.asm import build_rom
from gbxcule.cli import main

pytestmark = pytest.mark.tooling

# A ROM that counts in WRAM forever: cheap frames on every backend.
COUNTER = 'SECTION "main", ROM0[$0150]\n.loop:\n    ld hl, $C000\n    inc [hl]\n    jr .loop\n'
FRAMES_PER_STEP = 4


@pytest.fixture
def rom(tmp_path):
    path = tmp_path / "counter.gb"
    path.write_bytes(build_rom(COUNTER, title="COUNTER"))
    return path


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sweep_writes_rows_summary_and_plots(tmp_path, rom):
    out = tmp_path / "results"
    envs = {"pyboy": [1], "warp-cpu": [1, 2]}
    rows = sweep.run_sweep(["pyboy", "warp-cpu"], str(rom), envs, 2, FRAMES_PER_STEP, 0, out)
    assert [(r.backend, r.num_envs) for r in rows] == [
        ("pyboy", 1),
        ("warp-cpu", 1),
        ("warp-cpu", 2),
    ]

    lines = _rows(out / "results.jsonl")
    assert [(r["backend"], r["num_envs"]) for r in lines] == [(r.backend, r.num_envs) for r in rows]
    for row in lines:
        assert set(row) == {f.name for f in fields(sweep.SweepRow)}
        assert row["steps"] == 2 and row["frames_per_step"] == FRAMES_PER_STEP
        assert row["rom"] == "counter.gb"
        assert row["seconds"] > 0
        assert row["sps"] == pytest.approx(2 * row["num_envs"] / row["seconds"])
        assert row["fps"] == pytest.approx(row["sps"] * FRAMES_PER_STEP)
        assert "cores" in row["device"]  # CPU model and core count
        assert row["versions"]["pyboy"] == "2.8.1"
        assert row["versions"]["warp-lang"] == metadata.version("warp-lang")
        assert row["versions"]["numpy"] == metadata.version("numpy")

    summary = (out / "summary.md").read_text()
    assert "| backend | render | envs | device | cores | steps/s |" in summary
    table = [line for line in summary.splitlines() if line.startswith("| warp-cpu")]
    assert len(table) == 2
    assert "| pyboy | off | 1 |" in summary and "| 1.00 | 1.00 |" in summary  # vs itself
    assert [r.cores for r in rows] == [1, 1, min(2, os.cpu_count() or 1)]
    for name in ("sps_vs_envs.png", "speedup_vs_pyboy.png"):
        assert (out / name).stat().st_size > 1000

    # A second sweep appends to the JSONL.
    sweep.run_sweep(["pyboy"], str(rom), envs, 2, FRAMES_PER_STEP, 0, out)
    assert len(_rows(out / "results.jsonl")) == 4


def test_gbxcule_bench_passes_the_sweep_options(tmp_path, rom, capsys):
    out = tmp_path / "cli"
    args = ["bench", "--backends", "pyboy", "--envs", "1", "--steps", "2", "--rom", str(rom)]
    assert main(args + ["--frames-per-step", str(FRAMES_PER_STEP), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| pyboy | off | 1 |" in printed and "| pyboy | pixels | 1 |" in printed
    assert "2 rows appended" in printed  # both render modes by default
    assert [r["render"] for r in _rows(out / "results.jsonl")] == ["off", "pixels"]


def test_gbxcule_bench_refuses_unknown_backends(tmp_path, rom, capsys):
    args = ["bench", "--backends", "pyboy,nes", "--rom", str(rom), "--out", str(tmp_path)]
    assert main(args) == 2
    assert "unknown backends ['nes']" in capsys.readouterr().err


def test_gbxcule_bench_refuses_warp_cuda_without_a_gpu(tmp_path, rom, capsys, monkeypatch):
    from gbxcule.cli import playback

    monkeypatch.setattr(playback, "cuda_available", lambda: False)
    args = ["bench", "--backends", "warp-cuda", "--rom", str(rom), "--out", str(tmp_path)]
    assert main(args) == 2
    assert "warp-cuda needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_default_backends_are_the_cpu_ones_plus_cuda_when_seen(monkeypatch):
    from gbxcule.cli import playback

    monkeypatch.setattr(playback, "cuda_available", lambda: False)
    assert sweep.default_backends() == ["warp-cpu", "pyboy", "pyboy-mp"]
    monkeypatch.setattr(playback, "cuda_available", lambda: True)
    assert sweep.default_backends() == ["warp-cpu", "pyboy", "pyboy-mp", "warp-cuda"]


def test_sweep_mem_layout_reaches_warp_backends_only(tmp_path, rom, monkeypatch):
    made = []
    real = sweep.make_backend

    def spy(name, path, **kwargs):
        made.append((name, kwargs.get("mem_layout")))
        return real(name, path, **kwargs)

    monkeypatch.setattr(sweep, "make_backend", spy)
    out = tmp_path / "layout"
    envs = {"pyboy": [1], "warp-cpu": [2]}
    rows = sweep.run_sweep(
        ["pyboy", "warp-cpu"], str(rom), envs, 2, FRAMES_PER_STEP, 0, out, mem_layout="interleaved"
    )
    assert made == [("pyboy", None), ("warp-cpu", "interleaved")]
    assert [r.backend for r in rows] == ["pyboy", "warp-cpu:interleaved"]


def test_sweep_repeats_interleave_and_render_modes_match_like_with_like(tmp_path, rom, monkeypatch):
    made = []
    real = sweep.make_backend

    def spy(name, path, **kwargs):
        made.append((name, kwargs.get("render"), kwargs.get("render_pixels")))
        return real(name, path, **kwargs)

    monkeypatch.setattr(sweep, "make_backend", spy)
    out = tmp_path / "repeats"
    envs = {"pyboy": [1], "warp-cpu": [1]}
    rows = sweep.run_sweep(
        ["pyboy", "warp-cpu"],
        str(rom),
        envs,
        2,
        FRAMES_PER_STEP,
        0,
        out,
        renders=("off", "pixels"),
        repeats=2,
    )
    # every configuration once per round, rounds one after the other
    order = [("pyboy", False, None), ("warp-cpu", None, False)]
    order += [("pyboy", True, None), ("warp-cpu", None, True)]
    assert made == order * 2
    assert [(r.backend, r.render, r.repeat) for r in rows][:4] == [
        ("pyboy", "off", 0),
        ("warp-cpu", "off", 0),
        ("pyboy", "pixels", 0),
        ("warp-cpu", "pixels", 0),
    ]
    summary = sweep.summarise(rows)
    assert len(summary) == 4 and all(len(s.sps) == 2 for s in summary)
    base = sweep.pyboy_baselines(summary)
    assert set(base) == {"off", "pixels", "packed2"}  # packed2 is compared with pixels
    assert base["packed2"] == base["pixels"]
    for s in summary:
        if s.backend == "pyboy":
            assert base[s.render] == s.median
    for s in summary:
        assert s.median == pytest.approx(sum(s.sps) / 2)
    text = (out / "summary.md").read_text()
    assert "median of 2 interleaved run(s)" in text
    # each PyBoy row is its own mode's baseline (a warp-cpu row may also read 1.00)
    pyboy_rows = [line for line in text.splitlines() if line.startswith("| pyboy |")]
    assert len(pyboy_rows) == 2
    assert {line.split("|")[2].strip() for line in pyboy_rows} == {"off", "pixels"}
    assert all(line.endswith("| 1.00 | 1.00 |") for line in pyboy_rows)
    with pytest.raises(ValueError, match="render"):
        sweep.run_sweep(["pyboy"], str(rom), envs, 2, FRAMES_PER_STEP, 0, out, renders=("rgb",))
    with pytest.raises(ValueError, match="repeats"):
        sweep.run_sweep(["pyboy"], str(rom), envs, 2, FRAMES_PER_STEP, 0, out, repeats=0)


def test_sweep_packed2_fills_warp_packed_buffers_and_leaves_pyboy_out(tmp_path, rom, monkeypatch):
    made = []
    real = sweep.make_backend

    def spy(name, path, **kwargs):
        b = real(name, path, **kwargs)
        made.append((name, kwargs.get("render_pixels"), kwargs.get("render_pixels_packed"), b))
        return b

    monkeypatch.setattr(sweep, "make_backend", spy)
    out = tmp_path / "packed"
    envs = {"pyboy": [1], "warp-cpu": [2]}
    renders = ("pixels", "packed2")
    rows = sweep.run_sweep(["pyboy", "warp-cpu"], str(rom), envs, 2, 4, 0, out, renders=renders)
    assert [(r.backend, r.render) for r in rows] == [
        ("pyboy", "pixels"),
        ("warp-cpu", "pixels"),
        ("warp-cpu", "packed2"),
    ]
    assert [m[:3] for m in made] == [
        ("pyboy", None, None),
        ("warp-cpu", True, False),
        ("warp-cpu", False, True),
    ]
    assert made[2][3].pixels_packed_torch().shape == (2, 72, 20)
    text = (out / "summary.md").read_text()
    pyboy_pixels = rows[0].sps
    packed_line = next(line for line in text.splitlines() if "| packed2 |" in line)
    assert f"| {rows[2].sps / pyboy_pixels:.2f} |" in packed_line
    with pytest.raises(ValueError, match="packed2"):
        sweep.measure("pyboy", str(rom), 1, 1, 4, 0, render="packed2")


def _fake_row(sps: float, seconds: float):
    return type("Row", (), {"sps": sps, "seconds": seconds})()


def test_time_budget_projects_from_the_last_smaller_run(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(sweep.time, "perf_counter", lambda: clock[0])
    budget = sweep.TimeBudget(60.0, warmup=2, steps=8)
    key = ("warp-cuda", "off", None)
    assert budget.projected(key, 16) is None
    assert budget.allows(key, 16, "first run of a configuration")  # nothing to project from
    budget.record(key, 16, _fake_row(sps=100.0, seconds=1.6), wall=3.6)  # 2 s of setup
    assert budget.projected(key, 16) == pytest.approx(2 + 10 * 16 / 100)
    assert budget.projected(key, 64) == pytest.approx(2 + 10 * 64 / 100)
    assert budget.projected(key, 8) is None  # only runs with fewer or as many envs count
    clock[0] += 10  # 50 s left
    assert budget.allows(key, 256, "256")  # 27.6 s
    assert not budget.allows(key, 1024, "1024")  # 104.4 s
    assert budget.skipped == ["1024: projected 104 s, 50 s of the budget left"]
    assert budget.allows(("other",), 1024, "another configuration")
    clock[0] += 60
    assert not budget.allows(("other",), 1, "late")  # nothing left at all
    assert sweep.TimeBudget(None, 2, 8).allows(key, 10**9, "no budget")


def test_time_budget_projects_a_gpu_by_waves_of_resident_envs():
    """H100, 2026-11-27 (bench/results/gpu/h100-session1/sweep-demo): 1,024 envs took
    136 ms a step, 16,384 took 147 ms and 65,536 took 340 ms. A linear projection from 1,024 envs (2.2 s
    a step at 16,384) skipped the two runs the goals need; by waves of the 132 SMs' 256
    resident envs it is 136 ms, then 2 waves at 65,536."""
    at_once = {"warp-cuda": 132 * sweep.GPU_ENVS_PER_SM}
    budget = sweep.TimeBudget(60.0, warmup=2, steps=8, at_once=at_once)
    gpu, cpu = ("warp-cuda", "off", None), ("warp-cpu", "off", None)
    budget.record(gpu, 1024, _fake_row(sps=1024 / 0.136, seconds=1.36), wall=1.36)
    assert budget.projected(gpu, 16384) == pytest.approx(10 * 0.136)
    assert budget.projected(gpu, 65536) == pytest.approx(10 * 0.136 * 65536 / (132 * 256))
    budget.record(cpu, 1024, _fake_row(sps=1024 / 0.136, seconds=1.36), wall=1.36)
    assert budget.projected(cpu, 16384) == pytest.approx(10 * 0.136 * 16)  # linear


def test_sweep_budget_skips_runs_and_lists_them(tmp_path, rom, monkeypatch):
    real = sweep.measure
    ran = []

    def slow_on_paper(backend, path, n, *args, **kwargs):
        row = real(backend, path, n, *args, **kwargs)
        row.sps, row.seconds = 1.0, 0.0  # claims 1 step/s: 2 + 2 steps take 4 s per env
        ran.append(n)
        return row

    monkeypatch.setattr(sweep, "measure", slow_on_paper)
    out = tmp_path / "budget"
    envs = {"warp-cpu": [64, 1, 8]}
    rows = sweep.run_sweep(["warp-cpu"], str(rom), envs, 2, 4, 0, out, budget_s=30)
    assert ran == [1] and [r.num_envs for r in rows] == [1]  # 8 envs: 32 s projected
    text = (out / "summary.md").read_text()
    assert "Skipped to stay inside the time budget" in text
    # 4 s per env plus the first run's setup time (the kernel build on a cold cache)
    projected = dict(re.findall(r"tuned × (\d+) render=off #1: projected ([\d,]+) s", text))
    assert set(projected) == {"8", "64"}
    assert 32 <= int(projected["8"].replace(",", "")) < 32 + 60
    assert 256 <= int(projected["64"].replace(",", "")) < 256 + 60
    assert len(_rows(out / "results.jsonl")) == 1
    with pytest.raises(ValueError, match="budget_s"):
        sweep.run_sweep(["warp-cpu"], str(rom), envs, 2, 4, 0, out, budget_s=0)


def test_render_cost_refuses_cuda_without_a_gpu(tmp_path, capsys, monkeypatch):
    from bench import render_cost
    from gbxcule.cli import playback

    monkeypatch.setattr(playback, "cuda_available", lambda: False)
    with pytest.raises(SystemExit) as exc:
        render_cost.main(["--device", "cuda", "--envs", "1", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_sweep_without_matplotlib_keeps_rows_and_summary(tmp_path, rom, monkeypatch, capsys):
    """The GPU machine has no matplotlib: the sweep still ends with its JSONL and summary."""
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out = tmp_path / "results"
    rows = sweep.run_sweep(["warp-cpu"], str(rom), {"warp-cpu": [1]}, 2, FRAMES_PER_STEP, 0, out)
    assert len(rows) == 1 and len(_rows(out / "results.jsonl")) == 1
    assert "| warp-cpu | off | 1 |" in (out / "summary.md").read_text()
    assert not (out / "sps_vs_envs.png").exists()
    assert "no plots" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--steps", "0"], "steps must be an int >= 1, got 0"),
        (["--envs", "1,0"], "num_envs must be an int >= 1, got 0"),
        (["--frames-per-step", "-1"], "frames_per_step must be an int >= 1, got -1"),
        (["--repeats", "0"], "repeats must be an int >= 1, got 0"),
    ],
)
def test_gbxcule_bench_refuses_bad_counts_before_writing_a_row(tmp_path, rom, capsys, args, msg):
    out = tmp_path / "results"
    argv = ["bench", "--backends", "warp-cpu", "--rom", str(rom), "--out", str(out), *args]
    assert main(argv) == 2
    assert msg in capsys.readouterr().err
    assert not (out / "results.jsonl").exists()


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--envs", "0"], "num_envs must be an int >= 1, got 0"),
        (["--iters", "0"], "iters must be an int >= 1, got 0"),
    ],
)
def test_render_cost_refuses_bad_counts(tmp_path, capsys, args, msg):
    from bench import render_cost

    with pytest.raises(SystemExit) as exc:
        render_cost.main(["--out", str(tmp_path), *args])
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


def test_measure_waits_for_warp_backends_to_finish(tmp_path, rom, monkeypatch):
    """On CUDA ``step()`` only queues work: the sweep must synchronize before reading the
    clock, or it times the queueing."""
    from gbxcule.backends.warp_vec import WarpVecBase

    calls = []
    real = WarpVecBase.synchronize
    monkeypatch.setattr(WarpVecBase, "synchronize", lambda self: calls.append(1) or real(self))
    row = sweep.measure("warp-cpu", str(rom), 1, 3, FRAMES_PER_STEP, 0)
    assert row.steps == 3
    assert len(calls) == 2  # after the warm-up and after the timed steps


def test_gbxcule_bench_rom_busy_runs_the_busy_rom(tmp_path, capsys):
    out = tmp_path / "busy"
    args = ["bench", "--backends", "warp-cpu", "--envs", "1", "--steps", "2", "--rom", "busy"]
    assert main(args + ["--render", "off", "--out", str(out)]) == 0
    assert [r["rom"] for r in _rows(out / "results.jsonl")] == ["busy_cpu.gb"]


def test_gbxcule_bench_rom_game_runs_the_game_rom(tmp_path, capsys):
    out = tmp_path / "game"
    args = ["bench", "--backends", "warp-cpu", "--envs", "1", "--steps", "2", "--rom", "game"]
    assert main(args + ["--render", "off", "--out", str(out)]) == 0
    assert [r["rom"] for r in _rows(out / "results.jsonl")] == ["game_bench.gb"]


def test_gbxcule_bench_takes_every_bench_rom_name(tmp_path, capsys):
    """``--rom`` goes through resolve_rom, as in every other bench tool."""
    for name in ("demo", "loop-mbc"):
        out = tmp_path / name
        args = ["bench", "--backends", "warp-cpu", "--envs", "1", "--steps", "1", "--rom", name]
        assert main(args + ["--render", "off", "--out", str(out)]) == 0
        rows = _rows(out / "results.jsonl")
        assert [r["rom"] for r in rows] == [Path(rom_names.resolve_rom(name)).name]


def test_default_out_dir_names_device_and_rom():
    assert sweep.default_out_dir(["pyboy", "warp-cpu"], None) == sweep.RESULTS_DIR / "cpu"
    assert sweep.default_out_dir(["pyboy", "warp-cpu"], "demo") == sweep.RESULTS_DIR / "cpu"
    assert sweep.default_out_dir(["warp-cuda"], "busy") == sweep.RESULTS_DIR / "gpu-busy"
    assert sweep.default_out_dir(["pyboy", "warp-cpu"], "game") == sweep.RESULTS_DIR / "cpu-game"
    assert sweep.default_out_dir(["warp-cpu"], "/x/tetris.gb") == sweep.RESULTS_DIR / "cpu-tetris"


def test_hooks_cost_writes_rows_and_summary(tmp_path):
    from bench import hooks_cost

    rows = hooks_cost.run([2], steps=2, rounds=2, out_dir=tmp_path, label="t", threads=1)
    (row,) = rows
    assert row["num_envs"] == 2 and row["hooks"] == len(hooks_cost.DEMO_HOOKS) == 11
    assert len(row["off_steps_per_s"]) == len(row["on_steps_per_s"]) == 2
    assert row["hooked_kernel"] in ("cold", "cached", "loaded before")
    assert _rows(tmp_path / "results.jsonl")[0]["label"] == "t"
    assert "| t | " in (tmp_path / "summary.md").read_text()
    with pytest.raises(SystemExit) as exc:
        hooks_cost.main(["--out", str(tmp_path), "--rounds", "0"])
    assert exc.value.code == 2


def test_resolve_rom_knows_every_bench_rom_name():
    """One resolver for every bench tool's ROM names (bench/rom_names.py)."""
    from bench.loop_roms import LOOP_VARIANTS
    from gbxcule.demo.rom import demo_rom_path

    assert rom_names.resolve_rom("demo") == str(demo_rom_path())
    for name in (*rom_names.NAMED_ROMS, *LOOP_VARIANTS):
        path = Path(rom_names.resolve_rom(name))
        assert path.is_file(), name
        assert path.read_bytes()[0x134:0x143].rstrip(b"\0")  # an assembled cartridge header
    assert rom_names.resolve_rom("some/rom.gb") == "some/rom.gb"
    assert rom_names.resolve_rom("loop-nope") == "loop-nope"  # not a loop ROM: a path
