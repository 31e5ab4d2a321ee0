"""Quest's SM83 source: start-up, the frame loop, interrupts, title, game over, map loads,
battery RAM and the small helpers; :mod:`.play` has the play tick, :mod:`.music` the music."""

from __future__ import annotations

from gbxcule.asm.routines import ASM_ROUTINES, OAM_DMA_ROUTINE, XORSHIFT16_RNG, db_lines
from gbxcule.games.quest import art
from gbxcule.games.quest import layout as L
from gbxcule.games.quest.music import MUSIC_SOURCE, music_bank_source
from gbxcule.games.quest.play import PLAY_SOURCE

_CONSTANTS = {
    name: getattr(L, name)
    for name in dir(L)
    if name.isupper() and isinstance(getattr(L, name), int) and not name.startswith(("W_", "S_"))
} | {
    "PLAYER": art.PLAYER,
    "SLIME_A": art.SLIME_A,
    "SLIME_B": art.SLIME_B,
    "GEM": art.GEM,
}

_WRAM = f"""
SECTION "oam", WRAM0[${L.W_SHADOW_OAM:04X}]
wShadowOam: ds 160
SECTION "state", WRAM0[${L.W_MODE:04X}]
wMode: ds 1
wMap: ds 1
wPlayerX: ds 1
wPlayerY: ds 1
wPlayerPx: ds 1
wPlayerPy: ds 1
wMoveDir: ds 1
wMoveLeft: ds 1
wScore: ds 2
wHiScore: ds 2
wLives: ds 1
wInvuln: ds 1
wRng: ds 2
wFrame: ds 2
wJoypad: ds 1
wJoyNew: ds 1
wVBlankFlag: ds 1
wTimer: ds 1
wBank: ds 1
wScx: ds 1
wScy: ds 1
wSteps: ds 2
wGems: ds 2
wSpeed: ds 1
wTemp: ds 1
SECTION "flags", WRAM0[${L.W_FLAGS:04X}]
wFlags: ds {L.NUM_FLAGS // 8}
SECTION "enemies", WRAM0[${L.W_ENEMIES:04X}]
wEnemies: ds {L.NUM_ENEMIES * L.ENEMY_SIZE}
SECTION "gems", WRAM0[${L.W_GEMS_TABLE:04X}]
wGemTable: ds {L.NUM_GEMS * L.GEM_SIZE}
SECTION "music_state", WRAM0[${L.W_MUSIC:04X}]
wMusicRow: ds 1
wMusicTick: ds 1
wMusicNr52: ds 1
wMusicNotes: ds 2
wMusicTrig: ds 1
SECTION "battery", SRAM[${L.S_MAGIC:04X}]
sMagic: ds 2
sHiScore: ds 2
SECTION "hram", HRAM[${L.H_DMA:04X}]
hDma: ds 10
"""

