"""Benchmark sweep: steps/s and frames/s versus num_envs for every backend.

Every backend runs the same ROM with the same seeded random actions at the same
frames_per_step, in the same process run on the same machine, so the ratios
between them are meaningful even where absolute times are noise. Results are
appended to a JSONL file (one row per backend × num_envs × render mode × repeat,
with device, cores used and versions), and a ``summary.md`` table plus PNG plots are
written beside it.

Like is compared with like: ``--render off`` runs PyBoy with ``render=False`` and the
Warp backends without pixels; ``--render pixels`` runs PyBoy rendering each step's
last frame (``tick(n, True)``) and the Warp backends filling their 72×80 shade buffer
every step (``render_pixels=True``), which is what an RL policy observes; ``--render
packed2`` has the Warp backends fill their 72×20 packed 2-bit buffer instead
(``render_pixels_packed=True``), and PyBoy, which has no packed output, does not run it:
those rows are compared with PyBoy's ``pixels`` rows. Ratios are taken against PyBoy
single in the same render mode. ``--repeats R`` measures every
configuration R times, interleaved (so a busy spell on a shared machine hits all
backends alike), and the summary reports the median; "× PyBoy per core" divides by
the cores a backend ran on (worker threads or processes; GPU rows have none).

``--budget-s S`` keeps a sweep inside S seconds (a lent GPU's minutes are few): before
each run its time is projected from the same configuration's last run with fewer or as
many envs (setup time plus steps at that run's time a step, scaled by the envs past what
the device runs at once: on a GPU the SMs' resident threads, elsewhere linearly), and a
run that would end past the budget is skipped, listed as such in summary.md; nothing is
written for it in results.jsonl.

Usage: python -m bench.sweep (or gbxcule bench) [--backends warp-cpu,pyboy,pyboy-mp]
       [--envs 1,8,64] [--rom PATH|demo|busy|game|loop-*] [--steps 20]
       [--render off,pixels,packed2] [--repeats 3] [--budget-s 480] [--out bench/results]
The default backends add warp-cuda when Warp sees a CUDA device.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bench.machine_info import device_name, versions
from bench.rom_names import NAMED_ROMS, default_rom, resolve_rom
from gbxcule.backends.checks import check_positive_int
from gbxcule.backends.registry import backend_names, make_backend

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_ENVS = {
    "warp-cuda": [1, 64, 1024, 4096, 16384, 65536],
    "warp-cpu": [1, 8, 64, 256],
    "pyboy": [1],
    "pyboy-mp": [1, 2, 4, 8],
}
PYBOY_NAMES = ("pyboy", "pyboy-mp")
RENDER_MODES = ("off", "pixels", "packed2")


def check_render(render: str) -> None:
    if render not in RENDER_MODES:
        raise ValueError(f"render must be one of {RENDER_MODES}, got {render!r}")


@dataclass
class SweepRow:
    backend: str
    num_envs: int
    steps: int
    frames_per_step: int
    seconds: float
    sps: float  # env-steps per second
    fps: float  # emulated frames per second, all envs together
    rom: str
    device: str
    host: str
    versions: dict
    timestamp: float
    render: str = "off"  # RENDER_MODES
    cores: int = 1  # CPU cores the backend ran on (0: a GPU backend)
    repeat: int = 0
    cpu_codegen: str = ""  # warp-cpu: how its step kernel was compiled (kernels/codegen.py)
    # Warp backends: the state layout the run used (env_major / interleaved), named or not
    mem_layout: str = ""


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "-" * (width - filled)
    sys.stderr.write(f"\r[{bar}] {done}/{total} {label:<40}")
    sys.stderr.flush()
    if done == total:
        sys.stderr.write("\n")


def measure(
    backend: str,
    rom: str,
    num_envs: int,
    steps: int,
    frames_per_step: int,
    seed: int,
    warmup: int = 2,
    mem_layout: str | None = None,
    render: str = "off",
    repeat: int = 0,
    cpu_codegen: str | None = None,
    backend_options: dict | None = None,
) -> SweepRow:
    """Time ``steps`` steps (after ``warmup``) of seeded random actions on one backend.

    ``mem_layout`` (Warp backends only) picks the state layout; the row's backend is then
    labelled ``backend:layout``. ``render`` is one of ``RENDER_MODES`` (module doc).
    ``cpu_codegen`` (warp-cpu only) builds its step kernel that way first
    (kernels/codegen.py); ``plain`` rows are labelled ``backend:plain``.
    ``backend_options``: more keyword arguments for the backend (e.g. ``cpu_fast_paths``,
    bench/gpu_knobs.py); the row's label does not show them.
    """
    check_render(render)
    if cpu_codegen is not None:
        from gbxcule.kernels.codegen import cpu_codegen as current_codegen
        from gbxcule.kernels.codegen import set_cpu_codegen

        if current_codegen() != cpu_codegen:
            set_cpu_codegen(cpu_codegen)
    options: dict = {"mem_layout": mem_layout} if mem_layout and backend.startswith("warp") else {}
    if backend in PYBOY_NAMES:
        if render == "packed2":
            raise ValueError(f"{backend} has no packed2 output (module doc)")
        options["render"] = render == "pixels"
    else:
        options["render_pixels"] = render == "pixels"
        options["render_pixels_packed"] = render == "packed2"
    options.update(backend_options or {})
    env = make_backend(
        backend,
        rom,
        num_envs=num_envs,
        frames_per_step=frames_per_step,
        release_after_frames=min(8, frames_per_step),
        action_codec="pokemonred_puffer_v1",
        **options,
    )
    try:
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        actions = rng.integers(0, 7, size=(warmup + steps, num_envs), dtype=np.int64)
        for k in range(warmup):
            env.step(actions[k])
        sync = getattr(env, "synchronize", None)
        if sync is not None:
            sync()
        t0 = time.perf_counter()
        for k in range(warmup, warmup + steps):
            env.step(actions[k])
        if sync is not None:
            sync()
        seconds = time.perf_counter() - t0
        cores = _cores_used(backend, env, num_envs)
        layout = str(getattr(env, "mem_layout", ""))
    finally:
        env.close()
    sps = steps * num_envs / seconds
    label = f"{backend}:{mem_layout}" if "mem_layout" in options else backend
    return SweepRow(
        backend=label + (":plain" if cpu_codegen == "plain" else ""),
        num_envs=num_envs,
        steps=steps,
        frames_per_step=frames_per_step,
        seconds=seconds,
        sps=sps,
        fps=sps * frames_per_step,
        rom=Path(rom).name,
        device=device_name(backend),
        host=platform.node(),
        versions=versions(),
        timestamp=time.time(),
        render=render,
        cores=cores,
        repeat=repeat,
        cpu_codegen=cpu_codegen or "",
        mem_layout=layout,
    )


def _cores_used(backend: str, env, num_envs: int) -> int:
    if backend == "warp-cuda":
        return 0
    if backend == "warp-cpu":
        return min(env.threads, num_envs)
    if backend == "pyboy-mp":
        return env.num_workers
    return 1


@dataclass
class SummaryRow:
    """Every repeat of one configuration, summarised by its median."""

    backend: str
    render: str
    num_envs: int
    device: str
    cores: int
    sps: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.sps)


def summarise(rows: list[SweepRow]) -> list[SummaryRow]:
    """One entry per (backend, render, envs), in first-run order."""
    out: dict[tuple[str, str, int], SummaryRow] = {}
    for r in rows:
        key = (r.backend, r.render, r.num_envs)
        if key not in out:
            out[key] = SummaryRow(r.backend, r.render, r.num_envs, r.device, r.cores, [])
        out[key].sps.append(r.sps)
    return list(out.values())


def pyboy_baselines(summary: list[SummaryRow]) -> dict[str, float]:
    """Median steps/s of PyBoy single with 1 env, per render mode; ``packed2`` rows are
    compared with PyBoy's ``pixels`` (it has no packed output)."""
    base = {s.render: s.median for s in summary if s.backend == "pyboy" and s.num_envs == 1}
    if "pixels" in base:
        base["packed2"] = base["pixels"]
    return base


