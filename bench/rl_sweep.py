"""RL benchmark: end-to-end PPO throughput versus num_envs, obs format and engine mode.

Every row is the real training loop of :mod:`gbxcule.rl` (rollout with the policy,
task rewards, ``reset_envs``, one render per env-step into the rollout slot, PPO update)
on the demo-coins task: envs x obs format {u8, packed2 direct write} x mode {sync,
async} on our Warp backend, plus the same PPO fed by ``PyBoyVecMpBackend`` (frames from
``frame_shades`` per env, downsampled and packed on the host) in the same run, for the
ratio. Each configuration runs ``--warmup`` updates, then ``--updates`` measured ones.

Written to ``--out`` (default ``bench/results/rl-cpu`` or ``rl-gpu``): ``results.jsonl``
(one row per measured update), ``summary.md`` (medians, ratios), and plots
(``sps_vs_envs.png``, ``packed2_speedup.png``, ``overlap_vs_envs.png``).

Defaults on a GPU: 1,024-16,384 envs, 64 steps per rollout, 2 updates, 1 epoch,
minibatch 16,384. On the CPU: 16, 64, 256 envs, 32 steps, minibatch 2,048, PyBoy at
64 and 256 envs.

``--budget-s S`` skips the configurations projected to end past S seconds, as
``bench.sweep`` does, and lists them in ``summary.md``.

Usage: python -m bench.rl_sweep [--device cpu|cuda] [--envs 16,64,256] [--steps 32]
       [--updates 2] [--warmup 1] [--pyboy-envs 64,256] [--budget-s S] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from bench.sweep import TimeBudget
from gbxcule.files import write_atomic
from gbxcule.rl.async_ppo import Engine
from gbxcule.rl.rollout import make_env
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.train import build_model
from gbxcule.tasks import load_task

RESULTS_DIR = Path(__file__).resolve().parent / "results"
GPU = {"envs": "1024,4096,16384", "steps": 64, "minibatch": 16384, "pyboy_envs": ""}
CPU = {"envs": "16,64,256", "steps": 32, "minibatch": 2048, "pyboy_envs": "64,256"}


def build_engine(cfg: TrainConfig, feeder: str) -> tuple[Engine, Any]:
    """The training loop's engine on ``cfg``'s task, fed by ``feeder`` (``warp`` or
    ``pyboy-mp``), and its env (close ``env.backend`` when done)."""
    spec = load_task(cfg.task)
    device = torch.device(cfg.device if cfg.device != "cuda" else "cuda:0")
    torch.manual_seed(cfg.seed)
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    env = make_env(spec, cfg, backend=feeder)
    model = build_model(cfg, spec.codec.num_actions, len(spec.features)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=1e-5)
    return Engine(cfg, env, model, opt, device), env


def measure(cfg: TrainConfig, feeder: str, warmup: int, updates: int) -> list[dict]:
    engine, env = build_engine(cfg, feeder)
    rows = []
    try:
        engine.start()
        for i in range(warmup + updates):
            t0 = time.perf_counter()
            numbers = engine.finish(engine.enqueue_update())
            wall = time.perf_counter() - t0
            if i < warmup:
                continue
            row = {
                "feeder": "warp" if feeder == "warp" else "pyboy-mp",
                "device": cfg.device,
                "envs": cfg.num_envs,
                "obs_format": cfg.obs_format,
                "mode": cfg.mode,
                "steps": cfg.num_steps,
                "epochs": cfg.update_epochs,
                "minibatch": cfg.minibatch_size,
                "wall_s": wall,
                "sps": cfg.num_envs * cfg.num_steps / wall,
                **{k: numbers.get(k) for k in ("actor_ms", "learner_ms", "total_ms")},
                "overlap_efficiency": numbers.get("overlap_efficiency"),
                "render_ms": numbers.get("render_ms"),
                "obs_ms": numbers.get("obs_ms"),
                "env_ms": numbers.get("env_ms"),
            }
            if row["obs_ms"] is not None:
                row["obs_fraction"] = row["obs_ms"] / (wall * 1000.0)
            rows.append(row)
    finally:
        env.backend.close()
    return rows


def _median(rows: list[dict], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def _m(rows: list[dict], key: str) -> float:
    """:func:`_median` for arithmetic: NaN when no row has ``key``."""
    v = _median(rows, key)
    return float("nan") if v is None else v


def saturation(groups: dict[tuple, list[dict]]) -> list[str]:
    """Per (obs, mode) on the Warp feeder: the smallest envs within 10 % of the best SPS,
    and how the update's time splits at the largest size (computed, not asserted)."""
    out = []
    for fmt in ("packed2", "u8"):
        for mode in ("sync", "async"):
            by = {
                k[1]: v
                for k, v in groups.items()
                if k[0] == "warp" and k[2] == fmt and k[3] == mode
            }
            if not by:
                continue
            sps = {n: _m(rs, "sps") for n, rs in by.items()}
            best = max(sps.values())
            knee = min(n for n, v in sps.items() if v >= 0.9 * best)
            top = by[max(by)]
            total = _m(top, "wall_s") * 1000.0
            parts = [f"actor {100 * _m(top, 'actor_ms') / total:.0f} %"]
            if _median(top, "env_ms") is not None:
                parts.append(
                    f"of which emulator step + task + reset + render {100 * _m(top, 'env_ms') / total:.0f} %"
                )
            parts.append(f"learner {100 * _m(top, 'learner_ms') / total:.0f} %")
            out.append(
                f"- warp {fmt} {mode}: within 10 % of its best ({best:,.0f} SPS) from {knee} envs; "
                f"at {max(by)} envs the update is {', '.join(parts)}."
            )
    return out


