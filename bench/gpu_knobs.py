"""A/B of the step kernel's runtime knobs on one device: the fast paths and the shape.

* ``fastpaths``: ``cpu_fast_paths`` on vs off (``kernels/cpu/cpu_fast.py``). On a GPU their
  extra branches may cost more than they save (history/performance.md, divergence
  estimate: the general decoder wins unless a pass of it costs more than ~1.2-1.4× a
  fast-path pass).
* ``shapes``: ``units_out_of_line`` True (the GPU shape, ``kernels/step/step_cuda.py``, what
  CUDA runs by default) vs False (the inlined step the CPU runs).
* ``block64``: ``block_dim`` 64 ("on", the CUDA default since the second H100 session) vs
  Warp's 256 ("off"). At 255 registers a thread an SM holds one block of 256, so 16,384 envs
  fill 64 of an H100's 132 SMs (ncu, 2026-11-27: 0.48 waves per SM, SMs active 45 % of the
  launch); blocks of 64 spread them over all. CUDA only.
* ``block32``: ``block_dim`` 32 ("on") vs 64 ("off"): one warp a block, so 1,024 envs reach
  32 SMs, not 16, and a launch's last wave is finer. CUDA only.

Same results either way; only the speed differs. Each (ROM, envs) runs the two settings
in alternating rounds (on, off, on, off, ...), seeded random actions, 24 frames a step,
the buttons released after 8, ``--steps`` timed steps after 2 warm-up steps, each run on
a freshly built backend. Writes ``results.jsonl`` (one row per run) and ``summary.md``
(median steps/s per setting and the ratio on / off).

Usage: python -m bench.gpu_knobs --knob fastpaths|shapes|block64|block32 [--device cuda|cpu]
       [--rom demo,busy] [--envs 16384,65536] [--rounds 2] [--steps 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.machine_info import device_name, versions
from bench.rom_names import resolve_rom
from bench.step_settings import FRAMES_PER_STEP
from bench.sweep import measure as sweep_measure
from gbxcule.backends.checks import check_positive_int
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# knob: (backend keyword, its value when "on", when "off")
KNOBS: dict[str, tuple[str, Any, Any]] = {
    "fastpaths": ("cpu_fast_paths", True, False),
    "shapes": ("units_out_of_line", True, False),
    "block64": ("block_dim", 64, 256),
    "block32": ("block_dim", 32, 64),
}


def measure(device: str, rom: str, n: int, steps: int, knob: str, on: bool) -> float:
    """Steps/s of one freshly built backend with the knob on or off (``bench.sweep.measure``)."""
    kwarg, on_value, off_value = KNOBS[knob]
    backend = "warp-cuda" if device == "cuda" else "warp-cpu"
    value = on_value if on else off_value
    row = sweep_measure(
        backend, resolve_rom(rom), n, steps, FRAMES_PER_STEP, 0, backend_options={kwarg: value}
    )
    return row.sps


def summary(rows: list[dict[str, Any]], knob: str) -> str:
    kwarg, on_value, off_value = KNOBS[knob]
    lines = [
        f"# `{kwarg}` on ({on_value}) vs off ({off_value})",
        "",
        f"Device: {rows[0]['device']}. Median steps/s over alternating rounds.",
        "",
        "| ROM | envs | on | off | on / off | rounds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    keys = dict.fromkeys((r["rom"], r["envs"]) for r in rows)
    for rom, n in keys:
        med = {
            on: statistics.median(
                r["sps"] for r in rows if (r["rom"], r["envs"], r["on"]) == (rom, n, on)
            )
            for on in (True, False)
        }
        rounds = sum(1 for r in rows if (r["rom"], r["envs"], r["on"]) == (rom, n, True))
        lines.append(
            f"| {rom} | {n:,} | {med[True]:,.0f} | {med[False]:,.0f} | "
            f"{med[True] / med[False]:.3f} | {rounds} |"
        )
    return "\n".join(lines) + "\n"


def run(
    knob: str, device: str, roms: list[str], envs: list[int], rounds: int, steps: int, out: Path
) -> list[dict[str, Any]]:
    kwarg, on_value, off_value = KNOBS[knob]
    out.mkdir(parents=True, exist_ok=True)
    name = device_name("warp-cuda" if device == "cuda" else "warp-cpu")
    rows = []
    with (out / "results.jsonl").open("a") as fh:
        for rom in roms:
            for n in envs:
                for _ in range(rounds):
                    for on in (True, False):
                        sps = measure(device, rom, n, steps, knob, on)
                        row = {
                            "rom": rom,
                            "envs": n,
                            "on": on,
                            kwarg: on_value if on else off_value,
                            "sps": sps,
                            "steps": steps,
                            "device": name,
                            "versions": versions(),
                            "timestamp": time.time(),
                        }
                        print(f"{rom} {n} {kwarg}={on}: {sps:,.0f} steps/s", flush=True)
                        fh.write(json.dumps(row) + "\n")
                        fh.flush()
                        rows.append(row)
    text = summary(rows, knob)
    write_atomic(out / "summary.md", text.encode())
    print(text)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--knob", choices=sorted(KNOBS), required=True)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--rom", default="demo,busy", help="comma list: demo, busy, game or paths")
    ap.add_argument("--envs", default="16384,65536")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from gbxcule.cli.playback import cuda_available

    if args.device == "cuda" and not cuda_available():
        ap.error("--device cuda needs a CUDA device visible to Warp; this machine has none")
    try:
        envs = [check_positive_int("num_envs", int(x)) for x in args.envs.split(",") if x]
        rounds = check_positive_int("rounds", args.rounds)
        steps = check_positive_int("steps", args.steps)
    except ValueError as exc:
        ap.error(str(exc))
    if KNOBS[args.knob][0] == "block_dim" and args.device != "cuda":
        ap.error(f"--knob {args.knob} sets CUDA's block size: it needs --device cuda")
    roms = [r for r in args.rom.split(",") if r]
    out = args.out or RESULTS_DIR / f"knob-{args.knob}-{'gpu' if args.device == 'cuda' else 'cpu'}"
    run(args.knob, args.device, roms, envs, rounds, steps, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
