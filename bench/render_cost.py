"""Render cost per step as a fraction of the step cost (24 frames/step, demo game).

Appends one JSONL row per (device, num_envs, packed) to results.jsonl and rewrites
summary.md beside it from every row there (earlier runs stay, each with its date and label).
Usage: python -m bench.render_cost [--device cpu|cuda] [--envs 64] [--iters 10] [--out DIR]
       [--label TEXT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.machine_info import device_name, versions
from bench.rom_names import default_rom
from gbxcule.backends.checks import check_positive_int
from gbxcule.backends.pixels import backend_render_cost
from gbxcule.backends.registry import make_backend

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "render"


def run(device: str, envs: list[int], iters: int, out_dir: Path, label: str = "") -> list[dict]:
    name = "warp-cuda" if device == "cuda" else "warp-cpu"
    rows = []
    for n in envs:
        backend = make_backend(
            name,
            default_rom(),
            num_envs=n,
            frames_per_step=24,
            release_after_frames=8,
            action_codec="pokemonred_puffer_v1",
        )
        try:
            backend.reset(seed=0)
            actions = np.random.default_rng(0).integers(0, 7, size=n, dtype=np.int64)
            for packed in (False, True):
                cost = backend_render_cost(backend, actions, packed=packed, iters=iters)
                rows.append(
                    {
                        "backend": name,
                        "device": device_name(name),
                        "num_envs": n,
                        "packed": packed,
                        **cost,
                        "versions": versions(),
                        "timestamp": time.time(),
                        "label": label,
                    }
                )
        finally:
            backend.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "results.jsonl").open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    write_summary(out_dir)
    return rows


def write_summary(out_dir: Path) -> None:
    """summary.md: one table row per results.jsonl row, oldest first."""
    lines = [
        "# Render cost per step (demo game, 24 frames/step)",
        "",
        "All runs in `results.jsonl`, oldest first (the step excludes rendering).",
        "",
        "| run (UTC) | label | backend | device | envs | output | step ms | render ms "
        "| render / step |",
        "|---|---|---|---|---:|---|---:|---:|---:|",
    ]
    for line in (out_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r["timestamp"]))
        kind = "packed2 [N,72,20]" if r["packed"] else "shades [N,72,80]"
        lines.append(
            f"| {when} | {r.get('label', '')} | {r['backend']} | {r['device']} | "
            f"{r['num_envs']} | {kind} | {r['step_s'] * 1e3:.2f} | {r['render_s'] * 1e3:.3f} | "
            f"{r['render_over_step']:.4f} |"
        )
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--envs", default="64", help="comma list of env counts")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--label", default="", help="what this run measures (kept in its rows)")
    args = ap.parse_args(argv)
    if args.device == "cuda":
        from gbxcule.cli.playback import cuda_available

        if not cuda_available():
            ap.error("--device cuda needs a CUDA device visible to Warp; this machine has none")
    try:
        envs = [check_positive_int("num_envs", int(x)) for x in args.envs.split(",")]
        iters = check_positive_int("iters", args.iters)
    except ValueError as exc:
        ap.error(str(exc))
    run(args.device, envs, iters, args.out, args.label)
    print((args.out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
