"""Lockstep harness: run a reference and a device-under-test backend on the same actions and
stop at the first difference, leaving a repro bundle.

At step 0 (right after ``reset``) and every ``every`` steps (and at the last
step) it compares, for every env: the CPU registers (``CPU_STATE_KEYS``;
``cycles`` only with ``compare_cycles`` since units may differ), the chosen
memory regions as the CPU reads them (default: VRAM, cart RAM, WRAM, OAM, IO,
HRAM, IE; addresses in ``ignore`` are masked out), the serial output, and the
frame shades (from step 1 on; the screen buffer right after reset is not part
of the contract).

At the first divergence it writes a bundle atomically (a temp dir renamed into
place) under ``repro/``: the ROM (under its own file name), ``actions.npy`` (the actions up to the
divergent step), ``ref_state.json``/``dut_state.json``, raw memory dumps and
frames of both, ``diff.txt``, ``metadata.json`` and an executable ``repro.sh``
that re-runs exactly that case with ``python -m gbxcule verify`` and exits
non-zero while it still diverges.

Backends are named as in ``gbxcule.backends.registry.BACKENDS`` (add a backend
there) or as ``module:Class`` for one that is not registered (e.g. a test's
deliberately broken backend); either way the constructor takes
``(rom_path, *, num_envs, frames_per_step, release_after_frames, action_codec)``,
plus ``boot=`` when the configuration's boot mode is not the default ``"fast"``.

Stock PyBoy (``ref="pyboy-stock"``): the device under test must boot with PyBoy's own
boot ROM (``boot="pyboy"``; ``gbxcule verify`` picks it for these references). A
reference backend may list addresses our emulator cannot match in ``lockstep_ignore``
(a PyBoy with ``sound_emulated=False``: FF10-FF3F); they are masked like ``ignore``.

The micro-ROM suite of the source checkout runs through this module too
(``bench/roms/spec.py``: ``spec_config``, ``check_spec``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.backends.protocol import CPU_STATE_KEYS, Backend
from gbxcule.core.actions import get_codec, validate_actions
from gbxcule.core.memory_layout import SPANS
from gbxcule.core.step_end import StepEnd, format_step_end
from gbxcule.files import checkout_root

DEFAULT_BUNDLE_ROOT = Path("repro")  # under the working directory

# name -> [lo, hi) of the CPU address space
# the address map's spans by key, less echo RAM (WRAM's bytes again) and unusable memory
REGIONS: dict[str, tuple[int, int]] = {
    s.key: (s.lo, s.hi) for s in SPANS if s.mirror is None and s.key != "unusable"
}
DEFAULT_REGION_NAMES = ("vram", "cartram", "wram", "oam", "io", "hram", "ie")
MAX_DIFF_LINES = 40


def parse_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """``"wram,io,FF04,FF40-FF4B"`` -> [lo, hi) ranges; hex addresses, ``LO-HI`` inclusive."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item.lower() in REGIONS:
            out.append(REGIONS[item.lower()])
            continue
        try:
            lo_text, _, hi_text = item.partition("-")
            lo = int(lo_text.removeprefix("$"), 16)
            hi = int(hi_text.removeprefix("$"), 16) if hi_text else lo
        except ValueError:
            raise ValueError(
                f"bad address range {item!r}: use a region name ({', '.join(REGIONS)}), "
                "a hex address (FF04) or an inclusive hex range (FF40-FF4B)"
            ) from None
        if not 0 <= lo <= hi <= 0xFFFF:
            raise ValueError(f"address range {item!r} is outside 0000-FFFF or reversed")
        out.append((lo, hi + 1))
    return tuple(out)


def format_ranges(ranges: tuple[tuple[int, int], ...]) -> str:
    return ",".join(f"{lo:04X}-{hi - 1:04X}" for lo, hi in ranges)


