"""A divergence estimate: how full a 32-lane warp would be if the step kernel's lanes ran in
lockstep (issue #15, item 2). Measured on the CPU, to choose what to time first on a GPU.

1. **Trace.** ``path_trace_kernel`` (bench/divergence_trace.py) is the plain step kernel,
   built from the real kernels' funcs, that also records one code per unit of work of each
   env: an instruction with the branch of ``cpu_step`` that ran it (fast register, fast
   memory, fast CB or general path) and its opcode, or a piece of the frame loop (frame
   start, slice start, interrupt dispatch, unit sync, one pass of the quiet-HALT loop).
   ``--envs`` envs of each ROM step with seeded random actions (Discrete(7),
   ``pokemonred_puffer_v1``, 24 frames per step, buttons released after 8) after
   ``--warmup`` plain steps; one traced env runs with the fast paths on, one with them
   off (``cpu_fast_paths=False``), and after every step both must equal, field by field,
   a third env stepped by the backend's own ``step_kernel`` (so each trace is the path
   the real kernel took).
2. **Lockstep model** (bench/divergence_model.py). Envs are dealt to warps of 32 lanes
   in an ``--orders`` order. A warp runs one unit (one pass of the loop a lane is in)
   per live lane per round; a round's live lanes split into groups by path id, plus one
   if any of them ends its slice there (``SYNC``, a branch inside the pass), and the
   warp issues once per group (issue slots). Active fraction = lane-units / (32 × slots):
   1.0 when all 32 lanes are live and on one path. It is the product of ``occupancy`` =
   lane-units / (32 × rounds) (lanes that wait: their step or frame done, or the other
   branch running) and ``path`` = rounds / slots (lanes on different paths in a round).
   Where lanes wait for each other: ``free`` (only at the step's end: round ``t`` runs
   every lane's ``t``-th unit), ``frame`` (also at each frame's start), ``slice`` (also at
   each pass of ``run_frame``'s loop, whose HALT and instruction branches run one after
   the other: what a GPU does when it reconverges at the end of each branch and loop).
3. **Path ids** (``GRANULARITIES``): ``route`` = the branch of ``cpu_step`` (4) or the
   frame-loop piece; ``handler`` = the route and the sub-branch it takes (``cpu_general``:
   the ``exec_*`` group; the fast paths: the opcode's ``x``/``z`` branch); ``opcode`` =
   the route and the exact opcode. With the fast paths off every instruction takes the
   general route. ``hot-route`` / ``hot-handler``: the same for the GPU shape since issue
   #41, whose call-free instruction loop (``cpu_hot_loop``) runs the three fast routes as
   one path (the handler still splits by the opcode's x/z branch).
4. **Closed-form HALT** (what-if, issue #41 item 3): ``slice/closed-halt`` is the ``slice``
   model on traces where each run of quiet-HALT passes (``halt_through_lcd``'s loop) is one
   unit, as a HALT jumped in closed form to its next event would run.

Orders: ``index`` (env i in warp i // 32, as launched), ``random`` (a new shuffle each
step), ``pc`` (sorted by PC at the step's start), ``work`` (sorted by how many units the
env ran in the previous step: a scheduler's proxy for the game phase an env is in).
Every env starts a step at the end of an LCD frame, so the LCD phase does not order them.

What the model leaves out: every unit costs one slot whatever its length (a unit sync
or ``cpu_general`` is longer than ``cpu_fast``'s ``inc a``, and a fast path's handler
shares the x/z tests before its leaf); reconvergence inside ``cpu_tick``'s loop other
than per pass (the GPU may split and rejoin a pass's branches in other ways); memory
divergence and latency. Rows go to ``results.jsonl`` and a table to ``summary.md`` in
``--out`` (default bench/results/divergence). ``python -m bench.divergence``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from bench.divergence_model import (
    CLOSED_HALT,
    GRANULARITIES,
    KINDS,
    MODELS,
    N_CODES,
    ROUTES,
    WARP,
    Lockstep,
    collapse_halt,
    fold,
    path_ids,
    segment_keys,
    warp_lockstep,
)
from bench.step_settings import ACTION_CODEC, FRAMES_PER_STEP, RELEASE_AFTER_FRAMES

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "divergence"
ORDERS = ("index", "random", "pc", "work")


def warps_of(order: np.ndarray) -> list[np.ndarray]:
    """Envs in ``order`` dealt to warps of 32 lanes (the last one may be part-filled)."""
    return [order[k : k + WARP] for k in range(0, order.size, WARP)]


def order_envs(name: str, pcs: np.ndarray, prev_lens: np.ndarray, rng) -> np.ndarray:
    """The env order ``name`` (``ORDERS``) for a step that starts at ``pcs``."""
    n = pcs.size
    if name == "index":
        return np.arange(n)
    if name == "random":
        return rng.permutation(n)
    if name == "pc":
        return np.argsort(pcs, kind="stable")
    if name == "work":
        return np.argsort(prev_lens, kind="stable")
    raise ValueError(f"unknown order {name!r}; known: {', '.join(ORDERS)}")


def measure_step(
    traces: dict[bool, np.ndarray], lens: np.ndarray, orders: dict[str, np.ndarray]
) -> dict[tuple[str, str, bool, str], Lockstep]:
    """(model, order, fast paths, granularity) -> ``Lockstep`` of one traced step;
    ``traces``: fast paths on/off -> [envs, width] codes (the same units, ``run_rom``)."""
    folded = [fold(traces[True][e, : lens[e]]) for e in range(lens.size)]
    codes = {
        fast: [t[e, : lens[e]][keep] for e, (keep, _) in enumerate(folded)]
        for fast, t in traces.items()
    }
    syncs = [s for _, s in folded]
    configs = [(fast, g) for fast in traces for g in GRANULARITIES]
    luts = [path_ids(fast, g) for fast, g in configs]
    kept = [collapse_halt(c) for c in codes[True]]
    closed = {fast: [c[k] for c, k in zip(cs, kept)] for fast, cs in codes.items()}
    closed_syncs = [s[k] for s, k in zip(syncs, kept)]
    out: dict[tuple[str, str, bool, str], Lockstep] = {}
    for model in (*MODELS, CLOSED_HALT):
        units, flags = (closed, closed_syncs) if model == CLOSED_HALT else (codes, syncs)
        keys = [segment_keys(c, model.split("/")[0]) for c in units[True]]
        for name, order in orders.items():
            for warp in warps_of(order):
                lanes = [[units[fast][e] for e in warp] for fast, _ in configs]
                per_lut = warp_lockstep(
                    lanes, [flags[e] for e in warp], [keys[e] for e in warp], luts
                )
                for (fast, g), one in zip(configs, per_lut):
                    out.setdefault((model, name, fast, g), Lockstep()).add(one)
    return out


def unit_mix(trace: np.ndarray, lens: np.ndarray) -> dict[str, int]:
    """Units by route / frame-loop kind, over every env of one traced step."""
    live = trace[np.arange(trace.shape[1])[None, :] < lens[:, None]].astype(np.int32)
    counts = np.bincount(live, minlength=N_CODES)
    mix = {r: int(counts[k * 512 : (k + 1) * 512].sum()) for k, r in enumerate(ROUTES)}
    mix |= {name: int(counts[code]) for code, name in KINDS.items()}
    return mix


class TracedEnv:
    """A warp-cpu backend whose steps run ``path_trace_kernel`` (bench/divergence_trace.py)."""

    def __init__(
        self,
        rom: str,
        num_envs: int,
        fast: bool,
        gpu_shape: bool = False,
        addresses: bool = False,
        width: int | None = None,
    ) -> None:
        """``addresses``: the GPU shape's trace with each instruction's accesses
        (``self.addrs``, bench/divergence_trace.py); ``width``: units kept per env."""
        import warp as wp

        from gbxcule.backends.warp_vec import WarpVecCpuBackend

        self.fast = fast
        self.gpu_shape = gpu_shape or addresses
        self.addresses = addresses
        self.env = WarpVecCpuBackend(
            rom,
            num_envs=num_envs,
            frames_per_step=FRAMES_PER_STEP,
            release_after_frames=RELEASE_AFTER_FRAMES,
            action_codec=ACTION_CODEC,
            threads=1,
            cpu_fast_paths=fast,
        )
        if width is None:
            width = FRAMES_PER_STEP * (70224 // 4) * 6 // 5  # 4-cycle instructions, plus syncs
        self.trace = wp.zeros((num_envs, width), dtype=wp.int16, device="cpu")
        shape = (num_envs, width) if addresses else (1, 1)
        self.addrs = wp.zeros(shape, dtype=wp.int64, device="cpu")
        self.lens = wp.zeros(num_envs, dtype=wp.int32, device="cpu")

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One traced step: (trace [envs, width] with -1 past each env's units, units)."""
        import warp as wp

        from bench.divergence_trace import (
            path_trace_kernel,
            path_trace_kernel_addresses,
            path_trace_kernel_gpu,
        )

        kernel = path_trace_kernel_gpu if self.gpu_shape else path_trace_kernel
        if self.addresses:
            kernel = path_trace_kernel_addresses
        env = self.env
        env._load_actions(actions)
        self.trace.fill_(-1)
        inputs = [env.machine, env._buttons, FRAMES_PER_STEP, RELEASE_AFTER_FRAMES, 1]
        wp.launch(kernel, dim=env.num_envs, inputs=[*inputs, self.trace, self.addrs, self.lens])
        wp.synchronize_device("cpu")
        env.render_pixels_after_step()
        lens = self.lens.numpy().copy()
        if lens.max() > self.trace.shape[1]:
            raise RuntimeError(f"an env ran {lens.max()} units, more than the trace's width")
        return self.trace.numpy(), lens

    def close(self) -> None:
        self.env.close()


