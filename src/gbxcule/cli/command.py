"""What every ``gbxcule`` subcommand shares: exit codes, the usage error, the bench loader."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from gbxcule.files import checkout_root

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments; printed without a traceback, exit code 2."""


def _int_at_least(low: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not {what}")
        return value

    parse.__name__ = what  # argparse names the type in its message
    return parse


positive_int = _int_at_least(1, "a count >= 1")
nonnegative_int = _int_at_least(0, "a count >= 0")


def seed_int(text: str) -> int:
    """A seed: a whole number 0 .. 2**63 - 1 (what Torch and NumPy generators take)."""
    value = nonnegative_int(text)
    if value >= 2**63:
        raise argparse.ArgumentTypeError(f"seed {value} is not below 2**63")
    return value


def add_trust_task(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust-task",
        action="store_true",
        help="run the task.py of a run trained elsewhere (Python code: read it first); "
        "it joins your trusted tasks",
    )


def trust_if_asked(args: argparse.Namespace, run: str | Path | None) -> None:
    """``--trust-task``: trust the task file of ``run`` (a run folder or a checkpoint in it)."""
    if not getattr(args, "trust_task", False) or run is None:
        return
    from gbxcule.tasks import trust_run_task

    folder = Path(run) if Path(run).is_dir() else Path(run).parents[1]
    sha = trust_run_task(folder)
    print(f"trusting {folder / 'task.py'} (sha256 {sha[:16]})", file=sys.stderr)


def bench_module(name: str) -> ModuleType:
    """``bench.<name>`` of the source checkout (``bench`` is not part of the installed package)."""
    try:
        return importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name is None or not f"bench.{name}".startswith(exc.name):
            raise
    root = checkout_root()
    path = f"bench/{name.replace('.', '/')}.py"
    if root is None or not (root / path).is_file():
        raise UsageError(
            f"this needs {path} of a gbxcule source checkout; the installed package does not "
            "include the benchmarks and the micro-ROM suite (clone the repository and run it there)"
        )
    sys.path.insert(0, str(root))
    return importlib.import_module(f"bench.{name}")
