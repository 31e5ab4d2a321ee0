"""Object (sprite) micro ROMs: 8x8/8x16, flips, OBP0/OBP1, BG-over-OBJ, the
ten-per-line limit, DMG drawing priority, partly off-screen objects.

Objects use seeded random tiles, so every flip or palette mistake shows, and
their transparent (colour 0) pixels expose what lies underneath. No object
with "BG over OBJ" set overlaps another object: PyBoy does not model the
masking that Pan Docs documents for that case (history/pyboy-deviations.md).
"""

from __future__ import annotations

import numpy as np

from bench.roms.suite.ppu_common import Scene, oam_image, random_tiles, scene_spec, vram_image
from bench.roms.suite.ppu_reference import PpuRegs

# Every flip/palette/priority combination, cycled over the objects.
ATTRS = (0x00, 0x20, 0x40, 0x60, 0x10, 0x30, 0x50, 0x70, 0x80, 0xA0, 0xD0, 0xF0)
OBP0 = 0xD2  # colours 1,2,3 -> shades 0,1,3
OBP1 = 0x1B  # colours 1,2,3 -> shades 2,1,0


def _vram(tag: int) -> bytes:
    rng = np.random.default_rng(0x0B1E0 + tag)
    return vram_image(
        random_tiles(rng, 256), 0, rng.integers(0, 256, size=1024, dtype=np.uint8).tobytes()
    )


def grid_objects(height: int) -> list[tuple[int, int, int, int]]:
    """Non-overlapping objects on a grid that runs off all four screen edges."""
    objs = []
    tops = [-4, 20, 40, 60, 80, 100, 120, 140] if height == 8 else [-14, 18, 52, 86, 120, 136]
    for row, top in enumerate(tops):
        for i in range(5):
            k = len(objs)
            x = 2 + row * 4 + 36 * i
            objs.append((top + 16, x, (k * 3 + 1) & 0xFF, ATTRS[k % len(ATTRS)]))
    return objs[:40]


def objects_8x8_scene() -> Scene:
    regs = PpuRegs(lcdc=0x93, scx=9, scy=3, bgp=0xE4, obp0=OBP0, obp1=OBP1)
    return Scene(_vram(1), oam_image(grid_objects(8)), regs)


def objects_8x16_scene() -> Scene:
    """Odd tile numbers: hardware ignores the LSB (top tile NN & $FE)."""
    regs = PpuRegs(lcdc=0x97, scx=0, scy=60, bgp=0xE4, obp0=OBP0, obp1=OBP1)
    return Scene(_vram(2), oam_image(grid_objects(16)), regs)


def line_limit_scene() -> Scene:
    """Lines 60-63 select 10 objects; on 64-67 two more come into range first in
    OAM, pushing the last two out. An off-screen X=0 object still counts."""
    band = 16 + 60
    objs = [(band, 0, 7, 0x00), (16 + 30, 50, 9, 0x00)]
    for i in range(11):
        y = band + 4 if i in (3, 4) else band
        objs.append((y, 10 + 14 * i, 20 + i, 0x10 * (i & 1)))
    regs = PpuRegs(lcdc=0x93, scx=0, scy=0, bgp=0xE4, obp0=OBP0, obp1=OBP1)
    return Scene(_vram(3), oam_image(objs), regs)


def priority_scene() -> Scene:
    """Overlapping opaque objects: smaller X wins; equal X goes to the earlier OAM slot."""
    objs = [
        (40, 40, 11, 0x00),  # 0: loses to slot 1 (X 36 < 40)
        (42, 36, 12, 0x10),  # 1
        (70, 80, 13, 0x10),  # 2: same X as slot 3, earlier slot wins
        (73, 80, 14, 0x00),  # 3
        (100, 124, 15, 0x00),  # 4: loses to slot 5 (X 120 < 124)
        (104, 120, 16, 0x20),  # 5
        (120, 102, 17, 0x00),  # 6: three-deep stack, slot 8 on top
        (122, 101, 18, 0x10),  # 7
        (124, 100, 19, 0x40),  # 8
    ]
    regs = PpuRegs(lcdc=0x93, scx=0, scy=0, bgp=0xE4, obp0=OBP0, obp1=OBP1)
    return Scene(_vram(4), oam_image(objs), regs)


ROMS = [
    scene_spec(
        "ppu_obj_8x8",
        "8x8 objects: flips, OBP0/OBP1, BG-over-OBJ, clipped at all four edges",
        objects_8x8_scene(),
    ),
    scene_spec(
        "ppu_obj_8x16",
        "8x16 objects: tile LSB ignored, Y flip over 16 rows, clipped at top and bottom",
        objects_8x16_scene(),
    ),
    scene_spec(
        "ppu_obj_line_limit",
        "ten objects per line in OAM order, off-screen X=0 counting towards it",
        line_limit_scene(),
    ),
    scene_spec(
        "ppu_obj_priority",
        "overlapping objects: smaller X first, then lower OAM index; colour 0 transparent",
        priority_scene(),
    ),
]
