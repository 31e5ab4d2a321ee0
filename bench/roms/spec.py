"""What a micro ROM is: its bytes, how long to run it, and its absolute self-check.

Suite modules (``bench/roms/suite/*.py``) each define ``ROMS: list[RomSpec]``.
A check gets any backend (PyBoy or ours) after ``steps`` steps and raises
``AssertionError`` with a specific message when the ROM's result is wrong. It
checks an absolute expectation (serial "Passed", a WRAM signature computed
here in Python), never just "agrees with PyBoy".

This module also runs a spec on any backend (:func:`run_spec`, :func:`check_spec`),
the one way ROM self-checks are executed, and turns it into a lockstep case
(:func:`spec_config`, :func:`spec_actions`) for :mod:`gbxcule.lockstep`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.backends.protocol import Backend
from gbxcule.files import write_atomic
from gbxcule.lockstep import LockstepConfig, make_backend_by_name

SPEC_ROM_DIR = Path(__file__).resolve().parent / "out"


@dataclass(frozen=True)
class RomSpec:
    name: str  # file stem, e.g. "alu_add"; unique across the suite
    description: str  # what it tests, one line (goes into the manifest)
    build: Callable[[], bytes]  # full cartridge image with a valid header
    check: Callable[[Backend, int], None]  # raise AssertionError on a wrong result
    steps: int = 60  # steps to run before the check
    frames_per_step: int = 1
    release_after_frames: int = 1
    # Per-step actions in the "buttons" codec (8-bit masks); None = nothing pressed.
    # Step k uses inputs[k % len(inputs)].
    inputs: tuple[int, ...] | None = None
    tags: tuple[str, ...] = field(
        default_factory=tuple
    )  # "cpu", "timer", "ppu", "mbc", "demo", ...


def spec_actions(spec: RomSpec, num_envs: int = 1) -> np.ndarray:
    """int64 [spec.steps, num_envs] "buttons" masks: step k uses ``inputs[k % len(inputs)]``."""
    inputs = spec.inputs or (0,)
    column = np.array([inputs[k % len(inputs)] for k in range(spec.steps)], dtype=np.int64)
    return np.repeat(column[:, None], num_envs, axis=1)


def spec_rom_file(spec: RomSpec, out_dir: Path = SPEC_ROM_DIR) -> Path:
    """``out_dir/<name>.gb`` holding ``spec.build()`` (rewritten atomically when stale)."""
    data = spec.build()
    path = out_dir / f"{spec.name}.gb"
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data)
    return path


def spec_config(spec: RomSpec, ref: str, dut: str, **overrides: Any) -> LockstepConfig:
    """Lockstep settings taken from the spec (its steps, frame pacing and "buttons" inputs)."""
    base = {
        "ref": ref,
        "dut": dut,
        "steps": spec.steps,
        "frames_per_step": spec.frames_per_step,
        "release_after_frames": spec.release_after_frames,
        "codec": "buttons",
    }
    return LockstepConfig(**{**base, **overrides})


def make_spec_backend(
    spec: RomSpec, backend: str, *, num_envs: int = 1, rom_path: Path | None = None
) -> Backend:
    """``backend`` (a registry name or ``module:Class``) built with the spec's pacing and codec."""
    return make_backend_by_name(
        backend,
        rom_path or spec_rom_file(spec),
        num_envs=num_envs,
        frames_per_step=spec.frames_per_step,
        release_after_frames=spec.release_after_frames,
        action_codec="buttons",
    )


def run_spec(spec: RomSpec, backend: Backend) -> None:
    """Reset ``backend`` and run ``spec.steps`` steps of the spec's inputs on every env."""
    pacing = (backend.frames_per_step, backend.release_after_frames)
    if pacing != (spec.frames_per_step, spec.release_after_frames):
        raise ValueError(
            f"backend paces {pacing} (frames_per_step, release_after_frames) but ROM "
            f"{spec.name!r} needs {(spec.frames_per_step, spec.release_after_frames)}"
        )
    backend.reset(0)
    for row in spec_actions(spec, backend.num_envs):
        backend.step(row)


def check_spec(spec: RomSpec, backend: str = "pyboy", *, num_envs: int = 1) -> None:
    """Build, run and self-check ``spec`` on a fresh ``backend``; AssertionError names the env."""
    b = make_spec_backend(spec, backend, num_envs=num_envs)
    try:
        run_spec(spec, b)
        for env in range(num_envs):
            try:
                spec.check(b, env)
            except AssertionError as exc:
                raise AssertionError(f"{spec.name} on {backend} env {env}: {exc}") from exc
    finally:
        b.close()
