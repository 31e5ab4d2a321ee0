"""What the exploration term costs: the visited set's memory per env and its time per step.

``tasks.Novelty(keys=("map", "x", "y"), bits=B)`` keeps a ``2**B``-bit map per env on the
backend's device and, each step, hashes the key and tests-and-sets one bit (a gather and
a scatter). This times that work alone (hash + visit + count: the runtime's part of a
step for this term) at each env count, on random keys. Writes ``results.jsonl`` and
``summary.md`` to ``--out``.

Usage: python -m bench.novelty_cost [--envs 64,16384] [--bits 16] [--device cpu] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from bench.machine_info import versions
from bench.report import write_report

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "novelty-cost"


def time_visits(n: int, bits: int, device: str, steps: int) -> dict:
    from gbxcule.tasks import Novelty

    term = Novelty(keys=("map", "x", "y"), bits=bits)
    bufs = term.make_buffers(n, torch.device(device))
    gen = torch.Generator(device=device).manual_seed(0)
    keys = [
        {k: torch.randint(0, 256, (n,), generator=gen, device=device) for k in term.keys}
        for _ in range(steps)
    ]
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for now in keys[:3]:  # warm-up
        term.gain(term.observe(now), bufs)
    sync()
    t0 = time.perf_counter()
    for now in keys:
        term.gain(term.observe(now), bufs)
    sync()
    seconds = (time.perf_counter() - t0) / steps
    memory = sum(b.numel() * b.element_size() for b in bufs.values())
    return {
        "envs": n,
        "bits": bits,
        "device": device,
        "bytes_per_env": memory / n,
        "bytes_total": memory,
        "ms_per_step": seconds * 1e3,
        "ns_per_env_step": seconds * 1e9 / n,
        "versions": versions(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", default="64,16384")
    ap.add_argument("--bits", type=int, default=16)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = [time_visits(int(n), args.bits, args.device, args.steps) for n in args.envs.split(",")]
    lines = [
        f"# Novelty: the visited set's memory and time ({args.device}, bits={args.bits}, "
        "1 Torch thread)",
        "",
        "| envs | bytes an env | total | ms a step | ns an env-step |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['envs']:,} | {r['bytes_per_env']:,.0f} | {r['bytes_total'] / 2**20:,.1f} MiB "
            f"| {r['ms_per_step']:.3f} | {r['ns_per_env_step']:.1f} |"
        )
    write_report(args.out, rows, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
