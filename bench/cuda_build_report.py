"""What the CUDA build of every kernels module costs a GPU: registers, stack, spills.

Runs with no GPU. Warp's bundled NVRTC builds sm_90 PTX of each module (as
``make test-cuda-build`` does), then the CUDA toolkit's ``ptxas -arch=sm_90 -v``
assembles it and reports, per kernel entry and per function the compiler kept out of
line, the registers per thread, the stack frame and the spill stores/loads. Registers
bound the occupancy (255 registers leave room for 256 threads per SM on Hopper) and
spills become local-memory traffic, so these numbers are the GPU-side measure of the
"compiles fast, diverges little" design while no GPU is at hand.

The bundled NVRTC may write a newer PTX ``.version`` than the installed ptxas reads,
and ends the text with a NUL byte; the copy handed to ptxas is rewritten to
the newest version that ptxas reads, with the NUL dropped (the ISA used is the same for sm_90).

Appends one JSONL row per module to results.jsonl and rewrites summary.md beside it
from every row there. Usage: python -m bench.cuda_build_report [--modules step,render]
[--out DIR] [--label TEXT] [--ptxas PATH]
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine_info import versions
from bench.sass_census import hot_loop_of_cubin
from gbxcule.kernels import KERNEL_MODULES

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "cuda-build"
ARCH = 90

_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_CUMULATIVE = re.compile(r"(\d+) bytes cumulative stack size")
_SMEM = re.compile(r"(\d+) bytes smem")
# _ZN<len>_INTERNAL_<hash>_<len>_wp_<module>_cu_<hex hash><len><name>_0E<args>: the Warp
# func's C++ name is <name>_0; the hash may end in digits, so the length is found by trial.
_MANGLED_TAIL = re.compile(r"_cu_([0-9a-f]+\w*)$")


def readable_name(symbol: str) -> str:
    """`step_kernel_436ab6d7_cuda_kernel_forward` -> `step_kernel`; a mangled Warp func
    -> its Python name (`cpu_tick`); anything else unchanged."""
    kernel = re.match(r"(\w+?)_[0-9a-f]{8}_cuda_kernel_forward$", symbol)
    if kernel:
        return kernel.group(1)
    tail = _MANGLED_TAIL.search(symbol)
    if tail:
        text = tail.group(1)
        for start in range(len(text)):
            for digits in (1, 2, 3):
                count = text[start : start + digits]
                if not count.isdigit():
                    break
                name = text[start + digits : start + digits + int(count)]
                after = text[start + digits + int(count) : start + digits + int(count) + 1]
                if len(name) == int(count) and name.endswith("_0") and after == "E":
                    if name[0].isalpha() or name[0] == "_":
                        return name[:-2]
    return symbol


def parse_ptxas(text: str) -> list[dict]:
    """ptxas -v output -> one dict per function: name, kind (entry/function), registers
    (entries only), stack_frame, spill_stores, spill_loads, cumulative_stack, smem."""
    out: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        if m := _COMPILING.search(line):
            current = {"symbol": m.group(1), "kind": "entry"}
        elif m := _PROPERTIES.search(line):
            symbol = m.group(1)
            if current is None or current["symbol"] != symbol:
                current = {"symbol": symbol, "kind": "function"}
            current["name"] = readable_name(symbol)
            out.append(current)
        elif current is not None and (m := _FRAME.search(line)):
            current["stack_frame"], current["spill_stores"], current["spill_loads"] = (
                int(g) for g in m.groups()
            )
        elif current is not None and (m := _USED.search(line)):
            current["registers"] = int(m.group(1))
            if c := _CUMULATIVE.search(line):
                current["cumulative_stack"] = int(c.group(1))
            if s := _SMEM.search(line):
                current["smem"] = int(s.group(1))
    for fn in out:
        fn.pop("symbol")
    return out


def ptx_for_ptxas(ptx: str, ptx_version: str) -> str:
    """The NVRTC PTX with its `.version` set to one the installed ptxas reads, NUL dropped."""
    ptx = ptx.rstrip("\0")
    fixed, n = re.subn(r"^\.version \S+", f".version {ptx_version}", ptx, count=1, flags=re.M)
    if n != 1:
        raise ValueError("no .version line in the PTX")
    return fixed


def find_ptxas(name: str = "ptxas") -> str | None:
    """``name`` on PATH (or a path), else the ptxas of the ``nvidia-cuda-nvcc-cu12`` wheel
    (the dev extra: CI has no CUDA toolkit)."""
    found = shutil.which(name)
    if found is not None or name != "ptxas":
        return found
    try:
        import nvidia.cuda_nvcc  # type: ignore[import-not-found]
    except ImportError:
        return None
    for root in getattr(nvidia.cuda_nvcc, "__path__", []):
        candidate = Path(root) / "bin" / "ptxas"
        if candidate.is_file():
            return str(candidate)
    return None


def ptxas_ptx_version(ptxas: str) -> str:
    """The newest PTX ISA version this ptxas reads: it names it when refusing a newer one."""
    with tempfile.TemporaryDirectory() as work:
        probe = Path(work) / "probe.ptx"
        probe.write_text(".version 99.9\n.target sm_90\n.address_size 64\n")
        proc = subprocess.run(
            [ptxas, f"-arch=sm_{ARCH}", str(probe), "-o", str(Path(work) / "probe.cubin")],
            capture_output=True,
            text=True,
        )
    m = re.search(r"current version is '(\d+\.\d+)'", proc.stdout + proc.stderr)
    if not m:
        raise RuntimeError(f"cannot tell which PTX version {ptxas} reads: {proc.stderr!r}")
    return m.group(1)


def build_module(
    module_name: str, ptxas: str, ptx_version: str, work: Path, cgb: bool = False
) -> dict:
    import warp as wp

    wp.init()
    module = importlib.import_module(module_name)
    target: Any = module
    if cgb:  # the Game Boy Color variant of the module's step kernel (kernels/variant.py)
        from gbxcule.kernels.variant import cgb_variant

        target = cgb_variant(module.step_kernel).module
    start = time.perf_counter()
    paths = wp.compile_aot_module(target, arch=ARCH, module_dir=str(work), use_ptx=True)
    ptx_seconds = time.perf_counter() - start
    ptx_path = next(Path(p) for p in paths if str(p).endswith(".ptx"))
    fixed = work / (ptx_path.stem + ".ptxas.ptx")
    fixed.write_text(ptx_for_ptxas(ptx_path.read_text(), ptx_version))
    start = time.perf_counter()
    proc = subprocess.run(
        [ptxas, f"-arch=sm_{ARCH}", "-v", str(fixed), "-o", str(work / "out.cubin")],
        capture_output=True,
        text=True,
    )
    ptxas_seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas failed on {module_name}:\n{proc.stderr[-2000:]}")
    hot: dict | str | None = None
    live: dict | str | None = None
    if module_name == BUDGET_MODULE:
        from bench.sass_live import live_listing, live_peaks, parse_live

        try:
            loop = hot_loop_of_cubin(work / "out.cubin")
            hot = loop.as_dict() if loop is not None else "no loop"
            span = (loop.first, loop.last) if loop is not None else None
            live = live_peaks(parse_live(live_listing(work / "out.cubin")), span)
        except FileNotFoundError as exc:
            hot = live = f"not measured: {exc}"
    return {
        "module": module_name + (" (CGB)" if cgb else ""),
        "arch": f"sm_{ARCH}",
        "ptx_build_s": round(ptx_seconds, 2),
        "ptxas_s": round(ptxas_seconds, 2),
        "ptx_lines": ptx_path.read_text().count("\n"),
        "functions": parse_ptxas(proc.stdout + proc.stderr),
        **({"hot_loop": hot} if hot is not None else {}),
        **({"live_registers": live} if live is not None else {}),
    }


# The GPU budget of issue #15: the step kernel's hot path lives in registers. Checked with
# --budget (exit 1 when broken) on the step kernel CUDA launches (kernels/step/step_cuda.py, the
# GPU shape; kernels/step/step.py is the inlined shape, kernels/step/step_cpu.py the CPU's own and
# not built for CUDA) and kept in its row.
BUDGET_MODULE = "gbxcule.kernels.step.step_cuda"
BUDGET_ENTRY = "step_kernel"
BUDGET_STACK = 512  # bytes of stack frame, step_kernel (issue #15's 2,048; issue #41's 512)
BUDGET_SPILL_ENTRY = 1000  # bytes of spill stores, step_kernel
BUDGET_SPILL_FUNCTION = 500  # bytes of spill stores, each function it keeps out of line
# Issue #41's budget: the step kernel in 128 registers (16 warps an SM), and in its
# instruction loop (bench/sass_census.py, the largest innermost loop of the SASS) no call,
# no Machine descriptor loaded from global memory and at most 16 local-memory sites. Its
# goals (``HOT_LOOP_GOALS``) are reported beside the row; all are met since the GPU
# shape's general step reads code outside ROM inline (512 B of stack).
BUDGET_REGISTERS = 128
BUDGET_HOT_CALLS = 0
BUDGET_HOT_DESCRIPTOR_LOADS = 0
BUDGET_HOT_LOCAL_SITES = 16
HOT_LOOP_GOALS = {"registers": 128, "stack": 512, "local_sites": 16}
# The Game Boy Color variant of the same kernel (issue #46, history/cgb.md): the same
# budget but its own stack (its out-of-line slice carries HDMA's block and the speed).
BUDGET_MODULE_CGB = BUDGET_MODULE + " (CGB)"
BUDGET_ENTRY_CGB = "gbxcule_kernels_step_step__step_kernel"
BUDGET_STACK_CGB = 640


def check_budget(row: dict) -> list[str]:
    """The budget's breaches in one module's row (empty: within budget, or not the module
    the budget is for; a row without a module name is checked)."""
    module = row.get("module", BUDGET_MODULE)
    if module not in (BUDGET_MODULE, BUDGET_MODULE_CGB):
        return []
    cgb = module == BUDGET_MODULE_CGB
    name, max_stack = (BUDGET_ENTRY_CGB, BUDGET_STACK_CGB) if cgb else (BUDGET_ENTRY, BUDGET_STACK)
    fns = row["functions"]
    entries = [f for f in fns if f["kind"] == "entry" and f.get("name") == name]
    if not entries:
        return []
    entry = entries[0]
    out = []
    stack = entry.get("cumulative_stack", entry.get("stack_frame", 0))
    if stack > max_stack:
        out.append(f"{name} stack {stack} B > {max_stack} B")
    if entry.get("registers", 0) > BUDGET_REGISTERS:
        out.append(f"{name} {entry['registers']} registers > {BUDGET_REGISTERS}")
    if entry["spill_stores"] > BUDGET_SPILL_ENTRY:
        out.append(f"{name} spill stores {entry['spill_stores']} B > {BUDGET_SPILL_ENTRY} B")
    for fn in fns:
        if fn["kind"] == "function" and fn["spill_stores"] > BUDGET_SPILL_FUNCTION:
            out.append(
                f"{fn.get('name')} spill stores {fn['spill_stores']} B > {BUDGET_SPILL_FUNCTION} B"
            )
    hot = row.get("hot_loop")
    if isinstance(hot, dict):
        if hot["calls"] > BUDGET_HOT_CALLS:
            out.append(f"hot loop has {hot['calls']} calls > {BUDGET_HOT_CALLS}")
        if hot["descriptor_loads"] > BUDGET_HOT_DESCRIPTOR_LOADS:
            out.append(
                f"hot loop has {hot['descriptor_loads']} descriptor loads from global memory "
                f"> {BUDGET_HOT_DESCRIPTOR_LOADS}"
            )
        if hot["local_sites"] > BUDGET_HOT_LOCAL_SITES:
            out.append(
                f"hot loop has {hot['local_sites']} local-memory sites > {BUDGET_HOT_LOCAL_SITES}"
            )
    return out


def hot_loop_goals(row: dict) -> list[str]:
    """Where the budget module's row misses ``HOT_LOOP_GOALS`` (reported, not enforced)."""
    entry = next((f for f in row["functions"] if f.get("name") == BUDGET_ENTRY), None)
    hot = row.get("hot_loop")
    if entry is None or not isinstance(hot, dict):
        return []
    have = {
        "registers": entry.get("registers", 0),
        "stack": entry.get("cumulative_stack", entry.get("stack_frame", 0)),
        "local_sites": hot["local_sites"],
    }
    return [f"{k} {have[k]} > {goal}" for k, goal in HOT_LOOP_GOALS.items() if have[k] > goal]


