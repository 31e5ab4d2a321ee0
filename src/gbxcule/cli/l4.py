"""``gbxcule l4``: a trained policy plays the same episodes on our backend and on PyBoy.

``gbxcule l4 RUN_DIR`` compares a trained run; ``gbxcule l4 --train warp|pyboy-mp
--total-steps S`` trains one first; ``gbxcule l4 --bench OUT_DIR`` runs the benchmark
(``--seeds`` runs per direction, both directions, both references) and writes
``results.jsonl``, ``summary.md``, ``summary.json`` and ``returns_per_seed.png``.
Exit 1 when an episode is not identical on both emulators.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gbxcule.backends.registry import TASK_BACKENDS
from gbxcule.cli.command import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_trust_task,
    positive_int,
    seed_int,
    trust_if_asked,
)

HELP = "L4: play a trained policy on our backend and on PyBoy, step by step (or --bench)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", nargs="?", default=None, help="a run dir (or checkpoint) to compare")
    p.add_argument(
        "--reference",
        choices=("oracle", "stock", "both"),
        default="both",
        help="oracle: PyBoy with our boot ROM (ours boot=fast); stock: PyBoy(rom) as a user "
        "builds it (ours boot=pyboy); default both",
    )
    p.add_argument(
        "--episodes", type=positive_int, default=8, help="episodes per reference (default 8)"
    )
    p.add_argument(
        "--seed", type=seed_int, default=0, help="episode e samples with seed+e (both sides)"
    )
    p.add_argument("--device", default="cpu", help="our backend: cpu or cuda[:N] (default cpu)")
    p.add_argument("--no-state", action="store_true", help="compare only what the agent sees")
    p.add_argument("--bundles", default="repro", help="folder for repro bundles (default repro)")
    p.add_argument("--jsonl", default=None, help="also append one JSON line per episode here")
    p.add_argument(
        "--train",
        choices=TASK_BACKENDS,
        default=None,
        help="train a run on this emulator first (with --total-steps)",
    )
    p.add_argument(
        "--total-steps", type=positive_int, default=65_536, help="training budget (env steps)"
    )
    p.add_argument("--train-seed", type=seed_int, default=1)
    p.add_argument("--runs", default="runs", help="folder for trained runs (default runs)")
    p.add_argument("--bench", default=None, metavar="OUT_DIR", help="run the whole benchmark")
    p.add_argument(
        "--seeds", type=positive_int, default=10, help="--bench: training seeds per direction"
    )
    p.add_argument("--margin", type=float, default=0.5, help="TOST margin in return units")
    add_trust_task(p)


def run(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)  # see TrainConfig.torch_threads
    refs = ("oracle", "stock") if args.reference == "both" else (args.reference,)
    if args.episodes < 1:
        raise UsageError("--episodes must be >= 1")
    if args.bench is not None:
        return _bench(args, refs)
    run_dir = args.run_dir
    if args.train is not None:
        from gbxcule.rl.l4_bench import bench_config
        from gbxcule.rl.train import train

        cfg = bench_config(args.train, args.train_seed, args.total_steps)
        run_dir = train(cfg, out=args.runs).path
        print(f"trained on {args.train}: {run_dir}")
    if run_dir is None:
        raise UsageError("give RUN_DIR, --train BACKEND or --bench OUT_DIR")
    trust_if_asked(args, run_dir)
    return _compare(args, Path(run_dir), refs)


def _compare(args: argparse.Namespace, run_dir: Path, refs: tuple[str, ...]) -> int:
    from gbxcule.rl.l4 import compare_policy

    bad = 0
    for ref in refs:
        eps = compare_policy(
            run_dir,
            reference=ref,
            episodes=args.episodes,
            seed=args.seed,
            device=args.device,
            compare_state=not args.no_state,
            bundle_root=args.bundles,
        )
        print(f"reference {ref} (ours on {args.device}):")
        print("  ep  seed  return ours/pyboy  length ours/pyboy  actions  identical  first diff")
        for e in eps:
            first = (
                "-" if e.identical else f"step {e.first_diff_step} {'+'.join(e.first_diff_kinds)}"
            )
            print(
                f"  {e.episode:2d} {e.sample_seed:5d}  {e.ours_return:7.1f} / {e.pyboy_return:<7.1f}"
                f"  {e.ours_length:6d} / {e.pyboy_length:<6d}"
                f"  {'same' if e.actions_identical else 'DIFF':7s}  {str(e.identical):9s}  {first}"
            )
            if e.bundle:
                print(f"      bundle: {e.bundle}")
            if args.jsonl:
                with open(args.jsonl, "a") as f:
                    f.write(json.dumps({"run": str(run_dir), **e.to_json()}) + "\n")
        bad += sum(not e.identical for e in eps)
    print("L4 PASS: every episode identical" if not bad else f"L4 FAIL: {bad} episode(s) differ")
    return EXIT_OK if not bad else EXIT_FAILED


def _bench(args: argparse.Namespace, refs: tuple[str, ...]) -> int:
    from gbxcule.rl.l4_bench import run_benchmark, write_report

    if args.seeds < 1:
        raise UsageError("--seeds must be >= 1")
    run_benchmark(
        args.bench,
        seeds=range(1, args.seeds + 1),
        references=refs,
        total_steps=args.total_steps,
        episodes=args.episodes,
        eval_seed=args.seed,
        device=args.device,
        runs_dir=Path(args.runs),
    )
    summary = write_report(args.bench, margin=args.margin)
    print((Path(args.bench) / "summary.md").read_text())
    bad = sum(g["episodes"] - g["identical"] for g in summary["groups"])
    return EXIT_OK if not bad else EXIT_FAILED
