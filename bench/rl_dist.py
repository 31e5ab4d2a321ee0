"""Scaling of ``gbxcule train`` on one CPU box: 1 rank x 2 threads vs 2 ranks x 1 thread.

A third layout, 1 rank x 1 thread, is the control: it separates what the second
process buys from what a second OpenMP/Warp thread costs on a shared, busy box.

Both layouts train demo-coins on the same 64 envs with the same seeds and settings
(the 2-rank run owns envs 0-31 on rank 0 and 32-63 on rank 1) for the same wall budget;
the 1-rank run gets 2 Torch threads and 2 Warp worker threads, each rank of the 2-rank
run 1 and 1. Writes ``results.jsonl`` (one record per layout: SPS, returns), both runs'
metrics, ``curve.png`` (episode return vs env steps) and ``summary.md``.

    python -m bench.rl_dist --minutes 3 --out bench/results/rl-dist
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["--task", "demo-coins", "--steps", "128", "--epochs", "2", "--minibatch", "1024"]
TRAIN += ["--lr", "3e-4", "--seed", "1", "--no-report", "--checkpoint-every", "0"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _layouts(minutes: float) -> dict[str, list[str]]:
    budget = ["--minutes", str(minutes)]
    one = [sys.executable, "-m", "gbxcule", "train", *TRAIN, *budget]
    one += ["--envs", "64", "--torch-threads", "2", "--threads", "2"]
    two = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]
    two += ["--master-addr=127.0.0.1", f"--master-port={_port()}", "-m", "gbxcule", "train"]
    two += [*TRAIN, *budget, "--envs", "32", "--torch-threads", "1", "--threads", "1"]
    ctl = [sys.executable, "-m", "gbxcule", "train", *TRAIN, *budget]
    ctl += ["--envs", "64", "--torch-threads", "1", "--threads", "1"]
    return {"1 rank x 2 threads": one, "2 ranks x 1 thread": two, "1 rank x 1 thread": ctl}


def _summarise(name: str, metrics: list[dict], wall: float) -> dict:
    rets = [r["episode_return"] for r in metrics if r.get("episode_return") is not None]
    steps = [r["env_steps"] for r in metrics]
    first = next((r["env_steps"] for r in metrics if (r.get("episode_return") or 0) >= 2.0), None)
    return {
        "layout": name,
        "updates": len(metrics),
        "env_steps": steps[-1] if steps else 0,
        "process_wall_s": wall,
        "train_s": sum(r["wall_s"] for r in metrics),
        "sps_median": statistics.median(r["sps"] for r in metrics[1:])
        if len(metrics) > 1
        else None,
        "sps_mean": (steps[-1] / sum(r["wall_s"] for r in metrics)) if metrics else None,
        "return_last10": statistics.fmean(rets[-10:]) if rets else None,
        "steps_to_return_2": first,
        "load_avg_before": os.getloadavg()[0],
    }


def _plot(runs: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for name, metrics in runs.items():
        pts = [(r["env_steps"], r["episode_return"]) for r in metrics if r.get("episode_return")]
        if pts:
            ax.plot(*zip(*pts), label=name, alpha=0.8)
    ax.set_xlabel("env steps (all ranks)")
    ax.set_ylabel("mean episode return")
    ax.set_title("demo-coins, 64 envs in all, same seeds: layouts on 2 shared cores", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=3.0)
    p.add_argument("--out", default="bench/results/rl-dist")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    runs, records = {}, []
    for i, (name, cmd) in enumerate(_layouts(args.minutes).items()):
        runs_dir = out / f"runs{i}"
        shutil.rmtree(runs_dir, ignore_errors=True)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        subprocess.run([*cmd, "--out", str(runs_dir)], env=env, check=True)
        wall = time.perf_counter() - t0
        (run,) = [d for d in runs_dir.iterdir() if d.is_dir()]
        metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x]
        slug = ("one_rank_2t", "two_ranks_1t", "one_rank_1t")[i]
        shutil.copy(run / "metrics.jsonl", out / f"metrics_{slug}.jsonl")
        shutil.copy(run / "meta.json", out / f"meta_{slug}.json")
        shutil.rmtree(runs_dir)
        rec = {**_summarise(name, metrics, wall), "load_avg_before": load, "cmd": cmd}
        records.append(rec)
        runs[name] = metrics
        print(json.dumps(rec), flush=True)
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _plot(runs, out / "curve.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