def state_diff(a, b) -> list[str]:
    """The per-env fields where backends ``a`` and ``b`` differ."""
    from gbxcule.backends.warp_base import per_env_arrays

    pairs = zip(per_env_arrays(a.machine), per_env_arrays(b.machine))
    return [k for (k, x), (_, y) in pairs if not np.array_equal(x.numpy(), y.numpy())]


def same_instructions(on: np.ndarray, off: np.ndarray) -> bool:
    """The fast-on and fast-off traces are the same units, routes aside."""
    return bool(np.array_equal(np.where((on >= 0) & (on < 2048), on & 511, on), off))


def run_rom(
    rom: str,
    envs: int,
    steps: int,
    warmup: int,
    seed: int,
    orders: tuple[str, ...],
    verify: bool,
    gpu_shape: bool = False,
) -> tuple[list[dict], list[dict]]:
    """Trace ``steps`` + 1 steps of ``rom`` (the first only gives ``work`` its previous
    step): (lockstep rows, unit-mix rows)."""
    from gbxcule.backends.registry import make_backend
    from gbxcule.backends.warp_base import field_view

    traced = {fast: TracedEnv(rom, envs, fast, gpu_shape) for fast in (True, False)}
    ref = None
    if verify:
        kw = dict(frames_per_step=FRAMES_PER_STEP, release_after_frames=RELEASE_AFTER_FRAMES)
        ref = make_backend(
            "warp-cpu", rom, num_envs=envs, action_codec=ACTION_CODEC, threads=1, **kw
        )
    backends = [t.env for t in traced.values()] + ([ref] if ref is not None else [])
    rng = np.random.default_rng(seed)
    shuffle = np.random.default_rng(seed + 1)
    rows: list[dict] = []
    mixes: list[dict] = []
    try:
        for b in backends:
            b.reset(seed)
        for _ in range(warmup):
            actions = rng.integers(0, 7, size=envs, dtype=np.int64)
            for b in backends:
                b.step(actions)
        prev = np.zeros(envs, dtype=np.int32)
        for step in range(steps + 1):
            actions = rng.integers(0, 7, size=envs, dtype=np.int64)
            pcs = field_view(traced[True].env.machine, "pc").numpy().copy()
            out = {fast: t.step(actions) for fast, t in traced.items()}
            if ref is not None:
                ref.step(actions)
                for fast, t in traced.items():
                    bad = state_diff(t.env, ref)
                    if bad:
                        raise RuntimeError(f"traced step (fast={fast}) != step_kernel: {bad}")
            if not same_instructions(out[True][0], out[False][0]):
                raise RuntimeError("the fast-on and fast-off traces ran different units")
            lens = out[True][1]
            if step > 0:
                ords = {name: order_envs(name, pcs, prev, shuffle) for name in orders}
                traces = {fast: trace for fast, (trace, _) in out.items()}
                for (model, order, fast, g), ls in measure_step(traces, lens, ords).items():
                    rows.append(
                        {"step": step, "model": model, "order": order, "fast_paths": fast}
                        | {"granularity": g, **asdict(ls)}
                    )
                mixes.append({"step": step, **unit_mix(*out[True])} | {"units": int(lens.sum())})
            prev = lens
            sys.stderr.write(f"{Path(rom).name} step {step}: {lens.mean():,.0f} units/env\n")
    finally:
        for b in backends:
            b.close()
    return rows, mixes


