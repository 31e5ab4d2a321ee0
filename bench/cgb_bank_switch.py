"""What a Game Boy Color game's bank switches cost the CPU backend, against the same
program writing HRAM instead (and PyBoy's CGB mode on the same ROMs).

A ROM of our assembler toggles SVBK (WRAM bank, 4 KiB parked and fetched a switch), VBK
(VRAM bank, 8 KiB swapped) or an HRAM byte ``--switches`` times a frame, reads D000, then
waits for the next frame. 64 envs on the CPU backend (2 worker threads), 24 frames a step;
PyBoy (1 env) for scale.

Writes ``--out`` (default bench/results/cgb-bank-switch): ``results.jsonl`` (a row per
target and backend, appended) and ``summary.md`` (every row).

Usage: python -m bench.cgb_bank_switch [--switches 40] [--steps 10] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.machine_info import device_name
from gbxcule.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results" / "cgb-bank-switch"
TARGETS = {"svbk": 0x70, "vbk": 0x4F, "hram": 0x90}


def switch_rom(register: int, switches: int) -> bytes:
    from gbxcule.asm import build_rom

    return build_rom(
        f"""
Main:
    di
.frame:
    ld b, {switches // 2}
.toggle:
    ld a, 2
    ldh [${register:02X}], a
    ld a, 1
    ldh [${register:02X}], a
    ld a, [$D000]
    dec b
    jr nz, .toggle
.wait:
    ldh a, [$44]
    cp 144
    jr nz, .wait
.leave:
    ldh a, [$44]
    cp 144
    jr z, .leave
    jr .frame
""",
        cgb_flag=0x80,
    )


def steps_per_second(name: str, path: Path, envs: int, steps: int) -> float:
    from gbxcule.backends.registry import make_backend

    kw = {"threads": 2} if name == "warp-cpu" else {}
    b = make_backend(name, str(path), num_envs=envs, frames_per_step=24,
                     action_codec="buttons:noop,a", **kw)  # fmt: skip
    try:
        b.reset()
        actions = np.zeros(envs, dtype=np.int64)
        b.step(actions)
        t0 = time.perf_counter()
        for _ in range(steps):
            b.step(actions)
        return steps * envs / (time.perf_counter() - t0)
    finally:
        b.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switches", type=int, default=40)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for target, register in TARGETS.items():
            path = Path(tmp) / f"switch_{target}.gbc"
            path.write_bytes(switch_rom(register, args.switches))
            for backend, envs in (("warp-cpu", 64), ("pyboy", 1)):
                sps = steps_per_second(backend, path, envs, args.steps)
                rows.append({"target": target, "backend": backend, "envs": envs,
                             "switches_per_frame": args.switches, "steps_per_s": round(sps, 1),
                             "device": device_name("cpu")})  # fmt: skip
    base = {r["backend"]: r["steps_per_s"] for r in rows if r["target"] == "hram"}
    with open(args.out / "results.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    lines = [json.loads(x) for x in (args.out / "results.jsonl").read_text().splitlines()]
    table = [
        "# Bank switches on a Game Boy Color machine",
        "",
        "`python -m bench.cgb_bank_switch`: each frame toggles the target register "
        "`switches_per_frame` times; 24 frames a step. `vs hram`: the same backend's speed "
        "on the HRAM-writing ROM of the same run.",
        "",
        "| target | backend | envs | switches/frame | steps/s | vs hram | device |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in lines:
        ratio = r["steps_per_s"] / base[r["backend"]] if r in rows else float("nan")
        table.append(
            f"| {r['target']} | {r['backend']} | {r['envs']} | {r['switches_per_frame']} | "
            f"{r['steps_per_s']:,.0f} | {ratio:.2f} | {r['device']} |"
        )
    write_atomic(args.out / "summary.md", ("\n".join(table) + "\n").encode())
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
