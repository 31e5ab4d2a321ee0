"""Blocks' play tick in SM83 source: input, moves and rotations, gravity, locking, clearing
rows, the score, spawning and the sprites (the rules are :mod:`.layout`'s docstring)."""

from __future__ import annotations

PLAY_SOURCE = """
PlayTick:
    ld a, [wJoyNew]
    bit 4, a                ; A: clockwise
    jr z, .no_a
    ld bc, 0
    ld e, 1
    call TryMove
.no_a:
    ld a, [wJoyNew]
    bit 5, a                ; B: counter-clockwise
    jr z, .no_b
    ld bc, 0
    ld e, 3
    call TryMove
.no_b:
    ld a, BUTTON_RIGHT
    ld hl, wRepeatRight
    ld c, MOVE_REPEAT
    call RepeatPress
    jr nc, .no_right
    ld bc, $0100            ; one column right
    ld e, 0
    call TryMove
.no_right:
    ld a, BUTTON_LEFT
    ld hl, wRepeatLeft
    ld c, MOVE_REPEAT
    call RepeatPress
    jr nc, .no_left
    ld bc, $FF00            ; one column left
    ld e, 0
    call TryMove
.no_left:
    ld a, BUTTON_DOWN
    ld hl, wRepeatDown
    ld c, DROP_REPEAT
    call RepeatPress
    jr nc, .gravity
    call MoveDown
    jr c, .done             ; locked: the new piece waits for the next frame
.gravity:
    call GravityFrames
    ld b, a
    ld hl, wGravity
    inc [hl]
    ld a, [hl]
    cp b
    jr c, .done
    call MoveDown
.done:
    jp BuildOam

; A = a button's mask, HL = its repeat count, C = the repeat period: carry set on the
; frames the button acts (its press, then every C frames while it is held). Clobbers B.
RepeatPress:
    ld b, a
    ld a, [wJoyNew]
    and b
    jr nz, .act
    ld a, [wJoypad]
    and b
    ret z                   ; carry clear
    dec [hl]
    ret nz
.act:
    ld [hl], c
    scf
    ret

GravityFrames:              ; A = frames between gravity rows at wLevel
    ld a, [wLevel]
    cp (GRAVITY_FRAMES - GRAVITY_MIN) / GRAVITY_STEP
    jr c, .slower
    ld a, GRAVITY_MIN
    ret
.slower:
    ld b, a
    ld a, GRAVITY_FRAMES
    sub b
    sub b
    ret

MoveDown:                   ; one row down, else lock; carry set: the piece locked
    ld bc, $0001
    ld e, 0
    call TryMove
    jr c, .lock
    xor a
    ld [wGravity], a
    ret
.lock:
    call LockPiece
    scf
    ret

; B = columns, C = rows to move, E = quarter turns clockwise (0, 1 or 3): the piece moves
; there if it fits. Carry set: it did not.
TryMove:
    ld a, [wPieceX]
    add a, b
    ld b, a
    ld a, [wPieceY]
    add a, c
    ld c, a
    ld a, [wPieceRot]
    add a, e
    and 3
    ld e, a
    push bc
    push de
    call PieceFits
    pop de
    pop bc
    ret c
    ld a, b
    ld [wPieceX], a
    ld a, c
    ld [wPieceY], a
    ld a, e
    ld [wPieceRot], a
    ret

; B = box column, C = box row, E = rotation of the piece wPieceKind: carry set if a cell
; would leave the well or overlap the stack. Clobbers A, D, E, HL.
PieceFits:
    ld a, [wPieceKind]
    call CellTable
    ld d, 4
.cell:
    ld a, [hl+]
    add a, b
    cp WELL_W               ; left of column 0 wraps to 246..255: outside too
    jr nc, .blocked
    ld e, a
    ld a, [hl+]
    add a, c
    cp WELL_H
    jr nc, .blocked
    push hl
    call CellAddr
    ld a, [hl]
    pop hl
    and a
    jr nz, .blocked
    dec d
    jr nz, .cell
    ret                     ; carry clear
.blocked:
    scf
    ret

CellTable:                  ; A = kind, E = rotation -> HL = its 4 x (dx, dy). Clobbers A.
    swap a
    add a, a
    ld l, a
    ld a, e
    add a, a
    add a, a
    add a, a
    add a, l
    add a, LOW(PieceCells)
    ld l, a
    ld a, 0
    adc a, HIGH(PieceCells)
    ld h, a
    ret

CellAddr:                   ; A = row, E = column -> HL = the board cell. Clobbers A.
    ld l, a
    add a, a
    add a, a
    add a, l
    add a, a
    add a, e
    ld l, a
    ld h, HIGH(wBoard)      ; the board fills one page from its start
    ret

; The piece's cells into the board, then rows, score, lines, level, height, the HUD and
; the next piece (or game over).
LockPiece:
    ld a, [wPieceRot]
    ld e, a
    ld a, [wPieceKind]
    call CellTable
    ld a, [wPieceX]
    ld b, a
    ld a, [wPieceY]
    ld c, a
    ld d, 4
.cell:
    ld a, [hl+]
    add a, b
    ld e, a
    ld a, [hl+]
    add a, c
    push hl
    call CellAddr
    ld a, [wPieceKind]
    inc a
    ld [hl], a
    pop hl
    dec d
    jr nz, .cell
    ld a, 1
    ld hl, wPieces
    call AddCount
    call ClearLines
    ld a, c
    ld [wLastClear], a
    and a
    jr z, .measure
    cp 5
    jr c, .score
    ld a, 4                 ; more than 4 rows only on a board written from outside
.score:
    ld hl, LineScores
    add a, l
    ld l, a
    ld a, 0
    adc a, h
    ld h, a
    ld a, [hl]
    ld hl, wScore
    call AddCount
    ld a, c
    ld hl, wLines
    call AddCount
    call SetLevel
.measure:
    call MeasureHeight
    call UpdateHud
    jp SpawnPiece

; Full rows are removed, the rows above falling into their place. C = rows removed.
ClearLines:
    ld c, 0
    ld b, WELL_H - 1
.row:
    ld a, b
    ld e, 0
    call CellAddr
    ld d, WELL_W
.cell:
    ld a, [hl+]
    and a
    jr z, .keep
    dec d
    jr nz, .cell
    inc c
    call DropRowsAbove
    jr .row                 ; the same row again: it holds the one from above now
.keep:
    dec b
    bit 7, b
    jr z, .row
    ret

; Rows 0..B-1 move one row down, over row B; row 0 becomes empty. Keeps B and C.
DropRowsAbove:
    ld a, b
    ld e, WELL_W - 1
    call CellAddr           ; row B's last cell
    ld a, b
    and a
    jr z, .top
    push bc
    ld c, a
    add a, a
    add a, a
    add a, c
    add a, a
    ld c, a                 ; the cells of rows 0..B-1
    ld d, h
    ld a, l
    sub WELL_W
    ld e, a
.move:
    ld a, [de]
    ld [hl-], a
    dec e
    dec c
    jr nz, .move
    pop bc
.top:
    ld hl, wBoard
    xor a
    ld d, WELL_W
.clear:
    ld [hl+], a
    dec d
    jr nz, .clear
    ret

SetLevel:                   ; wLevel = wLines / LINES_PER_LEVEL, at most 255
    ld a, [wLines]
    ld l, a
    ld a, [wLines + 1]
    ld h, a
    ld b, 16                ; HL /= LINES_PER_LEVEL, a bit at a time
    xor a
.bit:
    add hl, hl
    rla
    cp LINES_PER_LEVEL
    jr c, .next
    sub LINES_PER_LEVEL
    inc l
.next:
    dec b
    jr nz, .bit
    ld a, h
    and a
    ld a, l
    jr z, .store
    ld a, 255
.store:
    ld [wLevel], a
    ret

MeasureHeight:              ; wHeight = rows from the bottom to the highest filled cell
    ld hl, wBoard
    ld b, WELL_H
.row:
    ld c, WELL_W
.cell:
    ld a, [hl+]
    and a
    jr nz, .found
    dec c
    jr nz, .cell
    dec b
    jr nz, .row
.found:
    ld a, b
    ld [wHeight], a
    ret

; The next piece becomes the piece, at the top centre; the generator draws the next one.
; No room there: game over.
SpawnPiece:
    ld a, [wNextKind]
    ld [wPieceKind], a
    call RandomKind
    ld [wNextKind], a
    xor a
    ld [wPieceRot], a
    ld [wGravity], a
    ld a, SPAWN_Y
    ld [wPieceY], a
    ld c, a
    ld a, SPAWN_X
    ld [wPieceX], a
    ld b, a
    ld e, 0
    call PieceFits
    ret nc
    ld a, MODE_OVER
    ld [wMode], a
    ld a, OVER_FRAMES
    ld [wTimer], a
    ret

RandomKind:                 ; A = a kind 0..6: a value's low byte & 7, drawn again on 7
    call Rng
    ld a, b
    and 7
    cp NUM_KINDS
    jr z, RandomKind
    ret

; OAM 0-3: the piece in the well; 4-7: the next piece beside it.
BuildOam:
    ld a, [wPieceRot]
    ld e, a
    ld a, [wPieceKind]
    call CellTable
    ld d, h
    ld e, l
    ld a, [wPieceKind]
    inc a
    ld [wTemp], a
    ld a, [wPieceX]
    add a, WELL_COL + 1
    ld b, a
    ld a, [wPieceY]
    add a, WELL_ROW + 2
    ld c, a
    ld hl, wShadowOam
    call PutSprites
    push hl
    ld e, 0
    ld a, [wNextKind]
    call CellTable
    ld d, h
    ld e, l
    pop hl
    ld a, [wNextKind]
    inc a
    ld [wTemp], a
    ld b, NEXT_COL + 1
    ld c, NEXT_ROW + 2
; DE = 4 x (dx, dy), HL = 4 OAM entries (16-aligned), B / C = the box's BG column + 1 and
; row + 2 (OAM's X and Y offsets in cells), wTemp = the tile.
PutSprites:
    inc de
    ld a, [de]
    add a, c
    add a, a
    add a, a
    add a, a
    ld [hl+], a             ; Y
    dec de
    ld a, [de]
    add a, b
    add a, a
    add a, a
    add a, a
    ld [hl+], a             ; X
    inc de
    inc de
    ld a, [wTemp]
    ld [hl+], a
    xor a
    ld [hl+], a
    ld a, l
    and 15
    jr nz, PutSprites
    ret
"""
