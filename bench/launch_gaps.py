"""Launch gaps: how long the GPU waits on the host between kernels, and what a CUDA graph
of the emulator's steps saves.

Issue #16 asks for a CUDA-graph capture of a whole rollout *if* the launch gaps show in
the timeline. This tool takes the timeline and the first half of that capture:

* **timeline**: ``torch.profiler`` records every kernel on the device over ``--steps``
  emulator steps (actions a CUDA tensor, pixels on, as the RL harness steps) and over one
  PPO update of the RL harness (demo-coins, sync mode). Warp's launches are among them:
  the profiler's CUPTI source sees every kernel of the process. From the kernel
  intervals: span, busy time (their union), the idle fraction, the gaps over 5 µs, the
  largest gaps with the kernels on either side, and time per kernel name.
* **graph**: the same steps as one Warp graph (``wp.ScopedCapture`` around ``step()``,
  the actions a device array) against eager ``step()`` calls, from identical states:
  steps/s of each, and whether the two final states agree in every ``Machine`` field and
  pixel of every env.

On the CPU (a dry run) the timeline's intervals are the steps themselves (each
``step()`` is a ``record_function`` range) and Torch's operators, since Warp's CPU
launches are not profiler events, and the graph is Warp's CPU graph.

Writes ``results.jsonl`` (one row per measurement), ``summary.md`` and the Chrome traces
(``trace-*.json``, open in Perfetto) to ``--out``.

Usage: python -m bench.launch_gaps [--device cpu|cuda] [--envs 1024,16384] [--steps 16]
       [--rl-envs 4096] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import warp as wp

from bench.machine_info import device_name, versions
from bench.rom_names import default_rom
from bench.step_settings import ACTION_CODEC, FRAMES_PER_STEP, RELEASE_AFTER_FRAMES
from gbxcule.backends.checks import check_positive_int
from gbxcule.backends.registry import make_backend
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"
GAP_US = 5.0  # a gap shorter than this is a launch's own latency, not the host lagging
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CATS = ("user_annotation", "cpu_op")
IDLE_MATTERS = 0.10  # idle above this share of the span: capture the rollout in a graph


def device_intervals(trace: dict, cats: tuple[str, ...]) -> list[tuple[float, float, str]]:
    """(start µs, end µs, name) of a Chrome trace's complete events in ``cats``."""
    out = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") in cats and "dur" in e:
            start = float(e["ts"])
            out.append((start, start + float(e["dur"]), str(e.get("name", "?"))))
    return sorted(out)


def analyse(intervals: list[tuple[float, float, str]], top: int = 5) -> dict[str, Any]:
    """Span, busy time (the union of the intervals), idle share, the gaps over ``GAP_US``
    (count, total, the ``top`` largest with the names on either side) and the ``top``
    names by total time."""
    if not intervals:
        return {"intervals": 0}
    intervals = sorted(intervals)
    busy = 0.0
    seg_start, seg_end, last_name = intervals[0][0], intervals[0][1], intervals[0][2]
    gaps: list[tuple[float, str, str]] = []
    by_name: dict[str, list[float]] = {}
    for start, end, name in intervals:
        by_name.setdefault(name, [0, 0.0])
        by_name[name][0] += 1
        by_name[name][1] += end - start
        if start > seg_end:
            busy += seg_end - seg_start
            gaps.append((start - seg_end, last_name, name))
            seg_start = start
        if end >= seg_end:
            seg_end, last_name = end, name
    busy += seg_end - seg_start
    span = seg_end - intervals[0][0]
    long_gaps = [g for g in gaps if g[0] > GAP_US]
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    return {
        "intervals": len(intervals),
        "span_ms": span / 1e3,
        "busy_ms": busy / 1e3,
        "idle_fraction": 1.0 - busy / span if span > 0 else 0.0,
        "gaps_over_5us": len(long_gaps),
        "gap_ms_over_5us": sum(g[0] for g in long_gaps) / 1e3,
        "largest_gaps": [
            {"us": round(g[0], 1), "after": g[1], "before": g[2]}
            for g in sorted(long_gaps, reverse=True)[:top]
        ],
        "top_names": [{"name": name, "count": int(c), "ms": t / 1e3} for name, (c, t) in ranked],
    }