_MAIN = f"""
SECTION "vblank_vector", ROM0[$0040]
    jp VBlankIsr
SECTION "stat_vector", ROM0[$0048]
    jp StatIsr

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld a, 1
    call SetBank
    ld hl, TileData
    ld de, $8000
    ld bc, TILE_BYTES
    call MemCopy
    ld d, 0
    ld hl, wShadowOam
    ld bc, $0200            ; the shadow OAM and every game variable
    call MemFill
    ld hl, $FE00
    ld bc, 160
    call MemFill
    ld hl, DmaRoutine
    ld de, hDma
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy
    call LoadHiScore
    call InitSound
    ld a, BGP
    ldh [$47], a
    ld a, OBP0
    ldh [$48], a
    ld a, OBP1
    ldh [$49], a
    ld a, HUD_LINE
    ldh [$4A], a            ; WY
    ldh [$45], a            ; LYC: sprites off from the HUD's first line
    ld a, 7
    ldh [$4B], a            ; WX
    ld a, $40
    ldh [$41], a            ; STAT: the LYC interrupt
    call EnterTitle
    xor a
    ldh [$0F], a
    ld a, $03               ; IE: VBlank, STAT
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
    call hDma               ; VBlank work first: OAM, scroll, HUD
    ld a, [wScx]
    ldh [$43], a
    ld a, [wScy]
    ldh [$42], a
    call DrawHud
    call MusicTick
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
    ldh a, [$40]
    or $02                  ; sprites back on for the map
    ldh [$40], a
    ld a, 1
    ld [wVBlankFlag], a
    pop af
    reti

StatIsr:                    ; LY = HUD_LINE: no sprites over the HUD
    push af
    ldh a, [$40]
    and $FD
    ldh [$40], a
    pop af
    reti

{OAM_DMA_ROUTINE}

SetBank:                    ; A = the ROMX bank to map (kept in wBank)
    ld [wBank], a
    ld [$2000], a
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

{XORSHIFT16_RNG}

; wScore += A (BCD), one byte at a time, low byte first; it stops at 9999.
AddScore:
    ld hl, wScore
    add a, [hl]
    daa
    ld [hl+], a
    ld a, [hl]
    adc a, 0
    daa
    ld [hl], a
    ret nc
    ld a, $99
    ld [hl-], a
    ld [hl], a
    ret

PutBcd:                     ; A = two BCD digits -> font tiles at [HL], [HL+1]
    ld b, a
    swap a
    and $0F
    add a, $30
    ld [hl+], a
    ld a, b
    and $0F
    add a, $30
    ld [hl+], a
    ret

DrawHud:                    ; in VBlank: the score and lives, or "GAME OVER" once
    ld a, [wMode]
    cp MODE_PLAY
    jr z, .play
    cp MODE_OVER
    ret nz
    ld a, [wTimer]
    cp OVER_FRAMES
    ret nz
    ld hl, GameOverText
    ld de, $9C20
    ld bc, 20
    jp MemCopy
.play:
    ld hl, $9C00 + HUD_SCORE_COL
    ld a, [wScore + 1]
    call PutBcd
    ld a, [wScore]
    call PutBcd
    ld a, [wLives]
    add a, $30
    ld [$9C20 + HUD_LIVES_COL], a
    ret

; The high score lives in battery RAM behind a magic word; RAM is enabled only to use it.
LoadHiScore:
    ld a, $0A
    ld [$0000], a
    ld a, [sMagic]
    cp $51
    jr nz, .init
    ld a, [sMagic + 1]
    cp $53
    jr z, .read
.init:
    ld a, $51
    ld [sMagic], a
    ld a, $53
    ld [sMagic + 1], a
    xor a
    ld [sHiScore], a
    ld [sHiScore + 1], a
.read:
    ld a, [sHiScore]
    ld [wHiScore], a
    ld a, [sHiScore + 1]
    ld [wHiScore + 1], a
    xor a
    ld [$0000], a
    ret

SaveHiScore:                ; a score above the high score becomes it, in battery RAM too
    ld a, [wHiScore + 1]
    ld b, a
    ld a, [wScore + 1]
    cp b
    ret c
    jr nz, .better
    ld a, [wHiScore]
    ld b, a
    ld a, [wScore]
    cp b
    ret c
    ret z
.better:
    ld a, $0A
    ld [$0000], a
    ld a, [wScore]
    ld [wHiScore], a
    ld [sHiScore], a
    ld a, [wScore + 1]
    ld [wHiScore + 1], a
    ld [sHiScore + 1], a
    xor a
    ld [$0000], a
    ret

EnterTitle:
    call LcdOff
    ld a, 1
    call SetBank
    ld hl, TitleMap
    ld de, $9800
    ld bc, $0400
    call MemCopy
    ld hl, $9800 + TITLE_HI_ROW * 32 + TITLE_HI_COL
    ld a, [wHiScore + 1]
    call PutBcd
    ld a, [wHiScore]
    call PutBcd
    xor a                   ; MODE_TITLE
    ld [wMode], a
    ld [wScx], a
    ld [wScy], a
    ldh [$43], a
    ldh [$42], a
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
    xor a
    ld hl, wScore
    ld [hl+], a
    ld [hl], a
    ld hl, wSteps
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl], a
    ld [wInvuln], a
    ld d, a
    ld hl, wFlags
    ld bc, NUM_FLAGS / 8
    call MemFill
    ld a, START_MAP
    ld [wMap], a
    ld a, START_LIVES
    ld [wLives], a
    ld a, START_X
    ld [wPlayerX], a
    ld a, START_Y
    ld [wPlayerY], a
    ld a, 3
    ld [wMoveDir], a
    ld a, MODE_PLAY
    ld [wMode], a
    jp LoadMap

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
    jp SaveHiScore

; The map wMap: its tiles into the BG map, its name and the HUD into the window map, its
; slimes and gems from its bank's tables; the player at wPlayerX/Y. LCD off meanwhile.
LoadMap:
    call LcdOff
    ld a, [wMap]
    add a, MAP_BANK0
    call SetBank
    ld hl, MAP_TILES
    ld de, $9800
    ld bc, $0400
    call MemCopy
    ld hl, HudMap
    ld de, $9C00
    ld bc, 64
    call MemCopy
    ld hl, MAP_NAME
    ld de, $9C20 + HUD_NAME_COL
    ld bc, 8
    call MemCopy
    ld hl, $9C00 + HUD_HI_COL
    ld a, [wHiScore + 1]
    call PutBcd
    ld a, [wHiScore]
    call PutBcd
    ld hl, MAP_ENEMIES
    ld de, wEnemies
    ld c, NUM_ENEMIES
.enemy:
    ld a, [hl+]
    add a, a
    add a, a
    add a, a
    ld [de], a              ; px
    inc de
    ld a, [hl+]
    add a, a
    add a, a
    add a, a
    ld [de], a              ; py
    inc de
    ld a, [hl+]
    ld [de], a              ; dir
    inc de
    ld a, c
    and 1
    add a, SLIME_A
    ld [de], a              ; tile
    inc de
    ld a, [hl+]
    ld [de], a              ; speed mask
    inc de
    xor a
    ld [de], a
    inc de
    ld [de], a
    inc de
    ld [de], a
    inc de
    dec c
    jr nz, .enemy
    ld hl, MAP_GEMS
    ld de, wGemTable
    ld c, NUM_GEMS
.gem:
    xor a
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    ld a, [hl+]
    ld [de], a
    inc de
    xor a
    ld [de], a
    inc de
    dec c
    jr nz, .gem
    ld a, [wPlayerX]
    add a, a
    add a, a
    add a, a
    ld [wPlayerPx], a
    ld a, [wPlayerY]
    add a, a
    add a, a
    add a, a
    ld [wPlayerPy], a
    xor a
    ld [wMoveLeft], a
    call UpdateCamera
    call BuildOam
    call hDma
    ld a, [wScx]
    ldh [$43], a
    ld a, [wScy]
    ldh [$42], a
    ld a, LCDC_PLAY
    ldh [$40], a
    ret
"""


