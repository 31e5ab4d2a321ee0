"""Blocks' tiles, its two screens (title and play) and the pieces' rotation tables.

Tile ids: 0 the empty well cell, 1..7 the block of piece kind 0..6 (a board cell's value is
its tile id), 8 the wall, and the font at its ASCII codes (space, the blank, is $20).
"""

from __future__ import annotations

import functools

from gbxcule.asm.tiles import FONT_5X7, glyph_tile, tile_bytes
from gbxcule.games.blocks import layout as L

EMPTY = 0
WALL = 8
BLANK = 0x20
NUM_TILES = ord("Z") + 1
SCREEN_W, SCREEN_H = 20, 18
MAP_W = 32  # a BG map row; the screens are stored as 32 x 18 cells

# Rotation 0 of each kind (dx, dy in its box) and the box it turns in (O does not turn).
_SPAWN_SHAPES = {
    "I": (4, ((0, 1), (1, 1), (2, 1), (3, 1))),
    "O": (0, ((1, 0), (2, 0), (1, 1), (2, 1))),
    "T": (3, ((1, 0), (0, 1), (1, 1), (2, 1))),
    "S": (3, ((1, 0), (2, 0), (0, 1), (1, 1))),
    "Z": (3, ((0, 0), (1, 0), (1, 1), (2, 1))),
    "J": (3, ((0, 0), (0, 1), (1, 1), (2, 1))),
    "L": (3, ((2, 0), (0, 1), (1, 1), (2, 1))),
}

_INNER = (  # the 6x6 inside of each kind's block (a colour-3 border goes around it)
    ["111111"] * 6,
    ["222222"] * 6,
    ["111111", "111111", "113311", "113311", "111111", "111111"],
    ["121212", "212121"] * 3,
    ["112222", "122222", "222222", "222222", "222222", "222222"],
    ["111111", "222222"] * 3,
    ["121212"] * 6,
)
_EMPTY = ["00000000"] * 3 + ["00010000"] + ["00000000"] * 4
_WALL = ["22222223"] * 3 + ["33333333"] + ["22232222"] * 3 + ["33333333"]


def _turn(box: int, cells: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """``cells`` turned a quarter clockwise in a ``box`` x ``box`` square (y down)."""
    if box == 0:
        return cells
    return tuple(sorted(((box - 1 - y, x) for x, y in cells), key=lambda c: (c[1], c[0])))


@functools.cache
def piece_cells() -> tuple[tuple[tuple[tuple[int, int], ...], ...], ...]:
    """``[kind][rotation]``: the four (dx, dy) of the piece in its 4x4 box."""
    out = []
    for name in L.KIND_NAMES:
        box, cells = _SPAWN_SHAPES[name]
        rotations = [tuple(sorted(cells, key=lambda c: (c[1], c[0])))]
        for _ in range(3):
            rotations.append(_turn(box, rotations[-1]))
        out.append(tuple(rotations))
    return tuple(out)


def piece_table() -> bytes:
    """The ROM's PieceCells: 8 bytes (dx, dy x 4) at (kind * 4 + rotation) * 8."""
    return bytes(v for kind in piece_cells() for rot in kind for cell in rot for v in cell)


def _block(kind: int) -> list[str]:
    return ["33333333"] + ["3" + row + "3" for row in _INNER[kind]] + ["33333333"]


@functools.cache
def tile_data() -> bytes:
    """Tiles 0..'Z' (16 bytes each) for $8000."""
    tiles = [bytes(16)] * NUM_TILES
    tiles[EMPTY] = tile_bytes(_EMPTY)
    for kind in range(L.NUM_KINDS):
        tiles[1 + kind] = tile_bytes(_block(kind))
    tiles[WALL] = tile_bytes(_WALL)
    for ch in FONT_5X7:
        tiles[ord(ch)] = glyph_tile(ch)
    return b"".join(tiles)


def _screen(texts: dict[tuple[int, int], str]) -> list[list[int]]:
    """A blank 32 x 18 map with ``texts`` at their (col, row)."""
    cells = [[BLANK] * MAP_W for _ in range(SCREEN_H)]
    for (col, row), text in texts.items():
        for k, ch in enumerate(text):
            cells[row][col + k] = ord(ch)
    return cells


def _flat(cells: list[list[int]]) -> bytes:
    return bytes(v for row in cells for v in row)


@functools.cache
def title_map() -> bytes:
    """The title screen's 32 x 18 BG cells."""
    cells = _screen({
        (7, 4): "BLOCKS",
        (4, 9): "PRESS START",
        (2, 13): "LEFT RIGHT  MOVE",
        (2, 14): "A B       ROTATE",
        (2, 15): "DOWN        DROP",
    })  # fmt: skip
    for col in range(SCREEN_W):
        cells[0][col] = cells[SCREEN_H - 1][col] = WALL
    return _flat(cells)


@functools.cache
def play_map() -> bytes:
    """The play screen's 32 x 18 BG cells: the empty well, its walls and the HUD's labels."""
    cells = _screen({
        (L.HUD_COL, L.SCORE_ROW - 1): "SCORE",
        (L.HUD_COL, L.LINES_ROW - 1): "LINES",
        (L.HUD_COL, L.LEVEL_ROW - 1): "LEVEL",
        (L.HUD_COL, L.NEXT_ROW - 1): "NEXT",
    })  # fmt: skip
    for row in range(L.WELL_ROW, L.WELL_ROW + L.WELL_H):
        cells[row][L.WELL_COL - 1] = cells[row][L.WELL_COL + L.WELL_W] = WALL
        for col in range(L.WELL_COL, L.WELL_COL + L.WELL_W):
            cells[row][col] = EMPTY
    for col in range(L.WELL_COL - 1, L.WELL_COL + L.WELL_W + 1):
        cells[L.WELL_ROW + L.WELL_H][col] = WALL
    return _flat(cells)


def text(s: str) -> bytes:
    """Tile ids of ``s`` (font characters and spaces)."""
    return s.encode("ascii")
