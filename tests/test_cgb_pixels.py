"""Game Boy Color screens vs PyBoy ``cgb=True``, frame by frame, pixel for pixel in RGB.

Fuzz ROMs (``tests/support/cgb_pixel_fuzz.py``) fill both VRAM banks, OAM and all 64
palette words with random bytes (every map attribute: palette, tile bank, flips,
priority; every object attribute: palette, bank, flips, priority) and rewrite them, the
VRAM bank, the palettes (with and without auto-increment), the LCD registers (the master
priority bit on and off, the window, 8x16 objects) by CPU, OAM DMA and general-purpose
HDMA at pseudo-random points of every frame, LCD blinks included. Each frame our CGB
renderer (``kernels/ppu/render_cgb.py``) draws the full RGB screen, the 72x80 RGB and the
luminance, and each must equal PyBoy's screen (downsampled; ``core.pixels.luma``). The
first 64 frames are PyBoy's CGB boot ROM's logo.
"""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.core import pixels as px

from .support import cgb_pixel_fuzz as fuzz

pytestmark = pytest.mark.l2

FAST_FRAMES = 64 + fuzz.SCENES_PER_ROM  # the boot, then every scene once
SLOW_SEEDS = range(1, 9)
SLOW_FRAMES = 64 + 5 * fuzz.SCENES_PER_ROM


def check(result: dict, frames: int) -> None:
    assert not result["mismatches"], (
        f"{len(result['mismatches'])} screens differ from PyBoy: "
        + "; ".join(result["mismatches"][:5])
    )
    assert result["frames"] == frames
    # the scenes must change what lines saw mid-frame, in many colours
    assert result["logged"] >= (frames - 64) // 2, result
    assert result["colours"] >= 32, result


def test_cgb_screens_match_pyboy_under_fuzz():
    check(fuzz.run(0, FAST_FRAMES), FAST_FRAMES)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_cgb_screens_match_pyboy_under_fuzz_soak(seed):
    check(fuzz.run(seed, SLOW_FRAMES), SLOW_FRAMES)


def test_cgb_fuzz_scenes_cover_every_op_and_both_index_registers():
    rng = np.random.default_rng(0)
    ops = [op for _ in range(300) for op in fuzz.scene_ops(rng)]
    assert {op[2] for op in ops} == set(range(8))
    palette_ops = [op for op in ops if op[2] == fuzz.OP_PALETTE]
    assert {op[3] & 0xFF for op in palette_ops} == {0x68, 0x6A}
    assert {(op[3] >> 8) & 0x80 for op in palette_ops} == {0, 0x80}
    assert {0, 143, 153} <= {op[0] for op in ops}


def test_colour_conversion_and_luma():
    words = np.array([0x0000, 0x001F, 0x03E0, 0x7C00, 0x7FFF, 0x1CE7], np.uint16)
    rgb = px.rgb_from_bgr555(words)
    assert rgb.tolist() == [
        [0, 0, 0],
        [248, 0, 0],
        [0, 248, 0],
        [0, 0, 248],
        [248, 248, 248],
        [56, 56, 56],
    ]
    assert px.luma(rgb).tolist() == [0, 75, 145, 28, 248, 56]
    with pytest.raises(ValueError, match="last dimension 3"):
        px.luma(np.zeros((4, 2), np.uint8))


def _draw(latch: np.ndarray, video: np.ndarray) -> np.ndarray:
    """Our CGB renderer's full RGB frame of one env's latches and frame_video (no log)."""
    import warp as wp

    from gbxcule.kernels.ppu.render_cgb import render_cgb_kernels

    full = render_cgb_kernels()[0]
    out = wp.zeros((1, px.SCREEN_H, px.SCREEN_W, 3), dtype=wp.uint8, device="cpu")
    inputs = [
        wp.array(video[None], dtype=wp.uint8, device="cpu"),
        wp.array(latch[None], dtype=wp.uint8, device="cpu"),
        wp.zeros((1, px.VIDEO_LOG_WORDS_CGB), dtype=wp.int32, device="cpu"),
        wp.array([0], dtype=wp.int32, device="cpu"),
        out,
    ]
    wp.launch(full, dim=(1, px.SCREEN_H), inputs=inputs, device="cpu")
    return out.numpy()[0]


def test_a_colour_screen_becomes_a_frame_our_renderer_draws():
    """How a PyBoy CGB state's saved screen is shown (core/pixels_cgb.py): a screen of up
    to 8 palettes of 4 colours tile by tile, and a blank one, are drawn exactly; one that
    cannot be (5 colours in a tile, a colour no palette word gives) is refused."""
    from gbxcule.core.pixels_cgb import frame_of_colours

    rng = np.random.default_rng(5)
    for _ in range(3):
        palettes = px.rgb_from_bgr555(rng.integers(0, 0x8000, (8, 4)))
        choice = rng.integers(0, 8, (18, 20))
        index = rng.integers(0, 4, (144, 160))
        rows, cols = np.divmod(np.arange(144 * 160), 160)
        screen = palettes[choice[rows // 8, cols // 8], index.reshape(-1)].reshape(144, 160, 3)
        frame = frame_of_colours(screen)
        assert frame is not None
        assert np.array_equal(_draw(*frame), screen)
    for rgb in px.CGB_BLANK_RGB:
        screen = np.zeros((144, 160, 3), np.uint8) + np.array(
            [rgb >> 16, (rgb >> 8) & 0xFF, rgb & 0xFF], np.uint8
        )
        frame = frame_of_colours(screen)
        assert frame is not None and np.array_equal(_draw(*frame), screen)
    five = np.zeros((144, 160, 3), np.uint8)
    five[0, :5, 0] = np.arange(5) * 8
    assert frame_of_colours(five) is None
    odd = np.zeros((144, 160, 3), np.uint8)
    odd[3, 3] = (1, 2, 3)
    assert frame_of_colours(odd) is None
