"""Blocks: a falling-block puzzle (a well 10 cells wide, 16 tall), bundled as an RL test game.

This module is its documented memory layout and rules; :mod:`.art` draws its tiles, screens
and the pieces' rotation tables, :mod:`.source` and :mod:`.play` are its SM83 source,
:mod:`.rom` builds the ROM and its ``.sym`` file and :mod:`.starts` makes its start states.
32 KiB, no mapper.

The game: the title waits for START (the press edge). START seeds the xorshift16 generator
from DIV (``wRng`` = DIV, high byte ``wFrame`` low byte | 1: never 0), so the frame START is
pressed on picks the game; the board and the counters are cleared, the next piece is drawn,
then the first piece spawns and ``wMode`` = MODE_PLAY.

Pieces: I, O, T, S, Z, J, L (``wPieceKind`` 0..6), four cells each, four rotations each
(``wPieceRot`` 0..3, clockwise; :func:`gbxcule.games.blocks.art.piece_cells` is the ROM's
table: (dx, dy) of each cell in the piece's 4x4 box). ``wPieceX`` is the box's left column
(two's complement: -2..8), ``wPieceY`` its top row (0..14); row 0 is the top of the well. A
new piece takes ``wNextKind`` and the generator draws the next (low byte & 7 of a value,
drawn again while it is 7); it spawns in rotation 0 at column SPAWN_X, row 0. If it
overlaps the stack there the game is over.

One play frame, in this order (presses are the joypad's press edges; "repeat" means the
button acts on its press and then every N frames while held):

1. A: rotate clockwise, then B: counter-clockwise (each on its press). A rotation that
   would overlap the stack or leave the well does nothing (no wall kicks).
2. RIGHT, then LEFT: move one column (repeat 8). Blocked: nothing.
3. DOWN: move one row down (repeat 2; held on after a lock, it goes on with the next
   piece); a successful one restarts the gravity count.
4. Gravity: ``wGravity`` counts frames; when it reaches the period (30 - 2 * ``wLevel``, at
   least 6) it restarts and the piece moves one row down.
5. A piece that must move down (3 or 4) and cannot locks: its cells get kind + 1 in
   ``wBoard``; ``wPieces`` + 1; full rows are removed and the rows above fall;
   ``wLastClear`` = rows removed; ``wScore`` += 0, 1, 3, 5 or 8 for 0..4 rows; ``wLines`` +=
   rows; ``wLevel`` = ``wLines`` / 10 (at most 255); ``wHeight`` = rows from the bottom to
   the highest filled cell (0..16); the next piece spawns (the rest of the frame is skipped).

Soft drop scores nothing; there is no hard drop. ``wScore``, ``wLines`` and ``wPieces`` are
16-bit little-endian binary and stop at 65535. Game over: ``wMode`` = MODE_OVER for
OVER_FRAMES frames (input ignored, "GAME OVER" beside the well), then the title.

Per frame (the main loop HALTs until the VBlank interrupt sets a flag): in VBlank the OAM
DMA from ``wShadowOam`` (an HRAM routine), in play and game over four rows of the board
(rows 0-3, 4-7, 8-11, 12-15 in turn, so the screen shows the board within 4 frames) and the
HUD's digits; then the joypad is read once, the mode's tick runs and ``wFrame`` counts.

Screen: the well is BG columns 1..10, rows 1..16 (board row r, column c is BG tile
(c + 1, r + 1), tile id = the cell's value: 0 the empty cell, 1..7 a block), walls at columns
0 and 11 and a floor at row 17. The falling piece (OAM 0-3) and the next piece (OAM 4-7) are
sprites. The HUD on the right: SCORE, LINES, LEVEL and NEXT.
"""

from __future__ import annotations

TITLE = "BLOCKS"
WELL_W, WELL_H = 10, 16
CELLS = WELL_W * WELL_H
NUM_KINDS = 7
KIND_NAMES = "IOTSZJL"
SPAWN_X, SPAWN_Y = 3, 0
MOVE_REPEAT = 8  # frames between moves while LEFT / RIGHT is held
DROP_REPEAT = 2  # frames between rows while DOWN is held
GRAVITY_FRAMES = 30  # at level 0
GRAVITY_STEP = 2  # fewer frames a level
GRAVITY_MIN = 6
LINES_PER_LEVEL = 10
LINE_SCORES = (0, 1, 3, 5, 8)  # by rows removed at once
OVER_FRAMES = 120

