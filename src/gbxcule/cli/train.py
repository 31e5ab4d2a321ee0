"""``gbxcule train``: PPO on a task, into a run directory (see ``gbxcule.rl``).

Runs as one process, or under ``torchrun --nproc-per-node P [--nnodes M ...] -m gbxcule
train ...`` as P*M ranks (``--envs`` per rank; see ``gbxcule.rl.distributed``): rank 0
writes the run directory and prints; ``--resume`` needs the same world size.
"""

from __future__ import annotations

import argparse
import os
import sys

from gbxcule.cli.command import EXIT_FAILED, EXIT_OK, UsageError
from gbxcule.tasks.load import BUILTIN

HELP = "train a PPO policy on a task (run dir with metrics, checkpoints, curve, eval GIF)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--task",
        default="demo-coins",
        help=f"a built-in task ({', '.join(BUILTIN)}), a task file path/to/task.py[:NAME] "
        "or a module package.mod:NAME (default demo-coins)",
    )
    p.add_argument("--rom", default=None, help="ROM file (default: the task's)")
    p.add_argument("--state", default=None, help="start state file (default: the task's)")
    p.add_argument("--envs", type=int, default=64, help="parallel envs per rank (default 64)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument(
        "--backend",
        choices=("warp", "pyboy-mp"),
        default="warp",
        help="emulator to train on: warp (ours, default) or pyboy-mp (PyBoy 2.8.1 processes)",
    )
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--total-steps", type=int, default=None, help="env steps to train for")
    budget.add_argument("--minutes", type=float, default=None, help="wall minutes to train for")
    p.add_argument("--out", default="runs", help="folder for new run directories (default runs)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its last checkpoint with its own config",
    )
    p.add_argument(
        "--mode",
        choices=("sync", "async"),
        default=None,
        help="default: async on cuda, sync on cpu",
    )
    p.add_argument("--obs-format", choices=("packed2", "u8"), default="packed2")
    p.add_argument("--stack", type=int, default=2, help="frames per observation (default 2)")
    p.add_argument("--steps", type=int, default=128, help="rollout length per env (default 128)")
    p.add_argument("--lr", type=float, default=2.5e-4)
    p.add_argument("--epochs", type=int, default=2, help="PPO epochs per update (default 2)")
    p.add_argument("--minibatch", type=int, default=2048, help="minibatch size (default 2048)")
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--checkpoint-every", type=int, default=10)
    p.add_argument(
        "--torch-threads", type=int, default=1, help="Torch threads (default 1; 0: Torch's default)"
    )
    p.add_argument(
        "--threads", type=int, default=0, help="Warp CPU worker threads (default 0: one per core)"
    )
    p.add_argument(
        "--dist-timeout",
        type=float,
        default=300.0,
        help="torchrun: seconds a collective waits for a dead or stuck rank (default 300)",
    )
    p.add_argument("--tag", default="run")
    p.add_argument(
        "--eval-episodes", type=int, default=16, help="episodes for the final eval (0: none)"
    )
    p.add_argument(
        "--no-report", action="store_true", help="skip the learning-curve PNG and eval GIF"
    )
    p.add_argument(
        "--no-tensorboard", action="store_true", help="write no TensorBoard files (RUN/tensorboard)"
    )
    p.add_argument(
        "--wandb",
        nargs="?",
        const="offline",
        default="",
        choices=("offline", "online"),
        help="also log to Weights & Biases (default offline: wandb sync later; needs wandb)",
    )
    p.add_argument(
        "--media-every",
        type=int,
        default=25,
        help="updates between screen grids and episode clips in TensorBoard (0: none)",
    )
    p.add_argument("--debug-nan-at-update", type=int, default=-1, help=argparse.SUPPRESS)


# What --resume may be given: the budget (extended, recorded in the run) and reporting.
RESUME_OPTIONS = {"resume", "total_steps", "minutes", "no_report", "eval_episodes", "verbose"}


