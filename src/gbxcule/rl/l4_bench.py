"""The L4 benchmark: train policies on both emulators, cross-evaluate them, report.

:func:`run_benchmark` trains one small run per (direction, seed) — ``warp`` (our backend,
``TaskEnv``) or ``pyboy-mp`` (PyBoy 2.8.1 processes, the same ``TaskEnv``) — and plays each
policy with :func:`gbxcule.rl.l4.compare_policy` against every reference, appending one
JSONL record per episode to ``results.jsonl`` as it goes. :func:`write_report` turns that
file into ``summary.json``, ``summary.md`` (identical counts, per-seed mean returns with
95 % CIs and a TOST of ours vs PyBoy at a stated margin) and ``returns_per_seed.png``.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gbxcule.files import write_atomic
from gbxcule.rl.l4 import compare_policy, mean_ci, tost, tost_paired
from gbxcule.rl.schemas import TrainConfig

RESULTS = "results.jsonl"
DIRECTIONS = ("warp", "pyboy-mp")


def bench_config(direction: str, seed: int, total_steps: int, **overrides: Any) -> TrainConfig:
    """The small training run of one (direction, seed)."""
    base: dict[str, Any] = dict(
        env_backend=direction,
        num_envs=16,
        num_steps=64,
        total_steps=total_steps,
        minibatch_size=256,
        update_epochs=2,
        lr=3e-4,
        seed=seed,
        threads=1,
        checkpoint_every=1000,
        tag=f"l4-{direction}-s{seed}",
    )
    base.update(overrides)
    return TrainConfig(**base).check()


def run_benchmark(
    out_dir: str | Path,
    *,
    seeds: Iterable[int] = range(1, 11),
    directions: Iterable[str] = DIRECTIONS,
    references: Iterable[str] = ("oracle", "stock"),
    total_steps: int = 65_536,
    episodes: int = 8,
    eval_seed: int = 0,
    device: str = "cpu",
    runs_dir: str | Path = "bench/results/tmp/l4-runs",
    log: Callable[[str], None] = print,
    **train_overrides: Any,
) -> Path:
    """Train and compare every (direction, seed); returns the results file."""
    from gbxcule.rl.train import train

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS
    references = tuple(references)
    for direction in directions:
        for seed in seeds:
            cfg = bench_config(direction, seed, total_steps, **train_overrides)
            t0 = time.perf_counter()
            run = train(cfg, out=runs_dir)
            train_s = time.perf_counter() - t0
            recs = [r for r in run.metrics() if r.get("episode_return") is not None]
            train_return = recs[-1]["episode_return"] if recs else None
            for ref in references:
                t1 = time.perf_counter()
                eps = compare_policy(
                    run.path,
                    reference=ref,
                    episodes=episodes,
                    seed=eval_seed,
                    device=device,
                    bundle_root=out / "bundles",
                )
                eval_s = time.perf_counter() - t1
                common = {
                    "schema": "gbxcule.l4.episode/1",
                    "trained_on": direction,
                    "train_seed": seed,
                    "train_steps": total_steps,
                    "train_s": round(train_s, 2),
                    "train_last_return": train_return,
                    "eval_device": device,
                    "eval_s": round(eval_s, 2),
                    "run_id": run.run_id,
                }
                with results.open("a") as f:
                    for ep in eps:
                        f.write(json.dumps({**common, **ep.to_json()}) + "\n")
                same = sum(e.identical for e in eps)
                log(
                    f"{direction} seed {seed} vs {ref}: {same}/{len(eps)} identical, return ours "
                    f"{statistics.fmean(e.ours_return for e in eps):.3f} pyboy "
                    f"{statistics.fmean(e.pyboy_return for e in eps):.3f} "
                    f"(train {train_s:.0f} s, eval {eval_s:.1f} s)"
                )
    return results


def read_results(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def summarize(
    records: list[dict[str, Any]], margin: float = 0.5, alpha: float = 0.05
) -> dict[str, Any]:
    """Per (trained_on, reference): counts, per-seed means, CIs, TOST of ours vs PyBoy."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["trained_on"], r["reference"]), []).append(r)
    out: dict[str, Any] = {"margin": margin, "alpha": alpha, "groups": []}
    for (trained_on, reference), recs in sorted(groups.items()):
        seeds = sorted({r["train_seed"] for r in recs})
        per_seed = {
            s: {
                side: statistics.fmean(r[f"{side}_return"] for r in recs if r["train_seed"] == s)
                for side in ("ours", "pyboy")
            }
            for s in seeds
        }
        ours = [per_seed[s]["ours"] for s in seeds]
        pyboy = [per_seed[s]["pyboy"] for s in seeds]
        group: dict[str, Any] = {
            "trained_on": trained_on,
            "reference": reference,
            "seeds": seeds,
            "episodes": len(recs),
            "identical": sum(r["identical"] for r in recs),
            "actions_identical": sum(r["actions_identical"] for r in recs),
            "divergent": [
                {k: r[k] for k in ("train_seed", "episode", "first_diff_step", "bundle")}
                for r in recs
                if not r["identical"]
            ],
            "per_seed": per_seed,
            "ours_mean_ci95": mean_ci(ours),
            "pyboy_mean_ci95": mean_ci(pyboy),
        }
        group["tost"] = tost(ours, pyboy, margin, alpha) if len(seeds) >= 2 else None
        group["tost_paired"] = tost_paired(ours, pyboy, margin, alpha) if len(seeds) >= 2 else None
        out["groups"].append(group)
    return out


