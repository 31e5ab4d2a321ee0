"""Where busy code's time goes on the CPU: opcode and access mix, fast paths, ns per instruction.

For ROMs that never HALT (``busy``: bench/busy_rom.py, ``game``: bench/game_rom.py, the
``loop-*`` variants below, or a ROM path), three measurements:

1. **Instruction and access mix.** ``trace_kernel`` (bench/cpu_trace.py) runs the ROM one
   instruction at a time from its state after ``--warmup`` frames of the real step kernel,
   recording each instruction's code bytes and registers, with interrupts checked and the
   units (DMA, serial, timer, LCD) synced after every instruction: the step kernel's
   program path with slices of one instruction (an interrupt may be dispatched up to one slice
   earlier than PyBoy would, which moves a few instructions, not the mix). From the
   records: the opcode mix, T-cycles per instruction, and every data access by region
   (WRAM and HRAM: the fast paths' direct accesses; ROM, IO, VRAM, OAM and mapper
   writes go through the out-of-line bus).
2. **Fast-path coverage.** ``coverage_kernel`` offers every opcode to the fast paths of
   kernels/cpu/cpu_fast.py (the kernels' own code, on a scratch machine); an opcode they
   return 0 for runs ``cpu_step``'s general phases (so does any instruction during an EI
   countdown).
3. **Time per instruction.** PyBoy (render off), warp-cpu and warp-cpu with
   ``cpu_fast_paths=False``, 1 env on 1 thread, ``--repeats`` interleaved runs of
   ``--steps`` steps of 24 frames. A never-halting ROM runs 70,224 T-cycles a frame, so a
   frame is 70,224 / (mean T-cycles per instruction) instructions, the same stream on
   every backend: ns per instruction = seconds per frame / instructions per frame.

The ``loop-*`` ROMs are one copy loop (``ld a,[hl+]; add a,b; <op>; ld [de],a; inc de;
dec b; jr nz``) on an MBC1 cartridge that differs in one access each (``LOOP_VARIANTS``),
so the difference of their ns per instruction prices that access on each backend;
``loop-wram-code`` runs ``loop-wram``'s loop from WRAM, pricing code fetched outside ROM.

Rows go to ``results.jsonl`` and tables to ``summary.md`` in ``--out``
(default bench/results/cpu-profile). ``python -m bench.cpu_profile``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import warp as wp

from bench.cpu_trace import BINS, TRACE_COLS, coverage_kernel, trace_kernel
from bench.step_settings import ACTION_CODEC, FRAMES_PER_STEP, RELEASE_AFTER_FRAMES
from gbxcule.core import isa

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "cpu-profile"
FRAME_CYCLES = 70224
DEFAULT_ROMS = "busy,game,loop-wram,loop-rom0,loop-romx,loop-io,loop-vram,loop-mbc,loop-wram-code"


def mnemonic(k: int) -> str:
    """Opcode bin ``k`` as ``ld a, n8`` (CB opcodes from 256 on)."""
    return isa.CB[k - 256].text if k >= 256 else isa.BASE[k].text


def region(addr: int, write: bool) -> str:
    if addr < 0x8000:
        return "mbc" if write else ("rom0" if addr < 0x4000 else "romx")
    if addr < 0xA000:
        return "vram"
    if addr < 0xC000:
        return "sram"
    if addr < 0xFE00:
        return "wram"
    if addr < 0xFF00:
        return "oam"
    if 0xFF80 <= addr < 0xFFFF:
        return "hram"
    return f"io {addr & 0xFF:02X}"


_MEM_OPERANDS = ("[hl]", "[hl+]", "[hl-]", "[bc]", "[de]", "[n16]", "[n8]", "[c]")
_CONDITIONS = {"nz": (0x80, 0), "z": (0x80, 0x80), "nc": (0x10, 0), "c": (0x10, 0x10)}


def data_accesses(code: int, hl: int, bc: int, de: int, sp: int, f: int) -> list[tuple[str, int]]:
    """The data accesses of one instruction: (``"r"`` or ``"w"``, address), in order."""
    op, n1, n16 = code & 0xFF, (code >> 8) & 0xFF, code >> 8
    if op == 0xCB:
        if n1 & 7 != 6:
            return []
        return [("r", hl)] if n1 >> 6 == 1 else [("r", hl), ("w", hl)]
    ins = isa.BASE[op]
    ops, name = ins.operands, ins.mnemonic
    if ops and ops[0] in _CONDITIONS:
        mask, want = _CONDITIONS[ops[0]]
        if f & mask != want:
            return []
    if name in ("push", "call", "rst"):
        return [("w", (sp - 1) & 0xFFFF), ("w", (sp - 2) & 0xFFFF)]
    if name in ("pop", "ret", "reti"):
        return [("r", sp), ("r", (sp + 1) & 0xFFFF)]
    mem = [j for j, o in enumerate(ops) if o in _MEM_OPERANDS]
    if not mem:
        return []
    j = mem[0]
    addr = {
        "[bc]": bc,
        "[de]": de,
        "[n16]": n16,
        "[n8]": 0xFF00 | n1,
        "[c]": 0xFF00 | (bc & 0xFF),
    }.get(ops[j], hl)
    if name in ("inc", "dec"):
        return [("r", addr), ("w", addr)]
    if name in ("ld", "ldh") and j == 0:
        return [("w", addr), ("w", addr + 1)] if ops[1] == "sp" else [("w", addr)]
    return [("r", addr)]


@dataclass
class Mix:
    rom: str
    instructions: int
    cycles: int
    counts: dict[int, int]  # opcode bin -> executions
    accesses: dict[str, int]  # "r wram", "w io 46", ... -> count
    fetch: dict[str, int]  # region of the PC -> instructions
    fast: dict[int, bool] = field(default_factory=dict)

    @property
    def cycles_per_instruction(self) -> float:
        return self.cycles / self.instructions

    @property
    def instructions_per_frame(self) -> float:
        return FRAME_CYCLES / self.cycles_per_instruction

    @property
    def general_share(self) -> float:
        """Instructions whose opcode the fast paths do not run."""
        return sum(n for k, n in self.counts.items() if not self.fast[k]) / self.instructions

    def per_100(self, keys: tuple[str, ...]) -> float:
        return (
            100
            * sum(n for k, n in self.accesses.items() if k.startswith(keys))
            / (self.instructions)
        )


def fast_path_coverage() -> dict[int, bool]:
    from bench.busy_rom import busy_rom_path
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    env = WarpVecCpuBackend(str(busy_rom_path()), num_envs=1, threads=1)
    try:
        out = wp.zeros(BINS, dtype=wp.int32, device="cpu")
        wp.launch(coverage_kernel, dim=BINS, inputs=[env.machine, out], device="cpu")
        return {k: bool(v) for k, v in enumerate(out.numpy())}
    finally:
        env.close()


def trace(rom: str, instructions: int, warmup: int) -> tuple[np.ndarray, int]:
    """``instructions`` records (``trace_kernel``) after ``warmup`` frames with no buttons,
    and the T-cycles they took."""
    from gbxcule.backends.warp_base import field_view
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    env = WarpVecCpuBackend(rom, num_envs=1, threads=1, frames_per_step=1, action_codec="buttons")
    try:
        env.reset(0)
        for _ in range(warmup):
            env.step(np.zeros(1, dtype=np.int64))
        m = env.machine
        c0 = int(field_view(m, "cycles").numpy()[0])
        rows = wp.zeros((instructions, TRACE_COLS), dtype=wp.int64, device="cpu")
        wp.launch(trace_kernel, dim=1, inputs=[m, instructions, rows], device="cpu")
        if int(field_view(m, "halted").numpy()[0]) or int(field_view(m, "locked").numpy()[0]):
            raise ValueError(f"{rom} halted or locked: the profile is for ROMs that never HALT")
        return rows.numpy(), int(field_view(m, "cycles").numpy()[0]) - c0
    finally:
        env.close()


def opcode_mix(rom: str, instructions: int, warmup: int) -> Mix:
    rows, cycles = trace(rom, instructions, warmup)
    counts: dict[int, int] = {}
    accesses: dict[str, int] = {}
    fetch_regions: dict[str, int] = {}
    for code, pc, hl, bc, de, spf in rows.tolist():
        k = code & 0xFF
        k = 256 + ((code >> 8) & 0xFF) if k == 0xCB else k
        counts[k] = counts.get(k, 0) + 1
        where = region(pc, False)
        fetch_regions[where] = fetch_regions.get(where, 0) + 1
        for kind, addr in data_accesses(code, hl, bc, de, spf >> 8, spf & 0xFF):
            key = f"{kind} {region(addr & 0xFFFF, kind == 'w')}"
            accesses[key] = accesses.get(key, 0) + 1
    return Mix(Path(rom).name, len(rows), cycles, counts, accesses, fetch_regions)


@dataclass
class TimingRow:
    rom: str
    backend: str
    repeat: int
    steps: int
    seconds: float
    frames_per_s: float
    ns_per_instruction: float
    instructions_per_frame: float
    device: str
    host: str
    versions: dict
    timestamp: float
    kind: str = "timing"


BACKENDS = {
    "pyboy": ("pyboy", {"render": False}),
    "warp-cpu": ("warp-cpu", {"threads": 1}),
    "warp-cpu-general": ("warp-cpu", {"threads": 1, "cpu_fast_paths": False}),
}


def profile_backend(label: str, rom: str):
    """Backend ``label`` (``BACKENDS``) on ``rom`` as the profile runs it: 1 env, 24
    frames/step, buttons released after 8 (also bench/cpu_instr_count.py's children)."""
    from gbxcule.backends.registry import make_backend

    name, options = BACKENDS[label]
    return make_backend(
        name,
        rom,
        num_envs=1,
        frames_per_step=FRAMES_PER_STEP,
        release_after_frames=RELEASE_AFTER_FRAMES,
        action_codec=ACTION_CODEC,
        **options,
    )


def time_backend(label: str, rom: str, steps: int, seed: int = 0) -> float:
    """Seconds for ``steps`` steps of 24 frames at 1 env (after 2 warm-up steps)."""
    env = profile_backend(label, rom)
    try:
        env.reset(seed=seed)
        actions = np.random.default_rng(seed).integers(0, 7, size=(steps + 2, 1), dtype=np.int64)
        for k in range(2):
            env.step(actions[k])
        t0 = time.perf_counter()
        for k in range(2, steps + 2):
            env.step(actions[k])
        return time.perf_counter() - t0
    finally:
        env.close()


ACCESS_COLUMNS = (
    ("ROM0 rd", ("r rom0",)),
    ("ROMX rd", ("r romx",)),
    ("WRAM r/w", ("r wram", "w wram")),
    ("HRAM r/w", ("r hram", "w hram")),
    ("IO rd", ("r io",)),
    ("IO wr", ("w io",)),
    ("VRAM/OAM r/w", ("r vram", "w vram", "r oam", "w oam")),
    ("MBC wr", ("w mbc",)),
)
DIRECT = ("r wram", "w wram", "r hram", "w hram")  # the fast paths' direct accesses


def summary_lines(mixes: list[Mix], rows: list[TimingRow], top: int) -> list[str]:
    from bench.machine_info import device_name

    labels = list(dict.fromkeys(r.backend for r in rows))
    lines = [
        "# Busy code on the CPU: ns per instruction, instruction and access mix",
        "",
        f"{device_name('warp-cpu')}; 1 env on 1 thread, {FRAMES_PER_STEP} frames/step, "
        "render off; medians of interleaved runs. Instructions per frame = "
        f"{FRAME_CYCLES:,} / T-cycles per instruction (the ROMs never HALT). `general`: "
        "warp-cpu with `cpu_fast_paths=False`. Accesses per 100 instructions; `bus` = "
        "those through the out-of-line bus (all but WRAM and HRAM).",
        "",
        "| ROM | T-cycles / instr | instr / frame | "
        + " | ".join(f"{b} ns / instr" for b in labels)
        + " | warp-cpu × PyBoy | "
        + " | ".join(c for c, _ in ACCESS_COLUMNS)
        + " | bus |",
        "|---|---:|---:|" + "---:|" * (len(labels) + 1 + len(ACCESS_COLUMNS) + 1),
    ]
    for mix in mixes:
        ns = {
            b: statistics.median(
                r.ns_per_instruction for r in rows if r.rom == mix.rom and r.backend == b
            )
            for b in labels
            if any(r.rom == mix.rom and r.backend == b for r in rows)
        }
        ratio = f"{ns['pyboy'] / ns['warp-cpu']:.2f}" if {"pyboy", "warp-cpu"} <= set(ns) else "-"
        bus = (
            100
            * sum(n for k, n in mix.accesses.items() if not k.startswith(DIRECT))
            / mix.instructions
        )
        lines.append(
            f"| {mix.rom} | {mix.cycles_per_instruction:.2f} | {mix.instructions_per_frame:,.0f} | "
            + " | ".join(f"{ns[b]:.2f}" if b in ns else "-" for b in labels)
            + f" | {ratio} | "
            + " | ".join(f"{mix.per_100(keys):.1f}" for _, keys in ACCESS_COLUMNS)
            + f" | {bus:.1f} |"
        )
    for mix in mixes:
        if mix.rom.startswith("loop-"):
            continue
        io = sorted(((k, n) for k, n in mix.accesses.items() if " io " in k), key=lambda kv: -kv[1])
        lines += [
            "",
            f"## {mix.rom}: {mix.instructions:,} instructions traced; "
            f"{100 * mix.general_share:.3f} % of them with an opcode the fast paths do not run",
            "",
            "Fetched from: "
            + ", ".join(
                f"{k} {100 * n / mix.instructions:.1f} %"
                for k, n in sorted(mix.fetch.items(), key=lambda kv: -kv[1])
            )
            + ". IO accesses per 100 instructions: "
            + (", ".join(f"{k} {100 * n / mix.instructions:.2f}" for k, n in io) or "none")
            + ".",
            "",
            "| opcode | share | fast path |",
            "|---|---:|---|",
        ]
        for k, n in sorted(mix.counts.items(), key=lambda kv: -kv[1])[:top]:
            fast = "yes" if mix.fast[k] else "**no**"
            lines.append(f"| `{mnemonic(k)}` | {100 * n / mix.instructions:.2f} % | {fast} |")
        slow = sorted(
            ((k, n) for k, n in mix.counts.items() if not mix.fast[k]), key=lambda kv: -kv[1]
        )
        if slow:
            shown = ", ".join(
                f"`{mnemonic(k)}` {100 * n / mix.instructions:.3f} %" for k, n in slow
            )
            lines += ["", f"Opcodes not on a fast path: {shown}."]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rom", default=DEFAULT_ROMS, help="comma list: busy, game, loop-*, paths")
    ap.add_argument("--instructions", type=int, default=200_000, help="traced per ROM")
    ap.add_argument("--warmup", type=int, default=30, help="frames before the trace")
    ap.add_argument("--steps", type=int, default=60, help="timed steps per run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backends", default=",".join(BACKENDS), help=f"of {', '.join(BACKENDS)}")
    ap.add_argument("--top", type=int, default=30, help="opcodes listed per ROM")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    from bench.machine_info import device_name, versions

    backends = [b for b in args.backends.split(",") if b]
    unknown = set(backends) - set(BACKENDS)
    if unknown:
        ap.error(f"unknown backends {sorted(unknown)}; known: {', '.join(BACKENDS)}")
    from bench.rom_names import resolve_rom

    roms = [resolve_rom(r) for r in args.rom.split(",") if r]
    coverage = fast_path_coverage()
    mixes = []
    for rom in roms:
        mix = opcode_mix(rom, args.instructions, args.warmup)
        mix.fast = {k: coverage[k] for k in mix.counts}
        mixes.append(mix)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[TimingRow] = []
    with (args.out / "results.jsonl").open("a") as fh:
        for mix in mixes:
            row = {"kind": "mix", "rom": mix.rom, "instructions": mix.instructions}
            row |= {"cycles": mix.cycles, "timestamp": time.time(), "accesses": mix.accesses}
            row |= {"fetch": mix.fetch, "counts": {mnemonic(k): n for k, n in mix.counts.items()}}
            row["not_fast"] = sorted(mnemonic(k) for k in mix.counts if not mix.fast[k])
            fh.write(json.dumps(row) + "\n")
        for repeat in range(args.repeats):
            for rom, mix in zip(roms, mixes):
                for backend in backends:
                    seconds = time_backend(backend, rom, args.steps)
                    fps = args.steps * FRAMES_PER_STEP / seconds
                    row = TimingRow(
                        rom=mix.rom,
                        backend=backend,
                        repeat=repeat,
                        steps=args.steps,
                        seconds=seconds,
                        frames_per_s=fps,
                        ns_per_instruction=1e9 / fps / mix.instructions_per_frame,
                        instructions_per_frame=mix.instructions_per_frame,
                        device=device_name(backend),
                        host=platform.node(),
                        versions=versions(),
                        timestamp=time.time(),
                    )
                    fh.write(json.dumps(asdict(row)) + "\n")
                    fh.flush()
                    rows.append(row)
                    sys.stderr.write(f"{mix.rom} {backend} #{repeat}: {fps:,.0f} frames/s\n")
    path = args.out / "summary.md"
    path.write_text("\n".join(summary_lines(mixes, rows, args.top)) + "\n")
    print(path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
