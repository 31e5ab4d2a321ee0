"""Does the built-in PPO learn, with its defaults, on games it was not tuned on? (issue #45)

Each task file is trained with ``gbxcule train`` as a user runs it (its defaults, only
``--minutes``, ``--seed``, ``--envs`` given), one process per run, on this machine's CPU;
then the trained policy and a uniformly random one play the same episodes (the same starts,
generator and seeds) on ours: from held-out starts (how it generalises) and from the task's
own training pool (what a user evaluating on their own starts sees). A task "beats random" when the two 95% CIs do not
overlap; the paired difference (trained minus random, episode by episode) is given with its
CI too.

The tasks (``TASKS``) cover several shapes on games of several genres, all written in our
assembler: score and survival on the falling-block puzzle, dense and sparse rewards on the
sliding-tile puzzle, height on the vertical platformer, and the demo's and quest's own. Each
names its held-out starts: start states of the same recipe as its training pool that
training never sees.

Writes into ``--out`` (default bench/results/genre-learning): ``results.jsonl`` (a row per
task x seed x policy, appended), ``summary.md`` (every row there) and ``returns.png``
(trained vs random per task, with CIs), and per run ``TASK-sSEED/metrics.jsonl`` and
``learning_curve.png``. Run directories go to ``--runs``.

Usage: python -m bench.genre_learning [--tasks a,b] [--minutes 10] [--seeds 1] [--envs 32]
       [--episodes 32] [--eval-on heldout,pool] [--reuse] [--out DIR] [--runs DIR]
       [--label TEXT] [-- extra train flags]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from gbxcule.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results" / "genre-learning"
TASK_DIR = ROOT / "examples" / "tasks"


def heldout(game: str, names: list[str]) -> list[str]:
    return [f"bundled:{game}/{n}" for n in names]


# task file (under examples/tasks) -> (shape, held-out starts)
TASKS: dict[str, tuple[str, list[str]]] = {
    "blocks-lines.toml": ("score", heldout("blocks", [f"heldout-{k}" for k in range(4)])),
    "blocks-survive.toml": ("survival", heldout("blocks", [f"heldout-{k}" for k in range(4)])),
    "tiles-in-place.toml": (
        "dense puzzle",
        heldout("tiles", [f"heldout-medium-{k}" for k in range(4)]),
    ),
    "tiles-solve-easy.toml": (
        "sparse",
        heldout("tiles", [f"heldout-easy-{k}" for k in range(4)]),
    ),
    "climb-height.toml": (
        "exploration (height)",
        heldout("climb", [f"heldout-{k}" for k in range(4)]),
    ),
    "demo-coins.json": ("score", []),
    "demo-colour-coins.toml": ("score (Game Boy Color)", []),
    "quest-explore-random.toml": (
        "exploration",
        heldout("quest", [f"heldout-{k}" for k in range(4)]),
    ),
}
# train flags a task needs: a Game Boy Color game observes in colour (luma or rgb)
TASK_FLAGS: dict[str, list[str]] = {"demo-colour-coins.toml": ["--obs-format", "luma"]}


def train_run(task: Path, args: argparse.Namespace, seed: int, runs: Path) -> Path:
    """One ``gbxcule train`` process; its run directory."""
    out = runs / f"{task.stem}-s{seed}-{time.strftime('%Y%m%dT%H%M%S')}"
    cmd = [
        sys.executable, "-m", "gbxcule", "train", "--task", str(task),
        "--minutes", str(args.minutes), "--seed", str(seed), "--envs", str(args.envs),
        "--out", str(out), "--tag", task.stem, "--no-report",
        *TASK_FLAGS.get(task.name, []), *args.train_flags,
    ]  # fmt: skip
    print("$ " + " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True)
    made = [p for p in out.iterdir() if p.is_dir() and (p / "config.json").is_file()]
    if len(made) != 1:
        raise RuntimeError(f"expected one run directory in {out}, found {made}")
    return made[0]


def newest_run(task: Path, seed: int, runs: Path) -> Path:
    """The run directory of the newest ``train_run`` of ``task`` and ``seed`` under ``runs``."""
    outs = sorted(runs.glob(f"{task.stem}-s{seed}-*"))
    made = [p for out in outs[-1:] for p in out.iterdir() if (p / "config.json").is_file()]
    if not made:
        raise FileNotFoundError(f"no run of {task.name} seed {seed} under {runs}")
    return made[0]


def evaluate(run: Path, starts: list[str], episodes: int) -> dict[str, dict]:
    """Trained and random on the same episodes from ``starts`` (none: the task's own
    pool), and their paired difference."""
    from bench.own_game_learning import evaluate_policy
    from gbxcule.rl.l4 import mean_ci

    paths: list[str | Path] = []
    if starts:
        from gbxcule.games import bundled_start_path

        paths = [str(bundled_start_path(s.removeprefix("bundled:"))) for s in starts]
    rows = {
        policy: evaluate_policy(run, policy, "warp", episodes=episodes, starts=paths or None)
        for policy in ("trained", "random")
    }
    diffs = [
        t["return"] - r["return"]
        for t, r in zip(rows["trained"]["episodes"], rows["random"]["episodes"], strict=True)
    ]
    mean, lo, hi = mean_ci(diffs)
    rows["paired"] = {"mean": mean, "ci_lo": lo, "ci_hi": hi}
    return rows


def summary(rows: list[dict]) -> str:
    lines = [
        "# The built-in PPO's defaults on games of several genres (issue #45)",
        "",
        "`gbxcule train --task T --minutes M --seed S --envs E` (defaults otherwise) on this "
        "machine's CPU, then the trained policy and a uniformly random one on the same "
        "episodes from held-out starts (the task's own pool where it has none). Beats "
        "random: the two 95% CIs do not overlap. All runs in `results.jsonl`, oldest first.",
        "",
        "| run (UTC) | label | task | shape | min | seed | updates | eval starts | "
        "trained (95% CI) | random (95% CI) | paired difference (95% CI) | beats random |",
        "|---|---|---|---|---:|---:|---:|---|---|---|---|---|",
    ]
    for r in rows:
        t, b, p = r["trained"], r["random"], r["paired"]
        beats = "yes" if t["ci_lo"] > b["ci_hi"] else "no"
        lines.append(
            f"| {time.strftime('%Y-%m-%d %H:%M', time.gmtime(r['timestamp']))} | {r['label']} | "
            f"{r['task']} | {r['shape']} | {r['minutes']:g} | {r['seed']} | {r['updates']} | "
            f"{r.get('eval_on', 'held-out')} | "
            f"{t['mean']:.3f} ({t['ci_lo']:.3f} to {t['ci_hi']:.3f}) | "
            f"{b['mean']:.3f} ({b['ci_lo']:.3f} to {b['ci_hi']:.3f}) | "
            f"{p['mean']:+.3f} ({p['ci_lo']:+.3f} to {p['ci_hi']:+.3f}) | {beats} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    for k, r in enumerate(rows):
        for dx, who, colour in ((-0.15, "trained", "tab:blue"), (0.15, "random", "tab:grey")):
            v = r[who]
            ax.errorbar(
                k + dx, v["mean"], yerr=[[v["mean"] - v["ci_lo"]], [v["ci_hi"] - v["mean"]]],
                fmt="o", color=colour, label=who if k == 0 else None, capsize=3,
            )  # fmt: skip
    ticks = [f"{r['task']}\ns{r['seed']} {r.get('eval_on', 'held-out')}" for r in rows]
    ax.set_xticks(range(len(rows)), ticks, fontsize=7)
    ax.set_ylabel("mean return (95% CI)")
    ax.set_yscale("symlog")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _brief(policy_row: dict) -> dict:
    return {
        "mean": policy_row["mean_return"],
        "ci_lo": policy_row["ci_lo"],
        "ci_hi": policy_row["ci_hi"],
        "mean_length": policy_row["mean_length"],
        "mean_terms": policy_row["mean_terms"],
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--envs", type=int, default=32)
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--runs", type=Path, default=None, help="run directories (default OUT/runs)")
    ap.add_argument("--label", default="")
    ap.add_argument(
        "--eval-on", default="heldout,pool",
        help="evaluate on the held-out starts, the task's own training pool, or both",
    )  # fmt: skip
    ap.add_argument(
        "--reuse", action="store_true",
        help="evaluate the newest run of each task and seed under --runs instead of training",
    )  # fmt: skip
    args = ap.parse_args(argv)
    args.train_flags = extra
    unknown = [t for t in args.tasks.split(",") if t not in TASKS]
    if unknown:
        ap.error(f"unknown task(s) {unknown}; known: {', '.join(TASKS)}")
    from gbxcule.rl.evaluate import plot_learning_curve

    runs = args.runs or args.out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    for name in args.tasks.split(","):
        shape, starts = TASKS[name]
        for seed in (int(s) for s in args.seeds.split(",")):
            task = TASK_DIR / name
            run = newest_run(task, seed, runs) if args.reuse else train_run(task, args, seed, runs)
            folder = args.out / f"{Path(name).stem}-s{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(run / "metrics.jsonl", folder / "metrics.jsonl")
            shutil.copyfile(plot_learning_curve(run), folder / "learning_curve.png")
            updates = sum(1 for _ in (run / "metrics.jsonl").open())
            for eval_on in args.eval_on.split(","):
                if eval_on not in ("heldout", "pool"):
                    ap.error(f"--eval-on takes heldout and/or pool, not {eval_on!r}")
                on = starts if eval_on == "heldout" else []
                ev = evaluate(run, on, args.episodes)
                row = {
                    "timestamp": time.time(),
                    "label": args.label,
                    "task": Path(name).stem,
                    "shape": shape,
                    "minutes": args.minutes,
                    "seed": seed,
                    "envs": args.envs,
                    "train_flags": extra,
                    "updates": updates,
                    "eval_on": "held-out" if on else "training pool",
                    "heldout": on,
                    "run": run.name,
                    "trained": _brief(ev["trained"]),
                    "random": _brief(ev["random"]),
                    "paired": ev["paired"],
                }
                with results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                all_rows = [json.loads(x) for x in results.read_text().splitlines() if x]
                write_atomic(args.out / "summary.md", summary(all_rows).encode())
                plot(all_rows, args.out / "returns.png")
                print(summary([row]).splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
