"""x86 instructions per SM83 instruction, counted by Valgrind: warp-cpu against PyBoy.

Times on a shared machine are noise; an instruction count is exact and repeatable, and
with ``bench.cpu_profile``'s ns per instruction it tells whether a backend is slow
because it runs many instructions or because it runs them slowly (instructions retired
per ns). For never-halting ROMs (``busy``, ``game``, ``loop-*`` or a path):

1. Each backend runs in a child process (1 env, 24 frames/step, ``bench.cpu_profile``'s
   settings) under ``valgrind --tool=callgrind`` twice: ``--warmup`` steps, then
   ``--warmup`` + ``--steps``. The difference of the two totals is ``--steps`` steps'
   instructions, start-up, imports and compiles excluded.
2. Per SM83 instruction: divided by frames and by instructions per frame (70,224 /
   T-cycles per instruction, from ``bench.cpu_profile``'s trace).
3. warp-cpu's breakdown: callgrind's count per address in the step kernel's object,
   mapped to each address's chain of inlined functions (``addr2line -i``), summed by the
   function ``cpu_run_fast`` or ``cpu_step`` (else ``cpu_tick``) calls: fetch, the fast
   paths, the slice's unit syncs, and so on.

The step kernel is built with the tuned codegen (kernels/codegen.py) for ``-target-cpu
x86-64-v3`` instead of ``-march=native`` (Valgrind runs no AVX-512, and an object built
for the host's features is cached under their name, so the child would compile it under
Valgrind for minutes), and with line tables, which do not change the code. The parent
builds it natively first; the children find it in the kernel cache.

Rows are appended to ``results.jsonl``; ``summary.md`` and ``breakdown.png`` show each
(ROM, backend)'s latest count there (so a run of warp-cpu alone keeps PyBoy's), in
``--out`` (default bench/results/cpu-instr-count).
``python -m bench.cpu_instr_count [--rom busy,game]``. Needs ``valgrind`` and ``addr2line``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.step_settings import FRAMES_PER_STEP

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "cpu-instr-count"
COUNT_TARGET = "x86-64-v3"
BACKENDS = ("pyboy", "warp-cpu")
PYBOY_TOP = 12  # PyBoy's functions listed in its breakdown


def count_flags(flags: str) -> str:
    """Warp's CPU flags as the count builds them: ``-march=native`` replaced by
    ``-target-cpu`` :data:`COUNT_TARGET`, plus line tables."""
    parts = [p for p in flags.split() if p != "-march=native"]
    return " ".join(["-target-cpu", COUNT_TARGET, *parts, "-debug-info-kind=line-tables-only"])


def run_child(backend: str, rom: str, steps: int) -> dict:
    """``steps`` steps of ``backend`` on ``rom``; for warp-cpu also the step kernel's
    object file (what the parent maps addresses with)."""
    import numpy as np

    if backend == "warp-cpu":
        import warp as wp

        wp.config.cpu_compiler_flags = count_flags(wp.config.cpu_compiler_flags or "")
    from bench.cpu_profile import profile_backend

    env = profile_backend(backend, rom)
    out: dict = {"backend": backend, "steps": steps}
    try:
        env.reset(seed=0)
        actions = np.random.default_rng(0).integers(0, 7, size=(steps, 1), dtype=np.int64)
        for k in range(steps):
            env.step(actions[k])
        if backend == "warp-cpu":
            out["object"] = str(step_object(env._step_kernel().module))
    finally:
        env.close()
    return out


def step_object(module) -> Path:
    """The CPU object of the loaded Warp ``module`` (the backend's step kernel's)."""
    import warp as wp

    execs = list(module.execs.values())
    if not execs:
        raise RuntimeError(f"{module.name} was not loaded")
    h = execs[0].module_hash
    short = (h.hex() if isinstance(h, bytes) else str(h))[:7]
    if wp.config.kernel_cache_dir is None:
        raise RuntimeError("Warp has no kernel cache directory")
    folder = Path(wp.config.kernel_cache_dir) / f"wp_{module.name}_{short}"
    objects = sorted(folder.glob("*.o"))
    if len(objects) != 1:
        raise RuntimeError(f"expected one object in {folder}, found {len(objects)}")
    return objects[0]


# ---- callgrind output ------------------------------------------------------------


@dataclass
class Profile:
    """One callgrind run: self cost per instruction address and per function name (a
    recursion suffix such as ``'2`` dropped)."""

    by_address: Counter
    by_function: Counter

    def jit_functions(self) -> dict[int, int]:
        """The functions named by their address (JIT code has no symbols): address -> cost."""
        return {
            int(name, 16): v
            for name, v in self.by_function.items()
            if re.fullmatch(r"0x[0-9a-fA-F]+", name)
        }


def parse_callgrind(text: str) -> Profile:
    """A callgrind file written with ``--dump-instr=yes`` (positions: instr line)."""
    by_address: Counter = Counter()
    by_function: Counter = Counter()
    names: dict[str, str] = {}
    fn = ""
    pos = [0, 0]
    skip_next = False
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("cfn="):  # a name may first appear as a callee's
            m = re.match(r"cfn=\((\d+)\) (.*)", line)
            if m is not None:
                names[m.group(1)] = m.group(2)
            continue
        if line.startswith("fn="):
            m = re.match(r"fn=\((\d+)\)(?: (.*))?", line)
            if m is None:
                fn = line[3:]
                continue
            if m.group(2):
                names[m.group(1)] = m.group(2)
            fn = names.get(m.group(1), "").split("'")[0]
            continue
        if line.startswith("calls="):
            skip_next = True  # the next cost line is the call's inclusive cost
            continue
        if not (line[0].isdigit() or line[0] in "+-*"):
            continue
        parts = line.split()
        for j in range(2):
            p = parts[j]
            if p == "*":
                continue
            pos[j] = pos[j] + int(p, 0) if p[0] in "+-" else int(p, 0)
        if skip_next:
            skip_next = False
            continue
        if len(parts) > 2:
            by_address[pos[0]] += int(parts[2])
            by_function[fn] += int(parts[2])
    return Profile(by_address, by_function)


def cython_name(symbol: str) -> str:
    """``__pyx_f_5pyboy_4core_3cpu_3CPU_tick`` -> ``pyboy.core.cpu.CPU_tick``; other names
    as they are."""
    m = re.match(r"__pyx_(?:f|pw|pf)_(.*)", symbol)
    if m is None:
        return symbol
    rest, parts = m.group(1), []
    while (n := re.match(r"(\d+)", rest)) is not None:
        k = len(n.group(1))
        parts.append(rest[k : k + int(n.group(1))])
        rest = rest[k + int(n.group(1)) :].removeprefix("_")
    return ".".join([*parts, rest] if rest else parts)


def object_symbols(obj: Path) -> list[tuple[int, int, str]]:
    """(offset, size, name) of the object's text symbols."""
    out = subprocess.run(["nm", "-S", str(obj)], capture_output=True, text=True, check=True)
    syms = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return syms


def load_base(fn_cost: dict[int, int], syms: list[tuple[int, int, str]]) -> int:
    """Where the object's text was loaded: the base that puts the most JIT function entries
    on symbol offsets, among those the costliest one suggests."""
    offsets = {off for off, _, _ in syms}
    top = max(fn_cost, key=lambda a: fn_cost[a])
    best = max(
        (top - off for off in offsets),
        key=lambda base: sum(1 for a in fn_cost if a - base in offsets),
    )
    return best


def object_costs(text: str, syms: list[tuple[int, int, str]]) -> Counter:
    """Self cost per offset in the object, from one callgrind run."""
    profile = parse_callgrind(text)
    cost = profile.by_address
    base = load_base(profile.jit_functions(), syms)
    end = max(off + size for off, size, _ in syms)
    return Counter({a - base: v for a, v in cost.items() if 0 <= a - base < end})


def total_cost(text: str) -> int:
    m = re.search(r"^summary: (\d+)", text, re.M) or re.search(r"^totals: (\d+)", text, re.M)
    if m is None:
        raise ValueError("callgrind output without a summary line")
    return int(m.group(1))


def inline_chains(obj: Path, offsets: list[int]) -> dict[int, list[str]]:
    """Innermost-first inlined function names at each offset (``addr2line -i -f``)."""
    inp = "\n".join(hex(a) for a in offsets)
    out = subprocess.run(
        ["addr2line", "-i", "-f", "-C", "-a", "-e", str(obj)],
        input=inp,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    chains: dict[int, list[str]] = {}
    cur = -1
    j = 0
    while j < len(out):
        if out[j].startswith("0x"):
            cur = int(out[j], 16)
            chains[cur] = []
            j += 1
        else:
            chains[cur].append(out[j])
            j += 2  # function name, then file:line
    return chains


def group_of(chain: list[str]) -> str:
    """The function ``cpu_run_fast`` or ``cpu_step`` calls (else ``cpu_tick``), from an
    innermost-first chain of Warp's generated names (``fetch_0``,
    ``make_cpu_fast_mem__locals__cpu_fast_mem_0``; a variant's module numbers its own
    ``cpu_step_1``). ``cpu_run_fast``'s fetch (``rom_code_at``) counts as ``fetch``."""
    names = [c for c in chain[::-1] if re.search(r"_\d+(\(|$)", c)]
    names = [re.sub(r"_\d+$", "", re.sub(r"\(.*", "", n)) for n in names]
    names = [re.sub(r"^_?make_\w*__locals__", "", n) for n in names]
    for anchor in ("cpu_run_fast", "cpu_step", "cpu_tick"):
        if anchor in names:
            k = names.index(anchor)
            rest = [
                n for n in names[k + 1 :] if n not in (anchor, "cpu_tick", "cpu_step", "fast_paths")
            ]
            if rest[:1] == ["fast_by_opcode"]:  # the CPU's dispatch: the fast path it runs
                rest = rest[1:] or ["fast_by_opcode (itself)"]
            if rest[:1] == ["rom_code_at"]:
                rest = ["fetch"]
            return rest[0] if rest else f"{anchor} (itself)"
    return names[0] if names else "other"


# ---- runs --------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """The children's environment: a fixed hash seed, so the two runs of a count differ
    only by their extra steps (with random seeds, dict and set work differs by millions
    of instructions, the size of a step's count), and no OpenBLAS threads (NumPy's, idle,
    whose spinning callgrind counts: ~4 instructions per SM83 instruction of PyBoy's)."""
    return {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}


def child_command(backend: str, rom: str, steps: int) -> list[str]:
    """The command of a child running ``steps`` steps (``run_child``)."""
    return [sys.executable, "-m", "bench.cpu_instr_count", "--child", backend, rom, str(steps)]


def callgrind(backend: str, rom: str, steps: int, tmp: Path) -> tuple[str, dict]:
    """One child under callgrind: its output file's text and the child's report."""
    out = tmp / f"cg.{backend}.{steps}.out"
    report = tmp / f"report.{backend}.{steps}.json"
    cmd = ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}"]
    cmd += [*child_command(backend, rom, steps), "--report", str(report)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    if done.returncode != 0:
        raise RuntimeError(f"{backend} under valgrind failed:\n{done.stderr[-3000:]}")
    return out.read_text(), json.loads(report.read_text())


def count_rom(rom: str, backend: str, warmup: int, steps: int, per_frame: float) -> list[dict]:
    """The count row of ``backend`` on ``rom``, then its breakdown rows: for warp-cpu by the
    function the CPU loop calls, for PyBoy its costliest functions (``PYBOY_TOP``)."""
    with tempfile.TemporaryDirectory() as d:
        text0, _ = callgrind(backend, rom, warmup, Path(d))
        text1, report = callgrind(backend, rom, warmup + steps, Path(d))
    sm83 = steps * FRAMES_PER_STEP * per_frame
    diff = total_cost(text1) - total_cost(text0)
    common = {"rom": Path(rom).name, "backend": backend, "steps": steps, "timestamp": time.time()}
    rows = [
        common
        | {
            "kind": "count",
            "x86_instructions": diff,
            "per_frame": diff / (steps * FRAMES_PER_STEP),
            "per_sm83": diff / sm83,
            "sm83_per_frame": per_frame,
            "host": platform.node(),
        }
    ]
    if backend == "warp-cpu":
        obj = Path(report["object"])
        syms = object_symbols(obj)
        c = object_costs(text1, syms)
        c.subtract(object_costs(text0, syms))
        rows[0]["kernel_per_sm83"] = sum(c.values()) / sm83  # the step kernel's object alone
        hot = sorted(a for a, v in c.items() if v > 0)
        groups: Counter = Counter()
        for a, chain in inline_chains(obj, hot).items():
            groups[group_of(chain)] += c[a]
    else:
        groups = parse_callgrind(text1).by_function
        groups.subtract(parse_callgrind(text0).by_function)
        groups = Counter({cython_name(k): v for k, v in groups.most_common(PYBOY_TOP)})
    for group, v in groups.most_common():
        rows.append(common | {"kind": "breakdown", "group": group, "per_sm83": v / sm83})
    return rows


def native_build(rom: str) -> None:
    """Build the counted step kernel natively (one short child), so the children under
    Valgrind find it in the cache."""
    subprocess.run(child_command("warp-cpu", rom, 1), check=True, capture_output=True)


def cpu_profile_ns(rom: str, path: Path) -> dict[str, float]:
    """Median ns per instruction by backend for ``rom`` in bench.cpu_profile's latest run
    (the timing rows after the ROM's last mix row)."""
    if not path.exists():
        return {}
    by: dict[str, list[float]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("rom") != rom:
            continue
        if row.get("kind") == "mix":
            by = {}
        elif row.get("kind") == "timing":
            by.setdefault(row["backend"], []).append(row["ns_per_instruction"])
    return {b: statistics.median(v) for b, v in by.items()}


def summary_lines(rows: list[dict], ns: dict[str, dict[str, float]]) -> list[str]:
    counts = [r for r in rows if r["kind"] == "count"]
    roms = list(dict.fromkeys(r["rom"] for r in counts))
    per = {(r["rom"], r["backend"]): r["per_sm83"] for r in counts}
    lines = ["# x86 instructions per SM83 instruction (Valgrind callgrind)", ""]
    lines += [
        "1 env, 24 frames/step, steps after a warm-up (start-up excluded). Retired per ns: "
        "the count over bench.cpu_profile's median ns per instruction on this machine "
        f"(its results.jsonl). warp-cpu built for `-target-cpu {COUNT_TARGET}`; its kernel: "
        "the step kernel's object alone (exact; the whole-process counts carry a little "
        "of Python's per-step work).",
        "",
        "| ROM | PyBoy | warp-cpu | warp-cpu kernel | warp-cpu / PyBoy "
        "| PyBoy retired / ns | warp-cpu retired / ns |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    kernel = {r["rom"]: r.get("kernel_per_sm83") for r in counts if r["backend"] == "warp-cpu"}
    for rom in roms:
        p, w = per.get((rom, "pyboy")), per.get((rom, "warp-cpu"))
        cells = [f"{v:.1f}" if v else "-" for v in (p, w, kernel.get(rom))]
        cells.append(f"{w / p:.2f}" if p and w else "-")
        for backend, v in (("pyboy", p), ("warp-cpu", w)):
            t = ns.get(rom, {}).get(backend)
            cells.append(f"{v / t:.1f}" if v and t else "-")
        lines.append(f"| {rom} | " + " | ".join(cells) + " |")
    titles = {"warp-cpu": "by the function the CPU loop calls", "pyboy": "its costliest functions"}
    for rom in roms:
        for backend, title in titles.items():
            parts = [
                r
                for r in rows
                if r["kind"] == "breakdown" and r["rom"] == rom and r["backend"] == backend
            ]
            if not parts:
                continue
            lines += ["", f"## {backend} on {rom}: {title}", ""]
            lines += ["| function | x86 instructions / SM83 instruction |", "|---|---:|"]
            lines += [
                f"| `{r['group']}` | {r['per_sm83']:.2f} |" for r in parts if r["per_sm83"] >= 0.05
            ]
    return lines


def write_plot(rows: list[dict], out_dir: Path) -> Path | None:
    """breakdown.png: warp-cpu's breakdown per ROM beside PyBoy's total. None where
    matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (results.jsonl and summary.md written)")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    warp = [r for r in rows if r["kind"] == "breakdown" and r["backend"] == "warp-cpu"]
    roms = list(dict.fromkeys(r["rom"] for r in warp))
    if not roms:
        return None
    groups = list(dict.fromkeys(r["group"] for r in warp))
    color = {g: plt.get_cmap("tab20")(k % 20) for k, g in enumerate(groups)}
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, rom in enumerate(roms):
        parts = [r for r in warp if r["rom"] == rom]
        bottom = 0.0
        for r in parts[:8]:
            ax.bar(2 * k, r["per_sm83"], 0.8, bottom=bottom, color=color[r["group"]])
            ax.text(2 * k, bottom + r["per_sm83"] / 2, r["group"], ha="center", fontsize=6)
            bottom += r["per_sm83"]
        rest = sum(r["per_sm83"] for r in parts[8:])
        ax.bar(2 * k, rest, 0.8, bottom=bottom, color="lightgray")
        pyboy = [
            r["per_sm83"]
            for r in rows
            if r["kind"] == "count" and r["rom"] == rom and r["backend"] == "pyboy"
        ]
        if pyboy:
            ax.bar(2 * k + 0.9, pyboy[0], 0.8, color="tab:gray")
    ax.set_xticks(
        [2 * k + 0.45 for k in range(len(roms))], [f"{r}\nwarp-cpu | PyBoy" for r in roms]
    )
    ax.set_ylabel("x86 instructions / SM83 instruction")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path = out_dir / "breakdown.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def latest_rows(path: Path) -> list[dict]:
    """The rows of each (ROM, backend)'s latest count in a results.jsonl."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    last: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["rom"], r["backend"])
        last[key] = max(last.get(key, 0.0), r["timestamp"])
    return [r for r in rows if r["timestamp"] == last[(r["rom"], r["backend"])]]


def write_summary(rows: list[dict], out_dir: Path) -> Path:
    from bench.cpu_profile import RESULTS_DIR as PROFILE_DIR
    from gbxcule.files import write_atomic

    roms = dict.fromkeys(r["rom"] for r in rows)
    ns = {rom: cpu_profile_ns(rom, PROFILE_DIR / "results.jsonl") for rom in roms}
    path = out_dir / "summary.md"
    write_atomic(path, ("\n".join(summary_lines(rows, ns)) + "\n").encode())
    write_plot(rows, out_dir)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rom", default="busy,game", help="comma list: busy, game, loop-*, paths")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--warmup", type=int, default=2, help="steps before the counted ones")
    ap.add_argument("--steps", type=int, default=10, help="counted steps")
    ap.add_argument("--instructions", type=int, default=100_000, help="traced for T-cycles/instr")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument(
        "--summary-only", action="store_true", help="rewrite summary.md and the plot from --out"
    )
    ap.add_argument("--child", nargs=3, metavar=("BACKEND", "ROM", "STEPS"), help=argparse.SUPPRESS)
    ap.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        report = run_child(args.child[0], args.child[1], int(args.child[2]))
        if args.report:
            args.report.write_text(json.dumps(report))
        return 0
    if args.summary_only:
        print(write_summary(latest_rows(args.out / "results.jsonl"), args.out).read_text())
        return 0
    backends = [b for b in args.backends.split(",") if b]
    if set(backends) - set(BACKENDS):
        ap.error(f"unknown backends {sorted(set(backends) - set(BACKENDS))}; known: {BACKENDS}")
    for tool in ("valgrind", "addr2line", "nm"):
        if shutil.which(tool) is None:
            ap.error(f"{tool} is not installed (the count runs the backends under Valgrind)")
    from bench.cpu_profile import opcode_mix
    from bench.rom_names import resolve_rom

    args.out.mkdir(parents=True, exist_ok=True)
    for name in [r for r in args.rom.split(",") if r]:
        rom = resolve_rom(name)
        per_frame = opcode_mix(rom, args.instructions, 30).instructions_per_frame
        if "warp-cpu" in backends:
            native_build(rom)
        for backend in backends:
            new = count_rom(rom, backend, args.warmup, args.steps, per_frame)
            with (args.out / "results.jsonl").open("a") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in new)
            sys.stderr.write(f"{Path(rom).name} {backend}: {new[0]['per_sm83']:.1f} / SM83 instr\n")
    # every (ROM, backend)'s latest count, this run's and earlier ones (PyBoy's stays put)
    print(write_summary(latest_rows(args.out / "results.jsonl"), args.out).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