def totals(rows: list[dict]) -> dict[tuple, Lockstep]:
    """(rom, model, order, fast paths, granularity) -> ``Lockstep`` summed over steps."""
    out: dict[tuple, Lockstep] = {}
    for r in rows:
        key = (r["rom"], r["model"], r["order"], r["fast_paths"], r["granularity"])
        out.setdefault(key, Lockstep()).add(Lockstep(r["units"], r["rounds"], r["slots"]))
    return out


def summary_lines(rows: list[dict], mixes: list[dict], meta: dict) -> list[str]:
    t = totals(rows)
    roms = list(dict.fromkeys(r["rom"] for r in rows))
    orders = list(dict.fromkeys(r["order"] for r in rows))
    lines = [
        "# Divergence estimate: warp lanes active per issued pass, lockstep by path",
        "",
        f"{meta['envs']} envs per ROM, {meta['steps']} measured steps of {FRAMES_PER_STEP} "
        f"frames (after {meta['warmup']} + 1 unmeasured), seeded random actions (Discrete(7)), "
        f"warps of {WARP} lanes; every traced step equal to `step_kernel`'s "
        f"({'checked' if meta['verify'] else 'NOT checked'}). Active = lane-units / "
        "(32 × issue slots) = occupancy × path; `on`/`off`: `cpu_fast_paths`; path ids by "
        "`route` / `handler` / `opcode` (bench/divergence_model.py). Models: `free` (lanes "
        "wait only at the step's end), `frame` (and at each frame), `slice` (and at each pass "
        "of `run_frame`'s loop, HALT and instruction lanes one after the other).",
        "",
    ]
    head = "| ROM | model | order | occupancy | " + " | ".join(
        f"{f} {g}" for f in ("on", "off") for g in GRANULARITIES
    )
    lines += [head + " |", "|---|---|---|---:|" + "---:|" * (2 * len(GRANULARITIES))]
    for rom in roms:
        for model in (*MODELS, CLOSED_HALT):
            for order in orders:
                cells = [
                    t.get((rom, model, order, f, g)) for f in (True, False) for g in GRANULARITIES
                ]
                if cells[0] is None:
                    continue
                lines.append(
                    f"| {rom} | {model} | {order} | {cells[0].occupancy:.3f} | "
                    + " | ".join(f"{c.active:.3f}" if c else "-" for c in cells)
                    + " |"
                )
    lines += ["", "## Units per env per step, by route or frame-loop piece", ""]
    names = list(ROUTES) + list(KINDS.values())
    lines += ["| ROM | units / env | " + " | ".join(names) + " |"]
    lines += ["|---|---:|" + "---:|" * len(names)]
    for rom in roms:
        ms = [m for m in mixes if m["rom"] == rom]
        units = sum(m["units"] for m in ms)
        per_env = units / (len(ms) * meta["envs"])
        shares = " | ".join(f"{100 * sum(m[n] for m in ms) / units:.2f} %" for n in names)
        lines.append(f"| {rom} | {per_env:,.0f} | {shares} |")
    return lines


