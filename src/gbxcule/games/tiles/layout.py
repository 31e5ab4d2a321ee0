"""Tiles: the 4x4 sliding-tile puzzle (15 tiles and a gap), bundled as an RL test game.

This module is its documented memory layout and rules; :mod:`.art` draws its cells and
screens, :mod:`.source` is its SM83 source, :mod:`.rules` an exact Python model of the
shuffle and the moves, :mod:`.rom` builds the ROM and its ``.sym`` file and :mod:`.starts`
makes its start states. 32 KiB, no mapper.

The game: the title shows a menu, EASY / MEDIUM / HARD (``wDifficulty`` 0..2, EASY at
power-on), moved by UP / DOWN (the press edge; it stops at the ends; of several presses on
one frame START counts first, then UP). START (the press edge) seeds the xorshift16
generator from DIV (``wRng`` = DIV, high byte DIV xor $5A: never 0), so the frame START is
pressed on picks the puzzle, and play begins: ``wMode`` = MODE_PLAY.

A puzzle: the solved board (tiles 1..15 row-major, the gap (0) in the bottom-right cell) is
shuffled by ``wShuffle`` random gap moves, SHUFFLE_MOVES[difficulty] = 4, 12 or 40. Each
shuffle move takes the next generator value's low byte & 3 as a direction (0 right, 1
left, 2 up, 3 down); a direction that would undo the previous shuffle move or that runs
into the wall is skipped (the next value is drawn). So an EASY board is at most 4 moves from
solved. A shuffle that leaves the board solved is done again (from the solved board, the
generator running on).

Rules of one play frame (a frame's D-pad press edges; of several pressed on one frame only
the first of right, left, up, down counts; A, B, SELECT and START do nothing in play):

1. A direction pressed: ``wTries`` + 1. It moves the gap one cell that way: the tile there
   slides into the gap. Into the wall nothing else changes.
2. A move: ``wMoves`` + 1 (and ``wMovesBcd``); ``wInPlace`` = the tiles 1..15 in their
   solved cell (cell k holds tile k + 1); ``wSolved`` = 1 when all 15 are.
3. Solved: ``wSolvedCount`` + 1 (and ``wSolvedBcd``), ``wMode`` = MODE_SOLVED: the board
   stays solved and input is ignored for SOLVED_FRAMES frames, then a new puzzle of the
   same difficulty (``wSolved`` back to 0) and MODE_PLAY again.

``wMoves``, ``wTries`` and ``wSolvedCount`` count from START over every puzzle of the game
(16-bit, little-endian, wrapping); the game never returns to the title.

Per frame (the main loop HALTs until the VBlank interrupt sets a flag): in VBlank, LCDC
picks the screen (the title's map at $9C00, play's at $9800); on the title the menu cursor,
in play one row of the board (row ``wFrame`` & 3, so the screen shows a move within 4
frames), the moves and solved counters (BCD) and the difficulty's name; then the joypad is
read once, the mode's tick runs and ``wFrame`` counts the frame.

Screen: each board tile is 4x4 cells (32x32 pixels): its own fill pattern and its number;
the board fills columns 2..17, rows 1..16; row 0 shows MOVES and the difficulty, row 17
SOLVED. No sprites.
"""

from __future__ import annotations

TITLE = "TILES"
SIDE = 4  # cells a board row
CELLS = SIDE * SIDE
SOLVED_BOARD = tuple(range(1, CELLS)) + (0,)
SHUFFLE_MOVES = (4, 12, 40)  # by difficulty
DIFFICULTY_NAMES = ("EASY  ", "MEDIUM", "HARD  ")  # 6 cells each on the HUD
SOLVED_FRAMES = 60

# ---- modes (W_MODE) ----
MODE_TITLE, MODE_PLAY, MODE_SOLVED = 0, 1, 2
# ---- directions (a shuffle move, a press: the joypad bit of the same number) ----
DIR_RIGHT, DIR_LEFT, DIR_UP, DIR_DOWN = 0, 1, 2, 3

# ---- WRAM (the .sym file names each) ----
W_MODE = 0xC000  # MODE_TITLE, MODE_PLAY, MODE_SOLVED
W_DIFFICULTY = 0xC001  # 0 EASY, 1 MEDIUM, 2 HARD
W_SHUFFLE = 0xC002  # gap moves of this difficulty's shuffle (4, 12, 40)
W_GAP_X = 0xC003  # the gap's column 0..3
W_GAP_Y = 0xC004  # the gap's row 0..3
W_IN_PLACE = 0xC005  # tiles 1..15 in their solved cell (0..15)
W_SOLVED = 0xC006  # 1 when all 15 are in place
W_TIMER = 0xC007  # frames of the solved pause left
W_MOVES = 0xC008  # 2 bytes: moves made since START
W_TRIES = 0xC00A  # 2 bytes: direction presses in play since START (moves and walls)
W_SOLVED_COUNT = 0xC00C  # 2 bytes: puzzles solved since START
W_MOVES_BCD = 0xC00E  # 2 bytes BCD (low byte first): wMoves mod 10000, shown on the HUD
W_SOLVED_BCD = 0xC010  # 2 bytes BCD: wSolvedCount mod 10000
W_FRAME = 0xC012  # 2 bytes: frames since power-on
W_RNG = 0xC014  # 2 bytes: xorshift16 state, seeded from DIV at START
W_JOYPAD = 0xC016  # held ("buttons" codec bit order: right left up down A B select start)
W_JOY_NEW = 0xC017  # pressed this frame
W_VBLANK_FLAG = 0xC018
W_SHUFFLE_LEFT = 0xC019  # the shuffle's work: moves still to make
W_SHUFFLE_PREV = 0xC01A  # its last move's direction ($FF: none yet)
W_BOARD = 0xC020  # 16 bytes: the board row-major, tiles 1..15, 0 the gap
STATE_BYTES = (W_MODE, W_BOARD + CELLS)  # [lo, hi) of the whole game state

# ---- screen ----
TILE_CELLS = 4  # a board tile is 4x4 cells
SCREEN_ROWS = 18
BOARD_ROW, BOARD_COL = 1, 2  # the board's top-left cell on the play map
BOARD_MAP = 0x9800 + 32 * BOARD_ROW + BOARD_COL
HUD_MOVES_COL = 7  # row 0: "MOVES" then 4 digits
HUD_DIFFICULTY_COL = 13  # row 0: the difficulty's name
HUD_SOLVED_COL = 8  # row 17: "SOLVED" then 4 digits
MENU_ROW, MENU_COL = 9, 7  # the title's EASY; MEDIUM and HARD 2 and 4 rows lower
CURSOR_COL = 5
LCDC_PLAY = 0x91  # LCD, cells at $8000, BG map $9800, BG
LCDC_TITLE = 0x99  # the same with BG map $9C00
BGP = 0xE4

# ---- the "buttons" codec's bits ----
BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN = 0x01, 0x02, 0x04, 0x08
BUTTON_A, BUTTON_B, BUTTON_SELECT, BUTTON_START = 0x10, 0x20, 0x40, 0x80
DIR_BUTTONS = (BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN)  # by direction