def summarize(rows: list[dict], out: Path, env_info: dict, skipped: Sequence[str] = ()) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["feeder"], r["envs"], r["obs_format"], r["mode"]), []).append(r)
    lines = [
        "# RL sweep: end-to-end PPO env-steps/s (demo-coins)",
        "",
        f"Machine: {env_info['platform']}, {env_info['cores']} cores, device {env_info['device']}"
        f"{' (' + env_info['gpu'] + ')' if env_info.get('gpu') else ''}; torch {env_info['torch']}.",
        "Medians over the measured updates. `obs %` = render + frame stacking as a share of "
        "the update (CPU only).",
        "",
        "| feeder | envs | obs | mode | SPS | actor ms | learner ms | overlap | obs % |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (feeder, envs, fmt, mode), rs in sorted(groups.items()):
        frac = _median(rs, "obs_fraction")
        ov = _median(rs, "overlap_efficiency")
        lines.append(
            f"| {feeder} | {envs} | {fmt} | {mode} | {_m(rs, 'sps'):,.0f} | "
            f"{_m(rs, 'actor_ms'):,.0f} | {_m(rs, 'learner_ms'):,.0f} | "
            f"{'-' if ov is None else f'{ov:.2f}'} | {'-' if frac is None else f'{100 * frac:.1f}'} |"
        )
    lines += ["", "## Ratios", ""]
    for (feeder, envs, fmt, mode), rs in sorted(groups.items()):
        if feeder != "pyboy-mp":
            continue
        ours = groups.get(("warp", envs, fmt, mode))
        if ours:
            ratio = _m(ours, "sps") / _m(rs, "sps")
            lines.append(
                f"- {envs} envs, {fmt}, {mode}: warp-fed / PyBoy-fed SPS = **{ratio:.2f}x**"
            )
    for (feeder, envs, fmt, mode), rs in sorted(groups.items()):
        if feeder == "warp" and fmt == "packed2" and ("warp", envs, "u8", mode) in groups:
            ratio = _m(rs, "sps") / _m(groups[("warp", envs, "u8", mode)], "sps")
            lines.append(f"- {envs} envs, {mode}: packed2 / u8 SPS = {ratio:.2f}x")
    lines += ["", "## Where throughput saturates", ""] + saturation(groups)
    if skipped:
        lines += ["", "## Skipped to stay inside the time budget (`--budget-s`)", ""]
        lines += [f"- {s}" for s in skipped]
    text = "\n".join(lines) + "\n"
    write_atomic(out / "summary.md", text.encode())
    return text


def plot(rows: list[dict], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots skipped: matplotlib is not installed", file=sys.stderr)
        return
    import io

    def save(fig, name):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        plt.close(fig)
        write_atomic(out / name, buf.getvalue())

    series: dict[tuple, dict[int, list[dict]]] = {}
    for r in rows:
        series.setdefault((r["feeder"], r["obs_format"], r["mode"]), {}).setdefault(
            r["envs"], []
        ).append(r)
    for key, ylabel, name in (
        ("sps", "env steps/s (training)", "sps_vs_envs.png"),
        ("overlap_efficiency", "(t_actor + t_learner) / t_total", "overlap_vs_envs.png"),
    ):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        for (feeder, fmt, mode), by_envs in sorted(series.items()):
            xs = sorted(by_envs)
            ax.plot(
                xs,
                [_median(by_envs[x], key) or 0 for x in xs],
                marker="o",
                label=f"{feeder} {fmt} {mode}",
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("envs")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, name)
    pairs = {}
    for mode in ("sync", "async"):
        p, u = series.get(("warp", "packed2", mode), {}), series.get(("warp", "u8", mode), {})
        xs = sorted(set(p) & set(u))
        if xs:
            pairs[mode] = (xs, [_m(p[x], "sps") / _m(u[x], "sps") for x in xs])
    if not pairs:  # no envs count ran both formats (one format asked for, or the budget)
        return
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for mode, (xs, ys) in pairs.items():
        ax.plot(xs, ys, marker="o", label=mode)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("envs")
    ax.set_ylabel("packed2 SPS / u8 SPS")
    ax.grid(alpha=0.3)
    ax.legend()
    save(fig, "packed2_speedup.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--envs", default=None)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--minibatch", type=int, default=None)
    p.add_argument("--updates", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--formats", default="u8,packed2")
    p.add_argument("--modes", default="sync,async")
    p.add_argument("--pyboy-envs", default=None, help="PyBoy-fed rows (packed2, sync); '' for none")
    p.add_argument("--out", default=None)
    p.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="skip the configurations projected to end past this many seconds (bench.sweep's rule)",
    )
    args = p.parse_args(argv)
    if args.budget_s is not None and not args.budget_s > 0:
        p.error(f"--budget-s must be > 0 seconds, got {args.budget_s}")
    d = GPU if args.device.startswith("cuda") else CPU
    envs = [int(x) for x in (args.envs or d["envs"]).split(",") if x]
    steps = args.steps or d["steps"]
    minibatch = args.minibatch or d["minibatch"]
    pyboy_envs = [
        int(x)
        for x in (d["pyboy_envs"] if args.pyboy_envs is None else args.pyboy_envs).split(",")
        if x
    ]
    out = (
        Path(args.out)
        if args.out
        else RESULTS_DIR / ("rl-gpu" if args.device.startswith("cuda") else "rl-cpu")
    )
    out.mkdir(parents=True, exist_ok=True)
    info = {
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "torch": torch.__version__,
    }
    plan = [
        ("warp", n, fmt, mode)
        for n in envs
        for fmt in args.formats.split(",")
        for mode in args.modes.split(",")
    ]
    plan += [("pyboy", n, "packed2", "sync") for n in pyboy_envs]
    rows: list[dict] = []
    env_steps = (args.warmup + args.updates) * steps  # per env, per configuration
    budget = TimeBudget(args.budget_s, warmup=0, steps=env_steps)
    for feeder, n, fmt, mode in plan:
        label = f"{feeder} × {n} {fmt} {mode}"
        if not budget.allows((feeder, fmt, mode), n, label):
            print(f"skipped for the time budget: {budget.skipped[-1]}", flush=True)
            continue
        t0 = time.perf_counter()
        cfg = TrainConfig(
            num_envs=n,
            device=args.device,
            mode=mode,
            obs_format=fmt,
            num_steps=steps,
            total_steps=1,
            update_epochs=args.epochs,
            minibatch_size=minibatch,
            tag="bench",
        )
        got = measure(cfg, feeder, args.warmup, args.updates)
        sps = _m(got, "sps")
        done = SimpleNamespace(sps=sps, seconds=env_steps * n / sps)
        budget.record((feeder, fmt, mode), n, done, time.perf_counter() - t0)
        for r in got:
            r.update({"time": time.time(), **{f"machine_{k}": v for k, v in info.items()}})
        rows += got
        print(
            f"{feeder:8s} {n:6d} {fmt:7s} {mode:5s} SPS {_m(got, 'sps'):10,.0f} "
            f"overlap {_median(got, 'overlap_efficiency') or 0:.2f}",
            flush=True,
        )
        data = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
        write_atomic(out / "results.jsonl", data.encode())
    print(summarize(rows, out, info, budget.skipped))
    plot(rows, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