def game_source() -> str:
    """The whole SM83 source of quest."""
    equs = "\n".join(f"{k} EQU {v}" for k, v in sorted(_CONSTANTS.items()))
    equs += f"\nTILE_BYTES EQU {len(art.tile_data())}\n"
    return f"""{equs}
{_WRAM}
{_MAIN}
{PLAY_SOURCE}
{MUSIC_SOURCE}
{ASM_ROUTINES}
TileAttr:
{db_lines(art.tile_attrs())}
HudMap:
{db_lines(art.hud_map())}
GameOverText:
{db_lines(art.text(" GAME OVER", 20))}

SECTION "graphics", ROMX[$4000], BANK[1]
TileData:
{db_lines(art.tile_data())}
TitleMap:
{db_lines(art.title_map())}
{"".join(_map_bank(m) for m in range(L.NUM_MAPS))}
{music_bank_source()}
SECTION "credits", ROMX[$4000], BANK[{L.TEXT_BANK}]
Credits:
{db_lines(art.text("GBXCULE QUEST - OUR OWN GAME FOR RL"))}
"""


def _map_bank(m: int) -> str:
    return f"""
SECTION "map{m}", ROMX[$4000], BANK[{L.MAP_BANK0 + m}]
Map{m}:
{db_lines(art.world_map(m).bank_bytes())}
"""
