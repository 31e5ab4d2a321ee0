"""A learning run the way a user trains their own game: PyBoy savestates as starts, a task
file with several reward terms, ``gbxcule train``, then the trained policy against a
uniformly random one on held-out starts (the same episodes), on ours and on PyBoy.

The game is the bundled demo standing in for the user's (copied next to the task file);
the starts are PyBoy 2.8.1 states saved after seeded random play, some for training and
some held out. Writes into ``--out``: the task file, the states, the run directory,
``results.jsonl`` (one row per evaluation), ``summary.md``, and the run's
``metrics.jsonl`` and ``learning_curve.png`` (the run directory itself, with its
checkpoints, goes to ``--runs``).

Usage: python -m bench.own_game_learning [--minutes 15] [--envs 16] [--out DIR] [--runs DIR]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "own-game-learning"
TASK_FILE = '''"""The demo game as a user's game: coins (progress), new places, a time cost."""

from gbxcule.tasks import U8, U16, Novelty, Progress, StepCost, Task

TASK = Task(
    name="coins-and-places",
    rom="game.gb",
    starts=[{train}],
    actions=["left", "right", "up", "down", "noop"],
    reads={{"coins": U16(0xC102), "x": U8(0xC100), "y": U8(0xC101)}},
    reward={{
        "coins": Progress("coins"),
        "places": Novelty(keys=("x", "y"), weight=0.01),
        "time": StepCost(-0.005),
    }},
    sticky_actions=0.1,
    max_steps=100,
)
'''
BUTTONS = ("left", "right", "up", "down", "a")


def make_starts(rom: Path, out: Path, count: int, seed: int, prefix: str) -> list[str]:
    """PyBoy states after seeded random play (60-300 frames of random buttons)."""
    from gbxcule.backends.pyboy_backend import make_pyboy

    rng = np.random.default_rng(seed)
    names = []
    for k in range(count):
        pyboy = make_pyboy(rom.read_bytes())
        try:
            for _ in range(int(rng.integers(5, 25))):
                pyboy.button(BUTTONS[int(rng.integers(len(BUTTONS)))], 8)
                pyboy.tick(12, False)
            buf = io.BytesIO()
            pyboy.save_state(buf)
        finally:
            pyboy.stop(save=False)
        name = f"{prefix}{k}.state"
        write_atomic(out / name, buf.getvalue())
        names.append(name)
    return names


def evaluate_policy(
    run: Path,
    policy: str,
    backend: str,
    *,
    episodes: int,
    starts: list[str | Path] | None,
    gif: Path | None = None,
) -> dict:
    """``episodes`` episodes of ``policy`` ("trained" or "random") on ``backend`` from the
    held-out ``starts`` (None: the run's own pool; seed 7, so every policy and backend plays the same episodes): the
    episodes, the mean return with its 95 % CI, the mean length and each term's mean."""
    from gbxcule.rl.evaluate import evaluate_episodes
    from gbxcule.rl.l4 import mean_ci

    eps = evaluate_episodes(
        run, episodes=episodes, backend=backend, seed=7, starts=starts, policy=policy, gif=gif
    )
    mean, lo, hi = mean_ci([e["return"] for e in eps])
    return {
        "policy": policy,
        "backend": backend,
        "episodes": eps,
        "mean_return": mean,
        "ci_lo": lo,
        "ci_hi": hi,
        "mean_length": statistics.fmean(e["length"] for e in eps),
        "mean_terms": {k: statistics.fmean(e["terms"][k] for e in eps) for k in eps[0]["terms"]},
    }


def summary(rows: list[dict], run: Path, train_s: float, args: argparse.Namespace) -> str:
    lines = [
        "# Own-game learning run (issue #30)",
        "",
        f"Task `task.py` (coins Progress + Novelty over (x, y) + a step cost, sticky actions "
        f"0.1, 100 steps) on the demo game from {args.train_starts} PyBoy savestates; "
        f"{args.envs} envs, {train_s / 60:.1f} min of `gbxcule train` on the CPU; run "
        f"`{run.name}`. Evaluated on {args.held_out} held-out savestates, "
        f"{args.episodes} episodes a policy, the same starts and seeds.",
        "",
        "| policy | backend | mean return | 95% CI | mean coins | mean length |",
        "|---|---|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['policy']} | {r['backend']} | {r['mean_return']:.3f} | "
            f"{r['ci_lo']:.3f} to {r['ci_hi']:.3f} | {r['mean_coins']:.2f} | "
            f"{r['mean_length']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--envs", type=int, default=16)
    ap.add_argument("--train-starts", type=int, default=8)
    ap.add_argument("--held-out", type=int, default=4)
    ap.add_argument("--episodes", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument(
        "--runs", type=Path, default=None, help="where the run directory goes (default OUT/runs)"
    )
    args = ap.parse_args(argv)
    from gbxcule.demo.rom import demo_rom_path
    from gbxcule.rl.evaluate import plot_learning_curve
    from gbxcule.rl.schemas import TrainConfig
    from gbxcule.rl.train import train

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rom = Path(shutil.copyfile(demo_rom_path(), out / "game.gb"))
    train_starts = make_starts(rom, out, args.train_starts, args.seed, "train")
    held_out = make_starts(rom, out, args.held_out, args.seed + 1, "heldout")
    write_atomic(
        out / "task.py",
        TASK_FILE.format(train=", ".join(repr(n) for n in train_starts)).encode(),
    )
    cfg = TrainConfig(
        task=str(out / "task.py"),
        num_envs=args.envs,
        minutes=args.minutes,
        total_steps=0,
        num_steps=64,
        minibatch_size=256,
        seed=args.seed + 1,
        tag="own-game",
    )
    t0 = time.perf_counter()
    run = train(cfg, out=args.runs or out / "runs").path
    shutil.copyfile(run / "metrics.jsonl", out / "metrics.jsonl")
    train_s = time.perf_counter() - t0
    shutil.copyfile(plot_learning_curve(run), out / "learning_curve.png")
    starts: list[str | Path] = [str(out / n) for n in held_out]
    rows = []
    for policy, backend in (("trained", "warp"), ("random", "warp"), ("trained", "pyboy")):
        row = evaluate_policy(run, policy, backend, episodes=args.episodes, starts=starts)
        row["mean_coins"] = row["mean_terms"]["coins"]
        rows.append({**row, "train_minutes": train_s / 60, "run": str(run)})
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    coins = [m["reward/coins"] for m in metrics[-10:] if m.get("reward/coins") is not None]
    write_atomic(out / "results.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    text = summary(rows, run, train_s, args)
    if coins:
        text += f"\nTraining's last 10 updates: {statistics.fmean(coins):.2f} coins an episode.\n"
    same = rows[0]["episodes"] == rows[2]["episodes"]
    text += f"\nOurs and PyBoy, trained policy, the same {args.episodes} episodes: " + (
        "identical returns and lengths.\n" if same else "**they differ**.\n"
    )
    write_atomic(out / "summary.md", text.encode())
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
