"""Mid-frame VRAM/OAM/LCD-register fuzz: our frames vs PyBoy's, every step and env.

ROMs from ``tests/support/midframe_fuzz.py`` write tile data, tile maps, OAM (directly,
with and without PyBoy's access lock, and by OAM DMA) and LCD registers at
pseudo-random lines and cycles of every frame, lines 0 and 153 included. Every
rendered frame (the last of each 2-frame step) is compared with PyBoy's: full
resolution, 72x80 shades and packed2. A fast slice runs in ``make test``; the slow
test covers >= 5,000 scenes. With the renderer reading only the line-143 snapshot (no
write log) most of these scenes fail (history/midframe-video.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from gbxcule.asm import build_rom
from gbxcule.backends.pixels import VideoLogOverflowWarning
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import pixels as px

from .support import midframe_fuzz as fuzz

pytestmark = pytest.mark.l2

FAST_SEED = 7
FAST_STEPS = 100  # x 2 envs = 200 scenes
SLOW_SEEDS = range(100, 110)
SLOW_STEPS = 512  # x 2 envs x 10 ROMs = 10,240 scenes


def check(result: fuzz.FuzzResult, scenes: int) -> None:
    assert not result.mismatches, (
        f"{len(result.mismatches)} of {result.scenes} scenes differ from PyBoy: "
        + "; ".join(result.mismatches[:5])
    )
    assert result.scenes == scenes
    # the fuzz must exercise the log: most frames see mid-frame writes that change bytes
    assert result.logged >= scenes // 2, f"only {result.logged} of {scenes} frames logged a write"


def test_midframe_fuzz_fast_slice(tmp_path):
    result = fuzz.run_fuzz(tmp_path, FAST_SEED, FAST_STEPS)
    check(result, FAST_STEPS * 2)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_midframe_fuzz_soak(tmp_path, seed):
    result = fuzz.run_fuzz(tmp_path, seed, SLOW_STEPS)
    check(result, SLOW_STEPS * 2)


def test_midframe_fuzz_scenes_cover_every_op_and_the_edge_lines():
    rng = np.random.default_rng(0)
    ops = [op for _ in range(300) for op in fuzz.scene_ops(rng)]
    kinds = {op[2] for op in ops}
    lines = {op[0] for op in ops}
    assert kinds == {fuzz.OP_WRITE, fuzz.OP_WRITE_DE, fuzz.OP_DMA, fuzz.OP_BURST, fuzz.OP_BLINK}
    assert {0, 153} <= lines
    addrs = {op[3] for op in ops if op[2] in (fuzz.OP_WRITE, fuzz.OP_WRITE_DE, fuzz.OP_BURST)}
    assert any(a < 0x9800 for a in addrs) and any(0x9800 <= a < 0xA000 for a in addrs)
    assert any(0xFE00 <= a < 0xFEA0 for a in addrs) and any(a >= 0xFF40 for a in addrs)


FLOOD = """
Main:
    di
Frame:
    ld b, 10
.wait:
    ldh a, [$44]
    cp b
    jr nz, .wait
    ld hl, $8000            ; 2,048 changed bytes while lines 10.. are drawn
    ld bc, $0800
    ldh a, [$80]
    inc a
    ldh [$80], a
.fill:
    ld [hl+], a
    dec c
    jr nz, .fill
    dec b
    jr nz, .fill
.end:
    ldh a, [$44]
    cp 144
    jr nz, .end
    jr Frame
"""


def test_log_overflow_is_counted_and_warned(tmp_path):
    rom = tmp_path / "flood.gb"
    rom.write_bytes(build_rom(FLOOD, title="FLOOD"))
    warp = WarpVecCpuBackend(rom, num_envs=2, frames_per_step=2, threads=1, render_pixels=True)
    try:
        assert warp.video_log_overflows().tolist() == [0, 0]
        for _ in range(3):
            warp.step(np.zeros(2, dtype=np.int64))
        overflows = warp.video_log_overflows()
        assert (overflows >= 1).all(), overflows
        log = warp.machine.video_log.numpy()
        assert (log[:, px.VLOG_COUNT] == px.VLOG_CAP).all()
        assert (log[:, px.VLOG_DROPPED] > 0).all()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warp.frame_shades(1)
        assert any(issubclass(w.category, VideoLogOverflowWarning) for w in caught)
    finally:
        warp.close()