@dataclass(frozen=True)
class LockstepConfig:
    ref: str = "pyboy"
    dut: str = "warp-cpu"
    steps: int = 100
    frames_per_step: int = 24
    release_after_frames: int = 8
    codec: str = "pokemonred_puffer_v1"
    every: int = 1
    regions: tuple[tuple[int, int], ...] = field(
        default_factory=lambda: tuple(REGIONS[n] for n in DEFAULT_REGION_NAMES)
    )
    ignore: tuple[tuple[int, int], ...] = ()
    compare_cycles: bool = False
    compare_frames: bool = True
    num_envs: int = 1
    allow_bad_logo: bool = False
    boot: str = "fast"
    state: str | None = None  # a PyBoy .state (or snapshot) both sides start from
    step_end: StepEnd | None = None  # steps that end early on a RAM byte (an address)

    def __post_init__(self) -> None:
        from gbxcule.asm.bootrom import check_boot

        check_boot(self.boot)
        for name in ("steps", "frames_per_step", "every", "num_envs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.regions:
            raise ValueError("at least one memory region must be compared")
        get_codec(self.codec)

    def cli_args(self) -> list[str]:
        """The ``gbxcule verify`` options that reproduce this configuration."""
        args = [
            f"--ref={self.ref}",
            f"--dut={self.dut}",
            f"--steps={self.steps}",
            f"--frames-per-step={self.frames_per_step}",
            f"--release-after-frames={self.release_after_frames}",
            f"--codec={self.codec}",
            f"--every={self.every}",
            f"--regions={format_ranges(self.regions)}",
            f"--num-envs={self.num_envs}",
        ]
        if self.ignore:
            args.append(f"--ignore={format_ranges(self.ignore)}")
        if self.compare_cycles:
            args.append("--cycles")
        if not self.compare_frames:
            args.append("--no-frames")
        if self.allow_bad_logo:
            args.append("--allow-bad-logo")
        if self.boot != "fast":
            args.append(f"--boot={self.boot}")
        if self.state is not None:
            args.append(f"--state={self.state}")
        if self.step_end is not None:
            args.append(f"--step-end={format_step_end(self.step_end)}")
        return args


def make_backend_by_name(name: str, rom_path: str | Path, **kwargs: Any) -> Backend:
    """A registered backend, or ``module:Class`` for one that is not in the registry."""
    if ":" in name:
        module_name, _, class_name = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot load backend {name!r}: {exc}") from exc
        return cls(str(rom_path), **kwargs)
    from gbxcule.backends.registry import make_backend

    return make_backend(name, str(rom_path), **kwargs)


def make_actions(source: str, steps: int, num_envs: int, codec: str, seed: int = 0) -> np.ndarray:
    """int64 [steps, num_envs] actions: ``random`` (seeded), ``none``, or a ``.npy`` file."""
    c = get_codec(codec)
    if source == "random":
        rng = np.random.default_rng(seed)
        return rng.integers(0, c.num_actions, size=(steps, num_envs), dtype=np.int64)
    if source == "none":
        if c.mask(0) != 0:
            raise ValueError(f"codec {codec!r} has no no-op action; use --codec buttons with none")
        return np.zeros((steps, num_envs), dtype=np.int64)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"actions file not found: {path} (or use random / none)")
    arr = np.load(path, allow_pickle=False)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != num_envs:
        raise ValueError(f"actions file {path} has shape {arr.shape}, need [steps, {num_envs}]")
    if arr.shape[0] < steps:
        raise ValueError(f"actions file {path} has {arr.shape[0]} steps, {steps} requested")
    for row in arr[:steps]:
        validate_actions(row, num_envs, c)
    return arr[:steps].astype(np.int64)


@dataclass
class Snapshot:
    step: int
    env: int
    cpu: dict[str, int]
    mem_base: int
    memory: np.ndarray  # [mem_base, mem_base + len) as the CPU reads it
    serial: bytes
    frame: np.ndarray | None

    def frame_hash(self) -> str | None:
        return None if self.frame is None else hashlib.sha256(self.frame.tobytes()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "env": self.env,
            "cpu": self.cpu,
            "memory_file_base": f"0x{self.mem_base:04X}",
            "memory_sha256": hashlib.sha256(self.memory.tobytes()).hexdigest(),
            "serial_hex": self.serial.hex(),
            "serial_text": self.serial.decode("latin-1"),
            "frame_sha256": self.frame_hash(),
        }


def take_snapshot(
    backend: Backend, env: int, cfg: LockstepConfig, step: int, with_frame: bool
) -> Snapshot:
    lo = min(r[0] for r in cfg.regions)
    hi = max(r[1] for r in cfg.regions)
    return Snapshot(
        step=step,
        env=env,
        cpu={k: int(v) for k, v in backend.get_cpu_state(env).items()},
        mem_base=lo,
        memory=np.asarray(backend.read_memory(env, lo, hi), dtype=np.uint8),
        serial=bytes(backend.serial_output(env)),
        # shades, or RGB on a Game Boy Color machine
        frame=np.asarray(backend.screens([env])[0], np.uint8) if with_frame else None,  # type: ignore[attr-defined]
    )


