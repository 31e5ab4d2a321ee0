"""``gbxcule bench``: the benchmark sweep (``bench/sweep.py`` of the source checkout)."""

from __future__ import annotations

import argparse

from gbxcule.cli.command import UsageError, bench_module

HELP = "benchmark sweep of every backend (bench/sweep.py; needs the source checkout)"


def configure(p: argparse.ArgumentParser) -> None:
    try:
        sweep = bench_module("sweep")
    except UsageError:  # an installed package without the checkout: running it says so
        p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the sweep")
        return
    sweep.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    return bench_module("sweep").run(args)
