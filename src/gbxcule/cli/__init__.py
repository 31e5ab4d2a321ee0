"""The ``gbxcule`` command line (also ``python -m gbxcule``).

Every subcommand is a module of this package with ``HELP`` (one line),
``configure(parser)`` (adds its arguments) and ``run(args)`` (returns the exit
code), named in :data:`COMMANDS`. To add a command, write the module and name it
there; ``main`` needs no change.

Exit codes: 0 success, 1 the check failed (divergence, unsupported ROM),
2 bad usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from types import ModuleType

from gbxcule.cli.command import EXIT_USAGE, UsageError

COMMANDS: dict[str, str] = {
    "verify": "gbxcule.cli.verify",
    "info": "gbxcule.cli.info",
    "demo": "gbxcule.cli.demo",
    "bench": "gbxcule.cli.bench",
    "record": "gbxcule.cli.record",
    "train": "gbxcule.cli.train",
    "eval": "gbxcule.cli.eval",
    "l4": "gbxcule.cli.l4",
    "task": "gbxcule.cli.task_command",
    "states": "gbxcule.cli.states",
}


def command(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gbxcule", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        cmd = command(name)
        p = sub.add_parser(name, help=cmd.HELP, description=cmd.HELP)
        cmd.configure(p)
        p.add_argument(
            "--verbose", action="store_true", help="show Warp's module build and load messages"
        )
    return parser


NO_DRIVER = "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver."


def quiet_warp(verbose: bool) -> None:
    """Warp logs every module load at INFO, and its native init warns on every start of a
    machine without a GPU driver: a command shows both only with --verbose (anything
    else the init prints still shows)."""
    import warp

    warp.config.log_level = warp.LOG_INFO if verbose else warp.LOG_WARNING
    if verbose:
        return
    import os
    import tempfile

    with tempfile.TemporaryFile() as caught:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(caught.fileno(), 2)
        try:
            warp.init()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        caught.seek(0)
        lines = caught.read().decode(errors="replace").splitlines()
    for line in lines:
        if not line.startswith(NO_DRIVER):
            print(line, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from gbxcule.cli.playback import RolloutError

    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what was typed, for resume
    quiet_warp(args.verbose)
    formatted = warnings.formatwarning

    def sentence(message, category, filename, lineno, line=None) -> str:
        return f"gbxcule {args.command}: warning: {message}\n"

    warnings.formatwarning = sentence  # a sentence, not a source line
    try:
        return command(args.command).run(args)
    except (UsageError, RolloutError, FileNotFoundError) as exc:
        print(f"gbxcule {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, ImportError) as exc:
        print(f"gbxcule {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        warnings.formatwarning = formatted
