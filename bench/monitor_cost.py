"""What watching a run costs: TensorBoard (and W&B offline) logging per update, against
the update itself, at 64 envs on the CPU.

Trains ``--updates`` PPO updates of the demo task (64 envs, 128-step rollouts, the CLI's
defaults) three times in one process order: no monitoring, TensorBoard scalars only
(``media_every=0``), TensorBoard with media every update (the worst case; the default is
every 25). The logging's own time is measured around :class:`gbxcule.rl.monitor.Monitor`'s
calls; the update's from the metrics. Writes ``results.jsonl`` and ``summary.md``.

Usage: python -m bench.monitor_cost [--updates 6] [--envs 64] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.report import write_report

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "monitor-cost"


def measure(label: str, envs: int, updates: int, **settings) -> dict:
    from gbxcule.rl import monitor as mon
    from gbxcule.rl.schemas import TrainConfig
    from gbxcule.rl.train import train

    spent = {"log": 0.0, "media": 0.0}
    originals = {"log": mon.Monitor.log, "media": mon.Monitor.media}

    def timed(name):
        def call(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return originals[name](self, *args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t0

        return call

    mon.Monitor.log, mon.Monitor.media = timed("log"), timed("media")
    try:
        with tempfile.TemporaryDirectory() as out:
            cfg = TrainConfig(num_envs=envs, total_steps=envs * 128 * updates, **settings)
            run = train(cfg, out=out)
            records = run.metrics()
    finally:
        mon.Monitor.log, mon.Monitor.media = originals["log"], originals["media"]
    wall = statistics.median(r["wall_s"] for r in records[1:])  # the first one warms up
    per_update = (spent["log"] + spent["media"]) / len(records)
    return {
        "label": label,
        "envs": envs,
        "updates": len(records),
        "update_ms": wall * 1e3,
        "log_ms": spent["log"] * 1e3 / len(records),
        "media_ms": spent["media"] * 1e3 / len(records),
        "share": per_update / wall,
        "settings": settings,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=6)
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    rows = [
        measure("no monitoring", args.envs, args.updates, tensorboard=False, media_every=0),
        measure("TensorBoard scalars", args.envs, args.updates, tensorboard=True, media_every=0),
        measure(
            "TensorBoard + media every update",
            args.envs,
            args.updates,
            tensorboard=True,
            media_every=1,
        ),  # fmt: skip
    ]
    lines = [
        f"# Monitoring cost per update ({args.envs} envs, 128-step rollouts, CPU)",
        "",
        "| monitoring | update ms (median) | scalars ms | media ms | share of an update |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['update_ms']:,.0f} | {r['log_ms']:.2f} | {r['media_ms']:.2f} "
            f"| {r['share']:.2%} |"
        )
    write_report(args.out, rows, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
