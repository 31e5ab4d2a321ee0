"""The demo game: our own small Game Boy game, the default workload for demos,
benchmarks and RL. This module is its documented WRAM layout and an exact Python
model of its rules; :mod:`gbxcule.demo.asm` is its SM83 source and
:mod:`gbxcule.demo.rom` builds the ROM.

The game: a player sprite walks over a 256x256-pixel tile map (larger than the
160x144 screen, wrapping at the edges); the camera follows the player through
SCX/SCY. Eight coins lie on the map; touching one scores a point and the coin
respawns at a pseudo-random spot. A window status bar at the bottom shows the
score. Everything is deterministic: the only randomness is a xorshift16
generator seeded from a ROM constant and advanced only when a coin is placed.

Frame loop (HALT until the VBlank interrupt sets a flag), once per frame:

1. VBlank work on the previous tick's state: OAM DMA from the WRAM shadow OAM
   (an HRAM routine), SCX/SCY, the four score digits in the window map.
2. One game tick: read the joypad into ``W_JOYPAD`` (bit order of the "buttons"
   action codec: right, left, up, down, A, B, select, start), move, collect,
   rebuild the shadow OAM, count the frame.

Rules of one tick (see :func:`tick`): speed = 2 while B is held, else 1; right
adds it to X, left subtracts it, down adds to Y, up subtracts (all mod 256, so
opposite directions cancel). Then coins 0..7 in order: a coin whose position
differs from the player's by -7..7 on both axes is collected (score + 1) and
moved to ``(low, high)`` of the next generator value.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from gbxcule.asm.tiles import glyph_tile, tile_bytes

# ---- documented WRAM (see history/demo-game.md) ----
W_SHADOW_OAM = 0xC000  # 160 bytes, copied to OAM by DMA every frame
W_PLAYER_X = 0xC100  # player world X (top-left pixel), 0..255, wraps
W_PLAYER_Y = 0xC101  # player world Y
W_SCORE = 0xC102  # 16-bit little-endian coins collected
W_SCORE_BCD = 0xC104  # 2 bytes little-endian BCD, score mod 10000 (shown on screen)
W_FRAME = 0xC106  # 16-bit little-endian game ticks since start
W_RNG = 0xC108  # 16-bit little-endian xorshift16 state
W_JOYPAD = 0xC10A  # buttons held this tick ("buttons" codec bit order)
W_VBLANK_FLAG = 0xC10B  # set by the VBlank handler, cleared by the main loop
W_TEMP = 0xC10C
W_COINS = 0xC110  # NUM_COINS x (x, y) world positions
STATE_BYTES = (W_PLAYER_X, W_COINS + 16)  # [lo, hi) of the whole game state
H_DMA = 0xFF80  # the OAM DMA routine runs from HRAM

NUM_COINS = 8
START_X = 128
START_Y = 128
RNG_SEED = 0xACE1
CAMERA_X = 76  # the player is drawn at screen (76, 64): SCX = X - 76, SCY = Y - 64
CAMERA_Y = 64
COIN_VISIBLE_H = 128  # coins lower on screen would overlap the status bar: hidden
BAR_LINE = 136  # WY: the window status bar covers lines 136..143
LCDC = 0xF3  # LCD, window map $9C00, window, tiles $8000, BG map $9800, OBJ 8x8, OBJ, BG
BGP = 0xE4
OBP0 = 0xE4  # player
OBP1 = 0xD2  # coins
BUTTON_RIGHT, BUTTON_LEFT, BUTTON_UP, BUTTON_DOWN = 0x01, 0x02, 0x04, 0x08
BUTTON_A, BUTTON_B = 0x10, 0x20

# ---- graphics ----
TILE_GROUND, TILE_PLAYER, TILE_COIN, TILE_TUFT, TILE_FLOWER, TILE_ROCK, TILE_BAR = range(7)
TILE_DIGIT0 = 0x10  # digits 0..9 at $10..$19, then the letters of "SCORE"
SCORE_COL = 7  # window map column of the first score digit

_TILES = {
    TILE_GROUND: "00000000 00000000 00010000 00000000 00000000 00000010 00000000 00000000",
    TILE_PLAYER: "00333300 03111130 31311313 31111113 31211213 31122113 03111130 00333300",
    TILE_COIN: "00000000 00022000 00233200 02322320 02322320 00233200 00022000 00000000",
    TILE_TUFT: "00000000 00100100 01101010 00111100 00011000 00000000 00000000 00000000",
    TILE_FLOWER: "00000000 00020000 00232000 00020000 00010000 00111000 00000000 00000000",
    TILE_ROCK: "00000000 00022200 00233320 02333332 02333332 00222220 00000000 00000000",
    TILE_BAR: " ".join(["33333333"] * 8),
}
# Glyphs of asm/tiles.py's 5x7 font, drawn in colour 0 on the bar's colour 3.
GLYPH_CHARS = "0123456789SCORE"
GLYPH_TILES = {ch: TILE_DIGIT0 + i for i, ch in enumerate(GLYPH_CHARS)}


@functools.cache
def tile_data() -> bytes:
    """Tiles $00..$1F at $8000 (16 bytes each)."""
    data = bytearray(32 * 16)
    for number, rows in _TILES.items():
        data[16 * number : 16 * number + 16] = tile_bytes(rows.split())
    for ch, number in GLYPH_TILES.items():
        data[16 * number : 16 * number + 16] = glyph_tile(ch, ink="0", paper="3")
    return bytes(data)


@functools.cache
def bg_map() -> bytes:
    """The 32x32 world map at $9800 (a fixed pattern of ground, tufts, flowers, rocks)."""
    out = bytearray()
    for y in range(32):
        for x in range(32):
            h = (x * 37 + y * 91 + (x * y) % 7) % 16
            out.append(
                TILE_GROUND
                if h < 10
                else TILE_TUFT
                if h < 13
                else TILE_FLOWER
                if h < 15
                else TILE_ROCK
            )
    return bytes(out)


def bar_map(score: int) -> bytes:
    """Row 0 of the window map at $9C00: "SCORE" and four digits of score mod 10000."""
    row = [TILE_BAR] * 32
    for i, ch in enumerate("SCORE"):
        row[1 + i] = GLYPH_TILES[ch]
    for i, ch in enumerate(f"{score % 10000:04d}"):
        row[SCORE_COL + i] = GLYPH_TILES[ch]
    return bytes(row)


# ---- the game's rules, exactly as the ROM runs them ----
def rng_step(state: int) -> int:
    """One step of the ROM's xorshift16 (shifts 7, 9, 8) done with RRA like the ROM."""
    h, l = state >> 8, state & 0xFF
    h ^= ((h & 1) << 7) | (l >> 1)
    l ^= ((l & 1) << 7) | (h >> 1)
    h ^= l
    return (h << 8) | l


