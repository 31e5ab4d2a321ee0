"""The GPU step before and after issue #41, in both memory layouts, in one device call.

Each configuration (``CONFIGS``) is a build of the GPU-shaped step kernel and a state
layout; they run one after another in child processes (the locals' value-initialization
is a process-wide codegen choice, kernels/codegen.py), in alternating order over
``--rounds``, each timing the same seeded random actions on every ROM and env count:

- ``before``: the step as the H100 sessions ran it: the fast paths in ``cpu_step`` beside
  the out-of-line calls (``hot_loop=False``), no register cap, locals left uninitialized
  (``GBXCULE_CUDA_VALUE_INIT=0``), env-major state;
- ``before-interleaved``: the same with every per-env block interleaved;
- ``after-env-major``: this issue's step (the call-free instruction loop on the kernel's own
  Machine, value-initialized locals, 128 registers) with env-major state;
- ``after``: the same interleaved, what the CUDA backend runs by default;
- ``after-pc-order``: ``after`` with each step's envs sorted by PC (``env_order="pc"``:
  warps of envs on the same code, but no longer neighbours in memory);
- ``after-nocap`` / ``after-cap96``: ``after`` with no register cap (228 registers, no
  spills) and with 96 (21 warps an SM).

Same results in every configuration (tests/test_step_shapes.py, the GPU parity tests);
only the speed differs. 24 frames a step, the buttons released after 8, ``--steps``
timed steps after one warm-up step; the game-like ROM (20x slower a step) runs its own
``--game-steps`` at its own ``--game-envs``. ``--budget-s`` stops starting children that
would overrun (each child's expected time is taken from the rounds before it).

Writes ``results.jsonl`` (one row per run, device named), ``summary.md`` (median
env-steps/s per configuration and ROM/envs, and each over ``before``) and ``ab.png``
where matplotlib is installed.

Usage: python -m bench.gpu_shape_ab [--device cuda|cpu] [--configs before,after,...]
       [--roms demo,busy,quest] [--envs 16384,65536] [--game-envs 16384] [--steps 3]
       [--game-steps 2] [--rounds 1] [--budget-s 330] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.machine_info import versions
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "gpu-shape-ab"
# name: (backend options, locals value-initialized on CUDA)
CONFIGS: dict[str, tuple[dict[str, Any], bool]] = {  # the order they run in: most wanted first
    "before": ({"hot_loop": False, "cuda_max_registers": 0, "mem_layout": "env_major"}, False),
    "after": ({"mem_layout": "interleaved"}, True),
    "after-env-major": ({"mem_layout": "env_major"}, True),
    "before-interleaved": (
        {"hot_loop": False, "cuda_max_registers": 0, "mem_layout": "interleaved"},
        False,
    ),
    "after-pc-order": ({"mem_layout": "interleaved", "env_order": "pc"}, True),
    "after-nocap": ({"mem_layout": "interleaved", "cuda_max_registers": 0}, True),
    "after-cap96": ({"mem_layout": "interleaved", "cuda_max_registers": 96}, True),
}
BASELINE = "before"


def child_env(config: str) -> dict[str, str]:
    """The child's environment: value-initialization as the configuration says."""
    _, value_init = CONFIGS[config]
    return {**os.environ, "GBXCULE_CUDA_VALUE_INIT": "1" if value_init else "0"}


def run_child(config: str, device: str, work: list[tuple[str, int, int]], seed: int) -> list[dict]:
    """In the child: time each (ROM, envs, steps) of ``work`` on a fresh backend."""
    from bench.machine_info import device_name
    from bench.rom_names import resolve_rom
    from bench.step_settings import FRAMES_PER_STEP
    from bench.sweep import measure
    from gbxcule.kernels.codegen import cuda_value_init

    options, _ = CONFIGS[config]
    options = dict(options)
    backend = "warp-cuda" if device == "cuda" else "warp-cpu"
    if device != "cuda":  # the dry run: the GPU shape on the CPU, one launch (env_order)
        options["units_out_of_line"] = True
        options["threads"] = 1
    layout = options.pop("mem_layout")
    rows = []
    for rom, envs, steps in work:
        row = measure(
            backend,
            resolve_rom(rom),
            envs,
            steps,
            FRAMES_PER_STEP,
            seed,
            warmup=1,
            mem_layout=layout,
            backend_options=options,
        )
        rows.append(
            {
                "config": config,
                "rom": rom,
                "envs": envs,
                "steps": steps,
                "seconds": row.seconds,
                "sps": row.sps,
                "mem_layout": layout,
                "hot_loop": options.get("hot_loop", True),
                "cuda_max_registers": options.get("cuda_max_registers", 128),
                "env_order": options.get("env_order", "launch"),
                "value_init": cuda_value_init() if device == "cuda" else None,
                "device": device_name(backend),
                "versions": versions(),
                "timestamp": time.time(),
            }
        )
        print(f"{config} {rom} {envs}: {row.sps:,.0f} env-steps/s", flush=True)
    return rows


