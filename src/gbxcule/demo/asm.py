"""SM83 source of the demo game; rules, WRAM layout and model live in gbxcule.demo.game."""

from __future__ import annotations

from gbxcule.asm.routines import ASM_ROUTINES, OAM_DMA_ROUTINE, XORSHIFT16_RNG, db_lines
from gbxcule.demo.game import (
    BAR_LINE,
    BGP,
    CAMERA_X,
    CAMERA_Y,
    COIN_VISIBLE_H,
    H_DMA,
    LCDC,
    NUM_COINS,
    OBP0,
    OBP1,
    RNG_SEED,
    SCORE_COL,
    START_X,
    START_Y,
    TILE_COIN,
    TILE_DIGIT0,
    TILE_PLAYER,
    W_COINS,
    W_PLAYER_X,
    W_SHADOW_OAM,
    bar_map,
    bg_map,
    tile_data,
)


def game_source(colour: bool = False) -> str:
    """SM83 source of the demo game (``colour``: its Game Boy Color edition, the same rules
    with colour palettes, map attributes sent to VRAM bank 1 by HDMA and a tally of each
    coin's collections in WRAM bank 2; ``gbxcule.demo.colour``)."""
    from gbxcule.demo import colour as cgb

    setup, tally, coin_attr, extra = (
        ("    call ColourSetup\n", "    call Tally\n", cgb.COIN_ATTR, cgb.colour_source())
        if colour
        else ("", "", 0x10, "")
    )
    return f"""
SECTION "vblank_vector", ROM0[$0040]
    jp VBlankIsr

SECTION "wram", WRAM0[${W_SHADOW_OAM:04X}]
wShadowOam: ds 160
SECTION "state", WRAM0[${W_PLAYER_X:04X}]
wPlayerX: ds 1
wPlayerY: ds 1
wScore: ds 2
wScoreBcd: ds 2
wFrame: ds 2
wRng: ds 2
wJoypad: ds 1
wVBlankFlag: ds 1
wTemp: ds 1
SECTION "coins", WRAM0[${W_COINS:04X}]
wCoins: ds {2 * NUM_COINS}

SECTION "game", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld hl, TileData
    ld de, $8000
    ld bc, {len(tile_data())}
    call MemCopy
    ld hl, BgMap
    ld de, $9800
    ld bc, $0400
    call MemCopy
    ld hl, BarMap
    ld de, $9C00
    ld bc, 32
    call MemCopy
{setup}    ld d, 0
    ld hl, $FE00
    ld bc, 160
    call MemFill
    ld hl, wShadowOam
    ld bc, $0200            ; shadow OAM and the game state
    call MemFill
    ld hl, DmaRoutine
    ld de, ${H_DMA:04X}
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy
    ld a, {START_X}
    ld [wPlayerX], a
    ld a, {START_Y}
    ld [wPlayerY], a
    ld a, LOW(${RNG_SEED:04X})
    ld [wRng], a
    ld a, HIGH(${RNG_SEED:04X})
    ld [wRng + 1], a
    ld de, wCoins
    ld a, {NUM_COINS}
.spawn:
    push af
    call Rng
    ld a, b
    ld [de], a
    inc de
    ld a, c
    ld [de], a
    inc de
    pop af
    dec a
    jr nz, .spawn
    call BuildShadowOam
    call ${H_DMA:04X}
    call ApplyView
    ld a, ${BGP:02X}
    ldh [$47], a
    ld a, ${OBP0:02X}
    ldh [$48], a
    ld a, ${OBP1:02X}
    ldh [$49], a
    ld a, {BAR_LINE}
    ldh [$4A], a
    ld a, 7
    ldh [$4B], a
    ld a, ${LCDC:02X}
    ldh [$40], a
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
    call ${H_DMA:04X}       ; VBlank work first: OAM, scroll, score digits
    call ApplyView
    call DrawScore
    call ReadJoypad
    call MovePlayer
    call CollectCoins
    call BuildShadowOam
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

{OAM_DMA_ROUTINE}

ApplyView:
    ld a, [wPlayerX]
    sub {CAMERA_X}
    ldh [$43], a
    ld a, [wPlayerY]
    sub {CAMERA_Y}
    ldh [$42], a
    ret

DrawScore:
    ld hl, $9C00 + {SCORE_COL}
    ld a, [wScoreBcd + 1]
    call PutBcd
    ld a, [wScoreBcd]
PutBcd:                     ; A = two BCD digits -> tiles at [HL], [HL+1]
    ld b, a
    swap a
    and $0F
    add a, {TILE_DIGIT0}
    ld [hl+], a
    ld a, b
    and $0F
    add a, {TILE_DIGIT0}
    ld [hl+], a
    ret

; wJoypad = held buttons, bit 0..7 = right, left, up, down, A, B, select, start.
ReadJoypad:
    ld a, $20               ; P14 low: direction keys
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0F
    ld b, a
    ld a, $10               ; P15 low: action keys
    ldh [$00], a
    ldh a, [$00]
    ldh a, [$00]
    cpl
    and $0F
    swap a
    or b
    ld [wJoypad], a
    ld a, $30
    ldh [$00], a
    ret

MovePlayer:
    ld a, [wJoypad]
    ld c, a
    ld b, 1
    bit 5, c                ; B held: two pixels a frame
    jr z, .speed
    ld b, 2
.speed:
    ld hl, wPlayerX
    bit 0, c
    jr z, .no_right
    ld a, [hl]
    add a, b
    ld [hl], a
.no_right:
    bit 1, c
    jr z, .no_left
    ld a, [hl]
    sub b
    ld [hl], a
.no_left:
    inc hl
    bit 3, c
    jr z, .no_down
    ld a, [hl]
    add a, b
    ld [hl], a
.no_down:
    bit 2, c
    jr z, .no_up
    ld a, [hl]
    sub b
    ld [hl], a
.no_up:
    ret

; A coin within -7..7 of the player on both axes is collected and respawned.
CollectCoins:
    ld de, wCoins
    ld a, {NUM_COINS}
.coin:
    push af
    ld a, [wPlayerX]
    ld b, a
    ld a, [de]
    sub b
    add a, 7
    cp 15
    jr nc, .miss
    inc de
    ld a, [wPlayerY]
    ld b, a
    ld a, [de]
    dec de
    sub b
    add a, 7
    cp 15
    jr nc, .miss
    call Rng
    ld a, b
    ld [de], a
    inc de
    ld a, c
    ld [de], a
    dec de
    call AddScore
{tally}.miss:
    inc de
    inc de
    pop af
    dec a
    jr nz, .coin
    ret

AddScore:
    ld hl, wScore
    inc [hl]
    jr nz, .bcd
    inc hl
    inc [hl]
.bcd:
    ld a, [wScoreBcd]
    add a, 1
    daa
    ld [wScoreBcd], a
    ld a, [wScoreBcd + 1]
    adc a, 0
    daa
    ld [wScoreBcd + 1], a
    ret

{XORSHIFT16_RNG}

BuildShadowOam:
    ld hl, wShadowOam
    ld a, {CAMERA_Y + 16}
    ld [hl+], a
    ld a, {CAMERA_X + 8}
    ld [hl+], a
    ld a, {TILE_PLAYER}
    ld [hl+], a
    xor a
    ld [hl+], a
    ld de, wCoins
    ld c, {NUM_COINS}
.coin:
    ld a, [wPlayerX]
    ld b, a
    ld a, [de]
    inc de
    sub b
    add a, {CAMERA_X}
    ld [wTemp], a           ; screen X
    ld a, [wPlayerY]
    ld b, a
    ld a, [de]
    inc de
    sub b
    add a, {CAMERA_Y}       ; screen Y
    cp {COIN_VISIBLE_H}
    jr nc, .hide
    ld b, a
    ld a, [wTemp]
    cp 160
    jr nc, .hide
    ld a, b
    add a, 16
    ld [hl+], a
    ld a, [wTemp]
    add a, 8
    ld [hl+], a
    ld a, {TILE_COIN}
    ld [hl+], a
    ld a, ${coin_attr:02X}               ; OBP1 (and CGB object palette 1)
    ld [hl+], a
    jr .next
.hide:
    xor a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
.next:
    dec c
    jr nz, .coin
    ret

{ASM_ROUTINES}
TileData:
{db_lines(tile_data())}
BgMap:
{db_lines(bg_map())}
BarMap:
{db_lines(bar_map(0))}
{extra}"""