@dataclass(frozen=True)
class DemoState:
    x: int
    y: int
    score: int
    rng: int
    coins: tuple[tuple[int, int], ...]
    frame: int = 0


def initial_state() -> DemoState:
    rng = RNG_SEED
    coins = []
    for _ in range(NUM_COINS):
        rng = rng_step(rng)
        coins.append((rng & 0xFF, rng >> 8))
    return DemoState(START_X, START_Y, 0, rng, tuple(coins))


def _near(a: int, b: int) -> bool:
    return (a - b + 7) & 0xFF < 15


def tick(state: DemoState, buttons: int) -> DemoState:
    """One frame of the game under the held ``buttons`` ("buttons" codec mask)."""
    if not 0 <= buttons <= 0xFF:
        raise ValueError(f"buttons must be an 8-bit mask, got {buttons}")
    speed = 2 if buttons & BUTTON_B else 1
    x, y = state.x, state.y
    if buttons & BUTTON_RIGHT:
        x += speed
    if buttons & BUTTON_LEFT:
        x -= speed
    if buttons & BUTTON_DOWN:
        y += speed
    if buttons & BUTTON_UP:
        y -= speed
    x, y = x & 0xFF, y & 0xFF
    coins, rng, score = list(state.coins), state.rng, state.score
    for i, (cx, cy) in enumerate(coins):
        if _near(cx, x) and _near(cy, y):
            rng = rng_step(rng)
            coins[i] = (rng & 0xFF, rng >> 8)
            score = (score + 1) & 0xFFFF
    return replace(
        state, x=x, y=y, score=score, rng=rng, coins=tuple(coins), frame=(state.frame + 1) & 0xFFFF
    )


def simulate(inputs: list[int] | tuple[int, ...], state: DemoState | None = None) -> DemoState:
    state = state or initial_state()
    for buttons in inputs:
        state = tick(state, buttons)
    return state


def state_from_wram(wram: bytes | bytearray, base: int = W_PLAYER_X) -> DemoState:
    """The game state held in WRAM bytes read from ``base`` (through W_COINS + 16)."""

    def at(addr: int, n: int = 1) -> int:
        return int.from_bytes(bytes(wram[addr - base : addr - base + n]), "little")

    if base > W_PLAYER_X or base + len(wram) < STATE_BYTES[1]:
        raise ValueError(f"need WRAM ${W_PLAYER_X:04X}-${STATE_BYTES[1] - 1:04X}")
    coins = tuple((at(W_COINS + 2 * i), at(W_COINS + 2 * i + 1)) for i in range(NUM_COINS))
    return DemoState(
        at(W_PLAYER_X), at(W_PLAYER_Y), at(W_SCORE, 2), at(W_RNG, 2), coins, at(W_FRAME, 2)
    )


def score_bcd(score: int) -> int:
    """The 16-bit BCD the ROM keeps at W_SCORE_BCD for ``score``."""
    return int(f"{score % 10000:04d}", 16)


def shadow_oam(state: DemoState) -> bytes:
    """The shadow OAM the ROM builds from ``state``: player in slot 0, coins in 1..8."""
    oam = bytearray(160)
    oam[0:4] = bytes((CAMERA_Y + 16, CAMERA_X + 8, TILE_PLAYER, 0x00))
    for i, (cx, cy) in enumerate(state.coins):
        sx = (cx - state.x + CAMERA_X) & 0xFF
        sy = (cy - state.y + CAMERA_Y) & 0xFF
        if sy < COIN_VISIBLE_H and sx < 160:
            oam[4 + 4 * i : 8 + 4 * i] = bytes((sy + 16, sx + 8, TILE_COIN, 0x10))
    return bytes(oam)


def scroll(state: DemoState) -> tuple[int, int]:
    """(SCX, SCY) the ROM writes for ``state``."""
    return (state.x - CAMERA_X) & 0xFF, (state.y - CAMERA_Y) & 0xFF