def work_list(args) -> list[tuple[str, int, int]]:
    work = [(rom, n, args.steps) for rom in args.roms if rom != "game" for n in args.envs]
    if "game" in args.roms:
        work += [("game", n, args.game_steps) for n in args.game_envs]
    return work


def summary(rows: list[dict]) -> str:
    configs = [c for c in CONFIGS if any(r["config"] == c for r in rows)]
    keys = list(dict.fromkeys((r["rom"], r["envs"]) for r in rows))
    device = rows[0]["device"] if rows else "?"
    lines = [
        "# The GPU step before and after issue #41 (bench/gpu_shape_ab.py)",
        "",
        f"Device: {device}. Median env-steps/s over rounds; in brackets, over `{BASELINE}`.",
        "",
        "| ROM | envs | " + " | ".join(configs) + " |",
        "|---|---:|" + "---:|" * len(configs),
    ]
    for rom, n in keys:
        med = {}
        for c in configs:
            sps = [r["sps"] for r in rows if (r["config"], r["rom"], r["envs"]) == (c, rom, n)]
            med[c] = statistics.median(sps) if sps else None
        base = med.get(BASELINE)
        cells = []
        for c in configs:
            v = med[c]
            if v is None:
                cells.append("-")
            elif base and c != BASELINE:
                cells.append(f"{v:,.0f} ({v / base:.2f}x)")
            else:
                cells.append(f"{v:,.0f}")
        lines.append(f"| {rom} | {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    configs = [c for c in CONFIGS if any(r["config"] == c for r in rows)]
    keys = list(dict.fromkeys((r["rom"], r["envs"]) for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(keys)), 4))
    width = 0.8 / max(1, len(configs))
    for k, c in enumerate(configs):
        ys = []
        for rom, n in keys:
            sps = [r["sps"] for r in rows if (r["config"], r["rom"], r["envs"]) == (c, rom, n)]
            ys.append(statistics.median(sps) if sps else 0)
        ax.bar([i + k * width for i in range(len(keys))], ys, width, label=c)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))])
    ax.set_xticklabels([f"{rom}\n{n:,}" for rom, n in keys])
    ax.set_ylabel("env-steps/s")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(f"GPU step A/B, {rows[0]['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--roms", default="demo,busy,quest,game")
    ap.add_argument("--envs", default="16384,65536")
    ap.add_argument("--game-envs", default="16384")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--game-steps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-s", type=float, default=0.0, help="0: no budget")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.roms = [r for r in args.roms.split(",") if r]
    args.envs = [int(n) for n in args.envs.split(",") if n]
    args.game_envs = [int(n) for n in args.game_envs.split(",") if n]
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error(f"unknown configs {unknown}; known: {', '.join(CONFIGS)}")
    if min(args.steps, args.game_steps, args.rounds, *args.envs, *args.game_envs) < 1:
        ap.error("--steps, --game-steps, --rounds and every env count must be >= 1")
    if args.child is not None:
        rows = run_child(args.child, args.device, work_list(args), args.seed)
        print("ROWS " + json.dumps(rows), flush=True)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows: list[dict] = []
    spent: list[float] = []
    failed = 0
    order = [c for k in range(args.rounds) for c in (configs if k % 2 == 0 else configs[::-1])]
    for config in order:
        elapsed = time.perf_counter() - start
        expect = max(spent) if spent else 0.0
        if args.budget_s and elapsed + expect > args.budget_s:
            print(f"budget: {config} skipped ({elapsed:.0f} s spent, ~{expect:.0f} s more)")
            continue
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "bench.gpu_shape_ab", "--child", config]
        cmd += ["--device", args.device, "--roms", ",".join(args.roms)]
        cmd += ["--envs", ",".join(map(str, args.envs))]
        cmd += ["--game-envs", ",".join(map(str, args.game_envs))]
        cmd += ["--steps", str(args.steps), "--game-steps", str(args.game_steps)]
        cmd += ["--seed", str(args.seed)]
        done = subprocess.run(cmd, env=child_env(config), capture_output=True, text=True)
        spent.append(time.perf_counter() - t0)
        got = [ln for ln in done.stdout.splitlines() if ln.startswith("ROWS ")]
        print("\n".join(ln for ln in done.stdout.splitlines() if not ln.startswith("ROWS ")))
        if done.returncode != 0 or not got:
            failed += 1
            print(f"{config}: child failed (exit {done.returncode})\n{done.stderr[-3000:]}")
            continue
        new = json.loads(got[-1][5:])
        rows += new
        with (args.out / "results.jsonl").open("a") as fh:
            for row in new:
                fh.write(json.dumps(row) + "\n")
    if rows:
        text = summary(rows)
        write_atomic(args.out / "summary.md", text.encode())
        print(text)
        plot(rows, args.out / "ab.png")
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