def _fmt_ci(ci: tuple[float, float, float]) -> str:
    m, lo, hi = ci
    return f"{m:.3f}" if math.isnan(lo) else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def summary_markdown(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    margin, alpha = summary["margin"], summary["alpha"]
    lines = [
        "# L4: policies trained on one emulator, played on both",
        "",
        "`gbxcule l4 --bench` (`gbxcule.rl.l4_bench`): one small PPO run per (direction, seed);"
        " every policy plays the same fresh episodes (per-episode sampling seed on both sides)"
        " on our backend and on PyBoy 2.8.1, compared after every step (agent frame, action,"
        " reward, and the L3 state: registers, VRAM..IE, serial, 160x144 frame).",
        "",
        "| trained on | reference | seeds | episodes | identical | actions identical |"
        " ours mean [95 % CI] | PyBoy mean [95 % CI] | diff [90 % Welch CI] | Welch TOST p |"
        " equivalent (Welch) | paired TOST p | equivalent (paired) |",
        "|---|---|---:|---:|---:|---:|---|---|---|---:|---|---:|---|",
    ]
    for g in summary["groups"]:
        t, tp = g["tost"] or {}, g["tost_paired"] or {}
        diff = f"{t['diff']:.3f} [{t['ci_lo']:.3f}, {t['ci_hi']:.3f}]" if t else "-"
        lines.append(
            f"| {g['trained_on']} | {g['reference']} | {len(g['seeds'])} | {g['episodes']} | "
            f"{g['identical']} | {g['actions_identical']} | {_fmt_ci(g['ours_mean_ci95'])} | "
            f"{_fmt_ci(g['pyboy_mean_ci95'])} | {diff} | "
            f"{t.get('p', math.nan):.3g} | {t.get('equivalent', '-')} | "
            f"{tp.get('p', math.nan):.3g} | {tp.get('equivalent', '-')} |"
        )
    total = sum(g["episodes"] for g in summary["groups"])
    same = sum(g["identical"] for g in summary["groups"])
    lines += [
        "",
        f"**{same} of {total} episodes identical.** TOST: two one-sided Welch t-tests on the"
        f" per-seed mean returns (ours vs PyBoy, as two independent samples), margin"
        f" ±{margin} coins (return units), alpha {alpha}; equivalent when both p < alpha (the"
        " 90 % CI of the difference lies inside the margin). Welch ignores that both sides"
        " played the same seeds and episodes, so the spread of returns across seeds alone"
        " can keep it from concluding equivalence even with identical trajectories; the"
        " paired TOST (one-sample t on the per-seed differences; exact when they are all"
        " equal) uses the pairing.",
        "",
    ]
    div = [d for g in summary["groups"] for d in g["divergent"]]
    if div:
        lines.append("Divergent episodes (first difference, bundle):")
        lines += [
            f"* seed {d['train_seed']} episode {d['episode']}: step {d['first_diff_step']}, "
            f"`{d['bundle']}`"
            for d in div
        ]
    else:
        lines.append("No divergence: no repro bundle was written.")
    if records:
        lines += ["", _training_line(records)]
    return "\n".join(lines) + "\n"


def _training_line(records: list[dict[str, Any]]) -> str:
    runs = {(r["trained_on"], r["train_seed"]): r for r in records}
    parts = []
    for d in sorted({k[0] for k in runs}):
        mine = [r for (dd, _), r in runs.items() if dd == d]
        steps = sorted({r["train_steps"] for r in mine})
        wall = statistics.median(r["train_s"] for r in mine)
        parts.append(
            f"{d}: {'/'.join(f'{x:,}' for x in steps)} env steps per run, median {wall:.0f} s"
        )
    return (
        "Training (16 envs x 64 steps per update, 2 epochs, minibatch 256, lr 3e-4): "
        + "; ".join(parts)
        + f". Evaluation device: {records[0]['eval_device']}. Plot: `returns_per_seed.png`."
    )


def plot_returns(summary: dict[str, Any], path: str | Path) -> Path:
    """Mean return per seed on each backend, one panel per (trained on, reference)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = summary["groups"]
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(4 * max(len(groups), 1), 3.4))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, g in zip(axes, groups):
        seeds = g["seeds"]
        ours = [g["per_seed"][s]["ours"] for s in seeds]
        pyb = [g["per_seed"][s]["pyboy"] for s in seeds]
        ax.plot(seeds, ours, "o", ms=9, mfc="none", label="ours (gbxcule)")
        ax.plot(seeds, pyb, "x", ms=7, label="PyBoy 2.8.1")
        ax.set_title(f"trained on {g['trained_on']}, vs {g['reference']}", fontsize=9)
        ax.set_xlabel("training seed")
        ax.set_xticks(seeds)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean episode return")
    axes[0].legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=90)
    plt.close(fig)
    return write_atomic(path, buf.getvalue())


def write_report(out_dir: str | Path, margin: float = 0.5, alpha: float = 0.05) -> dict[str, Any]:
    out = Path(out_dir)
    records = read_results(out / RESULTS)
    summary = summarize(records, margin, alpha)
    write_atomic(out / "summary.json", (json.dumps(summary, indent=2) + "\n").encode())
    write_atomic(out / "summary.md", summary_markdown(summary, records).encode())
    try:
        plot_returns(summary, out / "returns_per_seed.png")
    except ImportError:
        pass
    return summary
