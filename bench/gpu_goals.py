"""Issue #33's goals, read off a GPU session's results: met, missed or not measured.

The goals (one H100): at least 250,000 env-steps/s at 16,384 envs or more on the demo
game with random inputs; at least 100,000 on the busy ROM and on the second game (quest,
:mod:`gbxcule.games.quest`); steps/s flat from 16k to
65k envs (here: 65,536 envs keep at least 90 % of 16,384's); pixels at most 10 % of a
step; end-to-end async PPO at least 100,000 SPS with overlap efficiency above 1.3.

Reads, under ``--root`` (``tools/gpu_session.sh``'s layout): ``sweep-demo/``,
``sweep-busy/`` and ``sweep-quest/`` (``bench.sweep`` rows; warp-cuda, medians over repeats), ``render/``
(``bench.render_cost`` rows on CUDA), ``rl/`` (``bench.rl_sweep`` rows) and, for a
reference line, ``cpu-demo/`` and ``cpu-busy/`` (warp-cpu on the same machine). Writes
``goals.md`` there and prints it. A goal is *met* or *missed* only on rows that exist;
where a goal is missed, name the bottleneck in history/gpu-parity.md by hand.

Usage: python -m bench.gpu_goals [--root bench/results/gpu]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "gpu"
BIG = 16384
BIGGEST = 65536
DEMO_SPS, BUSY_SPS, PPO_SPS, PPO_OVERLAP = 250_000, 100_000, 100_000, 1.3
FLAT, PIXELS_SHARE = 0.9, 0.10


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cuda_medians(rows: list[dict[str, Any]]) -> dict[tuple[str, int], float]:
    """Median steps/s of the plain warp-cuda rows per (render, envs)."""
    got: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        if r.get("backend") == "warp-cuda":
            got.setdefault((r.get("render", "off"), r["num_envs"]), []).append(r["sps"])
    return {k: statistics.median(v) for k, v in got.items()}


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "**missed**")


def throughput_goals(name: str, med: dict[tuple[str, int], float], goal: float) -> list[list]:
    out = []
    for render in ("off", "pixels", "packed2"):
        at = {n: v for (r, n), v in med.items() if r == render and n >= BIG}
        if not at and render != "off":
            continue
        shown, ok = "-", None
        if at:
            best_n = max(at, key=lambda n: at[n])
            shown, ok = f"{at[best_n]:,.0f} env-steps/s at {best_n:,} envs", at[best_n] >= goal
        out.append(
            [
                f"{name}, render {render}: ≥ {goal:,} env-steps/s at ≥ {BIG:,} envs",
                shown,
                _verdict(ok),
            ]
        )
        if BIG in at and BIGGEST in at:
            ratio = at[BIGGEST] / at[BIG]
            out.append(
                [
                    f"{name}, render {render}: flat from {BIG:,} to {BIGGEST:,} envs (≥ {FLAT:.0%})",
                    f"{ratio:.2f}× ({at[BIG]:,.0f} → {at[BIGGEST]:,.0f})",
                    _verdict(ratio >= FLAT),
                ]
            )
        elif render == "off":
            out.append([f"{name}: flat from {BIG:,} to {BIGGEST:,} envs", "-", _verdict(None)])
    return out


def pixel_goals(
    render_rows: list[dict[str, Any]], demo: dict[tuple[str, int], float]
) -> list[list]:
    out = []
    cuda = [r for r in render_rows if r.get("backend") == "warp-cuda" and r["num_envs"] >= BIG]
    for packed in (False, True):
        rs = [r for r in cuda if r["packed"] == packed]
        kind = "packed2" if packed else "shades"
        if rs:
            worst = max(rs, key=lambda r: r["render_over_step"])
            shown = f"{worst['render_over_step']:.1%} of a step at {worst['num_envs']:,} envs (render_cost)"
            ok: bool | None = worst["render_over_step"] <= PIXELS_SHARE
        else:
            shown, ok = "-", None
        out.append([f"{kind} cost ≤ {PIXELS_SHARE:.0%} of a step", shown, _verdict(ok)])
    for render in ("pixels", "packed2"):
        if ("off", BIG) in demo and (render, BIG) in demo:
            cost = 1 - demo[(render, BIG)] / demo[("off", BIG)]
            out.append(
                [
                    f"{render} in the sweep: steps/s lost against render off at {BIG:,} envs",
                    f"{cost:.1%}",
                    _verdict(cost <= PIXELS_SHARE),
                ]
            )
    return out


def ppo_goal(rl_rows: list[dict[str, Any]]) -> list[list]:
    groups: dict[tuple, list[dict]] = {}
    for r in rl_rows:
        if (
            r.get("feeder") == "warp"
            and r.get("mode") == "async"
            and r.get("device", "").startswith("cuda")
        ):
            groups.setdefault((r["envs"], r["obs_format"]), []).append(r)
    if not groups:
        return [["async PPO ≥ 100,000 SPS with overlap > 1.3", "-", _verdict(None)]]
    sps, ov, envs, fmt = max(
        (
            statistics.median(r["sps"] for r in rs),
            statistics.median(r["overlap_efficiency"] or 0.0 for r in rs),
            envs,
            fmt,
        )
        for (envs, fmt), rs in groups.items()
    )
    return [
        [
            f"async PPO ≥ {PPO_SPS:,} SPS with overlap > {PPO_OVERLAP}",
            f"{sps:,.0f} SPS, overlap {ov:.2f} ({envs:,} envs, {fmt})",
            _verdict(sps >= PPO_SPS and ov > PPO_OVERLAP),
        ]
    ]


def against_cpu(rom: str, cuda: dict[tuple[str, int], float], rows: list[dict]) -> list[list]:
    """The best render-off warp-cuda row against the best warp-cpu row of the same machine
    (no goal: the CPU reference the issue asks for)."""
    cpu = [r["sps"] for r in rows if r.get("backend") == "warp-cpu" and r.get("render") == "off"]
    gpu = [v for (render, _), v in cuda.items() if render == "off"]
    if not cpu or not gpu:
        return []
    cores = max(r.get("cores", 0) for r in rows if r.get("backend") == "warp-cpu")
    return [
        [
            f"{rom}, render off: warp-cuda against warp-cpu on {cores} cores (best of each)",
            f"{max(gpu) / max(cpu):.1f}× ({max(gpu):,.0f} / {max(cpu):,.0f} env-steps/s)",
            "reference",
        ]
    ]


def goals(root: Path) -> tuple[list[list], str]:
    demo = cuda_medians(_rows(root / "sweep-demo" / "results.jsonl"))
    busy = cuda_medians(_rows(root / "sweep-busy" / "results.jsonl"))
    quest = cuda_medians(_rows(root / "sweep-quest" / "results.jsonl"))
    table = throughput_goals("demo game", demo, DEMO_SPS)
    table += throughput_goals("busy ROM", busy, BUSY_SPS)
    table += throughput_goals("quest (the second game)", quest, BUSY_SPS)
    table += pixel_goals(_rows(root / "render" / "results.jsonl"), demo)
    table += ppo_goal(_rows(root / "rl" / "results.jsonl"))
    for rom, cuda in (("demo", demo), ("busy", busy)):
        table += against_cpu(rom, cuda, _rows(root / f"cpu-{rom}" / "results.jsonl"))
    devices = sorted(
        {
            r.get("device", "?")
            for rom in ("demo", "busy", "quest", "game")
            for r in _rows(root / f"sweep-{rom}" / "results.jsonl")
            if r.get("backend") == "warp-cuda"
        }
    )
    lines = [
        "# Issue #33's goals",
        "",
        f"Results under `{root.name}/`; device: {', '.join(devices) or 'none recorded'}.",
        "",
        "| goal | measured | verdict |",
        "|---|---|---|",
    ]
    lines += [f"| {g} | {m} | {v} |" for g, m, v in table]
    return table, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--root", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    if not args.root.is_dir():
        ap.error(f"{args.root} is not a folder of GPU session results")
    _, text = goals(args.root)
    write_atomic(args.root / "goals.md", text.encode())
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