# The step kernel takes 255 registers a thread: 8 warps an SM are resident (ncu, H100,
# bench/results/gpu/ncu), so up to SMs x 256 envs a step costs about what one env's does.
GPU_ENVS_PER_SM = 256


def envs_at_once(backends: Sequence[str]) -> dict[str, int]:
    """For the budget's projection: how many envs warp-cuda runs in one wave."""
    if "warp-cuda" not in backends:
        return {}
    import warp as wp

    return {"warp-cuda": int(wp.get_device("cuda:0").sm_count) * GPU_ENVS_PER_SM}


class TimeBudget:
    """Which runs of a sweep still fit in ``seconds`` (module doc, ``--budget-s``)."""

    def __init__(
        self, seconds: float | None, warmup: int, steps: int, at_once: dict | None = None
    ) -> None:
        self.seconds, self.run_steps = seconds, warmup + steps
        self.start = time.perf_counter()
        self.done: dict[tuple, list[tuple[int, float, float]]] = {}  # (envs, sps, setup s)
        self.skipped: list[str] = []
        self.at_once = at_once or {}  # key[0] -> envs the device runs in one wave

    def projected(self, key: tuple, num_envs: int) -> float | None:
        """Seconds the run is expected to take; None before the configuration's first run.
        A step's time grows with the envs only past what the device runs at once (a GPU's
        resident threads; 1 elsewhere, so linear)."""
        fits = [d for d in self.done.get(key, []) if d[0] <= num_envs]
        if not fits:
            return None
        envs, sps, setup = max(fits, key=lambda d: d[0])
        width = self.at_once.get(key[0], 1)
        waves = max(num_envs, width) / max(envs, width)
        return setup + self.run_steps * envs / sps * waves

    def allows(self, key: tuple, num_envs: int, label: str) -> bool:
        if self.seconds is None:
            return True
        est = self.projected(key, num_envs)
        left = self.seconds - (time.perf_counter() - self.start)
        if (est is None and left > 0) or (est is not None and est <= left):
            return True
        shown = "unknown" if est is None else f"{est:,.0f} s"
        self.skipped.append(f"{label}: projected {shown}, {max(left, 0):,.0f} s of the budget left")
        return False

    def record(self, key: tuple, num_envs: int, row: SweepRow, wall: float) -> None:
        self.done.setdefault(key, []).append((num_envs, row.sps, max(wall - row.seconds, 0.0)))


