"""Quest: the second bundled game, shaped like the games users bring (Pokémon Red above all).

This module is its documented memory layout, cartridge map and rules;
:mod:`gbxcule.games.quest.art` draws its tiles and maps, :mod:`.source`, :mod:`.play` and
:mod:`.music` are its SM83 source and :mod:`.rom` builds the ROM and its ``.sym`` file.

The game: a title screen shows the high score and waits for START. START seeds the random
generator from DIV (the player's timing) and starts play on map 0 with 3 lives. The player
walks a grid of 8x8 cells on four maps of 32x32 tiles (256x256 pixels: larger than the
screen; the camera follows the player through SCX/SCY, clamped to the map), one cell in 8
frames (4 with B held), Pokémon's way: a step once begun ends on the next cell. Trees,
rocks, water and walls block; doors warp to another map. Each map has 10 slimes that
wander the grid (turning at random, bouncing off walls) and 6 gems. A gem scores 10
points and comes back at a random free cell some frames later; the first visit of each
8x8-cell region of a map scores 1. A slime touching the player costs a life (then 120
frames of blinking safety); the last life lost is game over: "GAME OVER" for 180 frames,
the high score saved to battery RAM if beaten, then the title.

Per frame (the main loop HALTs until the VBlank interrupt sets a flag): OAM DMA from the
shadow OAM (an HRAM routine), SCX/SCY, the HUD's digits, the music engine (it reads NR52
and writes NR10-NR52 every frame, from its own ROM bank), the joypad, then the mode's
tick (title, play, game over). The HUD is the window layer on lines 128-143; a STAT
interrupt at LYC = 128 turns sprites off so they never cover it, the VBlank interrupt
turns them back on.

Cartridge: MBC1 + RAM + battery, 8 ROM banks, one 8 KiB RAM bank. Bank 0 holds the code,
bank 1 the graphics and screens, banks 2-5 maps 0-3 (tiles, warps, spawns, name), bank 6
the music, bank 7 the text of the title's credits line.
"""

from __future__ import annotations

TITLE = "GBX QUEST"
ROM_BANKS = 8
RAM_BANKS = 1
CART_TYPE = "MBC1+RAM+BATTERY"
MAP_BANK0 = 2  # map m lives in bank MAP_BANK0 + m
MUSIC_BANK = 6
TEXT_BANK = 7
NUM_MAPS = 4
MAP_W = MAP_H = 32
NUM_ENEMIES = 10  # per map
NUM_GEMS = 6  # per map
START_MAP, START_X, START_Y = 0, 15, 15
START_LIVES = 3
GEM_POINTS = 0x10  # BCD
PLACE_POINTS = 0x01  # BCD
INVULN_FRAMES = 120
OVER_FRAMES = 180
GEM_RESPAWN_FRAMES = 200
STEP_FRAMES, RUN_STEP_FRAMES = 8, 4

# ---- modes (W_MODE) ----
MODE_TITLE, MODE_PLAY, MODE_OVER = 0, 1, 2

