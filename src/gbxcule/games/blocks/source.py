"""Blocks' SM83 source: start-up, the frame loop, the VBlank drawing, the title, game over and
the HUD; :mod:`.play` has the play tick (pieces, the board, locking and clearing rows)."""

from __future__ import annotations

from gbxcule.asm.routines import ASM_ROUTINES, OAM_DMA_ROUTINE, XORSHIFT16_RNG, db_lines
from gbxcule.games.blocks import art
from gbxcule.games.blocks import layout as L
from gbxcule.games.blocks.play import PLAY_SOURCE

_CONSTANTS = {
    name: getattr(L, name)
    for name in dir(L)
    if name.isupper() and isinstance(getattr(L, name), int) and not name.startswith("W_")
} | {
    "TILE_BYTES": len(art.tile_data()),
    "SCREEN_BYTES": len(art.title_map()),
    "WELL_VRAM": L.bg_address(L.WELL_COL, L.WELL_ROW),
    "SCORE_VRAM": L.bg_address(L.HUD_VALUE_COL, L.SCORE_ROW),
    "LINES_VRAM": L.bg_address(L.HUD_VALUE_COL, L.LINES_ROW),
    "LEVEL_VRAM": L.bg_address(L.HUD_VALUE_COL + L.HUD_DIGITS - L.LEVEL_DIGITS, L.LEVEL_ROW),
    "OVER_VRAM": L.bg_address(L.HUD_VALUE_COL, L.OVER_ROW),
}

_WRAM = f"""
SECTION "oam", WRAM0[${L.W_SHADOW_OAM:04X}]
wShadowOam: ds 160
SECTION "state", WRAM0[${L.W_MODE:04X}]
wMode: ds 1
wScore: ds 2
wLines: ds 2
wLevel: ds 1
wPieces: ds 2
wPieceKind: ds 1
wPieceRot: ds 1
wPieceX: ds 1
wPieceY: ds 1
wNextKind: ds 1
wHeight: ds 1
wLastClear: ds 1
wFrame: ds 2
wRng: ds 2
wJoypad: ds 1
wJoyNew: ds 1
wVBlankFlag: ds 1
wTimer: ds 1
wGravity: ds 1
wRepeatRight: ds 1
wRepeatLeft: ds 1
wRepeatDown: ds 1
wDrawRow: ds 1
wTemp: ds 1
SECTION "hud", WRAM0[${L.W_HUD_TEXT:04X}]
wHudText: ds {3 * L.HUD_DIGITS}
SECTION "board", WRAM0[${L.W_BOARD:04X}]
wBoard: ds {L.CELLS}
SECTION "hram", HRAM[${L.H_DMA:04X}]
hDma: ds 10
"""

_COPY_ROW = "\n".join(["    ld a, [hl+]\n    ld [de], a\n    inc e"] * L.WELL_W)

