"""``gbxcule task``: ``check TASK`` tries a task on a short random rollout before it is
trained on (``gbxcule.tasks.check``): each read's range, each term's pay, the episodes'
ends and lengths, frames per step, a contact-sheet GIF, and warnings a user can act on;
with ``--pyboy`` the same rollout on PyBoy, step for step. ``export TASK`` writes a task
(a Python one included) as a TOML task file that runs no code, to share.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from gbxcule.cli.command import EXIT_FAILED, EXIT_OK, positive_int, seed_int

HELP = "task check TASK: try a task before training; task export TASK: as a task.toml"


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = sub.add_parser("check", help="a short random rollout of TASK, reported")
    check.add_argument(
        "task", metavar="TASK", help="a task file (task.toml, task.py[:NAME]) or a built-in"
    )
    check.add_argument("--envs", type=positive_int, default=16, help="envs (default 16)")
    check.add_argument("--steps", type=positive_int, default=400, help="steps (default 400)")
    check.add_argument("--seed", type=seed_int, default=0, help="starts and actions (default 0)")
    check.add_argument(
        "--backend", default="warp", choices=("warp", "pyboy", "pyboy-mp"), help="default warp"
    )
    check.add_argument(
        "--pyboy",
        action="store_true",
        help="also run the same rollout on PyBoy and compare rewards, ends and frames",
    )
    check.add_argument(
        "--gif",
        type=Path,
        help="contact sheet of the first 16 envs over the rollout (default: NAME-check.gif)",
    )
    check.add_argument("--no-gif", action="store_true", help="write no contact sheet")
    check.add_argument("--json", type=Path, help="also write the report as JSON here")
    check.add_argument("--threads", type=positive_int, help="CPU worker threads (warp)")
    export = sub.add_parser("export", help="TASK as a TOML task file (runs no code)")
    export.add_argument("task", metavar="TASK", help="a task file or a built-in")
    export.add_argument("--out", type=Path, help="write it here (default: print it)")


def run(args: argparse.Namespace) -> int:
    if args.action == "export":
        return _export(args)
    return _check(args)


def _export(args: argparse.Namespace) -> int:
    from gbxcule.files import write_atomic
    from gbxcule.tasks.load import load_task
    from gbxcule.tasks.task_file import task_to_toml

    text = task_to_toml(load_task(args.task))
    if args.out is None:
        print(text, end="")
    else:
        write_atomic(args.out, text.encode())
        print(f"wrote {args.out}: paths in it are as the task wrote them (relative to its file)")
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from gbxcule.files import write_atomic
    from gbxcule.images import tile_frames, write_gif
    from gbxcule.tasks.check import check_task, first_difference, format_report
    from gbxcule.tasks.load import load_task

    task = load_task(args.task)
    options = dict(envs=args.envs, steps=args.steps, seed=args.seed, threads=args.threads)
    report = check_task(task, kind=args.backend, **options)
    print(format_report(report))
    if not args.no_gif:
        gif = args.gif or Path(f"{task.name}-check.gif")
        shades = report.sheet_obs == "u8"  # else a colour game's luminance, grey as it is
        gap = {"gap": 3 if shades else 0}
        shots = [tile_frames(list(shot), **gap) for shot in report.sheet]
        write_gif(shots, gif, frame_ms=200, shades=shades)
        print(f"  contact sheet: {gif} ({len(report.sheet)} frames of the first envs)")
    code = EXIT_OK
    other = None
    if args.pyboy:
        other = check_task(task, kind="pyboy", **{**options, "threads": None})
        diff = first_difference(report, other)
        if diff is None:
            print(f"  PyBoy agrees: rewards, ends and frames equal at every step ({args.steps} x "
                  f"{args.envs})")  # fmt: skip
        else:
            print(f"  PyBoy differs first at {diff}")
            code = EXIT_FAILED
    if args.json is not None:
        out = {k: v for k, v in asdict(report).items() if k not in ("sheet", "trace")}
        if other is not None:
            out["pyboy_difference"] = first_difference(report, other)
        write_atomic(args.json, (json.dumps(out, indent=2) + "\n").encode())
    return code
