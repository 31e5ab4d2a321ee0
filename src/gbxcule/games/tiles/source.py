"""Tiles' SM83 source: start-up, the frame loop, the VBlank drawing, the title, the shuffle
and the play rules (documented in :mod:`.layout`)."""

from __future__ import annotations

from gbxcule.asm.routines import ASM_ROUTINES, XORSHIFT16_RNG, db_lines
from gbxcule.games.tiles import art
from gbxcule.games.tiles import layout as L

CELL_MAP_ADDR = 0x3F00  # 256-aligned: a board tile's cells are at HIGH, LOW = 16 tile + 4 row

_CONSTANTS = {
    name: getattr(L, name)
    for name in dir(L)
    if name.isupper() and isinstance(getattr(L, name), int) and not name.startswith("W_")
} | {"CURSOR": art.CURSOR, "BLANK": art.BLANK, "DIGIT0": art.CHAR_CELL["0"]}

_WRAM = f"""
SECTION "state", WRAM0[${L.W_MODE:04X}]
wMode: ds 1
wDifficulty: ds 1
wShuffle: ds 1
wGapX: ds 1
wGapY: ds 1
wInPlace: ds 1
wSolved: ds 1
wTimer: ds 1
wMoves: ds 2
wTries: ds 2
wSolvedCount: ds 2
wMovesBcd: ds 2
wSolvedBcd: ds 2
wFrame: ds 2
wRng: ds 2
wJoypad: ds 1
wJoyNew: ds 1
wVBlankFlag: ds 1
wShuffleLeft: ds 1
wShufflePrev: ds 1
SECTION "board", WRAM0[${L.W_BOARD:04X}]
wBoard: ds {L.CELLS}
"""

_MAIN = f"""
SECTION "vblank_vector", ROM0[$0040]
    jp VBlankIsr

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld hl, CellData
    ld de, $8000
    ld bc, {len(art.cell_data())}
    call MemCopy
    ld hl, PlayScreen
    ld de, $9800
    ld bc, {32 * L.SCREEN_ROWS}
    call MemCopy
    ld hl, TitleScreen
    ld de, $9C00
    ld bc, {32 * L.SCREEN_ROWS}
    call MemCopy
    ld d, 0
    ld hl, wMode
    ld bc, {L.STATE_BYTES[1] - L.STATE_BYTES[0]}
    call MemFill
    call InitBoard
    ld a, BGP
    ldh [$47], a
    xor a
    ldh [$42], a            ; SCY, SCX
    ldh [$43], a
    ld a, LCDC_TITLE
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
    call DrawScreen         ; VBlank work first
    call ReadJoypad
    ld a, [wMode]
    cp MODE_PLAY
    jr nz, .not_play
    call PlayTick
    jr .ticked
.not_play:
    cp MODE_SOLVED
    jr nz, .title
    call SolvedTick
    jr .ticked
.title:
    call TitleTick
.ticked:
    ld hl, wFrame
    call Inc16
    jr MainLoop

VBlankIsr:
    push af
    ld a, 1
    ld [wVBlankFlag], a
    pop af
    reti

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

Inc16:                      ; the 16-bit little-endian counter at HL + 1
    inc [hl]
    ret nz
    inc hl
    inc [hl]
    ret

IncBcd:                     ; the 4-digit BCD counter at HL (low byte first) + 1
    ld a, [hl]
    add a, 1
    daa
    ld [hl+], a
    ld a, [hl]
    adc a, 0
    daa
    ld [hl], a
    ret
"""

