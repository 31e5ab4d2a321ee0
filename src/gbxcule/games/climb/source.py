"""Climb's SM83 source: start-up, the frame loop, VBlank drawing, title, game over, joypad
and the shadow OAM; :mod:`.play` has the play tick (physics, camera, platforms, coins)."""

from __future__ import annotations

from gbxcule.asm.routines import ASM_ROUTINES, OAM_DMA_ROUTINE, XORSHIFT16_RNG, db_lines
from gbxcule.games.climb import art
from gbxcule.games.climb import layout as L
from gbxcule.games.climb.play import PLAY_SOURCE

_CONSTANTS = {
    name: getattr(L, name)
    for name in dir(L)
    if name.isupper() and isinstance(getattr(L, name), int) and not name.startswith("W_")
} | {
    "TILE_BLANK": art.BLANK,
    "TILE_PLATFORM": art.PLATFORM,
    "TILE_COIN": art.COIN,
    "TILE_PLAYER": art.PLAYER,
    "TILE_DIGIT0": ord("0"),
    "NEG_JUMP_SPEED": -L.JUMP_SPEED & 0xFF,
    "OVER_TEXT_LEN": len(art.GAME_OVER),
    "TILE_BYTES": len(art.tile_data()),
}

_WRAM = f"""
SECTION "oam", WRAM0[${L.W_SHADOW_OAM:04X}]
wShadowOam: ds 160
SECTION "state", WRAM0[${L.W_MODE:04X}]
wMode: ds 1
wPlayerX: ds 1
wPlayerY: ds 1
wPlayerYSub: ds 1
wVelY: ds 1
wOnGround: ds 1
wCameraY: ds 1
wHeight: ds 2
wBestHeight: ds 2
wScore: ds 2
wScoreBcd: ds 2
wCoins: ds 2
wFrame: ds 2
wRng: ds 2
wJoypad: ds 1
wJoyNew: ds 1
wVBlankFlag: ds 1
wTimer: ds 1
wNextRow: ds 1
wNextIndex: ds 2
wGenCol: ds 1
wDrawRow: ds 1
wDrawLeft: ds 1
wCoinErase: ds 2
wClimb: ds 2
SECTION "rows", WRAM0[${L.W_ROWS:04X}]
wRows: ds {L.NUM_ROWS * L.ROW_ENTRY}
SECTION "hram", HRAM[${L.H_DMA:04X}]
hDma: ds 10
"""

