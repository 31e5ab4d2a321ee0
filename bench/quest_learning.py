"""The built-in PPO on quest's two tasks, each trained ``--minutes`` on this machine's CPU
and then measured against a uniformly random policy on held-out starts (the same
episodes: the same starts, generator and seeds), on ours and, for the trained policy,
on PyBoy.

Tasks: ``quest-score-random`` and ``quest-explore-random`` (gbxcule/tasks/builtin/quest.py),
trained from their 12 random starts; evaluated on quest's 4 ``heldout-K`` starts, which
training never sees (another START frame, another walk). Writes into ``--out`` (default
bench/results/quest-learning), per task: ``TASK/metrics.jsonl``, ``TASK/learning_curve.png``,
``TASK/eval.gif`` (the trained policy on a held-out start); and ``results.jsonl`` (a row
per task x policy x backend) and ``summary.md``. The run directories go to ``--runs``.

Usage: python -m bench.quest_learning [--minutes 15] [--envs 16] [--tasks a,b] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from bench.own_game_learning import evaluate_policy
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "quest-learning"
TASKS = ("quest-score-random", "quest-explore-random")
HELDOUT = [f"quest/heldout-{k}" for k in range(4)]


def evaluate_task(run: Path, episodes: int, pyboy: bool, gif: Path) -> list[dict]:
    from gbxcule.games import bundled_start_path

    starts: list[str | Path] = [str(bundled_start_path(s)) for s in HELDOUT]
    runs = [("trained", "warp"), ("random", "warp")] + ([("trained", "pyboy")] if pyboy else [])
    return [
        evaluate_policy(
            run,
            policy,
            backend,
            episodes=episodes,
            starts=starts,
            gif=gif if (policy, backend) == ("trained", "warp") else None,
        )
        for policy, backend in runs
    ]


def train_task(task: str, args: argparse.Namespace) -> tuple[Path, float]:
    from gbxcule.rl.schemas import TrainConfig
    from gbxcule.rl.train import train

    cfg = TrainConfig(
        task=task,
        num_envs=args.envs,
        minutes=args.minutes,
        total_steps=0,
        num_steps=64,
        minibatch_size=256,
        seed=args.seed,
        tag=task,
    )
    t0 = time.perf_counter()
    run = train(cfg, out=args.runs or args.out / "runs").path
    return run, time.perf_counter() - t0


def summary(results: dict[str, dict], args: argparse.Namespace) -> str:
    lines = [
        "# quest: the built-in PPO against a random policy (issue #31)",
        "",
        f"Each task trained {args.minutes:g} min on this machine's CPU ({args.envs} envs, "
        "`gbxcule train` defaults otherwise) from its 12 random starts; evaluated on quest's "
        f"4 held-out starts, {args.episodes} episodes a policy (the same starts and seeds).",
        "",
        "| task | policy | backend | mean return | 95% CI | terms (mean) | mean length |",
        "|---|---|---|---:|---|---|---:|",
    ]
    for task, res in results.items():
        for r in res["rows"]:
            terms = ", ".join(f"{k} {v:.2f}" for k, v in r["mean_terms"].items())
            lines.append(
                f"| {task} | {r['policy']} | {r['backend']} | {r['mean_return']:.3f} | "
                f"{r['ci_lo']:.3f} to {r['ci_hi']:.3f} | {terms} | {r['mean_length']:.0f} |"
            )
    lines.append("")
    for task, res in results.items():
        trained, random = res["rows"][0]["mean_return"], res["rows"][1]["mean_return"]
        ratio = trained / random if random > 0 else float("inf")
        lines.append(
            f"- {task}: trained {trained:.3f} vs random {random:.3f} ({ratio:.2f}x), "
            f"{res['train_minutes']:.1f} min of training, run `{res['run']}`"
        )
        if len(res["rows"]) > 2:
            same = res["rows"][0]["episodes"] == res["rows"][2]["episodes"]
            lines.append(
                "  - trained policy on ours and on PyBoy, the same episodes: "
                + ("identical returns and lengths" if same else "**they differ**")
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-pyboy", action="store_true", help="skip the PyBoy evaluation")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--runs", type=Path, default=None, help="run directories (default OUT/runs)")
    args = ap.parse_args(argv)
    from gbxcule.rl.evaluate import plot_learning_curve

    results: dict[str, dict] = {}
    for task in args.tasks.split(","):
        run, seconds = train_task(task, args)
        folder = args.out / task
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / "metrics.jsonl", folder / "metrics.jsonl")
        shutil.copyfile(plot_learning_curve(run), folder / "learning_curve.png")
        rows = evaluate_task(run, args.episodes, not args.no_pyboy, folder / "eval.gif")
        results[task] = {"rows": rows, "train_minutes": seconds / 60, "run": run.name}
    out_rows = [
        {"task": task, **row, "train_minutes": res["train_minutes"], "run": res["run"]}
        for task, res in results.items()
        for row in res["rows"]
    ]
    write_atomic(
        args.out / "results.jsonl", "".join(json.dumps(r) + "\n" for r in out_rows).encode()
    )
    text = summary(results, args)
    write_atomic(args.out / "summary.md", text.encode())
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
