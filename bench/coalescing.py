"""How many 32-byte sectors a warp's memory requests touch, env-major against interleaved,
from traced per-lane addresses (issue #41).

One step of each ROM runs the GPU shape's trace kernel (bench/divergence_trace.py,
``path_trace_kernel_addresses``: each instruction's ``rom_code`` word and the ``mem``
columns its fast memory path touched; the machine changes as ``step_kernel`` changes it).
Lanes are dealt to warps of 32 as launched and laid out in rounds by the divergence
model's ``slice`` model (bench/divergence_model.py: lanes wait for each other at each pass
of ``run_frame``'s loop); in each round the lanes on one path (``hot-handler``: the GPU
shape's instruction loop) make one request per access. Per request, the sectors its
lanes' addresses fall in:

- ``fetch``: the instruction's ``rom_code`` word (4 B), one copy for every env: the same
  sectors in both layouts;
- ``data``: each ``mem`` byte the fast memory path reads or writes (the two bytes of a
  stack op are two requests): env-major at ``env * row + column``, interleaved at
  ``column * N + env``;
- ``fields``: each frame-loop unit (interrupt check, unit sync, quiet-HALT pass, ...) reads
  and writes per-env scalars, modelled as one request of one ``int32`` column per unit:
  env-major at ``env * row + 4 * column``, interleaved at ``4 * (column * N + env)``.

A request's ideal is its distinct bytes packed: ``ceil(bytes / 32)`` sectors; excess =
(sectors - ideal) / sectors, as Nsight Compute's uncoalesced-access rule counts it (82 %
at b3624ae on the demo, env-major: bench/results/gpu/ncu/). What the model leaves out:
the general route's accesses (IO, VRAM, ROM tables: a few per cent of instructions), the
number of scalar columns each frame-loop unit touches (one request stands for each), and
caches (a sector is a sector, hit or miss).

Orders (``--orders``): ``index`` (warp ``w`` holds envs ``32w ... 32w+31``, as launched) and
``pc`` (envs sorted by the PC they start the step at, as ``env_order="pc"`` deals them,
kernels/step/env_order.py): fewer paths a warp, but lanes whose envs are not neighbours.

Writes ``results.jsonl`` (one row per ROM, order, layout and class), ``summary.md`` and
``coalescing.png`` (where matplotlib is installed).

Usage: python -m bench.coalescing [--roms demo,quest,busy,game] [--envs 64] [--warmup 10]
       [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.divergence_model import FRAME, WARP, fold, layout, path_ids, segment_keys
from bench.machine_info import device_name, versions
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "coalescing"
SECTOR = 32
LAYOUTS = ("env_major", "interleaved")
CLASSES = ("fetch", "data", "fields")
WORD_BITS, COL_BITS = 25, 20


def decode_addresses(word: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An ``addrs`` entry (bench/divergence_trace.py) -> (fetched ``rom_code`` word, first and
    second ``mem`` column), each -1 where there is none."""
    word = word.astype(np.int64)
    fetch = (word & ((1 << WORD_BITS) - 1)) - 1
    a = ((word >> WORD_BITS) & ((1 << COL_BITS) - 1)) - 1
    b = ((word >> (WORD_BITS + COL_BITS)) & ((1 << 19) - 1)) - 1
    return fetch, a, b


