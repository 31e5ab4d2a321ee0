"""Nsight Compute on one launch of the step kernel: occupancy, lane activity, branch
efficiency and local-memory traffic, against what the CPU-side estimates predicted.

Issue #16 asks for these three to check the kernel-efficiency issue's estimates against
reality: the divergence model (``bench/divergence.py``, history/performance.md: a warp
would be 52-71 % busy on the demo game and 11-50 % on game-like code) and the register
budget (``bench/cuda_build_report.py``: 255 registers, so at most 8 warps of 64 per SM,
12.5 % theoretical occupancy, and a stack that lives in local memory).

``ncu`` profiles the fourth ``step_kernel`` launch of a one-step ``bench.sweep`` run (the
boot ROM runs in it at construction and again at ``reset``, then come the warm-up steps:
the second of these, 24 frames of seeded random buttons) on the demo game or a named ROM,
with the sections and the
local-memory byte counters; if ncu refuses those counters the sections alone are kept.
Its CSV (``--page details``) is parsed into ``results.jsonl`` (every metric of the
launch) and ``summary.md`` (the ones the issue names, beside the estimates); the raw
CSV is kept as ``ncu-<rom>-<envs>.csv``.

Usage: python -m bench.ncu_step [--envs 16384] [--rom demo|quest|busy|game] [--out DIR]
       python -m bench.ncu_step --parse FILE.csv   (re-read a kept CSV)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "ncu"
SECTIONS = (
    "LaunchStats",
    "Occupancy",
    "SpeedOfLight",
    "WarpStateStats",
    "SourceCounters",
    "MemoryWorkloadAnalysis",
)
LOCAL_BYTES = (
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
)
# What the summary shows, by the names ncu's sections give them (all metrics are kept).
SHOWN = (
    ("Duration", "the one launch (24 frames per env)"),
    ("Registers Per Thread", "cuda_build_report: 255"),
    ("Theoretical Occupancy", "12.5 % at 255 registers (8 of 64 warps per SM)"),
    ("Achieved Occupancy", "at most the theoretical"),
    ("Avg. Active Threads Per Warp", "divergence model: 17-23 of 32 on the demo game"),
    ("Avg. Not Predicated Off Threads Per Warp", ""),
    ("Branch Efficiency", ""),
    ("Avg. Divergent Branches", ""),
    ("Local Memory Spilling Requests", "cuda_build_report: 864 B of spill stores per thread"),
    (LOCAL_BYTES[0], "local loads: stack and spills"),
    (LOCAL_BYTES[1], "local stores"),
    ("Memory Throughput", ""),
    ("Compute (SM) Throughput", ""),
)


def ncu_command(
    ncu: str, envs: int, rom: str, with_local: bool, mem_layout: str = "interleaved"
) -> list[str]:
    """The ncu command line: one step_kernel launch, its details page as CSV, the backend's
    state in ``mem_layout`` (the CUDA backend's default: interleaved)."""
    cmd = [ncu, "--target-processes", "all", "--kernel-name", "regex:step_kernel"]
    cmd += ["--launch-skip", "3", "--launch-count", "1"]
    for section in SECTIONS:
        cmd += ["--section", section]
    if with_local:
        cmd += ["--metrics", ",".join(LOCAL_BYTES)]
    cmd += ["--csv", "--page", "details", "--print-units", "base"]
    cmd += [sys.executable, "-m", "bench.sweep", "--backends", "warp-cuda", "--envs", str(envs)]
    cmd += ["--steps", "1", "--render", "off", "--out", "/tmp/gbx-ncu-sweep"]
    cmd += ["--mem-layout", mem_layout]
    if rom != "demo":
        cmd += ["--rom", rom]
    return cmd


def parse_details(text: str) -> list[dict[str, Any]]:
    """ncu's ``--csv --page details`` output (other lines skipped): one dict per metric,
    ``kernel``, ``section``, ``name``, ``unit``, ``value`` (a float where it is a number)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    if not rows or "Metric Name" not in rows[0]:
        return []
    out = []
    for r in rows:
        if not r.get("Metric Name"):
            continue  # a rule's row (newer ncu versions add their columns)
        raw = (r.get("Metric Value") or "").replace(",", "")
        try:
            value: Any = float(raw)
        except ValueError:
            value = r.get("Metric Value")
        out.append(
            {
                "kernel": r.get("Kernel Name", ""),
                "section": r.get("Section Name", ""),
                "name": r["Metric Name"],
                "unit": r.get("Metric Unit", ""),
                "value": value,
            }
        )
    return out


_EXCESS = re.compile(r"total of (\d+) excessive sectors \((\d+)% of the total (\d+) sectors\)")


def excess_sectors(text: str) -> dict[str, int] | None:
    """The uncoalesced-access rule's figures in ncu's output: excess and total global
    sectors (the rule is absent where the accesses coalesce well enough)."""
    m = _EXCESS.search(text)
    if m is None:
        return None
    return {"excess": int(m.group(1)), "percent": int(m.group(2)), "total": int(m.group(3))}


def summary_lines(metrics: list[dict[str, Any]], label: str) -> list[str]:
    by_name = {m["name"]: m for m in metrics}
    lines = [
        f"## {label}",
        "",
        f"Kernel `{metrics[0]['kernel'][:80]}`." if metrics else "No metrics parsed.",
        "",
        "| metric | value | unit | estimate before the GPU |",
        "|---|---:|---|---|",
    ]
    for name, estimate in SHOWN:
        m = by_name.get(name)
        if m is None:
            lines.append(f"| {name} | not reported | | {estimate} |")
            continue
        v = m["value"]
        shown = f"{v:,.2f}" if isinstance(v, float) else str(v)
        lines.append(f"| {name} | {shown} | {m['unit']} | {estimate} |")
    active = by_name.get("Avg. Active Threads Per Warp")
    if active is not None and isinstance(active["value"], float):
        lines += ["", f"Lanes busy per issued instruction: {active['value'] / 32:.1%} of 32."]
    return lines


def run(envs: int, rom: str, out: Path, mem_layout: str = "interleaved") -> dict[str, Any]:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise ValueError("ncu (Nsight Compute) is not on the PATH")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    attempts = []
    for with_local in (True, False):
        done = subprocess.run(
            ncu_command(ncu, envs, rom, with_local, mem_layout), capture_output=True, text=True
        )
        metrics = parse_details(done.stdout)
        attempts.append({"local_bytes": with_local, "rc": done.returncode, "metrics": len(metrics)})
        if metrics:
            break
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
    csv_path = out / f"ncu-{rom}-{envs}-{mem_layout}.csv"
    write_atomic(csv_path, (done.stdout + "\n# stderr\n" + done.stderr).encode())
    row = {
        "rom": rom,
        "envs": envs,
        "mem_layout": mem_layout,
        "excess_sectors": excess_sectors(done.stdout),
        "attempts": attempts,
        "seconds": time.perf_counter() - t0,
        "metrics": metrics,
        "csv": csv_path.name,
        "timestamp": time.time(),
    }
    with (out / "results.jsonl").open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    return row


def write_summary(out: Path) -> str:
    """summary.md from every row of results.jsonl, oldest first."""
    lines = ["# Nsight Compute: one step_kernel launch", ""]
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["timestamp"]))
        layout = r.get("mem_layout", "env_major")  # rows before issue #41 ran env-major
        lines += summary_lines(r["metrics"], f"{r['rom']}, {r['envs']} envs, {layout} ({when} UTC)")
        excess = r.get("excess_sectors")
        if excess:
            lines.append(
                f"Uncoalesced global accesses: {excess['excess']:,} excess of {excess['total']:,} "
                f"sectors ({excess['percent']} %)."
            )
        lines.append("")
    text = "\n".join(lines)
    write_atomic(out / "summary.md", text.encode())
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--envs", type=int, default=16384)
    ap.add_argument("--rom", default="demo", choices=("demo", "quest", "busy", "game"))
    ap.add_argument(
        "--mem-layout",
        default="interleaved",
        choices=("interleaved", "env_major"),
        help="the backend's state layout (default: the CUDA backend's own, interleaved)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--parse", type=Path, default=None, help="print a kept CSV's summary")
    args = ap.parse_args(argv)
    if args.parse is not None:
        metrics = parse_details(args.parse.read_text())
        print("\n".join(summary_lines(metrics, str(args.parse))))
        return 0 if metrics else 1
    if args.envs < 1:
        ap.error(f"--envs must be >= 1, got {args.envs}")
    try:
        row = run(args.envs, args.rom, args.out, args.mem_layout)
    except ValueError as exc:
        ap.error(str(exc))
    print(write_summary(args.out))
    return 0 if row["metrics"] else 1


if __name__ == "__main__":
    sys.exit(main())