# ---- WRAM (the .sym file names each) ----
W_SHADOW_OAM = 0xC000  # 160 bytes, OAM DMA source
W_MODE = 0xC100
W_MAP = 0xC101  # 0..3
W_PLAYER_X = 0xC102  # cell 0..31
W_PLAYER_Y = 0xC103
W_PLAYER_PX = 0xC104  # pixel (8 * cell while standing)
W_PLAYER_PY = 0xC105
W_MOVE_DIR = 0xC106  # 0 right, 1 left, 2 up, 3 down (the last step's direction)
W_MOVE_LEFT = 0xC107  # frames left of the step under way (0: standing)
W_SCORE = 0xC108  # 2 bytes BCD, little-endian (C108: the low two digits), 0000..9999
W_HI_SCORE = 0xC10A  # 2 bytes BCD, as loaded from / saved to battery RAM
W_LIVES = 0xC10C
W_INVULN = 0xC10D  # frames of safety left
W_RNG = 0xC10E  # 2 bytes, xorshift16 state; seeded from DIV at START
W_FRAME = 0xC110  # 2 bytes, frames since power-on
W_JOYPAD = 0xC112  # held ("buttons" codec bit order: right left up down A B select start)
W_JOY_NEW = 0xC113  # pressed this frame
W_VBLANK_FLAG = 0xC114
W_TIMER = 0xC115  # game-over countdown
W_BANK = 0xC116  # the ROMX bank the game has mapped (the music restores it)
W_SCX = 0xC117
W_SCY = 0xC118
W_STEPS = 0xC119  # 2 bytes, cells walked this game
W_GEMS = 0xC11B  # 2 bytes, gems taken this game (binary)
W_SPEED = 0xC11D  # pixels a frame of the step under way
W_TEMP = 0xC11E
W_FLAGS = 0xC120  # 16 bytes, 128 event flags: flag k is bit k & 7 of byte k >> 3
W_ENEMIES = 0xC140  # NUM_ENEMIES x 8: px, py, dir, tile, speed mask, 0, 0, 0
W_GEMS_TABLE = 0xC190  # NUM_GEMS x 4: respawn countdown (0: on the map), x, y, 0
W_MUSIC = 0xC1C0  # row, tick, NR52 last read, notes started (2 bytes)
STATE_BYTES = (W_MODE, W_MUSIC + 5)
H_DMA = 0xFF80
ENEMY_SIZE = 8
GEM_SIZE = 4

# ---- event flags (W_FLAGS) ----
FLAG_PLACES = 0  # + map * 16 + (y // 8) * 4 + x // 8: an 8x8-cell region reached
FLAG_GEMS = 64  # + map * NUM_GEMS + slot: that gem slot taken at least once
FLAG_ENEMIES = 88  # + map * NUM_ENEMIES + slot: that slime met (it cost a life)
NUM_FLAGS = 128

# ---- battery RAM ----
S_MAGIC = 0xA000  # "QS" once initialised
S_HI_SCORE = 0xA002  # 2 bytes BCD
MAGIC = b"QS"

# ---- per-map tables at the start of each map bank ----
MAP_TILES = 0x4000  # 32 x 32 tile ids
MAP_WARPS = 0x4400  # up to 4 x (x, y, dest map, dest x, dest y), then $FF
MAP_ENEMIES = 0x4420  # NUM_ENEMIES x (x, y, dir, speed mask)
MAP_GEMS = 0x4450  # NUM_GEMS x (x, y)
MAP_NAME = 0x4460  # 8 ASCII characters

# ---- screen ----
HUD_LINE = 128  # WY; the LYC line of the sprites-off STAT interrupt
VIEW_H = 128  # lines of map above the HUD
CAMERA_X, CAMERA_Y = 76, 60  # the player's screen spot while the camera is not clamped
MAX_SCX, MAX_SCY = 256 - 160, 256 - VIEW_H
LCDC_PLAY = 0xF3  # LCD, window map $9C00, window, tiles $8000, BG $9800, OBJ, BG
LCDC_TITLE = 0x91  # LCD, tiles $8000, BG $9800, BG
BGP, OBP0, OBP1 = 0xE4, 0xD0, 0xE0
HUD_SCORE_COL, HUD_HI_COL, HUD_LIVES_COL = 4, 15, 6  # window row 0, 0, 1
HUD_NAME_COL = 11  # window row 1
TITLE_HI_ROW, TITLE_HI_COL = 12, 12

# ---- the "buttons" codec's bits ----
BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN = 0x01, 0x02, 0x04, 0x08
BUTTON_A, BUTTON_B, BUTTON_SELECT, BUTTON_START = 0x10, 0x20, 0x40, 0x80


def flag_byte(flag: int) -> tuple[int, int]:
    """(address, bit mask) of event flag ``flag``."""
    if not 0 <= flag < NUM_FLAGS:
        raise ValueError(f"quest has flags 0..{NUM_FLAGS - 1}, got {flag}")
    return W_FLAGS + flag // 8, 1 << (flag % 8)


def bcd_value(lo: int, hi: int) -> int:
    """The score of the two BCD bytes at W_SCORE (low byte first)."""
    return int(f"{hi:02X}{lo:02X}")
