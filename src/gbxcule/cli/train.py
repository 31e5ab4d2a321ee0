"""``gbxcule train``: PPO on a task, into a run directory (see ``gbxcule.rl``).

Runs as one process, as P ranks on this machine (``--nproc P``: ``gbxcule.rl.launch``,
nothing listening beyond loopback), or under ``torchrun --nproc-per-node P [--nnodes M
...] -m gbxcule train ...`` as P*M ranks (``--envs`` per rank; see
``gbxcule.rl.distributed``): rank 0 writes the run directory and prints; ``--resume``
needs the same world size.
"""

from __future__ import annotations

import argparse
import os
import sys

from gbxcule.cli.command import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_trust_task,
    nonnegative_int,
    positive_int,
    trust_if_asked,
)
from gbxcule.tasks.load import BUILTIN

HELP = "train a PPO policy on a task (run dir with metrics, checkpoints, curve, eval GIF)"


def configure(p: argparse.ArgumentParser) -> None:
    """The ``TrainConfig`` fields that carry a flag (``rl/schemas.py``: each setting
    declared once), then the options of the command itself (where the run goes, resume,
    the report)."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for f in config_fields():
        kw = dict(f.metadata["flag"])
        name, hidden = kw.pop("name"), kw.pop("hidden", False)
        group = kw.pop("group", None)
        default = kw.pop("cli_default", f.default)
        help_text = kw.pop("help") or None
        if f.name == "task":
            help_text = f"{help_text} (built-in: {', '.join(BUILTIN)})"
        if "action" not in kw:
            kw.setdefault("type", type(f.default) if f.default is not None else str)
            if kw.get("nargs") == "?":
                kw.pop("type")
            if "choices" not in kw:
                kw["metavar"] = name.lstrip("-").upper().replace("-", "_")
            if default is not None and default != "":
                help_text = (
                    f"{help_text} (default {default})" if help_text else f"default {default}"
                )
        target = p
        if group is not None:
            if group not in groups:
                groups[group] = p.add_mutually_exclusive_group()
            target = groups[group]
        target.add_argument(
            name,
            dest=f.name,
            default=default,
            help=argparse.SUPPRESS if hidden else help_text,
            **kw,
        )
    p.add_argument("--out", default="runs", help="folder for new run directories (default runs)")
    p.add_argument(
        "--resume",
        default=None,
        metavar="RUN_DIR",
        help="continue a run from its last checkpoint with its own config",
    )
    p.add_argument(
        "--eval-episodes",
        type=nonnegative_int,
        default=16,
        help="episodes for the final eval (0: none)",
    )
    p.add_argument(
        "--no-report", action="store_true", help="skip the learning-curve PNG and eval GIF"
    )
    p.add_argument(
        "--nproc",
        type=positive_int,
        default=1,
        metavar="P",
        help="P ranks on this machine, started here with their rendezvous on loopback only "
        "(torchrun's listens on every interface; use torchrun across machines)",
    )
    add_trust_task(p)


def config_fields() -> list:
    """The ``TrainConfig`` fields that are ``gbxcule train`` options."""
    import dataclasses

    from gbxcule.rl.schemas import TrainConfig

    return [f for f in dataclasses.fields(TrainConfig) if "flag" in f.metadata]


# What --resume may be given: the budget (extended, recorded in the run) and reporting.
RESUME_OPTIONS = {"resume", "total_steps", "minutes", "no_report", "eval_episodes", "verbose",
                  "trust_task", "nproc"}  # fmt: skip


def _config(args: argparse.Namespace):
    from gbxcule.rl.schemas import TrainConfig

    if (args.total_steps or 0) <= 0 and (args.minutes or 0) <= 0:
        raise UsageError("give --total-steps S or --minutes M (or --resume RUN_DIR)")
    given = {f.name: getattr(args, f.name) for f in config_fields()}
    given["total_steps"] = args.total_steps or 0
    given["minutes"] = args.minutes or 0.0
    given["mode"] = args.mode or "async"
    return TrainConfig(**given)


def _refuse_settings_on_resume(args: argparse.Namespace) -> None:
    """A resumed run keeps its config: a setting given with --resume would be ignored,
    so it is refused, named (only the budget can change: --total-steps, --minutes), even
    when its value is the default (``--envs 64``)."""
    parser = argparse.ArgumentParser(add_help=False)
    configure(parser)
    for action in parser._actions:  # parse again keeping only what was typed
        action.default = argparse.SUPPRESS
    typed = getattr(args, "argv", None)
    if typed is None:  # called without main(): fall back to values off their defaults
        defaults = vars(_default_args())
        names = [k for k, v in vars(args).items() if k in defaults and v != defaults[k]]
    else:
        rest = typed[typed.index("train") + 1 :] if "train" in typed else typed
        names = list(vars(parser.parse_known_args(rest)[0]))
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    given = sorted(flags[k] for k in names if k in flags and k not in RESUME_OPTIONS)
    if given:
        names_text = ", ".join(given)
        raise UsageError(
            f"--resume keeps the run's settings; {names_text} cannot change on resume (the "
            "run's budget can: --total-steps N extends it, --minutes M trains M more minutes)"
        )


def _default_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    return parser.parse_args([])


def _launch_ranks(args: argparse.Namespace) -> int:
    """``--nproc P``: this command again as P ranks (``rl/launch.py``), without --nproc."""
    from gbxcule.rl.launch import run_local_ranks

    if "RANK" in os.environ:
        raise UsageError("--nproc starts ranks itself; under torchrun, leave it out")
    typed = list(getattr(args, "argv", None) or sys.argv[1:])
    rest, skip = [], False
    for word in typed:
        if skip:
            skip = False
        elif word == "--nproc":
            skip = True
        elif not word.startswith("--nproc="):
            rest.append(word)
    return run_local_ranks(args.nproc, rest, timeout_s=args.dist_timeout_s)


def run(args: argparse.Namespace) -> int:
    from gbxcule.rl.train import TrainingFailed, print_progress, train

    if args.nproc > 1:
        return _launch_ranks(args)
    try:
        if args.resume is not None:
            _refuse_settings_on_resume(args)
            trust_if_asked(args, args.resume)
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
