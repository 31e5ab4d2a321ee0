"""Window micro ROMs: WX/WY position, window map select, enable toggles mid-frame.

The window start column is kept off BG tile boundaries where the window is
switched off through LCDC, away from the DMG pixel-insertion quirk that the
picture model leaves out (Pan Docs, "Window").
"""

from __future__ import annotations

import numpy as np

from bench.roms.suite.ppu_common import Scene, random_tiles, scene_spec, vram_image
from bench.roms.suite.ppu_reference import REG_LCDC, REG_WX, PpuRegs

NO_OBJECTS = bytes(160)


def _random_vram(tag: int) -> bytes:
    rng = np.random.default_rng(0x317D0 + tag)
    tiles = random_tiles(rng, 256)
    maps = rng.integers(0, 256, size=2048, dtype=np.uint8).tobytes()
    return vram_image(tiles, 0, maps[:1024], maps[1024:])


def positioned_scene() -> Scene:
    """Window from (37, 50) with map $9C00 over a scrolled BG on $9800."""
    regs = PpuRegs(lcdc=0xF1, scx=13, scy=200, bgp=0xE4, wx=44, wy=50)
    return Scene(_random_vram(1), NO_OBJECTS, regs)


def map_9800_scene() -> Scene:
    """Full-width window (WX=7) from line 100 on map $9800 while the BG uses $9C00."""
    regs = PpuRegs(lcdc=0xB9, scx=100, scy=31, bgp=0x9C, wx=7, wy=100)
    return Scene(_random_vram(2), NO_OBJECTS, regs)


def toggled_scene() -> Scene:
    """Window hidden on lines 40-59 (LCDC.5) and 90-109 (WX=200); its own line
    counter stops while hidden, so the rows resume where they left off."""
    regs = PpuRegs(lcdc=0xF1, scx=0, scy=0, bgp=0xE4, wx=44, wy=20)
    changes = (
        (40, REG_LCDC, 0xD1),
        (60, REG_LCDC, 0xF1),
        (90, REG_WX, 200),
        (110, REG_WX, 85),
    )
    return Scene(_random_vram(3), NO_OBJECTS, regs, changes)


def disabled_scene() -> Scene:
    """WX/WY in range but LCDC.5 clear: BG only."""
    regs = PpuRegs(lcdc=0xD1, scx=77, scy=5, bgp=0xE4, wx=30, wy=10)
    return Scene(_random_vram(4), NO_OBJECTS, regs)


ROMS = [
    scene_spec(
        "ppu_window_position",
        "window at WX=44, WY=50 on map $9C00 over a scrolled BG",
        positioned_scene(),
    ),
    scene_spec(
        "ppu_window_map_9800",
        "full-width window from WY=100 on map $9800, BG on map $9C00",
        map_9800_scene(),
    ),
    scene_spec(
        "ppu_window_toggle",
        "window hidden mid-frame via LCDC.5 and via WX; window line counter pauses",
        toggled_scene(),
    ),
    scene_spec(
        "ppu_window_disabled", "LCDC.5 clear hides the window despite WX/WY", disabled_scene()
    ),
]
