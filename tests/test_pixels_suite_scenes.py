"""The PPU micro-ROM scenes (bench/roms/suite/ppu_*.py) on PyBoy vs our renderers.

Every static and mid-frame scene of the suite is built into its ROM, run on PyBoy,
and PyBoy's frame is compared with our render of PyBoy's VRAM/OAM under the
scene's per-line registers (``Scene.line_regs()``), every pixel, full and downsampled.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from bench.roms.suite import ppu_bg, ppu_midframe, ppu_sprites, ppu_window
from bench.roms.suite.ppu_common import MIN_STABLE_FRAMES, Scene, scene_source
from gbxcule.core import pixels as px

from .support import pixel_scenes as ps

pytestmark = pytest.mark.l2

REG_FIELDS = {
    "lcdc": px.LATCH_LCDC,
    "scx": px.LATCH_SCX,
    "scy": px.LATCH_SCY,
    "wx": px.LATCH_WX,
    "wy": px.LATCH_WY,
    "bgp": px.LATCH_BGP,
    "obp0": px.LATCH_OBP0,
    "obp1": px.LATCH_OBP1,
}


def suite_scenes() -> dict[str, Scene]:
    scenes = {}
    for module in (ppu_bg, ppu_window, ppu_sprites, ppu_midframe):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.endswith("_scene") and fn.__module__ == module.__name__:
                scenes[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = fn()
    return scenes


SCENES = suite_scenes()


def scene_latch(scene: Scene) -> np.ndarray:
    latch = np.zeros((1, px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    for ly, regs in enumerate(scene.line_regs()):
        for name, field in REG_FIELDS.items():
            latch[0, ly, field] = getattr(regs, name)
    ps.window_model(latch[0])
    return latch


def test_suite_has_scenes():
    assert len(SCENES) >= 12, sorted(SCENES)


@pytest.mark.parametrize("name", sorted(SCENES))
def test_suite_scene_matches_pyboy(name):
    scene = SCENES[name]
    pyboy = ps.start_pyboy(scene_source(scene), name.split(".")[-1])
    try:
        pyboy.tick(MIN_STABLE_FRAMES + 6, True)
        latch = scene_latch(scene)
        positions = np.array(pyboy.screen.tilemap_position_list)
        assert (positions[:, 0] == latch[0, :, px.LATCH_SCX]).all(), "SCX per line differs"
        assert (positions[:, 1] == latch[0, :, px.LATCH_SCY]).all(), "SCY per line differs"
        assert ((positions[:, 2] + 7) & 0xFF == latch[0, :, px.LATCH_WX]).all(), "WX differs"
        for _ in range(2):
            ps.assert_matches_pyboy(name, pyboy, latch)
            pyboy.tick(1, True)
    finally:
        pyboy.stop(save=False)