_MAIN = """
SECTION "vblank_vector", ROM0[$0040]
    jp VBlankIsr

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld hl, TileData
    ld de, $8000
    ld bc, TILE_BYTES
    call MemCopy
    ld d, 0
    ld hl, wShadowOam
    ld bc, $0300            ; the shadow OAM, every game variable and the row ring
    call MemFill
    ld hl, $FE00
    ld bc, 160
    call MemFill
    ld hl, DmaRoutine
    ld de, hDma
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy
    ld a, BGP
    ldh [$47], a
    ld a, OBP0
    ldh [$48], a
    call EnterTitle
    xor a
    ldh [$0F], a
    ld a, $01               ; IE: VBlank only
    ldh [$FF], a
    ei

MainLoop:
    halt
    nop
    ld a, [wVBlankFlag]
    and a
    jr z, MainLoop
    xor a
    ld [wVBlankFlag], a
    call hDma               ; VBlank work first: OAM, scroll, BG cells
    ld a, [wCameraY]
    ldh [$42], a
    call VBlankDraw
    call ReadJoypad
    ld a, [wMode]
    cp MODE_PLAY
    jr nz, .not_play
    call PlayTick
    jr .ticked
.not_play:
    cp MODE_OVER
    jr nz, .title
    call OverTick
    jr .ticked
.title:
    call TitleTick
.ticked:
    call BuildOam
    ld hl, wFrame
    inc [hl]
    jr nz, MainLoop
    inc hl
    inc [hl]
    jr MainLoop

VBlankIsr:
    push af
    ld a, 1
    ld [wVBlankFlag], a
    pop af
    reti

; A taken coin's cell cleared, then the next pending BG row drawn.
VBlankDraw:
    ld a, [wCoinErase + 1]
    and a
    jr z, .rows
    ld h, a
    ld a, [wCoinErase]
    ld l, a
    ld [hl], TILE_BLANK
    xor a
    ld [wCoinErase + 1], a
.rows:
    ld a, [wDrawLeft]
    and a
    ret z
    dec a
    ld [wDrawLeft], a
    ld a, [wDrawRow]
    ld b, a
    dec a
    and NUM_ROWS - 1
    ld [wDrawRow], a
    ld a, b
    jp DrawRow

; wJoypad = held buttons (bit 0..7: right, left, up, down, A, B, select, start),
; wJoyNew = those pressed since the last frame.
ReadJoypad:
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0F
    ld b, a
    ld a, $10
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0F
    swap a
    or b
    ld b, a
    ld a, [wJoypad]
    cpl
    and b
    ld [wJoyNew], a
    ld a, b
    ld [wJoypad], a
    ld a, $30
    ldh [$00], a
    ret

EnterTitle:
    call LcdOff
    call ClearBgMap
    ld hl, TitleText
.line:
    ld a, [hl+]             ; VRAM address (0: the end), length, tiles
    ld e, a
    ld a, [hl+]
    ld d, a
    or e
    jr z, .done
    ld a, [hl+]
    ld c, a
    ld b, 0
    call MemCopy
    jr .line
.done:
    xor a                   ; MODE_TITLE
    ld [wMode], a
    ld [wCameraY], a
    ldh [$42], a
    ldh [$43], a
    ld a, LCDC_ON
    ldh [$40], a
    ret

ClearBgMap:
    ld d, TILE_BLANK
    ld hl, $9800
    ld bc, $0400
    jp MemFill

TitleTick:                  ; START: the generator is seeded from DIV, play begins
    ld a, [wJoyNew]
    bit 7, a
    ret z
    ldh a, [$04]
    ld [wRng], a
    ld a, [wFrame]
    or $01                  ; never 0 (xorshift would stay there)
    ld [wRng + 1], a
    jp StartPlay

OverTick:
    ld hl, wTimer
    dec [hl]
    ret nz
    jp EnterTitle

GameOver:
    ld a, MODE_OVER
    ld [wMode], a
    ld a, OVER_FRAMES
    ld [wTimer], a
    ret

; Sprite 0 the player (play only), 1-4 the score digits (play and game over), 5-13
; "GAME OVER" (game over only); the rest stay hidden from power-on.
BuildOam:
    ld hl, wShadowOam
    ld a, [wMode]
    cp MODE_PLAY
    jr nz, .no_player
    ld a, [wPlayerY]
    add a, 16
    ld [hl+], a
    ld a, [wPlayerX]
    add a, 8
    ld [hl+], a
    ld a, TILE_PLAYER
    ld [hl+], a
    xor a
    ld [hl+], a
    jr .score
.no_player:
    ld b, 4
    call HideBytes
    ld a, [wMode]
    and a
    jr nz, .score
    ld b, 4 * (4 + OVER_TEXT_LEN)
    jr HideBytes
.score:
    ld c, HUD_X + 8
    ld a, [wScoreBcd + 1]
    call PutBcdSprites
    ld a, [wScoreBcd]
    call PutBcdSprites
    ld a, [wMode]
    cp MODE_OVER
    ld b, 4 * OVER_TEXT_LEN
    jr nz, HideBytes
    ld de, GameOverText
    ld c, OVER_TEXT_X + 8
    ld b, OVER_TEXT_LEN
.letter:
    ld a, OVER_TEXT_Y + 16
    ld [hl+], a
    ld a, c
    ld [hl+], a
    add a, 8
    ld c, a
    ld a, [de]
    inc de
    ld [hl+], a
    xor a
    ld [hl+], a
    dec b
    jr nz, .letter
    ret

HideBytes:                  ; B bytes at HL = 0
    xor a
.loop:
    ld [hl+], a
    dec b
    jr nz, .loop
    ret

PutBcdSprites:              ; A = two BCD digits -> two sprites at HL, the first at X = C
    ld d, a
    swap a
    and $0F
    call PutDigit
    ld a, d
    and $0F
PutDigit:
    add a, TILE_DIGIT0
    ld e, a
    ld a, HUD_Y + 16
    ld [hl+], a
    ld a, c
    ld [hl+], a
    add a, 8
    ld c, a
    ld a, e
    ld [hl+], a
    xor a
    ld [hl+], a
    ret
"""


def _title_text() -> bytes:
    """Each title line as (BG map address, length, tile ids), then a 0 address."""
    out = bytearray()
    for row, col, tiles in art.title_lines():
        out += (0x9800 + row * 32 + col).to_bytes(2, "little") + bytes([len(tiles)]) + tiles
    return bytes(out) + b"\0\0"


def game_source() -> str:
    """The whole SM83 source of climb."""
    equs = "\n".join(f"{k} EQU {v}" for k, v in sorted(_CONSTANTS.items()))
    offsets = bytes(v & 0xFF for v in L.START_OFFSETS)
    return f"""{equs}
{_WRAM}
{_MAIN}
{OAM_DMA_ROUTINE}
{PLAY_SOURCE}
{XORSHIFT16_RNG}
{ASM_ROUTINES}
StartOffsets:
{db_lines(offsets)}
GameOverText:
{db_lines(art.text(art.GAME_OVER))}
TitleText:
{db_lines(_title_text())}
TileData:
{db_lines(art.tile_data())}
"""