def count_requests(request: np.ndarray, address: np.ndarray, size: int) -> tuple[int, int, int]:
    """(requests, sectors, ideal sectors) of accesses of ``size`` bytes at byte ``address``,
    each tagged with the ``request`` (an int key) it belongs to."""
    if request.size == 0:
        return 0, 0, 0
    sectors = np.unique(np.stack([request, address // SECTOR]), axis=1).shape[1]
    distinct = np.unique(np.stack([request, address]), axis=1)
    keys, per_request = np.unique(distinct[0], return_counts=True)
    ideal = int(np.sum(-(-(per_request * size) // SECTOR)))
    return int(keys.size), int(sectors), ideal


def warp_requests(
    codes: list[np.ndarray], words: list[np.ndarray], envs: np.ndarray, num_envs: int, rows: dict
) -> dict[tuple[str, str], np.ndarray]:
    """One warp's (layout, class) -> [requests, sectors, ideal]; ``codes``/``words`` its
    lanes' folded codes and ``addrs`` entries, ``envs`` their env indices, ``rows`` the
    env-major row bytes of ``mem`` and ``i32``."""
    keys = [segment_keys(c, "slice") for c in codes]
    rounds, _ = layout(keys)
    lut = path_ids(True, "hot-handler")
    lane_round = np.concatenate(rounds)
    lane_env = np.concatenate([np.full(c.size, e) for c, e in zip(codes, envs)])
    code = np.concatenate(codes).astype(np.int64)
    pid = lut[code + 1].astype(np.int64)
    request = (lane_round << 16) | pid
    fetch, a, b = decode_addresses(np.concatenate(words))
    instr = code < FRAME
    out = {}
    for lay in LAYOUTS:
        sel = instr & (fetch >= 0)
        out[(lay, "fetch")] = np.array(count_requests(request[sel], 4 * fetch[sel], 4))
        parts = []
        for j, col in enumerate((a, b)):
            sel = instr & (col >= 0) & ((j == 0) | (b != a))
            where = (
                lane_env[sel] * rows["mem"] + col[sel]
                if lay == "env_major"
                else col[sel] * num_envs + lane_env[sel]
            )
            parts.append(np.array(count_requests((request[sel] << 1) | j, where, 1)))
        out[(lay, "data")] = parts[0] + parts[1]
        sel = ~instr
        where = lane_env[sel] * rows["i32"] if lay == "env_major" else 4 * lane_env[sel]
        out[(lay, "fields")] = np.array(count_requests(request[sel], where, 4))
    return out


ORDERS = ("index", "pc")


def measure_rom(rom: str, envs: int, warmup: int, seed: int, orders=ORDERS) -> list[dict]:
    """One traced step of ``rom`` after ``warmup`` steps: a row per order, layout and class."""
    from bench.divergence import TracedEnv
    from gbxcule.backends.warp_base import field_view

    traced = TracedEnv(rom, envs, True, addresses=True)
    try:
        rng = np.random.default_rng(seed)
        traced.env.reset(seed)
        for _ in range(warmup):
            traced.env.step(rng.integers(0, 7, size=envs, dtype=np.int64))
        pcs = field_view(traced.env.machine, "pc").numpy().copy()
        trace, lens = traced.step(rng.integers(0, 7, size=envs, dtype=np.int64))
        words = traced.addrs.numpy()
        m = traced.env.machine
        rows = {"mem": int(m.mem.strides[0]), "i32": int(m.i32.strides[0])}
    finally:
        traced.close()
    folded = [fold(trace[e, : lens[e]]) for e in range(envs)]
    codes = [trace[e, : lens[e]][keep] for e, (keep, _) in enumerate(folded)]
    addrs = [words[e, : lens[e]][keep] for e, (keep, _) in enumerate(folded)]
    out = []
    for order in orders:
        dealt = np.arange(envs) if order == "index" else np.argsort(pcs, kind="stable")
        totals = {(lay, c): np.zeros(3, dtype=np.int64) for lay in LAYOUTS for c in CLASSES}
        for first in range(0, envs, WARP):
            lanes = dealt[first : first + WARP]
            lane_codes = [codes[e] for e in lanes]
            got = warp_requests(lane_codes, [addrs[e] for e in lanes], lanes, envs, rows)
            for key, counts in got.items():
                totals[key] += counts
        for (lay, cls), (requests, sectors, ideal) in totals.items():
            out.append(
                {
                    "rom": Path(rom).name,
                    "order": order,
                    "layout": lay,
                    "class": cls,
                    "requests": int(requests),
                    "sectors": int(sectors),
                    "ideal": int(ideal),
                    "envs": envs,
                    "units_per_env": float(lens.mean()),
                }
            )
    return out


def summary(rows: list[dict]) -> str:
    lines = [
        "# Sectors per warp request, env-major vs interleaved (bench/coalescing.py)",
        "",
        f"{rows[0]['envs']} envs a ROM, one traced step of 24 frames (GPU shape), warps of 32 "
        "in launch order, `slice` lockstep by `hot-handler` path. Sectors / request and excess "
        "= (sectors - ideal) / sectors, per access class and over all of them.",
        "",
        "| ROM | order | class | requests | env-major sectors / req | "
        "interleaved sectors / req | ideal / req | env-major excess | interleaved excess |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for rom, order in dict.fromkeys((r["rom"], r.get("order", "index")) for r in rows):
        by = {
            (r["layout"], r["class"]): r
            for r in rows
            if (r["rom"], r.get("order", "index")) == (rom, order)
        }
        for cls in (*CLASSES, "all"):
            picked = {
                lay: [by[(lay, c)] for c in (CLASSES if cls == "all" else (cls,))]
                for lay in LAYOUTS
            }
            sums = {
                lay: {k: sum(r[k] for r in rs) for k in ("requests", "sectors", "ideal")}
                for lay, rs in picked.items()
            }
            req = sums["env_major"]["requests"]
            if req == 0:
                continue
            cells = [f"{sums[lay]['sectors'] / req:.2f}" for lay in LAYOUTS]
            excess = [
                f"{100 * (1 - sums[lay]['ideal'] / sums[lay]['sectors']):.0f} %" for lay in LAYOUTS
            ]
            lines.append(
                f"| {rom} | {order} | {cls} | {req:,} | {cells[0]} | {cells[1]} | "
                f"{sums['env_major']['ideal'] / req:.2f} | {excess[0]} | {excess[1]} |"
            )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    roms = list(dict.fromkeys(r["rom"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for k, lay in enumerate(LAYOUTS):
        vals = []
        for rom in roms:
            rs = [
                r
                for r in rows
                if r["rom"] == rom and r["layout"] == lay and r.get("order", "index") == "index"
            ]
            sectors, ideal = sum(r["sectors"] for r in rs), sum(r["ideal"] for r in rs)
            vals.append(100 * (1 - ideal / sectors) if sectors else 0)
        ax.bar(np.arange(len(roms)) + (k - 0.5) * 0.38, vals, 0.38, label=lay)
    ax.set_xticks(np.arange(len(roms)), roms, fontsize=7)
    ax.set_ylabel("excess sectors, %")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    ax.set_title("modelled excess global sectors, all access classes", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    from bench.rom_names import resolve_rom

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--roms", default="demo,quest,busy,game")
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--orders", default="index,pc", help="of index, pc")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    if args.envs < 1 or args.warmup < 0:
        ap.error("--envs must be >= 1 and --warmup >= 0")
    orders = tuple(o for o in args.orders.split(",") if o)
    if not orders or any(o not in ORDERS for o in orders):
        ap.error(f"--orders: a comma list of {', '.join(ORDERS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in [r for r in args.roms.split(",") if r]:
        t0 = time.perf_counter()
        got = measure_rom(resolve_rom(name), args.envs, args.warmup, args.seed, orders)
        meta = {"device": device_name("warp-cpu"), "versions": versions(), "timestamp": time.time()}
        rows += [r | meta for r in got]
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    with (args.out / "results.jsonl").open("a") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    text = summary(rows)
    write_atomic(args.out / "summary.md", text.encode())
    plot(rows, args.out / "coalescing.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
