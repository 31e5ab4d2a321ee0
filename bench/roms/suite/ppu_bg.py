"""BG micro ROMs: tile data $8000/$8800 addressing, maps $9800/$9C00, SCX/SCY, BGP.

Each is a static scene (see ppu_common) checked pixel for pixel against the
NumPy picture model. Tiles and maps are seeded random data, so a wrong tile
slot, map, scroll offset or palette entry changes many pixels.
"""

from __future__ import annotations

import numpy as np

from bench.roms.suite.ppu_common import Scene, random_tiles, scene_spec, vram_image
from bench.roms.suite.ppu_reference import PpuRegs
from gbxcule.asm.tiles import tile_bytes

NO_OBJECTS = bytes(160)


def _rng(tag: int) -> np.random.Generator:
    return np.random.default_rng(0xB6000 + tag)


def _random_map(rng: np.random.Generator, lo: int = 0, hi: int = 256) -> bytes:
    return rng.integers(lo, hi, size=1024, dtype=np.uint8).tobytes()


def unsigned_scroll_scene() -> Scene:
    """256 tiles at $8000, map $9800, scrolled so both axes wrap past 255."""
    rng = _rng(1)
    vram = vram_image(random_tiles(rng, 256), 0, _random_map(rng), _random_map(rng))
    return Scene(vram, NO_OBJECTS, PpuRegs(lcdc=0x91, scx=0xB5, scy=0xC3, bgp=0xE4))


def signed_scene() -> Scene:
    """$8800 addressing (LCDC.4=0) with map $9C00; $8000-$87FF holds decoy tiles."""
    rng = _rng(2)
    vram = vram_image(random_tiles(rng, 384), 0, _random_map(rng), _random_map(rng))
    return Scene(vram, NO_OBJECTS, PpuRegs(lcdc=0x89, scx=0x37, scy=0x0D, bgp=0xE4))


def inverted_palette_scene() -> Scene:
    rng = _rng(3)
    vram = vram_image(random_tiles(rng, 128), 0, _random_map(rng, 0, 128))
    return Scene(vram, NO_OBJECTS, PpuRegs(lcdc=0x91, scx=3, scy=250, bgp=0x1B))


STRIPES = tile_bytes(["01230123"] * 4 + ["32103210"] * 4)
CHECKER = tile_bytes(["00112233", "00112233", "11223300", "11223300"] * 2)


def two_colour_scene() -> Scene:
    """BGP $F0 maps colours 0,1 to shade 0 and 2,3 to shade 3: a two-shade frame."""
    tmap = bytes((x + y) & 1 for y in range(32) for x in range(32))
    vram = vram_image(STRIPES + CHECKER, 0, tmap)
    return Scene(vram, NO_OBJECTS, PpuRegs(lcdc=0x91, scx=5, scy=2, bgp=0xF0))


ROMS = [
    scene_spec(
        "ppu_bg_unsigned_scroll",
        "BG tiles at $8000 (unsigned), map $9800, SCX/SCY wrapping both axes",
        unsigned_scroll_scene(),
    ),
    scene_spec(
        "ppu_bg_signed_9c00",
        "BG tiles at $8800 (signed indices), map $9C00, decoy data at $8000 and $9800",
        signed_scene(),
    ),
    scene_spec(
        "ppu_bg_palette_inverted", "BGP $1B reverses the four shades", inverted_palette_scene()
    ),
    scene_spec(
        "ppu_bg_two_colour", "BGP $F0 gives a frame of shades 0 and 3 only", two_colour_scene()
    ),
]
