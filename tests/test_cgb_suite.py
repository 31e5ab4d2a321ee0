"""The Game Boy Color micro-ROM suite (bench/roms/cgb_suite.py): each ROM passes its own
check on PyBoy ``cgb=True`` and on our CPU backend, runs in lockstep with PyBoy frame by
frame (registers, cycles, WRAM banks, VRAM banks, palettes, IO), and its check fails on a
wrong byte."""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.cgb_suite import CGB_ROMS
from bench.roms.spec import RomSpec

from .support.cgb_support import lockstep

pytestmark = pytest.mark.l2


def _run(spec: RomSpec, name: str, tmp_path):
    from gbxcule.backends.registry import make_backend

    path = tmp_path / f"{spec.name}.gbc"
    path.write_bytes(spec.build())
    kw = {"threads": 1} if name == "warp-cpu" else {}
    b = make_backend(name, str(path), num_envs=1, frames_per_step=spec.frames_per_step,
                     release_after_frames=spec.release_after_frames, action_codec="buttons", **kw)  # fmt: skip
    b.reset()
    for _ in range(spec.steps):
        b.step(np.zeros(1, dtype=np.int64))
    return b


@pytest.mark.parametrize("spec", CGB_ROMS, ids=lambda s: s.name)
def test_cgb_suite_rom(spec, tmp_path):
    for name in ("pyboy", "warp-cpu"):
        b = _run(spec, name, tmp_path)
        try:
            assert b.cgb, name
            spec.check(b, 0)
        finally:
            b.close()
    frame, problems = lockstep(spec.build(), 66 + spec.steps)
    assert frame < 0, f"frame {frame}:\n  " + "\n  ".join(problems)


def test_a_cgb_suite_check_fails_on_a_wrong_byte(tmp_path):
    from bench.roms.suite._lib import RESULTS_BASE

    spec = CGB_ROMS[0]
    b = _run(spec, "warp-cpu", tmp_path)
    try:
        b.write_memory(0, RESULTS_BASE + 2, 0x00)
        with pytest.raises(AssertionError, match="WRAM bank 3"):
            spec.check(b, 0)
    finally:
        b.close()
