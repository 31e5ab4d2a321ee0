"""A Game Boy Color screen as a frame our CGB renderer draws: how a PyBoy CGB state's
saved screen is shown until the first frame after loading it is drawn.

PyBoy's screen after ``load_state`` is the one it saved; ours is whatever the renderers
draw from ``Machine.frame_video`` and the line latches. On a DMG any screen of the 4
shades becomes 360 tiles of its own (``pixels.frame_of_shades``). A colour screen becomes
360 tiles over both VRAM banks with up to 8 background palettes of 4 colours, each tile
taking the palette that holds its colours (a greedy fit); a uniform screen of one of the
colours PyBoy blanks to becomes blank lines. A screen that does not fit (a tile of more
than 4 colours, more than 8 palettes, a colour no palette word gives) returns None and
the caller leaves the frame as it was.
"""

from __future__ import annotations

import numpy as np

from gbxcule.core.pixels import (
    CGB_BLANK_RGB,
    FRAME_VIDEO_BYTES_CGB,
    LATCH_BGP,
    LATCH_FIELDS,
    LATCH_FLAG_BLANK,
    LATCH_FLAGS,
    LATCH_LCDC,
    SCREEN_H,
    SCREEN_W,
    VIDEO_BG_PALETTES_OFF,
    VIDEO_VRAM1_OFF,
    VIDEO_VRAM_OFF,
)

_BG_MAP = 0x1800
_LCDC = 0x91  # LCD on, tiles at 0x8000 (unsigned), BG map 0x9800, master priority; no objects
_PALETTES = 8
_TILES_PER_BANK = 256


def rgb_of_screen_words(words: np.ndarray) -> np.ndarray:
    """PyBoy's screen buffer as a save state holds it (``uint32 [144, 160]``, bytes R, G,
    B, A from the lowest) -> ``uint8 [144, 160, 3]``."""
    rgba = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)
    return rgba.reshape(SCREEN_H, SCREEN_W, 4)[..., :3].copy()


def _blank_frame(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    colour = tuple(int(c) for c in rgb[0, 0])
    if not (rgb == rgb[0, 0]).all():
        return None
    value = (colour[0] << 16) | (colour[1] << 8) | colour[2]
    if value not in CGB_BLANK_RGB:
        return None
    latch = np.zeros((SCREEN_H, LATCH_FIELDS), dtype=np.uint8)
    latch[:, LATCH_FLAGS] = LATCH_FLAG_BLANK
    latch[:, LATCH_BGP] = CGB_BLANK_RGB.index(value)
    return latch, np.zeros(FRAME_VIDEO_BYTES_CGB, dtype=np.uint8)


def _fit_palettes(tile_sets: list[frozenset]) -> tuple[list[list[int]], list[int]] | None:
    """Up to 8 palettes (colour word lists) and each tile's palette, or None."""
    palettes: list[set[int]] = []
    for colours in sorted(set(tile_sets), key=len, reverse=True):
        for p in palettes:
            if len(p | colours) <= 4:
                p |= colours
                break
        else:
            if len(palettes) == _PALETTES:
                return None
            palettes.append(set(colours))
    ordered = [sorted(p) for p in palettes]
    choice = [next(k for k, p in enumerate(palettes) if s <= p) for s in tile_sets]
    return ordered, choice


def frame_of_colours(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(line_latch [144, LATCH_FIELDS], frame_video [FRAME_VIDEO_BYTES_CGB])`` of one
    CGB env that our renderer draws as ``rgb`` (``uint8 [144, 160, 3]``), or None."""
    rgb = np.asarray(rgb, dtype=np.uint8)
    if rgb.shape != (SCREEN_H, SCREEN_W, 3):
        raise ValueError(f"rgb must be uint8 [{SCREEN_H}, {SCREEN_W}, 3], got {rgb.shape}")
    blank = _blank_frame(rgb)
    if blank is not None:
        return blank
    if (rgb & 7).any():
        return None
    c = rgb.astype(np.int64) >> 3
    words = c[..., 0] | (c[..., 1] << 5) | (c[..., 2] << 10)
    rows, cols = SCREEN_H // 8, SCREEN_W // 8  # 18 x 20 tiles
    tiles = words.reshape(rows, 8, cols, 8).transpose(0, 2, 1, 3).reshape(rows * cols, 8, 8)
    tile_sets = [frozenset(np.unique(t).tolist()) for t in tiles]
    if max(len(s) for s in tile_sets) > 4:
        return None
    fit = _fit_palettes(tile_sets)
    if fit is None:
        return None
    palettes, choice = fit
    video = np.zeros(FRAME_VIDEO_BYTES_CGB, dtype=np.uint8)
    weights = (1 << np.arange(7, -1, -1)).astype(np.int64)  # pixel 0 is bit 7
    for n, tile in enumerate(tiles):
        colours = palettes[choice[n]]
        index = np.searchsorted(colours, tile)  # colour index 0..3 in its palette
        data = np.stack([(index & 1) @ weights, (index >> 1) @ weights], -1).reshape(16)
        bank = VIDEO_VRAM_OFF if n < _TILES_PER_BANK else VIDEO_VRAM1_OFF
        at = bank + (n % _TILES_PER_BANK) * 16
        video[at : at + 16] = data
        ty, tx = divmod(n, cols)
        video[VIDEO_VRAM_OFF + _BG_MAP + ty * 32 + tx] = n % _TILES_PER_BANK
        bank_bit = 0x08 if n >= _TILES_PER_BANK else 0
        video[VIDEO_VRAM1_OFF + _BG_MAP + ty * 32 + tx] = choice[n] | bank_bit
    for p, colours in enumerate(palettes):
        for k, word in enumerate(colours):
            at = VIDEO_BG_PALETTES_OFF + p * 8 + k * 2
            video[at : at + 2] = (word & 0xFF, word >> 8)
    latch = np.zeros((SCREEN_H, LATCH_FIELDS), dtype=np.uint8)
    latch[:, LATCH_LCDC] = _LCDC
    latch[:, LATCH_BGP] = 0xFC
    return latch, video
