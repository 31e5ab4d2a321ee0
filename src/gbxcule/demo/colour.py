"""The demo game's Game Boy Color edition ("demo-colour"): the demo's rules and WRAM
(:mod:`gbxcule.demo.game`), drawn in colour on a Game Boy Color machine.

What the edition adds, all in :func:`colour_source` (set up with the LCD off, before the
game starts):

* palette RAM: 4 background palettes (grass in two greens, the status bar, the paths)
  and 2 object palettes (the player, the coins), through BCPS/OCPS auto-increment;
* the tile map's attributes in VRAM bank 1 (palette by tile, every other grass tile
  X-flipped), and the status bar's, sent by general-purpose HDMA from 16-aligned ROM;
* a tally of each coin's collections in WRAM bank 2 (``D_TALLY``, 8 bytes, wrapping), the
  CPU switching SVBK to 2 and back to 1 around each update.

The header says Colour-enhanced ($80): PyBoy, and our backends by default, run it on a
Game Boy Color machine; on a DMG (``cgb=False``) it plays the demo's game in greys.
"""

from __future__ import annotations

import functools

from gbxcule.asm.routines import db_lines
from gbxcule.demo.game import NUM_COINS, W_COINS, bg_map

D_TALLY = 0xD000  # WRAM bank 2: NUM_COINS collection counts, one byte each (mod 256)
TALLY_BANK = 2
COIN_ATTR = 0x11  # OAM attributes of a coin: DMG OBP1, CGB object palette 1
TABLES = 0x3000  # the 16-aligned ROM tables HDMA reads

# 15-bit colours (red | green << 5 | blue << 10), 4 per palette
BG_PALETTES = (
    (0x4FF3, 0x2BEA, 0x1A44, 0x0140),  # grass
    (0x47F0, 0x33A8, 0x2264, 0x0940),  # grass, the other green
    (0x7FFF, 0x5294, 0x294A, 0x2800),  # status bar: white on navy
    (0x3B7F, 0x2ABB, 0x1A17, 0x0C63),  # paths: sand
    (0x7FFF, 0x7FFF, 0x0000, 0x0000),
    (0x7FFF, 0x7FFF, 0x0000, 0x0000),
    (0x7FFF, 0x7FFF, 0x0000, 0x0000),
    (0x7FFF, 0x7FFF, 0x0000, 0x0000),
)
OBJ_PALETTES = (
    (0x0000, 0x001F, 0x00B5, 0x0000),  # player: reds
    (0x0000, 0x03FF, 0x0216, 0x0000),  # coins: golds
    *((0x0000, 0x7FFF, 0x4210, 0x0000),) * 6,
)


def _words(palettes: tuple) -> bytes:
    return b"".join(w.to_bytes(2, "little") for p in palettes for w in p)


@functools.cache
def map_attributes() -> bytes:
    """VRAM bank 1 at $9800: each map entry's palette (by its tile) and X flip."""
    tiles = bg_map()
    out = bytearray(len(tiles))
    for k, tile in enumerate(tiles):
        row, col = divmod(k, 32)
        palette = 3 if tile != tiles[0] else (row + col) % 2
        out[k] = palette | (0x20 if (row + col) % 2 else 0)
    return bytes(out)


def colour_source() -> str:
    """The edition's routines and 16-aligned tables (appended to the demo's source)."""
    tally = f"""
Tally:                      ; the coin at DE: one more collection in WRAM bank 2
    ld a, e
    sub LOW(${W_COINS:04X})
    srl a
    ld l, a
    ld h, HIGH(${D_TALLY:04X})
    ld a, {TALLY_BANK}
    ldh [$70], a
    inc [hl]
    ld a, 1
    ldh [$70], a
    ret
"""
    return f"""
ColourSetup:                ; palettes, map attributes by HDMA, the tally cleared
    ld a, $80
    ldh [$68], a
    ld hl, Palettes
    ld b, 64
.bg:
    ld a, [hl+]
    ldh [$69], a
    dec b
    jr nz, .bg
    ld a, $80
    ldh [$6A], a
    ld b, 64
.obj:
    ld a, [hl+]
    ldh [$6B], a
    dec b
    jr nz, .obj
    ld a, 1
    ldh [$4F], a            ; VRAM bank 1: attributes
    ld hl, MapAttrs
    ld de, $9800
    ld c, {len(map_attributes()) // 16 - 1}
    call Hdma
    ld hl, BarAttrs
    ld de, $9C00
    ld c, 1
    call Hdma
    xor a
    ldh [$4F], a
    ld a, {TALLY_BANK}
    ldh [$70], a
    ld d, 0
    ld hl, ${D_TALLY:04X}
    ld bc, {NUM_COINS}
    call MemFill
    ld a, 1
    ldh [$70], a
    ret

Hdma:                       ; general-purpose HDMA: C + 1 blocks of 16 bytes, HL -> DE
    ld a, h
    ldh [$51], a
    ld a, l
    ldh [$52], a
    ld a, d
    ldh [$53], a
    ld a, e
    ldh [$54], a
    ld a, c
    ldh [$55], a
    ret
{tally}
SECTION "colour_tables", ROM0[${TABLES:04X}]
MapAttrs:
{db_lines(map_attributes())}
BarAttrs:
{db_lines(bytes([2] * 32))}
Palettes:
{db_lines(_words(BG_PALETTES) + _words(OBJ_PALETTES))}
"""