def profiled(fn, device: str, trace_path: Path) -> dict[str, Any]:
    """Run ``fn`` under the profiler, keep its Chrome trace and analyse its intervals."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        fn()
    prof.export_chrome_trace(str(trace_path))
    trace = json.loads(trace_path.read_text())
    cats = DEVICE_CATS if device == "cuda" else HOST_CATS
    return {**analyse(device_intervals(trace, cats)), "trace": trace_path.name}


def _backend(device: str, n: int) -> Any:
    return make_backend(
        "warp-cuda" if device == "cuda" else "warp-cpu",
        default_rom(),
        num_envs=n,
        frames_per_step=FRAMES_PER_STEP,
        release_after_frames=RELEASE_AFTER_FRAMES,
        action_codec=ACTION_CODEC,
        render_pixels=True,
    )


def emulator_timeline(device: str, n: int, steps: int, out: Path) -> dict[str, Any]:
    """The timeline of ``steps`` steps with the actions a tensor on the device."""
    env = _backend(device, n)
    try:
        tdev = "cuda:0" if device == "cuda" else "cpu"
        gen = torch.Generator(device=tdev).manual_seed(0)
        acts = torch.randint(0, 7, (steps + 2, n), device=tdev, generator=gen)
        for k in range(2):
            env.step(acts[k])
        env.synchronize()

        def run() -> None:
            for k in range(2, steps + 2):
                with torch.profiler.record_function("gbx_step"):
                    env.step(acts[k])
            env.synchronize()

        t0 = time.perf_counter()
        got = profiled(run, device, out / f"trace-emulator-{device}-{n}.json")
        seconds = time.perf_counter() - t0
    finally:
        env.close()
    return {
        "what": "emulator",
        "envs": n,
        "steps": steps,
        "profiled_sps": steps * n / seconds,
        **got,
    }


def rl_timeline(device: str, n: int, steps: int, out: Path) -> dict[str, Any]:
    """The timeline of one PPO update (rollout of ``steps`` steps + learning), sync mode."""
    from bench.rl_sweep import build_engine
    from gbxcule.rl.schemas import TrainConfig

    cfg = TrainConfig(
        num_envs=n,
        device=device,
        mode="sync",
        obs_format="packed2",
        num_steps=steps,
        total_steps=1,
        update_epochs=1,
        minibatch_size=min(n * steps, 16384),
        tag="bench",
    )
    engine, env = build_engine(cfg, "warp")
    try:
        engine.start()
        engine.finish(engine.enqueue_update())  # warm-up: builds, first allocations
        got = profiled(
            lambda: engine.finish(engine.enqueue_update()),
            device,
            out / f"trace-rl-{device}-{n}.json",
        )
    finally:
        env.backend.close()
    return {"what": "rl-update", "envs": n, "steps": steps, **got}


def _state(env: Any) -> list[np.ndarray]:
    arrays = [a.numpy().copy() for _, a in per_env_arrays(env.machine)]
    return arrays + [env.pixels_wp().numpy().copy()]


def graph_vs_eager(device: str, n: int, steps: int) -> dict[str, Any]:
    """``steps`` eager steps against the same steps captured as one Warp graph."""
    envs = [_backend(device, n) for _ in range(2)]
    row: dict[str, Any] = {"what": "graph", "envs": n, "steps": steps}
    try:
        wdev = envs[0].device
        ids = np.random.default_rng(0).integers(0, 7, size=(steps + 2, n)).astype(np.int32)
        acts = wp.array(ids, dtype=wp.int32, device=wdev)
        for env in envs:
            for k in range(2):
                env.step(acts[k])
            env.synchronize()
        t0 = time.perf_counter()
        for k in range(2, steps + 2):
            envs[0].step(acts[k])
        envs[0].synchronize()
        row["eager_sps"] = steps * n / (time.perf_counter() - t0)
        try:
            with wp.ScopedCapture(device=wdev) as capture:
                for k in range(2, steps + 2):
                    envs[1].step(acts[k])
        except Exception as exc:  # noqa: BLE001 - what failed is the measurement
            row["capture_error"] = f"{type(exc).__name__}: {exc}"
            return row
        assert capture.graph is not None
        t0 = time.perf_counter()
        wp.capture_launch(capture.graph)
        envs[1].synchronize()
        row["graph_sps"] = steps * n / (time.perf_counter() - t0)
        row["graph_over_eager"] = row["graph_sps"] / row["eager_sps"]
        row["identical"] = all(
            np.array_equal(a, b) for a, b in zip(_state(envs[0]), _state(envs[1]), strict=True)
        )
    finally:
        for env in envs:
            env.close()
    return row


def _verdict(r: dict[str, Any], device: str) -> str:
    if device != "cuda":
        return "n/a (CPU dry run: the emulator's launches are not intervals)"
    if not r.get("intervals"):
        return "no intervals recorded"
    if r["idle_fraction"] > IDLE_MATTERS:
        return "launch gaps matter: capture it in a graph"
    return "launch gaps are not the bottleneck"


def write_summary(rows: list[dict[str, Any]], out: Path, device: str) -> str:
    unit = "kernels and copies on the GPU" if device == "cuda" else "host ranges (CPU dry run)"
    lines = [
        "# Launch gaps and the step graph",
        "",
        f"Device: {rows[0]['device']}. Timeline intervals: {unit}; a gap is idle time over "
        f"{GAP_US:g} µs between them.",
        "",
        "| timeline | envs | steps | intervals | span ms | busy ms | idle | gaps > 5 µs "
        "| their ms | largest gap | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(
                f"| {r['what']} | {r['envs']} | {r['steps']} | failed: {r['error'][:100]} |"
            )
            continue
        if r["what"] == "graph" or not r.get("intervals"):
            continue
        big = r["largest_gaps"][0] if r["largest_gaps"] else None
        gap = f"{big['us']:,.0f} µs before `{big['before'][:40]}`" if big else "-"
        lines.append(
            f"| {r['what']} | {r['envs']} | {r['steps']} | {r['intervals']} | "
            f"{r['span_ms']:,.2f} | {r['busy_ms']:,.2f} | {r['idle_fraction']:.1%} | "
            f"{r['gaps_over_5us']} | {r['gap_ms_over_5us']:,.2f} | {gap} | {_verdict(r, device)} |"
        )
    lines += ["", "| graph probe | envs | steps | eager steps/s | graph steps/s | × | same state |"]
    lines.append("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r["what"] != "graph" or "error" in r:
            continue
        if "capture_error" in r:
            lines.append(
                f"| capture failed | {r['envs']} | {r['steps']} | {r['eager_sps']:,.0f} | - | - "
                f"| {r['capture_error'][:80]} |"
            )
            continue
        lines.append(
            f"| Warp graph | {r['envs']} | {r['steps']} | {r['eager_sps']:,.0f} | "
            f"{r['graph_sps']:,.0f} | {r['graph_over_eager']:.2f} | "
            f"{'yes' if r['identical'] else '**NO**'} |"
        )
    text = "\n".join(lines) + "\n"
    write_atomic(out / "summary.md", text.encode())
    return text


def run(device: str, envs: list[int], steps: int, rl_envs: list[int], out: Path) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "device": device_name("warp-cuda" if device == "cuda" else "warp-cpu"),
        "versions": versions(),
    }
    # The graph probes last: a capture that fails can leave the device unusable. Each row
    # is kept as soon as it is measured, and a measurement that raises becomes an error
    # row, so one failure keeps the rest.
    plan = [("emulator", n, partial(emulator_timeline, device, n, steps, out)) for n in envs]
    plan += [("rl-update", n, partial(rl_timeline, device, n, steps, out)) for n in rl_envs]
    plan += [("graph", n, partial(graph_vs_eager, device, n, steps)) for n in envs]
    rows: list[dict[str, Any]] = []
    with (out / "results.jsonl").open("a") as fh:
        for what, n, measure in plan:
            try:
                row = measure()
            except Exception as exc:  # noqa: BLE001 - kept as the row's result
                row = {
                    "what": what,
                    "envs": n,
                    "steps": steps,
                    "error": f"{type(exc).__name__}: {exc}",
                }
                print(f"{what} at {n} envs failed: {row['error']}", file=sys.stderr)
            row.update(meta, timestamp=time.time())
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            rows.append(row)
    print(write_summary(rows, out, device))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None)
    ap.add_argument("--envs", default="1024,16384", help="comma list for the emulator rows")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--rl-envs", default="4096", help="comma list for the PPO update; '' for none")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from gbxcule.cli.playback import cuda_available

    device = args.device or ("cuda" if cuda_available() else "cpu")
    if device == "cuda" and not cuda_available():
        ap.error("--device cuda needs a CUDA device visible to Warp; this machine has none")
    try:
        envs = [check_positive_int("num_envs", int(x)) for x in args.envs.split(",") if x]
        rl_envs = [check_positive_int("rl num_envs", int(x)) for x in args.rl_envs.split(",") if x]
        steps = check_positive_int("steps", args.steps)
    except ValueError as exc:
        ap.error(str(exc))
    out = args.out or RESULTS_DIR / ("launch-gaps-gpu" if device == "cuda" else "launch-gaps-cpu")
    run(device, envs, steps, rl_envs, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