_MAIN = f"""
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
    ld bc, $0300            ; the shadow OAM, every game variable and the board
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
    call hDma               ; VBlank work first: OAM, the board's rows, the HUD
    ld a, [wMode]
    and a
    call nz, DrawPlayScreen
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

; In VBlank: DRAW_ROWS board rows (from wDrawRow, the next ones the next frame), the
; HUD's digits, "GAME OVER".
DrawPlayScreen:
    ld a, [wDrawRow]
    ld b, a
    add a, DRAW_ROWS
    and WELL_H - 1
    ld [wDrawRow], a
    ld a, b
    swap a
    ld l, a
    ld h, 0
    add hl, hl              ; row * 32
    ld de, WELL_VRAM
    add hl, de
    ld d, h
    ld e, l
    ld a, b
    ld l, a
    add a, a
    add a, a
    add a, l
    add a, a                ; row * 10
    ld l, a
    ld h, HIGH(wBoard)
    ld c, DRAW_ROWS
.row:
{_COPY_ROW}
    ld a, e                 ; a row's cells never cross a page: inc e is enough
    add a, 32 - WELL_W
    ld e, a
    jr nc, .same_page
    inc d
.same_page:
    dec c
    jr nz, .row
    ld hl, wHudText
    ld de, SCORE_VRAM
    ld c, HUD_DIGITS
    call CopyC
    ld de, LINES_VRAM
    ld c, HUD_DIGITS
    call CopyC
    ld de, HUD_DIGITS - LEVEL_DIGITS
    add hl, de
    ld de, LEVEL_VRAM
    ld c, LEVEL_DIGITS
    call CopyC
    ld a, [wMode]
    cp MODE_OVER
    ret nz
    ld hl, GameOverText
    ld de, OVER_VRAM
    ld c, 4
    call CopyC
    ld de, OVER_VRAM + 32
    ld c, 4
CopyC:                      ; C (> 0) bytes from HL to DE
    ld a, [hl+]
    ld [de], a
    inc de
    dec c
    jr nz, CopyC
    ret

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
    ld hl, TitleMap
    ld de, $9800
    ld bc, SCREEN_BYTES
    call MemCopy
    xor a                   ; MODE_TITLE
    ld [wMode], a
    ld d, a
    ld hl, wShadowOam
    ld bc, 160
    call MemFill
    call hDma
    ld a, LCDC_TITLE
    ldh [$40], a
    ret

TitleTick:                  ; START: the generator is seeded from DIV, play begins
    ld a, [wJoyNew]
    bit 7, a
    ret z
    ldh a, [$04]
    ld [wRng], a
    ld a, [wFrame]
    or $01                  ; never 0 (xorshift would stay there)
    ld [wRng + 1], a
    ld d, 0
    ld hl, wScore
    ld bc, wFrame - wScore  ; the counters and the piece
    call MemFill
    ld hl, wGravity
    ld bc, wTemp - wGravity ; the gravity and repeat counts, the board row to draw
    call MemFill
    ld hl, wBoard
    ld bc, CELLS
    call MemFill
    call RandomKind
    ld [wNextKind], a
    call SpawnPiece
    call UpdateHud
    call LcdOff
    ld hl, PlayMap
    ld de, $9800
    ld bc, SCREEN_BYTES
    call MemCopy
    call BuildOam
    call hDma
    ld a, MODE_PLAY
    ld [wMode], a
    ld a, LCDC_PLAY
    ldh [$40], a
    ret

OverTick:
    ld hl, wTimer
    dec [hl]
    ret nz
    jp EnterTitle

; wHudText = the score, lines and level as 5 digit tiles each.
UpdateHud:
    ld de, wHudText
    ld a, [wScore]
    ld l, a
    ld a, [wScore + 1]
    ld h, a
    call PutDecimal
    ld a, [wLines]
    ld l, a
    ld a, [wLines + 1]
    ld h, a
    call PutDecimal
    ld a, [wLevel]
    ld l, a
    ld h, 0
PutDecimal:                 ; HL as 5 digit tiles at DE (DE moves past them)
    ld bc, -10000
    call .digit
    ld bc, -1000
    call .digit
    ld bc, -100
    call .digit
    ld bc, -10
    call .digit
    ld a, l
    add a, $30
    ld [de], a
    inc de
    ret
.digit:                     ; HL >= -BC: subtract it while it goes, counting in A
    ld a, $2F
.count:
    inc a
    add hl, bc
    jr c, .count
    ld [de], a
    inc de
    ld a, l                 ; HL -= BC: back over zero
    sub c
    ld l, a
    ld a, h
    sbc a, b
    ld h, a
    ret

; The 16-bit count at HL += A, stopping at 65535. Clobbers A, HL.
AddCount:
    add a, [hl]
    ld [hl+], a
    ret nc
    inc [hl]
    ret nz
    ld a, $FF
    ld [hl-], a
    ld [hl], a
    ret
"""


def game_source() -> str:
    """The whole SM83 source of blocks."""
    equs = "\n".join(f"{k} EQU {v}" for k, v in sorted(_CONSTANTS.items()))
    return f"""{equs}
{_WRAM}
{_MAIN}
{OAM_DMA_ROUTINE}
{PLAY_SOURCE}
{XORSHIFT16_RNG}
{ASM_ROUTINES}
LineScores:
    db {", ".join(str(v) for v in L.LINE_SCORES)}
GameOverText:
{db_lines(art.text("GAMEOVER"))}
PieceCells:
{db_lines(art.piece_table())}
TileData:
{db_lines(art.tile_data())}
TitleMap:
{db_lines(art.title_map())}
PlayMap:
{db_lines(art.play_map())}
"""
