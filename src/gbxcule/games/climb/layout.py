"""Climb: a small vertical platformer, bundled as an RL test game.

This module is its documented memory layout and rules; :mod:`.art` draws its tiles,
:mod:`.source` and :mod:`.play` are its SM83 source and :mod:`.rom` builds the ROM and its
``.sym`` file. 32 KiB, no mapper.

The game: a title screen waits for START (the press edge). START seeds the xorshift16
generator from DIV (low byte) and the frame counter (high byte, made odd), so the frame START
is pressed on picks the level; play begins. The player (an 8x8 sprite) stands on a
full-width floor (platform 0) at the bottom of a 20-cell-wide screen. Above it, platforms of
3-6 cells lie on tile rows 3 cells (24 pixels) apart: platform k+1 starts START_OFFSETS
(-5..+5) cells from platform k's start (platform 1 from column FIRST_ANCHOR), clamped to
the screen, so the gap between neighbours is at most 2 cells. A jump rises 29 pixels and
reaches the next platform's height again after 31 frames (31 pixels sideways; 43 frames
back to its own height), so the next platform is always reachable. Platforms are made by
the generator as the view climbs; about half hold a coin in the cell above them.

Rules of one play frame (integer physics; vertical speeds in 1/16 pixel a frame):

1. RIGHT held: X + 1 (up to 152); then LEFT held: X - 1 (down to 0).
2. Standing: A pressed this frame (the press edge) jumps: speed -JUMP_SPEED (up). Else, when
   no platform is under the player any more, the player falls from speed 0. A pressed in
   the air does nothing (no buffered jump).
3. In the air: speed + GRAVITY (at most MAX_FALL); the position moves by the speed
   (1/16-pixel remainder kept in ``wPlayerYSub``). Moving down is done pixel by pixel: the
   player lands on the first platform top the feet reach. Platforms are one-way: rising
   passes through them. "On a platform": the player's feet (Y + 8) are on the top line of a
   platform's tile row, that line is on screen (< 144), and the player's centre column
   ((X + 4) / 8) is one of the platform's cells.
4. Landing sets ``wHeight`` to the platform's index (the floor is 0, the platform above it 1,
   ...; it keeps that value in the air); each height above ``wBestHeight`` raises it by one
   and the score by HEIGHT_POINTS. A player whose Y reaches 144 (below the screen) ends the
   game: ``wMode`` = MODE_OVER, "GAME OVER" for OVER_FRAMES frames, then the title.
5. The view scrolls up when the player is above SCROLL_LINE (the top third): the camera
   rises by the difference and the player stays at SCROLL_LINE; it never scrolls down.
   A coin is taken when the player's centre pixel is in its cell: the score + COIN_POINTS.

Score = wBestHeight x HEIGHT_POINTS + coins taken, 16-bit binary in ``wScore`` (the HUD shows
``wScoreBcd``, the score mod 10000 in BCD, as four digit sprites at the top left).

Coordinates: ``wPlayerX``/``wPlayerY`` are the sprite's top-left pixel on the screen
(screen-relative). ``wCameraY`` is SCY: the BG pixel row at the top of the screen (it counts
down as the view climbs, mod 256). ``wClimb`` counts the pixels the view has risen this game.

The BG map's 32 rows are a ring: ``wRows`` holds one 8-byte entry per BG tile row (start
column, length (0: no platform), coin column ($FF: none), platform index (2 bytes), 3 spare).
A platform is made when its row comes within LOOKAHEAD_ROWS rows above the screen's top
row; that row and the two below it are then redrawn, one a frame in VBlank. A coin is drawn
in the row above its platform.

Per frame (the main loop HALTs until the VBlank interrupt sets a flag): OAM DMA from the
shadow OAM (an HRAM routine), SCY, a taken coin's cell cleared, one pending BG row drawn; the
joypad read once; the mode's tick (title, play, game over); the shadow OAM built; the frame
counted.
"""

from __future__ import annotations

TITLE = "CLIMB"

# ---- modes (W_MODE) ----
MODE_TITLE, MODE_PLAY, MODE_OVER = 0, 1, 2

