"""``gbxcule eval RUN_DIR``: the mean return of a trained policy over fresh episodes."""

from __future__ import annotations

import argparse
import statistics

from gbxcule.cli.command import EXIT_OK

HELP = "mean return of a trained policy (run dir or checkpoint) over fresh episodes"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a run directory written by gbxcule train")
    p.add_argument("--episodes", type=int, default=32, help="fresh episodes (default 32)")
    p.add_argument(
        "--backend", choices=("warp", "pyboy"), default="warp", help="emulator to run the policy on"
    )
    p.add_argument(
        "--deterministic", action="store_true", help="argmax actions instead of sampling"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gif", default=None, help="write env 0's episode as a GIF here")


def run(args: argparse.Namespace) -> int:
    import torch

    from gbxcule.rl.evaluate import evaluate

    torch.set_num_threads(1)  # see TrainConfig.torch_threads

    returns = evaluate(
        args.run_dir,
        episodes=args.episodes,
        backend=args.backend,
        deterministic=args.deterministic,
        seed=args.seed,
        gif=args.gif,
    )
    sd = statistics.pstdev(returns) if len(returns) > 1 else 0.0
    print(
        f"mean return {statistics.fmean(returns):.3f} (sd {sd:.3f}) over {len(returns)} episodes on {args.backend}"
    )
    return EXIT_OK