def live_summary(live: dict, top: int = 3, entry_too: bool = True) -> str:
    """One line of ``live_registers``: the loop's and entry's peaks, the top functions."""
    fns = sorted(live["functions"].items(), key=lambda kv: -kv[1]["peak"])[:top]
    text = ", ".join(f"{name} {f['at_entry']}->{f['peak']}" for name, f in fns)
    if not entry_too:
        return text
    return f"loop {live['hot_loop']}, entry {live['entry']}; {text}"


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_summary(rows: list[dict], out_dir: Path) -> Path:
    lines = [
        "# CUDA build report (sm_90, no GPU needed)",
        "",
        "Per kernel entry and per out-of-line function, as `ptxas -arch=sm_90 -v` reports "
        "them for the PTX Warp's NVRTC builds. Registers are per thread (255 is the "
        "ceiling); spills are bytes of spill instructions in the code, not traffic. "
        "All runs in `results.jsonl`, oldest first.",
        "",
        "| run (UTC) | commit | label | module | function | registers | stack frame | "
        "cumulative stack | spill stores | spill loads | PTX build s | ptxas s |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row["timestamp"]))
        module = row["module"].rsplit(".", 1)[-1]
        for i, fn in enumerate(row["functions"]):
            build = f"{row['ptx_build_s']:.1f} | {row['ptxas_s']:.1f}" if i == 0 else " | "
            lines.append(
                f"| {when} | {row['commit']} | {row['label']} | {module} | "
                f"{fn.get('name', '?')} ({fn['kind']}) | {fn.get('registers', '')} | "
                f"{fn.get('stack_frame', '')} | {fn.get('cumulative_stack', '')} | "
                f"{fn.get('spill_stores', '')} | {fn.get('spill_loads', '')} | {build} |"
            )
    lines += [
        "",
        "## The step's instruction loop in SASS (bench/sass_census.py)",
        "",
        "The largest innermost loop of `step_cuda`'s `step_kernel`: static sites, not traffic.",
        "",
        "| run (UTC) | commit | label | instructions | calls | local loads | local stores | "
        "global loads | global stores | descriptor loads |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        hot = row.get("hot_loop")
        if isinstance(hot, dict):
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row["timestamp"]))
            lines.append(
                f"| {when} | {row['commit']} | {row['label']} | {hot['instructions']} | "
                f"{hot['calls']} | {hot['local_loads']} | {hot['local_stores']} | "
                f"{hot['global_loads']} | {hot['global_stores']} | {hot['descriptor_loads']} |"
            )
    lines += [
        "",
        "## Where the registers are live (bench/sass_live.py, nvdisasm life ranges)",
        "",
        "Most registers live at once, call sites not counted: in the instruction loop, in "
        "`step_kernel`'s own code, and the out-of-line functions with the highest peaks "
        "(live at their entry, what the calling convention keeps for callers -> peak).",
        "",
        "| run (UTC) | commit | label | registers | loop | entry | highest functions |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        live = row.get("live_registers")
        if isinstance(live, dict):
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row["timestamp"]))
            entry = next((f for f in row["functions"] if f.get("name") == BUDGET_ENTRY), {})
            lines.append(
                f"| {when} | {row['commit']} | {row['label']} | {entry.get('registers', '')} | "
                f"{live['hot_loop']} | {live['entry']} | {live_summary(live, entry_too=False)} |"
            )
    path = out_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cuda_build_report", description=__doc__)
    ap.add_argument(
        "--modules", default="step,step_cuda,render", help="kernels modules (short names)"
    )
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--label", default="")
    ap.add_argument("--ptxas", default="ptxas", help="the CUDA toolkit's ptxas")
    ap.add_argument(
        "--cgb",
        action="store_true",
        help="build each module's Game Boy Color step-kernel variant instead (step modules)",
    )
    ap.add_argument(
        "--budget",
        action="store_true",
        help=f"exit 1 unless {BUDGET_MODULE}'s {BUDGET_ENTRY} has <= {BUDGET_STACK} B stack, <= "
        f"{BUDGET_SPILL_ENTRY} B spill stores, <= {BUDGET_REGISTERS} registers, each "
        f"out-of-line function <= {BUDGET_SPILL_FUNCTION} B, and its instruction loop no call, "
        f"no descriptor load and <= {BUDGET_HOT_LOCAL_SITES} local-memory sites (with --cgb: "
        f"its Game Boy Color variant, <= {BUDGET_STACK_CGB} B stack, the rest the same)",
    )
    args = ap.parse_args(argv)
    ptxas = find_ptxas(args.ptxas)
    if ptxas is None:
        print(
            f"cuda_build_report: `{args.ptxas}` not found (the CUDA toolkit, or the dev "
            "extra's nvidia-cuda-nvcc-cu12)",
            file=sys.stderr,
        )
        return 2
    by_short = {k.rsplit(".", 1)[-1]: k for k in KERNEL_MODULES}
    names = [by_short.get(m.strip(), m.strip()) for m in args.modules.split(",") if m.strip()]
    unknown = [n for n in names if n not in KERNEL_MODULES]
    if unknown:
        known = ", ".join(k.rsplit(".", 1)[-1] for k in KERNEL_MODULES)
        print(f"cuda_build_report: unknown module(s) {unknown}; known: {known}", file=sys.stderr)
        return 2
    version = ptxas_ptx_version(ptxas)
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            row = build_module(name, ptxas, version, Path(work), cgb=args.cgb)
        row.update(
            commit=_commit(),
            label=args.label,
            ptx_version=version,
            versions=versions(),
            timestamp=time.time(),
        )
        breaches = check_budget(row)
        if any(f.get("name") == BUDGET_ENTRY for f in row["functions"]):
            row["budget_breaches"] = breaches
        rows.append(row)
        first = row["functions"][0] if row["functions"] else {}
        print(
            f"{name}: PTX {row['ptx_build_s']:.1f} s, ptxas {row['ptxas_s']:.1f} s, "
            f"{first.get('name')}: {first.get('registers')} registers, "
            f"{first.get('cumulative_stack', first.get('stack_frame', 0))} B stack",
            flush=True,
        )
        if "hot_loop" in row:
            print(f"  hot loop: {row['hot_loop']}", flush=True)
            live = row.get("live_registers")
            if isinstance(live, dict):
                print(f"  live registers: {live_summary(live)}", flush=True)
            for goal in hot_loop_goals(row):
                print(f"  hot-loop goal not met: {goal}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "results.jsonl").open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    all_rows = [json.loads(x) for x in (args.out / "results.jsonl").read_text().splitlines() if x]
    print(f"wrote {write_summary(all_rows, args.out)}")
    breaches = [b for row in rows for b in row.get("budget_breaches", [])]
    for b in breaches:
        print(f"over budget: {b}", file=sys.stderr)
    if args.budget and any("budget_breaches" in row for row in rows):
        print("budget: " + ("BROKEN" if breaches else "met"))
        return 1 if breaches else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