# ---- rules ----
SCREEN_COLS = 20
SCREEN_H = 144
ROW_SPACING = 3  # tile rows between platforms
FLOOR_ROW = 17  # BG row of the floor at the start (the screen's bottom row)
START_X, START_Y = 76, FLOOR_ROW * 8 - 8  # standing on the floor
MAX_X = SCREEN_COLS * 8 - 8
SCROLL_LINE = 48  # the view scrolls while the player is above this line
JUMP_SPEED = 44  # 1/16 pixel a frame: a jump rises 29 pixels and lasts 43 frames
GRAVITY = 2
MAX_FALL = 64  # 4 pixels a frame
MIN_LEN, LEN_CHOICES = 3, 4  # platform lengths 3..6 cells
FIRST_ANCHOR = 8  # the start column platform 1's is drawn around
LOOKAHEAD_ROWS = 8
INITIAL_PLATFORMS = 8  # made at the start: rows 14, 11, ..., 25 (up to 7 rows above the screen)
HEIGHT_POINTS = 10
COIN_POINTS = 1
OVER_FRAMES = 120
NUM_ROWS = 32  # the BG map's ring of rows
ROW_ENTRY = 8  # bytes per W_ROWS entry
NO_COIN = 0xFF
# platform k+1's start column - platform k's, by the generator's low 4 bits
START_OFFSETS = (-5, -4, -3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 4, 5)

# ---- WRAM (the .sym file names each) ----
W_SHADOW_OAM = 0xC000  # 160 bytes, OAM DMA source
W_MODE = 0xC100  # MODE_TITLE / MODE_PLAY / MODE_OVER
W_PLAYER_X = 0xC101  # screen X of the sprite's left column, 0..152
W_PLAYER_Y = 0xC102  # screen Y of the sprite's top row (48..147 in play)
W_PLAYER_Y_SUB = 0xC103  # 1/16 pixels below wPlayerY, 0..15
W_VEL_Y = 0xC104  # signed, 1/16 pixel a frame, negative = up
W_ON_GROUND = 0xC105  # 1 standing on a platform, 0 in the air
W_CAMERA_Y = 0xC106  # SCY
W_HEIGHT = 0xC107  # 2 bytes: index of the platform last landed on (floor 0)
W_BEST_HEIGHT = 0xC109  # 2 bytes: the highest wHeight this game
W_SCORE = 0xC10B  # 2 bytes binary: wBestHeight * 10 + coins
W_SCORE_BCD = 0xC10D  # 2 bytes BCD, the score mod 10000 (low byte first)
W_COINS = 0xC10F  # 2 bytes: coins taken this game
W_FRAME = 0xC111  # 2 bytes: frames since power-on
W_RNG = 0xC113  # 2 bytes: xorshift16 state, seeded at START
W_JOYPAD = 0xC115  # held ("buttons" codec bit order: right left up down A B select start)
W_JOY_NEW = 0xC116  # pressed this frame
W_VBLANK_FLAG = 0xC117
W_TIMER = 0xC118  # game-over countdown
W_NEXT_ROW = 0xC119  # BG row of the next platform to make
W_NEXT_INDEX = 0xC11A  # 2 bytes: its index
W_GEN_COL = 0xC11C  # start column of the last platform made
W_DRAW_ROW = 0xC11D  # the next BG row to redraw
W_DRAW_LEFT = 0xC11E  # rows left to redraw (one a frame)
W_COIN_ERASE = 0xC11F  # 2 bytes: BG map address of a taken coin to clear (high 0: none)
W_CLIMB = 0xC121  # 2 bytes: pixels the view has risen this game
W_ROWS = 0xC200  # NUM_ROWS x ROW_ENTRY, see the module docstring
STATE_BYTES = (W_MODE, W_ROWS + NUM_ROWS * ROW_ENTRY)
H_DMA = 0xFF80

# ---- screen ----
LCDC_ON = 0x93  # LCD, tiles $8000, BG map $9800, OBJ 8x8, OBJ, BG
BGP, OBP0 = 0xE4, 0xE4
HUD_X, HUD_Y = 4, 4  # screen spot of the first score digit
OVER_TEXT_X, OVER_TEXT_Y = 44, 64

# ---- the "buttons" codec's bits ----
BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN = 0x01, 0x02, 0x04, 0x08
BUTTON_A, BUTTON_B, BUTTON_SELECT, BUTTON_START = 0x10, 0x20, 0x40, 0x80
