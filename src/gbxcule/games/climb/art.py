"""Climb's tiles: a blank, the platform, the coin and the player, then the 5x7 font at the
tiles of its ASCII codes ($20-$5F), shared by the BG (title text) and sprites (score,
"GAME OVER")."""

from __future__ import annotations

import functools

from gbxcule.asm.tiles import FONT_5X7, glyph_tile, tile_bytes

BLANK, PLATFORM, COIN, PLAYER = range(4)
FIRST_CHAR, NUM_TILES = 0x20, 0x60

_PICTURES = {
    BLANK: "00000000 " * 8,
    PLATFORM: "33333333 31111113 32222223 02222220 00200200 00200200 00000000 00000000",
    COIN: "00000000 00033000 00322300 03211230 03211230 00322300 00033000 00000000",
    PLAYER: "00333300 03111130 03131130 03111130 00333300 03222230 00300300 03300330",
}

TITLE_LINES = ((6, "CLIMB"), (10, "PRESS START"), (13, "A TO JUMP"))  # (BG row, text)
GAME_OVER = "GAME OVER"


def text(s: str) -> bytes:
    """``s`` as tile ids: each character's ASCII code."""
    return s.upper().encode("ascii")


@functools.cache
def tile_data() -> bytes:
    """NUM_TILES x 16 bytes, loaded at $8000."""
    out = bytearray()
    for tile in range(NUM_TILES):
        ch = chr(tile)
        if tile in _PICTURES:
            out += tile_bytes(_PICTURES[tile].split())
        elif tile >= FIRST_CHAR and ch in FONT_5X7:
            out += glyph_tile(ch)
        else:
            out += bytes(16)
    return bytes(out)


def title_lines() -> list[tuple[int, int, bytes]]:
    """(BG row, column, tile ids) of each title line, centred on the 20-cell screen."""
    return [(row, (20 - len(s)) // 2, text(s)) for row, s in TITLE_LINES]
