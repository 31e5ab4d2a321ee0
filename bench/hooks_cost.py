"""What event hooks cost on the Warp CPU backend: steps/s with no hook set (the plain step
kernel) against the same backend with hooks set (the hooked variant, kernels/step/step.py),
in alternating rounds, so a busy spell on a shared machine hits both alike.

Demo game, 24 frames/step (buttons released after 8), seeded random actions, the 11 hooks
of tests/test_hooks.py (VBlank vector and handler, joypad, movement, coins, score, RNG,
OAM loop, and one data address never executed); ``--rom busy``: the busy ROM with one
hook that is never hit (the hook filter's cost on code the CPU dispatch's fast loop runs
all the time). Also times the first step after the first
``set_hooks`` of the process: the hooked variant's build, plus its compile when Warp's
kernel cache does not hold it yet (``cold``, ``cached`` or ``loaded before`` in the row).

Appends one JSONL row per env count to results.jsonl and rewrites summary.md beside it
from every row there (earlier runs stay, each with its date and label).
Usage: python -m bench.hooks_cost [--rom demo|busy] [--envs 1,64] [--steps 200] [--rounds 4]
       [--threads N] [--out DIR] [--label TEXT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.machine_info import device_name, versions
from gbxcule.asm import assemble
from gbxcule.backends.checks import check_positive_int
from gbxcule.core.symbols import format_sym
from gbxcule.demo.asm import game_source

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "hooks"
DEMO_HOOKS = [  # the demo game's hooks here and in tests/test_hooks.py (lockstep vs PyBoy)
    0x0040,  # the VBlank vector (VBlankIsr follows it)
    "VBlankIsr",
    "ReadJoypad",
    "MovePlayer.no_right",
    "MovePlayer.no_up",
    "CollectCoins.coin",
    "AddScore",
    "Rng",
    "BuildShadowOam.next",
    "BuildShadowOam.hide",
    "TileData",  # data: never executed
]
# ``--rom busy``: one hook that is never hit, in the busy ROM's unused ROM: what the hook
# filter costs code that runs through the CPU dispatch's fast loop all the time
BUSY_HOOKS = [0x7FF0]


def _steps_per_s(backend, steps: int, num_envs: int, seed: int) -> float:
    actions = np.random.default_rng(seed).integers(0, 7, size=(steps, num_envs), dtype=np.int64)
    backend.synchronize()
    t0 = time.perf_counter()
    for a in actions:
        backend.step(a)
    backend.synchronize()
    return steps * num_envs / (time.perf_counter() - t0)


def measure(
    n: int, steps: int, rounds: int, threads: int | None, sym: Path, rom: str = "demo"
) -> dict:
    """One backend of ``n`` envs: the first hooked step, then ``rounds`` of off/on."""
    import warp as wp

    from bench.rom_names import resolve_rom
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    kwargs = {} if threads is None else {"threads": threads}
    hooks = DEMO_HOOKS if rom == "demo" else BUSY_HOOKS
    b = WarpVecCpuBackend(
        resolve_rom(rom),
        num_envs=n,
        frames_per_step=24,
        release_after_frames=8,
        sym_path=sym if rom == "demo" else None,
        **kwargs,
    )
    try:
        b.reset(seed=0)
        t0 = time.perf_counter()
        module = b._step_kernel(hooks=True).module  # built here on the first call
        if module.execs:
            state = "loaded before"
        elif any(Path(str(wp.config.kernel_cache_dir)).glob(f"wp_{module.name}_*")):
            state = "cached"
        else:
            state = "cold"
        b.set_hooks(hooks)
        b.step(np.zeros(n, np.int64))
        first = time.perf_counter() - t0
        off: list[float] = []
        on: list[float] = []
        for r in range(rounds):
            for hooked in (False, True) if r % 2 == 0 else (True, False):
                b.set_hooks(hooks if hooked else [])
                b.step(np.zeros(n, np.int64))  # warm-up
                (on if hooked else off).append(_steps_per_s(b, steps, n, seed=r))
        threads_used = min(b.threads, n)
    finally:
        b.close()
    off_med, on_med = statistics.median(off), statistics.median(on)
    return {
        "backend": "warp-cpu",
        "rom": rom,
        "device": device_name("warp-cpu"),
        "threads": threads_used,
        "num_envs": n,
        "hooks": len(hooks),
        "steps": steps,
        "rounds": rounds,
        "off_steps_per_s": off,
        "on_steps_per_s": on,
        "off_median": off_med,
        "on_median": on_med,
        "on_over_off": on_med / off_med,
        "first_hooked_step_s": first,
        "hooked_kernel": state,
        "versions": versions(),
        "timestamp": time.time(),
    }


def run(
    envs: list[int],
    steps: int,
    rounds: int,
    out_dir: Path,
    label: str = "",
    threads: int | None = None,
    rom: str = "demo",
) -> list[dict]:
    for n in envs:
        check_positive_int("num_envs", n)
    check_positive_int("steps", steps)
    check_positive_int("rounds", rounds)
    if rom not in ("demo", "busy"):
        raise ValueError(f"rom must be demo or busy, got {rom!r}")
    with tempfile.TemporaryDirectory() as tmp:
        sym = Path(tmp) / "demo_game.sym"
        program = assemble(game_source())
        sym.write_text(format_sym(program.symbols, program.label_banks))
        rows = [{**measure(n, steps, rounds, threads, sym, rom), "label": label} for n in envs]
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "results.jsonl").open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    write_summary(out_dir)
    return rows


def write_summary(out_dir: Path) -> None:
    """summary.md: one table row per results.jsonl row, oldest first."""
    lines = [
        "# Event hooks: steps/s with no hook set vs with hooks set (24 frames/step)",
        "",
        "Same backend, alternating rounds; medians. `first hooked step`: the first step after",
        "the first `set_hooks` of the process (the hooked variant's build, and its compile",
        "when the kernel cache is cold). All runs in `results.jsonl`, oldest first.",
        "",
        "| run (UTC) | label | ROM | device | threads | envs | hooks | rounds | off steps/s "
        "| on steps/s | on / off | first hooked step s | hooked kernel |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for line in (out_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["timestamp"]))
        lines.append(
            f"| {when} | {r['label']} | {r.get('rom', 'demo')} | {r['device']} | {r['threads']} "
            f"| {r['num_envs']} "
            f"| {r['hooks']} | {r['rounds']} | {r['off_median']:,.0f} | {r['on_median']:,.0f} "
            f"| {r['on_over_off']:.3f} | {r['first_hooked_step_s']:.1f} | {r['hooked_kernel']} |"
        )
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--envs", default="1,64", help="comma list of env counts")
    ap.add_argument("--steps", type=int, default=200, help="timed steps per round and mode")
    ap.add_argument("--rounds", type=int, default=4, help="off/on rounds, alternating order")
    ap.add_argument("--threads", type=int, default=None, help="worker threads (default: all)")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--label", default="")
    ap.add_argument("--rom", default="demo", choices=("demo", "busy"))
    args = ap.parse_args(argv)
    try:
        envs = [int(x) for x in args.envs.split(",") if x]
        rows = run(envs, args.steps, args.rounds, args.out, args.label, args.threads, args.rom)
    except ValueError as exc:
        ap.error(str(exc))
    for r in rows:
        print(
            f"{r['num_envs']} envs: off {r['off_median']:,.0f} steps/s, on {r['on_median']:,.0f} "
            f"({r['on_over_off']:.3f}x); first hooked step {r['first_hooked_step_s']:.1f} s "
            f"({r['hooked_kernel']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