def _config(args: argparse.Namespace):
    from gbxcule.rl.schemas import TrainConfig

    cuda = args.device.startswith("cuda")
    total = args.total_steps if args.total_steps is not None else 0
    minutes = args.minutes if args.minutes is not None else 0.0
    if total <= 0 and minutes <= 0:
        raise UsageError("give --total-steps S or --minutes M (or --resume RUN_DIR)")
    return TrainConfig(
        task=args.task,
        rom=args.rom,
        state=args.state,
        num_envs=args.envs,
        device=args.device,
        env_backend=args.backend,
        mode=args.mode or ("async" if cuda else "sync"),
        obs_format=args.obs_format,
        stack=args.stack,
        num_steps=args.steps,
        total_steps=total,
        minutes=minutes,
        seed=args.seed,
        lr=args.lr,
        update_epochs=args.epochs,
        minibatch_size=args.minibatch,
        ent_coef=args.ent_coef,
        checkpoint_every=args.checkpoint_every,
        torch_threads=args.torch_threads,
        dist_timeout_s=args.dist_timeout,
        threads=args.threads,
        tag=args.tag,
        tensorboard=not args.no_tensorboard,
        wandb=args.wandb,
        media_every=args.media_every,
        debug_nan_at_update=args.debug_nan_at_update,
    )


def _refuse_settings_on_resume(args: argparse.Namespace) -> None:
    """A resumed run keeps its config: a setting given with --resume would be ignored,
    so it is refused, named (only the budget can change: --total-steps, --minutes)."""
    parser = argparse.ArgumentParser()
    configure(parser)
    defaults = vars(parser.parse_args([]))
    given = sorted(
        k for k, v in vars(args).items() if k in defaults and k not in RESUME_OPTIONS
        and v != defaults[k]
    )  # fmt: skip
    if given:
        names = ", ".join("--" + k.replace("_", "-") for k in given)
        raise UsageError(
            f"--resume keeps the run's settings; {names} cannot change on resume (the run's "
            "budget can: --total-steps N extends it, --minutes M trains M more minutes)"
        )


def run(args: argparse.Namespace) -> int:
    from gbxcule.rl.train import TrainingFailed, print_progress, train

    try:
        if args.resume is not None:
            _refuse_settings_on_resume(args)
            run_ = train(
                resume=args.resume,
                minutes=args.minutes,
                total_steps=args.total_steps,
                on_update=print_progress,
            )
        else:
            run_ = train(_config(args), out=args.out, on_update=print_progress)
    except TrainingFailed as exc:
        _end_live_line()
        who = f"rank {os.environ['RANK']}: " if "RANK" in os.environ else ""
        print(f"gbxcule train: {who}{exc.cause.__class__.__name__}: {exc.cause}", file=sys.stderr)
        bundle = exc.bundle if exc.bundle is not None else "written by another rank"
        print(f"gbxcule train: {who}failure bundle: {bundle}", file=sys.stderr)
        return EXIT_FAILED
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
        return EXIT_OK
    _end_live_line()
    print(f"run: {run_.path}")
    if not args.no_report:
        _report(run_, args.eval_episodes)
    return EXIT_OK


def _end_live_line() -> None:
    if sys.stderr.isatty():  # the progress line was rewritten in place
        sys.stderr.write("\n")


def _report(run_, episodes: int) -> None:
    from gbxcule.rl.evaluate import evaluate, plot_learning_curve

    try:
        print(f"learning curve: {plot_learning_curve(run_.path)}")
    except ImportError as exc:
        print(f"learning curve skipped: {exc}")
    if episodes > 0:
        gif = run_.path / "eval.gif"
        returns = evaluate(run_.path, episodes=episodes, gif=gif)
        print(
            f"eval: mean return {sum(returns) / len(returns):.3f} over {len(returns)} episodes; {gif}"
        )
