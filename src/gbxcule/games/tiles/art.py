"""Tiles' graphics: the 8x8 cells loaded at $8000, the cell map of each board tile, and the
title and play screens' BG maps (both loaded once at start-up; the mode picks one).

A board tile is 32x32 pixels (4x4 cells): a dark outline, a fill pattern of its own (15
patterns of different shades, stripes, checks and rings, so that tiles stay apart on a
screen downsampled to 80x72) and its number in double-size digits on a white plate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from gbxcule.asm.tiles import FONT_5X7, glyph_tile, tile_bytes
from gbxcule.games.tiles import layout as L

TILE_PX = 8 * L.TILE_CELLS  # 32: a board tile's side in pixels

# Cells before the board tiles' cells, in this order.
BLANK = 0
TEXT_CHARS = "0123456789ADEHILMOPRSTUVY"
CHAR_CELL = {ch: 1 + i for i, ch in enumerate(TEXT_CHARS)} | {" ": BLANK}
CURSOR = 1 + len(TEXT_CHARS)
BAR_LEFT = CURSOR + 1  # the board's frame, left of column 0
BAR_RIGHT = CURSOR + 2
FIRST_BOARD_CELL = CURSOR + 3

_CURSOR_ROWS = "00000000 00300000 00330000 00333000 00333300 00333000 00330000 00300000"
_BAR_LEFT_ROWS = " ".join(["00000033"] * 8)
_BAR_RIGHT_ROWS = " ".join(["33000000"] * 8)


def _fill(pattern: int) -> Callable[[int, int], int]:
    """Colour at pixel (x, y) of board tile ``pattern``'s fill (1..15)."""
    fills: dict[int, Callable[[int, int], int]] = {
        1: lambda x, y: 1,
        2: lambda x, y: 2,
        3: lambda x, y: (1, 3)[y // 4 % 2],  # horizontal bands
        4: lambda x, y: (1, 3)[x // 4 % 2],  # vertical bands
        5: lambda x, y: (0, 2)[(x // 4 + y // 4) % 2],  # checks
        6: lambda x, y: (0, 3)[(x + y) // 4 % 2],  # diagonal /
        7: lambda x, y: (1, 2)[(x - y + 32) // 4 % 2],  # diagonal \
        8: lambda x, y: 3,
        9: lambda x, y: 3 if x % 4 < 2 and y % 4 < 2 else 1,  # dots
        10: lambda x, y: (0, 2)[y // 4 % 2],
        11: lambda x, y: (0, 2)[x // 4 % 2],
        12: lambda x, y: (1, 3)[(x // 4 + y // 4) % 2],
        13: lambda x, y: (0, 3)[(x - y + 32) // 4 % 2],
        14: lambda x, y: 3 if x % 8 < 2 or y % 8 < 2 else 1,  # grid
        15: lambda x, y: (0, 2)[max(abs(2 * x - 31), abs(2 * y - 31)) // 6 % 2],  # rings
    }
    return fills[pattern]


def _number_ink(number: int) -> list[str]:
    """Rows of ``number``'s digits ('#' ink), each glyph trimmed to its ink columns, one
    column apart."""
    glyphs = []
    for ch in str(number):
        rows = FONT_5X7[ch].split()
        cols = [c for c in range(5) if any(r[c] == "#" for r in rows)]
        glyphs.append(["".join(r[c] for c in range(cols[0], cols[-1] + 1)) for r in rows])
    return [".".join(g[y] for g in glyphs) for y in range(7)]


def board_tile_image(number: int) -> list[list[int]]:
    """Board tile ``number`` (1..15) as 32 rows of 32 colours."""
    fill = _fill(number)
    img = [[fill(x, y) for x in range(TILE_PX)] for y in range(TILE_PX)]
    ink = _number_ink(number)
    w, h = 2 * len(ink[0]), 2 * len(ink)
    x0, y0 = (TILE_PX - w) // 2, (TILE_PX - h) // 2
    for y in range(y0 - 2, y0 + h + 2):  # the plate: white, a dark edge, one pixel margin
        for x in range(x0 - 2, x0 + w + 2):
            edge = y in (y0 - 2, y0 + h + 1) or x in (x0 - 2, x0 + w + 1)
            img[y][x] = 3 if edge else 0
    for y in range(h):
        for x in range(w):
            if ink[y // 2][x // 2] == "#":
                img[y0 + y][x0 + x] = 3
    last = TILE_PX - 1
    for y in range(TILE_PX):
        for x in range(TILE_PX):
            if x in (0, last) or y in (0, last):
                corner = x in (0, last) and y in (0, last)
                img[y][x] = 0 if corner else 3
    return img


def _cell_of(img: list[list[int]], cx: int, cy: int) -> bytes:
    rows = ["".join(str(img[8 * cy + y][8 * cx + x]) for x in range(8)) for y in range(8)]
    return tile_bytes(rows)


@functools.cache
def _cells_and_map() -> tuple[bytes, bytes]:
    cells = [bytes(16)] + [glyph_tile(ch) for ch in TEXT_CHARS]
    cells += [tile_bytes(r.split()) for r in (_CURSOR_ROWS, _BAR_LEFT_ROWS, _BAR_RIGHT_ROWS)]
    index = {c: i for i, c in enumerate(cells)}
    cell_map = bytearray(16 * 16)  # tile 0 (the gap): all blank
    for number in range(1, 16):
        img = board_tile_image(number)
        for cy in range(L.TILE_CELLS):
            for cx in range(L.TILE_CELLS):
                cell = _cell_of(img, cx, cy)
                if cell not in index:
                    index[cell] = len(cells)
                    cells.append(cell)
                cell_map[16 * number + 4 * cy + cx] = index[cell]
    if len(cells) > 256:
        raise ValueError(f"tiles needs {len(cells)} cells; $8000-$8FFF holds 256")
    return b"".join(cells), bytes(cell_map)


def cell_data() -> bytes:
    """Every cell's 16 bytes, loaded at $8000."""
    return _cells_and_map()[0]


def cell_map() -> bytes:
    """256 bytes: cell ids of board tile t (0 the gap) at 16 t + 4 row + column."""
    return _cells_and_map()[1]


def _text(screen: bytearray, row: int, col: int, text: str) -> None:
    for i, ch in enumerate(text):
        screen[32 * row + col + i] = CHAR_CELL[ch]


def _board_tile(screen: bytearray, row: int, col: int, number: int) -> None:
    cmap = cell_map()
    for cy in range(L.TILE_CELLS):
        for cx in range(L.TILE_CELLS):
            screen[32 * (row + cy) + col + cx] = cmap[16 * number + 4 * cy + cx]


@functools.cache
def play_screen() -> bytes:
    """The play screen's first 18 rows of the map at $9800: the HUD's words, the frame,
    a solved board (redrawn from ``wBoard`` a row a frame)."""
    screen = bytearray(32 * L.SCREEN_ROWS)
    _text(screen, 0, L.HUD_MOVES_COL - 6, "MOVES")
    _text(screen, 0, L.HUD_MOVES_COL, "0000")
    _text(screen, L.SCREEN_ROWS - 1, L.HUD_SOLVED_COL - 7, "SOLVED")
    _text(screen, L.SCREEN_ROWS - 1, L.HUD_SOLVED_COL, "0000")
    for y in range(16):
        screen[32 * (L.BOARD_ROW + y) + L.BOARD_COL - 1] = BAR_LEFT
        screen[32 * (L.BOARD_ROW + y) + L.BOARD_COL + 16] = BAR_RIGHT
    for i in range(16):
        number = (i + 1) % 16
        _board_tile(screen, L.BOARD_ROW + 4 * (i // 4), L.BOARD_COL + 4 * (i % 4), number)
    return bytes(screen)


@functools.cache
def title_screen() -> bytes:
    """The title screen's first 18 rows of the map at $9C00 (the cursor is drawn by the game)."""
    screen = bytearray(32 * L.SCREEN_ROWS)
    _text(screen, 2, 7, "TILES")
    for k in range(3):
        _board_tile(screen, 4, 4 + 4 * k, k + 1)
    for k, name in enumerate(L.DIFFICULTY_NAMES):
        _text(screen, L.MENU_ROW + 2 * k, L.MENU_COL, name.strip())
    _text(screen, 16, 4, "PRESS START")
    return bytes(screen)


def difficulty_names() -> bytes:
    """The HUD's difficulty words, 6 cells each (EASY, MEDIUM, HARD)."""
    return bytes(CHAR_CELL[ch] for name in L.DIFFICULTY_NAMES for ch in name)
