"""CPU training against the emulator alone (issue #45 item 3): how much of the emulator's
own speed PPO keeps end to end on this machine, per engine mode and policy size.

Each configuration is a real ``gbxcule train`` run (``gbxcule.rl.train``) of ``--updates``
updates at ``--envs`` envs; the run measures the emulator alone on the same envs before it
starts (random actions, observations rendered: ``emulator_sps``), so each row's ratio
``vs_emulator`` compares two figures of one run. Rows: the median of the measured updates
(the first ``--warmup`` dropped).

Written to ``--out`` (default ``bench/results/cpu-train``): ``results.jsonl``,
``summary.md``, ``vs_emulator.png``.

Usage: python -m bench.cpu_train [--tasks quest-explore,demo-coins] [--envs 32]
       [--updates 6] [--warmup 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine_info import device_name, versions
from bench.report import write_report

CONFIGS: dict[str, dict[str, Any]] = {
    "sync": dict(mode="sync"),
    "async": dict(mode="async"),
    "async bf16": dict(mode="async", precision="bf16"),
    "async small": dict(mode="async", channels=(8, 16), hidden=128),
    "async small 1-epoch": dict(mode="async", channels=(8, 16), hidden=128, update_epochs=1),
    "async bf16 small 1-epoch": dict(
        mode="async", precision="bf16", channels=(8, 16), hidden=128, update_epochs=1
    ),  # fmt: skip
}
KEYS = ("sps", "emulator_sps", "vs_emulator", "actor_ms", "learner_ms", "env_ms", "total_ms")


def run_config(task: str, name: str, envs: int, updates: int, warmup: int) -> dict[str, Any]:
    from gbxcule.rl.schemas import TrainConfig
    from gbxcule.rl.train import train

    cfg = TrainConfig(task=task, num_envs=envs, **CONFIGS[name])
    cfg.total_steps = cfg.num_envs * cfg.num_steps * (warmup + updates)
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stderr(io.StringIO()):
        t0 = time.perf_counter()
        run = train(cfg, out=out)
        rows = run.metrics()[warmup:]
        wall = time.perf_counter() - t0
    row = {k: statistics.median(r[k] for r in rows) for k in KEYS}
    return {"task": task, "config": name, "envs": envs, "updates": len(rows), "wall_s": wall,
            **{k: v for k, v in CONFIGS[name].items()}, **row}  # fmt: skip


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in rows})
    names = list(CONFIGS)
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(tasks)
    for k, task in enumerate(tasks):
        ratio = {r["config"]: r["vs_emulator"] for r in rows if r["task"] == task}
        xs = [i + k * width for i in range(len(names))]
        ax.bar(xs, [ratio.get(n, 0) for n in names], width, label=task)
    ax.axhline(0.7, color="k", ls="--", lw=1, label="issue #45 goal (0.7x)")
    ax.set_xticks([i + width * (len(tasks) - 1) / 2 for i in range(len(names))])
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("end to end / emulator alone")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="quest-explore,demo-coins")
    p.add_argument("--envs", type=int, default=32)
    p.add_argument("--updates", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--configs", default=",".join(CONFIGS), help="names of CONFIGS, commas")
    p.add_argument("--out", type=Path, default=Path("bench/results/cpu-train"))
    args = p.parse_args(argv)
    meta = {"device": device_name("warp-cpu"), "versions": versions()}
    rows = []
    for task in args.tasks.split(","):
        for name in args.configs.split(","):
            row = {**run_config(task, name, args.envs, args.updates, args.warmup), **meta}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("task", "config", "sps", "vs_emulator")}))
    lines = [
        f"# CPU training vs the emulator alone ({meta['device']})",
        "",
        f"{args.envs} envs, {args.updates} measured updates after {args.warmup} (medians); "
        "`python -m bench.cpu_train`. vs_emulator: end-to-end env-steps/s over the emulator "
        "alone on the same envs, measured by the same run.",
        "",
        "| task | config | end to end | emulator alone | vs_emulator | actor ms | learner ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['config']} | {r['sps']:,.0f} | {r['emulator_sps']:,.0f} | "
            f"{r['vs_emulator']:.2f} | {r['actor_ms']:,.0f} | {r['learner_ms']:,.0f} |"
        )
    write_report(args.out, [{k: (list(v) if isinstance(v, tuple) else v) for k, v in r.items()}
                            for r in rows], lines)  # fmt: skip
    plot(rows, args.out / "vs_emulator.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