# ---- modes (W_MODE) ----
MODE_TITLE, MODE_PLAY, MODE_OVER = 0, 1, 2

# ---- WRAM (the .sym file names each) ----
W_SHADOW_OAM = 0xC000  # 160 bytes, OAM DMA source
W_MODE = 0xC100
W_SCORE = 0xC101  # 2 bytes
W_LINES = 0xC103  # 2 bytes, rows removed this game
W_LEVEL = 0xC105
W_PIECES = 0xC106  # 2 bytes, pieces locked this game
W_PIECE_KIND = 0xC108  # 0..6: I O T S Z J L
W_PIECE_ROT = 0xC109  # 0..3
W_PIECE_X = 0xC10A  # signed: the 4x4 box's left column
W_PIECE_Y = 0xC10B  # the 4x4 box's top row
W_NEXT_KIND = 0xC10C
W_HEIGHT = 0xC10D  # 0..16
W_LAST_CLEAR = 0xC10E  # rows removed by the last lock, 0..4
W_FRAME = 0xC10F  # 2 bytes, frames since power-on
W_RNG = 0xC111  # 2 bytes, xorshift16 state
W_JOYPAD = 0xC113  # held ("buttons" codec bit order: right left up down A B select start)
W_JOY_NEW = 0xC114  # pressed this frame
W_VBLANK_FLAG = 0xC115
W_TIMER = 0xC116  # game-over countdown
W_GRAVITY = 0xC117  # frames since the piece last moved down
W_REPEAT_RIGHT = 0xC118  # frames to the next repeat of a held button
W_REPEAT_LEFT = 0xC119
W_REPEAT_DOWN = 0xC11A
W_DRAW_ROW = 0xC11B  # 0, 4, 8 or 12: the first board row VBlank draws this frame
W_TEMP = 0xC11C
W_HUD_TEXT = 0xC120  # 15 bytes: score, lines, level as 5 digit tiles each
W_BOARD = 0xC200  # 160 bytes, row-major from the top row: 0 empty, kind + 1 filled
STATE_BYTES = (W_MODE, W_HUD_TEXT)  # the game's variables (the HUD text follows them)
H_DMA = 0xFF80
HUD_DIGITS = 5
DRAW_ROWS = 4  # board rows drawn a frame (WELL_H / DRAW_ROWS frames show the whole board)

# ---- screen ----
WELL_COL, WELL_ROW = 1, 1  # BG cell of board cell (0, 0)
HUD_COL = 13  # the HUD's labels
SCORE_ROW, LINES_ROW, LEVEL_ROW, NEXT_ROW = 2, 5, 8, 11  # value rows (labels one above)
HUD_VALUE_COL = 14
LEVEL_DIGITS = 3
NEXT_COL = 14  # BG cell of the next piece's box
OVER_ROW = 15  # "GAME" at OVER_ROW, "OVER" below, at HUD_VALUE_COL
LCDC_PLAY = 0x93  # LCD, tiles $8000, BG $9800, OBJ 8x8, BG
LCDC_TITLE = 0x91  # LCD, tiles $8000, BG $9800, BG
BGP = OBP0 = 0xE4

# ---- the "buttons" codec's bits ----
BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN = 0x01, 0x02, 0x04, 0x08
BUTTON_A, BUTTON_B, BUTTON_SELECT, BUTTON_START = 0x10, 0x20, 0x40, 0x80


def gravity_frames(level: int) -> int:
    """Frames between gravity rows at ``level``."""
    return max(GRAVITY_FRAMES - GRAVITY_STEP * level, GRAVITY_MIN)


def bg_address(col: int, row: int) -> int:
    """VRAM address of BG map cell (``col``, ``row``) ($9800 map)."""
    return 0x9800 + 32 * row + col
