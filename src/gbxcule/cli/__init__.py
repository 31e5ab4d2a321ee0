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


def quiet_warp(verbose: bool) -> None:
    """Warp logs every module load at INFO; a command shows them only with --verbose."""
    import warp

    warp.config.log_level = warp.LOG_INFO if verbose else warp.LOG_WARNING


def main(argv: list[str] | None = None) -> int:
    from gbxcule.cli.rollout import RolloutError

    parser = build_parser()
    args = parser.parse_args(argv)
    quiet_warp(args.verbose)
    try:
        return command(args.command).run(args)
    except (UsageError, RolloutError, FileNotFoundError) as exc:
        print(f"gbxcule {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, ImportError) as exc:
        print(f"gbxcule {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