def write_plot(rows: list[dict], out_dir: Path) -> Path | None:
    """active.png: active fraction by ROM and model (``handler`` paths, index order), fast
    paths on and off. None where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (results.jsonl and summary.md written)")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = totals(rows)
    roms = list(dict.fromkeys(r["rom"] for r in rows))
    labels = [f"{rom}\n{model}" for rom in roms for model in MODELS]
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, fast in enumerate((True, False)):
        vals = [
            t[(rom, model, "index", fast, "handler")].active for rom in roms for model in MODELS
        ]
        ax.bar(x + (k - 0.5) * 0.38, vals, 0.38, label=f"fast paths {'on' if fast else 'off'}")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("active lanes / 32 per issued pass")
    ax.set_title("lockstep by handler path, envs in index order", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out_dir / "active.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "--roms", default="demo,quest,busy,game", help="comma list: demo, quest, busy, game, paths"
    )
    ap.add_argument("--envs", type=int, default=256)
    ap.add_argument("--steps", type=int, default=2, help="measured steps per ROM")
    ap.add_argument("--warmup", type=int, default=10, help="plain steps before the trace")
    ap.add_argument("--orders", default=",".join(ORDERS), help=f"of {', '.join(ORDERS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-verify", action="store_true", help="skip the step_kernel check")
    ap.add_argument(
        "--shape",
        choices=("cpu", "gpu"),
        default="gpu",
        help="routes of the step's CPU shape or of the GPU shape CUDA runs (step_cuda.py)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: results/divergence-gpu (or -cpu shape: divergence)",
    )
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = RESULTS_DIR.with_name("divergence-gpu") if args.shape == "gpu" else RESULTS_DIR
    from bench.machine_info import device_name, versions
    from bench.rom_names import resolve_rom

    orders = tuple(o for o in args.orders.split(",") if o)
    unknown = set(orders) - set(ORDERS)
    if unknown:
        ap.error(f"unknown orders {sorted(unknown)}; known: {', '.join(ORDERS)}")
    meta = {"envs": args.envs, "steps": args.steps, "warmup": args.warmup}
    meta |= {"verify": not args.no_verify, "seed": args.seed, "warp": WARP, "shape": args.shape}
    meta |= {"device": device_name("warp-cpu"), "host": platform.node(), "versions": versions()}
    rows: list[dict] = []
    mixes: list[dict] = []
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "results.jsonl").open("a") as fh:
        for name in (r for r in args.roms.split(",") if r):
            t0 = time.perf_counter()
            rom_rows, rom_mixes = run_rom(
                resolve_rom(name),
                args.envs,
                args.steps,
                args.warmup,
                args.seed,
                orders,
                meta["verify"],
                args.shape == "gpu",
            )
            stamp = {"rom": name, "timestamp": time.time()}
            for kind, batch in (("lockstep", rom_rows), ("mix", rom_mixes)):
                for r in batch:
                    r |= stamp
                    fh.write(json.dumps({"kind": kind, **r, **meta}) + "\n")
            fh.flush()
            rows += rom_rows
            mixes += rom_mixes
            sys.stderr.write(f"{name}: {time.perf_counter() - t0:.0f} s\n")
    path = args.out / "summary.md"
    path.write_text("\n".join(summary_lines(rows, mixes, meta)) + "\n")
    write_plot(rows, args.out)
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