_DRAW = f"""
DrawScreen:                 ; in VBlank: the mode's screen and its changing cells
    ld a, [wMode]
    and a
    jr z, .title
    ld a, LCDC_PLAY
    ldh [$40], a
    call DrawBoardRow
    jp DrawHud
.title:
    ld a, LCDC_TITLE
    ldh [$40], a
    jp DrawCursor

; Board row wFrame & 3: for each of its 4 tiles, the tile's 4x4 cells from CellMap.
DrawBoardRow:
    ld a, [wFrame]
    and 3
    ld c, a
    add a, a
    add a, a
    add a, LOW(wBoard)
    ld b, a                 ; B: the board cell of the tile to draw
    ld a, c                 ; DE = BOARD_MAP + 128 row
    rrca
    ld c, a
    and $80
    add a, LOW(BOARD_MAP)
    ld e, a
    ld a, c
    and $01
    add a, HIGH(BOARD_MAP)
    ld d, a
.tile:
    ld h, HIGH(wBoard)
    ld l, b
    ld a, [hl]
    swap a
    ld l, a
    ld h, HIGH(CellMap)
    push de
    ld c, {L.TILE_CELLS}
.cell_row:
    ld a, [hl+]
    ld [de], a
    inc e
    ld a, [hl+]
    ld [de], a
    inc e
    ld a, [hl+]
    ld [de], a
    inc e
    ld a, [hl+]
    ld [de], a
    ld a, e                 ; the next map row, 3 cells back
    add a, 32 - 3
    ld e, a
    jr nc, .same_page
    inc d
.same_page:
    dec c
    jr nz, .cell_row
    pop de
    ld a, e                 ; the next tile: 4 cells right (a map row never crosses a page)
    add a, {L.TILE_CELLS}
    ld e, a
    inc b
    ld a, b
    and 3
    jr nz, .tile
    ret

DrawHud:
    ld hl, $9800 + HUD_MOVES_COL
    ld a, [wMovesBcd + 1]
    call PutBcd
    ld a, [wMovesBcd]
    call PutBcd
    ld hl, $9800 + 32 * (SCREEN_ROWS - 1) + HUD_SOLVED_COL
    ld a, [wSolvedBcd + 1]
    call PutBcd
    ld a, [wSolvedBcd]
    call PutBcd
    ld a, [wDifficulty]     ; its name: 6 cells at DifficultyNames + 6 difficulty
    ld c, a
    add a, a
    add a, c
    add a, a
    ld c, a
    ld b, 0
    ld hl, DifficultyNames
    add hl, bc
    ld de, $9800 + HUD_DIFFICULTY_COL
    ld c, 6
.name:
    ld a, [hl+]
    ld [de], a
    inc e
    dec c
    jr nz, .name
    ret

PutBcd:                     ; A = two BCD digits -> cells at [HL], [HL + 1]
    ld b, a
    swap a
    and $0F
    add a, DIGIT0
    ld [hl+], a
    ld a, b
    and $0F
    add a, DIGIT0
    ld [hl+], a
    ret

DrawCursor:                 ; the cursor left of the chosen difficulty, blanks left of the rest
    ld hl, $9C00 + 32 * MENU_ROW + CURSOR_COL
    ld a, [wDifficulty]
    ld b, a
    ld c, 3
    ld de, 64
.row:
    ld a, b
    and a
    ld a, CURSOR
    jr z, .put
    ld a, BLANK
.put:
    ld [hl], a
    add hl, de
    dec b
    dec c
    jr nz, .row
    ret
"""