def compare_snapshots(ref: Snapshot, dut: Snapshot, cfg: LockstepConfig) -> list[str]:
    """Human-readable differences (empty when the two agree on everything compared)."""
    diffs: list[str] = []
    for key in CPU_STATE_KEYS:
        if key == "cycles" and not cfg.compare_cycles:
            continue
        if ref.cpu.get(key) != dut.cpu.get(key):
            diffs.append(
                f"register {key}: ref {_hex(ref.cpu.get(key))} dut {_hex(dut.cpu.get(key))}"
            )
    compared = np.zeros(len(ref.memory), dtype=bool)
    for lo, hi in cfg.regions:
        compared[lo - ref.mem_base : hi - ref.mem_base] = True
    for lo, hi in cfg.ignore:
        a, b = max(lo - ref.mem_base, 0), max(hi - ref.mem_base, 0)
        compared[a:b] = False
    if len(ref.memory) != len(dut.memory):
        diffs.append(f"memory length: ref {len(ref.memory)} dut {len(dut.memory)}")
    else:
        bad = np.flatnonzero(compared & (ref.memory != dut.memory))
        for i in bad[:MAX_DIFF_LINES]:
            addr = ref.mem_base + int(i)
            diffs.append(
                f"memory ${addr:04X} ({_region_of(addr)}): "
                f"ref ${ref.memory[i]:02X} dut ${dut.memory[i]:02X}"
            )
        if len(bad) > MAX_DIFF_LINES:
            diffs.append(f"... {len(bad) - MAX_DIFF_LINES} more differing addresses")
    if ref.serial != dut.serial:
        n = next(
            (i for i, (x, y) in enumerate(zip(ref.serial, dut.serial)) if x != y),
            min(len(ref.serial), len(dut.serial)),
        )
        diffs.append(
            f"serial output differs at byte {n}: ref {ref.serial[n : n + 16]!r} "
            f"dut {dut.serial[n : n + 16]!r} (lengths {len(ref.serial)}, {len(dut.serial)})"
        )
    if ref.frame is not None and dut.frame is not None:
        if ref.frame.shape != dut.frame.shape:
            diffs.append(f"frame shape: ref {ref.frame.shape} dut {dut.frame.shape}")
        elif not np.array_equal(ref.frame, dut.frame):
            rf, df = ref.frame, dut.frame
            differ = rf != df
            ys, xs = np.nonzero(differ.any(-1) if differ.ndim == 3 else differ)
            y, x = int(ys[0]), int(xs[0])
            what = "colour" if rf.ndim == 3 else "shade"
            diffs.append(
                f"frame: {len(ys)} pixels differ; first at (y={y}, x={x}): "
                f"ref {what} {rf[y, x].tolist()} dut {what} {df[y, x].tolist()} "
                f"(sha256 ref {str(ref.frame_hash())[:16]} dut {str(dut.frame_hash())[:16]})"
            )
    return diffs


def _hex(value: int | None) -> str:
    return "missing" if value is None else f"${value:02X} ({value})"


def _region_of(addr: int) -> str:
    return next((name for name, (lo, hi) in REGIONS.items() if lo <= addr < hi), "other")


@dataclass
class LockstepResult:
    ok: bool
    steps_run: int
    checks: int
    divergence_step: int | None = None
    divergence_env: int | None = None
    diffs: list[str] = field(default_factory=list)
    bundle: Path | None = None


def run_lockstep(
    rom_path: str | Path,
    actions: np.ndarray,
    cfg: LockstepConfig,
    *,
    bundle_root: Path | None = DEFAULT_BUNDLE_ROOT,
    seed: int | None = None,
    extra_meta: dict[str, Any] | None = None,
) -> LockstepResult:
    """Step both backends through ``actions`` [steps, num_envs] and compare; see module doc."""
    actions = np.asarray(actions)
    if actions.shape != (cfg.steps, cfg.num_envs):
        raise ValueError(
            f"actions shape {actions.shape} != (steps, num_envs) {(cfg.steps, cfg.num_envs)}"
        )
    kwargs = {
        "num_envs": cfg.num_envs,
        "frames_per_step": cfg.frames_per_step,
        "release_after_frames": cfg.release_after_frames,
        "action_codec": cfg.codec,
        **({"allow_bad_logo": True} if cfg.allow_bad_logo else {}),
        **({"boot": cfg.boot} if cfg.boot != "fast" else {}),
    }
    ref = make_backend_by_name(cfg.ref, rom_path, **kwargs)
    try:
        dut = make_backend_by_name(cfg.dut, rom_path, **kwargs)
    except BaseException:
        ref.close()
        raise
    extra_ignore = tuple(getattr(ref, "lockstep_ignore", ()))
    if extra_ignore:
        cfg = dataclasses.replace(cfg, ignore=cfg.ignore + extra_ignore)
    checks = 0
    try:
        ref.reset(seed)
        dut.reset(seed)
        if cfg.state is not None:
            ref.load_state(cfg.state)
            dut.load_state(cfg.state)
        if cfg.step_end is not None:
            ref.set_step_end(cfg.step_end)  # type: ignore[attr-defined]
            dut.set_step_end(cfg.step_end)  # type: ignore[attr-defined]
        for step in range(cfg.steps + 1):
            if step:
                ref.step(actions[step - 1])
                dut.step(actions[step - 1])
            if step and step % cfg.every and step != cfg.steps:
                continue
            checks += 1
            with_frame = cfg.compare_frames and step > 0
            for env in range(cfg.num_envs):
                r = take_snapshot(ref, env, cfg, step, with_frame)
                d = take_snapshot(dut, env, cfg, step, with_frame)
                diffs = compare_snapshots(r, d, cfg)
                if not diffs:
                    continue
                bundle = None
                if bundle_root is not None:
                    meta = {
                        "seed": seed,
                        "ref_backend": cfg.ref,
                        "dut_backend": cfg.dut,
                        **(extra_meta or {}),
                    }
                    bundle = write_bundle(
                        bundle_root, Path(rom_path), actions[:step], cfg, r, d, diffs, meta
                    )
                return LockstepResult(False, step, checks, step, env, diffs, bundle)
    finally:
        ref.close()
        dut.close()
    return LockstepResult(True, cfg.steps, checks)