def write_summary(rows: list[SweepRow], out_dir: Path, skipped: Sequence[str] = ()) -> Path:
    """summary.md: median steps/s per backend, render mode and envs, with the ratios to
    PyBoy single in the same render mode (whole machine and per core), and the runs the
    time budget skipped."""
    summary = summarise(rows)
    base = pyboy_baselines(summary)
    runs = max(len(s.sps) for s in summary)
    lines = [
        "# Benchmark sweep",
        "",
        f"ROM `{rows[0].rom}`, {rows[0].frames_per_step} frames/step, seeded random actions, "
        f"{rows[0].steps} timed steps per run, median of {runs} interleaved run(s). "
        "Render `off`: no pixels anywhere; `pixels`: PyBoy renders each step's last frame, "
        "Warp fills its 72×80 shades; `packed2`: Warp fills its 72×20 packed buffer "
        "(compared with PyBoy's `pixels`).",
        "",
        "| backend | render | envs | device | cores | steps/s | frames/s | spread | "
        "× PyBoy single | × PyBoy per core |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary:
        b = base.get(s.render)
        ratio = f"{s.median / b:.2f}" if b else "n/a"
        per_core = f"{s.median / b / s.cores:.2f}" if b and s.cores else "n/a"
        spread = f"{min(s.sps):,.0f}–{max(s.sps):,.0f}" if len(s.sps) > 1 else "-"
        fps = s.median * rows[0].frames_per_step
        lines.append(
            f"| {s.backend} | {s.render} | {s.num_envs} | {s.device} | {s.cores} | "
            f"{s.median:,.1f} | {fps:,.0f} | {spread} | {ratio} | {per_core} |"
        )
    if skipped:
        lines += ["", "Skipped to stay inside the time budget (`--budget-s`):", ""]
        lines += [f"- {s}" for s in skipped]
    path = out_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_plots(rows: list[SweepRow], out_dir: Path) -> list[Path]:
    """sps_vs_envs.png and speedup_vs_pyboy.png (log-log, medians, one line per backend and
    render mode). None where matplotlib is missing (the GPU machine): the JSONL and
    summary.md are written first, so a run there keeps its results."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plots (results.jsonl and summary.md written)")
        return []

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarise(rows)
    base = pyboy_baselines(summary)
    paths = []
    for name, ylabel, speedup in (
        ("sps_vs_envs.png", "env-steps / s", False),
        ("speedup_vs_pyboy.png", "× PyBoy single (same render mode)", True),
    ):
        fig, ax = plt.subplots(figsize=(6, 4))
        drawn = False
        for key in dict.fromkeys((s.backend, s.render) for s in summary):
            pts = [
                (s.num_envs, s.median / base[s.render] if speedup else s.median)
                for s in summary
                if (s.backend, s.render) == key and (not speedup or s.render in base)
            ]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"{key[0]} ({key[1]})")
                drawn = True
        if not drawn:
            plt.close(fig)
            continue
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("num_envs")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


def run_sweep(
    backends: list[str],
    rom: str,
    envs: dict[str, list[int]],
    steps: int,
    frames_per_step: int,
    seed: int,
    out_dir: Path,
    mem_layout: str | None = None,
    renders: tuple[str, ...] = ("off",),
    repeats: int = 1,
    cpu_codegens: tuple[str, ...] = ("tuned",),
    budget_s: float | None = None,
) -> list[SweepRow]:
    # Everything checked up front, before any long run (and before a row is written).
    from gbxcule.kernels.codegen import check_codegen

    if not cpu_codegens:
        raise ValueError("cpu_codegens is empty")
    for codegen in cpu_codegens:
        check_codegen(codegen)
    check_positive_int("repeats", repeats)
    check_positive_int("steps", steps)
    check_positive_int("frames_per_step", frames_per_step)
    for backend in backends:
        for n in envs[backend]:
            check_positive_int("num_envs", n)
    for render in renders:
        check_render(render)
    if budget_s is not None and not budget_s > 0:
        raise ValueError(f"budget_s must be > 0 seconds, got {budget_s!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    configs = [
        (b, r, n, c)
        for r in renders
        for b in backends
        if not (r == "packed2" and b in PYBOY_NAMES)
        for c in (cpu_codegens if b == "warp-cpu" else (None,))
        for n in sorted(envs[b])
    ]
    jobs = [(k, c) for k in range(repeats) for c in configs]
    rows: list[SweepRow] = []
    budget = TimeBudget(budget_s, warmup=2, steps=steps, at_once=envs_at_once(backends))
    with (out_dir / "results.jsonl").open("a") as fh:
        for j, (repeat, (backend, render, n, codegen)) in enumerate(jobs):
            name = backend + (f":{codegen}" if codegen else "")
            label = f"{name} × {n} render={render} #{repeat + 1}"
            _progress(j, len(jobs), label)
            if not budget.allows((backend, render, codegen), n, label):
                continue
            t0 = time.perf_counter()
            row = measure(
                backend,
                rom,
                n,
                steps,
                frames_per_step,
                seed,
                mem_layout=mem_layout,
                render=render,
                repeat=repeat,
                cpu_codegen=codegen,
            )
            budget.record((backend, render, codegen), n, row, time.perf_counter() - t0)
            fh.write(json.dumps(asdict(row)) + "\n")
            fh.flush()
            rows.append(row)
        _progress(len(jobs), len(jobs), "done")
    if not rows:
        raise ValueError(f"the time budget ({budget_s} s) left no run: {budget.skipped}")
    write_summary(rows, out_dir, budget.skipped)
    write_plots(rows, out_dir)
    return rows


def default_backends() -> list[str]:
    """The CPU backends, plus warp-cuda when Warp sees a CUDA device."""
    from gbxcule.cli.playback import cuda_available

    return ["warp-cpu", "pyboy", "pyboy-mp"] + (["warp-cuda"] if cuda_available() else [])


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--backends", default=None, help="comma list (default: warp-cpu,pyboy,pyboy-mp[,warp-cuda])"
    )
    ap.add_argument("--envs", default=None, help="comma list applied to every backend")
    ap.add_argument(
        "--rom",
        default=None,
        help="ROM path or a bench ROM name (resolve_rom: demo, busy, game, loop-*); "
        "default: the demo game",
    )
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--frames-per-step", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: bench/results/cpu or gpu, -busy, -game or -<ROM name> added)",
    )
    ap.add_argument(
        "--mem-layout",
        choices=("env_major", "interleaved"),
        default=None,
        help="Warp backends' state layout (default: the backend's own)",
    )
    ap.add_argument(
        "--render",
        default="off,pixels",
        help="comma list of render modes: off (no pixels), pixels and/or packed2 (module doc)",
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="skip the runs projected to end past this many seconds (module doc)",
    )
    ap.add_argument("--repeats", type=int, default=1, help="interleaved runs per configuration")
    ap.add_argument(
        "--cpu-codegen",
        default="tuned",
        help="comma list: how warp-cpu's step kernel is compiled, tuned and/or plain "
        "(kernels/codegen.py; plain rows are labelled warp-cpu:plain)",
    )


def default_out_dir(backends: list[str], rom: str | None) -> Path:
    """Where a sweep's rows go unless ``--out`` says: ``cpu``, or ``gpu`` when warp-cuda
    runs, with ``-busy`` / ``-game`` for those benchmark ROMs or ``-<ROM file stem>`` for
    another ROM (none for the demo game, the default)."""
    name = "gpu" if "warp-cuda" in backends else "cpu"
    if rom in NAMED_ROMS:
        name += "-" + rom
    elif rom not in (None, "demo"):
        name += "-" + Path(rom).stem
    return RESULTS_DIR / name


def run(args: argparse.Namespace) -> int:
    backends = args.backends.split(",") if args.backends else default_backends()
    backends = [b for b in backends if b]
    unknown = [b for b in backends if b not in backend_names()]
    if unknown:
        raise ValueError(f"unknown backends {unknown}; known: {backend_names()}")
    if "warp-cuda" in backends:
        from gbxcule.cli.playback import cuda_available

        if not cuda_available():
            raise ValueError("warp-cuda needs a CUDA device visible to Warp; this machine has none")
    if args.envs:
        counts = [int(x) for x in args.envs.split(",")]
        envs = {b: counts for b in backends}
    else:
        envs = {b: DEFAULT_ENVS[b] for b in backends}
    out = args.out or default_out_dir(backends, args.rom)
    rom = resolve_rom(args.rom) if args.rom else default_rom()
    rows = run_sweep(
        backends,
        rom,
        envs,
        args.steps,
        args.frames_per_step,
        args.seed,
        out,
        mem_layout=args.mem_layout,
        renders=tuple(r for r in args.render.split(",") if r),
        repeats=args.repeats,
        cpu_codegens=tuple(c for c in args.cpu_codegen.split(",") if c),
        budget_s=args.budget_s,
    )
    print((out / "summary.md").read_text())
    print(f"{len(rows)} rows appended to {out / 'results.jsonl'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run(args)
    except ValueError as exc:
        ap.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