_RULES = """
TitleTick:                  ; START begins; else UP, else DOWN moves the cursor
    ld a, [wJoyNew]
    bit 7, a
    jr nz, StartPlay
    bit 2, a
    jr nz, .up
    bit 3, a
    ret z
    ld a, [wDifficulty]
    cp 2
    ret z
    inc a
    ld [wDifficulty], a
    ret
.up:
    ld a, [wDifficulty]
    and a
    ret z
    dec a
    ld [wDifficulty], a
    ret

StartPlay:
    ldh a, [$04]            ; DIV: the frame START is pressed on picks the puzzle
    ld [wRng], a
    xor $5A
    ld [wRng + 1], a
    ld a, MODE_PLAY
    ld [wMode], a
    ; fall through

; A new puzzle: the solved board shuffled by wShuffle gap moves, none undoing the last;
; done again if it ends solved.
NewPuzzle:
    ld a, [wDifficulty]
    ld e, a
    ld d, 0
    ld hl, ShuffleMoves
    add hl, de
    ld a, [hl]
    ld [wShuffle], a
.again:
    call InitBoard
    ld a, [wShuffle]
    ld [wShuffleLeft], a
    ld a, $FF
    ld [wShufflePrev], a
.move:
    call Rng
    ld a, b
    and 3
    ld c, a
    ld a, [wShufflePrev]
    xor 1
    cp c
    jr z, .move
    ld a, c
    call MoveGap
    jr c, .move
    ld a, c
    ld [wShufflePrev], a
    ld hl, wShuffleLeft
    dec [hl]
    jr nz, .move
    call CountInPlace
    ld a, [wSolved]
    and a
    jr nz, .again
    ret

InitBoard:                  ; tiles 1..15 in order, the gap bottom right
    ld hl, wBoard
    ld a, 1
.cell:
    ld [hl+], a
    inc a
    cp CELLS
    jr nz, .cell
    xor a
    ld [hl], a
    ld a, SIDE - 1
    ld [wGapX], a
    ld [wGapY], a
    ret

; Move the gap one cell in direction A (0 right, 1 left, 2 up, 3 down): the tile there slides
; into it. Carry set (nothing changed) at the wall. Keeps C.
MoveGap:
    ld b, a
    ld a, [wGapX]
    ld d, a
    ld a, [wGapY]
    ld e, a
    ld a, b
    and a
    jr nz, .not_right
    ld a, d
    cp SIDE - 1
    jr z, .wall
    inc d
    jr .slide
.not_right:
    dec a
    jr nz, .not_left
    ld a, d
    and a
    jr z, .wall
    dec d
    jr .slide
.not_left:
    dec a
    jr nz, .down
    ld a, e
    and a
    jr z, .wall
    dec e
    jr .slide
.down:
    ld a, e
    cp SIDE - 1
    jr z, .wall
    inc e
.slide:                     ; (D, E): the gap's new cell
    ld a, [wGapY]
    add a, a
    add a, a
    ld hl, wGapX
    add a, [hl]
    add a, LOW(wBoard)
    ld l, a
    ld h, HIGH(wBoard)
    push hl                 ; the old gap cell
    ld a, d
    ld [wGapX], a
    ld a, e
    ld [wGapY], a
    add a, a
    add a, a
    add a, d
    add a, LOW(wBoard)
    ld l, a
    ld a, [hl]
    ld [hl], 0
    pop hl
    ld [hl], a
    and a                   ; no carry: moved
    ret
.wall:
    scf
    ret

CountInPlace:               ; wInPlace, wSolved from wBoard
    ld hl, wBoard
    ld b, 0
    ld c, 1
.cell:
    ld a, [hl+]
    cp c
    jr nz, .next
    inc b
.next:
    inc c
    ld a, c
    cp CELLS
    jr nz, .cell
    ld a, b
    ld [wInPlace], a
    cp CELLS - 1
    ld a, 0
    jr nz, .store
    inc a
.store:
    ld [wSolved], a
    ret

PlayTick:                   ; the first direction pressed this frame (right, left, up, down)
    ld a, [wJoyNew]
    and $0F
    ret z
    ld c, 0
.find:
    rrca
    jr c, .found
    inc c
    jr .find
.found:
    ld hl, wTries
    call Inc16
    ld a, c
    call MoveGap
    ret c
    ld hl, wMoves
    call Inc16
    ld hl, wMovesBcd
    call IncBcd
    call CountInPlace
    ld a, [wSolved]
    and a
    ret z
    ld hl, wSolvedCount
    call Inc16
    ld hl, wSolvedBcd
    call IncBcd
    ld a, SOLVED_FRAMES
    ld [wTimer], a
    ld a, MODE_SOLVED
    ld [wMode], a
    ret

SolvedTick:                 ; the solved board shown SOLVED_FRAMES frames, then a new puzzle
    ld hl, wTimer
    dec [hl]
    ret nz
    ld a, MODE_PLAY
    ld [wMode], a
    jp NewPuzzle
"""


def _data() -> str:
    return f"""
ShuffleMoves:
    db {", ".join(str(n) for n in L.SHUFFLE_MOVES)}
DifficultyNames:
{db_lines(art.difficulty_names(), 6)}
PlayScreen:
{db_lines(art.play_screen())}
TitleScreen:
{db_lines(art.title_screen())}
CellData:
{db_lines(art.cell_data())}

SECTION "cell_map", ROM0[${CELL_MAP_ADDR:04X}]
CellMap:
{db_lines(art.cell_map())}
"""


def game_source() -> str:
    """SM83 source of the whole game."""
    equs = "\n".join(f"DEF {name} EQU {value}" for name, value in sorted(_CONSTANTS.items()))
    return "\n".join((equs, _WRAM, _MAIN, _DRAW, _RULES, XORSHIFT16_RNG, ASM_ROUTINES, _data()))