def package_versions() -> dict[str, str | None]:
    """Python and the versions of the packages a run depends on (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("gbxcule", "pyboy", "numpy", "warp-lang", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _git_commit() -> str | None:
    root = checkout_root()
    if root is None:
        return None
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


REPRO_SH = """#!/usr/bin/env bash
# Re-runs the lockstep case of this bundle. Exit 1 while it still diverges, 0 once fixed.
# GBXCULE_REPO: the folder to run in (default: the checkout that wrote this, else this bundle);
# PYTHON: the interpreter (default: the one that wrote this).
set -u
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
cd "${{GBXCULE_REPO:-{repo}}}" || exit 2
exec "${{PYTHON:-{python}}}" -m gbxcule verify --rom "$HERE/{rom}" --actions "$HERE/actions.npy" \\
    {args} --no-bundle "$@"
"""


def write_bundle(
    root: Path,
    rom_path: Path,
    actions: np.ndarray,
    cfg: LockstepConfig,
    ref: Snapshot,
    dut: Snapshot,
    diffs: list[str],
    meta: dict[str, Any],
) -> Path:
    """Write the repro bundle into a temp dir under ``root`` and rename it into place."""
    root.mkdir(parents=True, exist_ok=True)
    safe_dut = "".join(c if c.isalnum() or c in "-_" else "_" for c in cfg.dut)
    name = f"{rom_path.stem}__{cfg.ref}_vs_{safe_dut}__step{ref.step:05d}__{time.time_ns()}"
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
    repro_cfg = dataclasses.replace(cfg, steps=max(ref.step, 1), state=None)
    (tmp / rom_path.name).write_bytes(rom_path.read_bytes())
    state_arg = ""
    if cfg.state is not None:  # the bundle keeps its own copy of the start state
        (tmp / "start.state").write_bytes(Path(cfg.state).read_bytes())
        state_arg = ' --state "$HERE/start.state"'

    actions_rows = actions if len(actions) else np.zeros((1, cfg.num_envs), dtype=np.int64)
    np.save(tmp / "actions.npy", np.asarray(actions_rows, dtype=np.int64))
    for label, snap in (("ref", ref), ("dut", dut)):
        (tmp / f"{label}_state.json").write_text(json.dumps(snap.to_json(), indent=2) + "\n")
        (tmp / f"{label}_memory.bin").write_bytes(snap.memory.tobytes())
        if snap.frame is not None:
            np.save(tmp / f"{label}_frame.npy", snap.frame)
    header = [
        f"first divergence at step {ref.step} (after {ref.step} steps of "
        f"{cfg.frames_per_step} frames), env {ref.env}",
        f"ref = {cfg.ref}, dut = {cfg.dut}",
        f"memory dumps: *_memory.bin start at ${ref.mem_base:04X}",
        "",
    ]
    (tmp / "diff.txt").write_text("\n".join(header + diffs) + "\n")
    info = {
        **meta,
        "rom": rom_path.name,
        "rom_sha256": hashlib.sha256(rom_path.read_bytes()).hexdigest(),
        "step": ref.step,
        "env": ref.env,
        "config": dataclasses.asdict(cfg),
        "versions": package_versions(),
        "git_commit": _git_commit(),
        "platform": platform.platform(),
        "created_unix": time.time(),
        "repro": "bash repro.sh",
    }
    (tmp / "metadata.json").write_text(json.dumps(info, indent=2, default=str) + "\n")
    script = REPRO_SH.format(
        repo=shlex.quote(str(checkout_root())) if checkout_root() else "$HERE",
        rom=shlex.quote(rom_path.name),
        python=shlex.quote(sys.executable),
        args=" ".join(shlex.quote(a) for a in repro_cfg.cli_args()) + state_arg,
    )
    (tmp / "repro.sh").write_text(script)
    os.chmod(tmp / "repro.sh", 0o755)
    os.chmod(tmp, 0o755)
    final = root / name
    os.rename(tmp, final)
    return final
