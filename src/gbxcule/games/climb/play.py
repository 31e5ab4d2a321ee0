"""Climb's play in SM83: the start of a game, the play tick (sideways moves, jumps, gravity,
landing, the camera, coins), the platform generator and the ring of BG rows. Included by
:mod:`.source`, whose EQUs (from :mod:`.layout`) it uses."""

from gbxcule.games.climb import layout as L

assert L.NUM_ROWS == 32 and L.ROW_ENTRY == 8  # RowEntry shifts by 3 into one 256-byte page
assert L.W_ROWS & 0xFF == 0 and L.MIN_LEN + L.LEN_CHOICES - 1 <= 6 and L.LEN_CHOICES == 4
# the first platforms reach up to the look-ahead: the next one is made once the view climbs
_AHEAD_AT_START = -(L.FLOOR_ROW - (L.INITIAL_PLATFORMS + 1) * L.ROW_SPACING) % L.NUM_ROWS
assert L.LOOKAHEAD_ROWS < _AHEAD_AT_START <= L.LOOKAHEAD_ROWS + L.ROW_SPACING

PLAY_SOURCE = """
; A new game from the seeded generator: the floor, the first platforms, the whole BG map
; drawn with the LCD off, the player on the floor.
StartPlay:
    call LcdOff
    xor a
    ld hl, wPlayerYSub
    ld [hl+], a             ; wPlayerYSub
    ld [hl+], a             ; wVelY
    ld [hl+], a             ; wOnGround (set below)
    ld [hl+], a             ; wCameraY
    ld b, 10
.zero:                      ; wHeight, wBestHeight, wScore, wScoreBcd, wCoins
    ld [hl+], a
    dec b
    jr nz, .zero
    ld [wCoinErase + 1], a
    ld [wClimb], a
    ld [wClimb + 1], a
    ld [wNextIndex + 1], a
    ldh [$42], a
    inc a
    ld [wOnGround], a
    ld [wNextIndex], a
    ld a, START_X
    ld [wPlayerX], a
    ld a, START_Y
    ld [wPlayerY], a
    ld c, 0
.clear:
    ld a, c
    call ClearEntry
    inc c
    ld a, c
    cp NUM_ROWS
    jr nz, .clear
    ld a, FLOOR_ROW
    call RowEntry
    xor a
    ld [hl+], a
    ld [hl], SCREEN_COLS
    ld a, FLOOR_ROW - ROW_SPACING
    ld [wNextRow], a
    ld a, FIRST_ANCHOR
    ld [wGenCol], a
    ld c, INITIAL_PLATFORMS
.platform:
    push bc
    call GenPlatform
    pop bc
    dec c
    jr nz, .platform
    xor a
    ld [wDrawLeft], a
    ld c, a
.draw:
    ld a, c
    push bc
    call DrawRow
    pop bc
    inc c
    ld a, c
    cp NUM_ROWS
    jr nz, .draw
    ld a, MODE_PLAY
    ld [wMode], a
    ld a, LCDC_ON
    ldh [$40], a
    ret

PlayTick:
    call MoveSideways
    call MoveVertical
    ld a, [wMode]
    cp MODE_PLAY
    ret nz
    call ScrollCamera
    call GenerateAhead
    jp TakeCoin

MoveSideways:
    ld a, [wJoypad]
    ld c, a
    ld hl, wPlayerX
    bit 0, c
    jr z, .left
    ld a, [hl]
    cp MAX_X
    jr nc, .left
    inc [hl]
.left:
    bit 1, c
    ret z
    ld a, [hl]
    and a
    ret z
    dec [hl]
    ret

; Standing: A pressed jumps, no platform underfoot starts a fall. In the air: gravity, then
; the move, down one pixel at a time until the feet land.
MoveVertical:
    ld a, [wOnGround]
    and a
    jr z, .air
    ld a, [wJoyNew]
    bit 4, a
    jr nz, .jump
    call Standing
    ret c
    xor a                   ; walked off the edge
    ld [wVelY], a
    jr .leave
.jump:
    ld a, NEG_JUMP_SPEED
    ld [wVelY], a
    xor a
.leave:
    ld [wOnGround], a
    ld [wPlayerYSub], a
.air:
    ld a, [wVelY]
    add a, GRAVITY
    bit 7, a
    jr nz, .speed           ; still rising
    cp MAX_FALL + 1
    jr c, .speed
    ld a, MAX_FALL
.speed:
    ld [wVelY], a
    ld b, a
    ld a, [wPlayerYSub]
    add a, b                ; -42..79: fits a signed byte
    ld b, a
    and $0F
    ld [wPlayerYSub], a
    ld a, b
    sra a
    sra a
    sra a
    sra a                   ; whole pixels, signed
    bit 7, a
    jr z, .down
    ld b, a
    ld a, [wPlayerY]
    add a, b
    ld [wPlayerY], a
    ret
.down:
    and a
    ret z
    ld b, a
.pixel:
    ld hl, wPlayerY
    inc [hl]
    push bc
    call Standing
    pop bc
    jr c, .land
    dec b
    jr nz, .pixel
    ld a, [wPlayerY]
    cp SCREEN_H
    ret c
    jp GameOver
.land:
    ld a, 1
    ld [wOnGround], a
    xor a
    ld [wVelY], a
    ld [wPlayerYSub], a
    inc hl
    inc hl                  ; the platform's index
    ld a, [hl+]
    ld [wHeight], a
    ld a, [hl]
    ld [wHeight + 1], a
.best:                      ; each height above the best: best + 1, score + 10
    ld hl, wHeight
    ld a, [wBestHeight]
    sub [hl]
    inc hl
    ld a, [wBestHeight + 1]
    sbc a, [hl]
    ret nc
    ld hl, wBestHeight
    inc [hl]
    jr nz, .points
    inc hl
    inc [hl]
.points:
    ld a, HEIGHT_POINTS
    ld e, $10               ; HEIGHT_POINTS in BCD
    call AddPoints
    jr .best

; Carry set when the feet (Y + 8) are on an on-screen platform top under the player's
; centre column; HL = that row entry's length byte.
Standing:
    ld a, [wPlayerY]
    add a, 8
    cp SCREEN_H
    ret nc
    ld b, a
    ld a, [wCameraY]
    add a, b
    ld b, a
    and 7
    ret nz                  ; (and clears carry) not a tile row's top line
    ld a, b
    rrca
    rrca
    rrca
    call RowEntry
    ld a, [wPlayerX]
    add a, 4
    rrca
    rrca
    rrca
    and $1F
    sub [hl]
    inc hl
    cp [hl]                 ; carry: 0 <= column - start < length
    ret

; wScore += A, wScoreBcd += E (BCD, mod 10000).
AddPoints:
    ld hl, wScore
    add a, [hl]
    ld [hl+], a
    jr nc, .bcd
    inc [hl]
.bcd:
    ld hl, wScoreBcd
    ld a, e
    add a, [hl]
    daa
    ld [hl+], a
    ld a, [hl]
    adc a, 0
    daa
    ld [hl], a
    ret

ScrollCamera:               ; above SCROLL_LINE: the view rises, the player stays there
    ld a, [wPlayerY]
    cp SCROLL_LINE
    ret nc
    ld b, a
    ld a, SCROLL_LINE
    ld [wPlayerY], a
    sub b
    ld b, a
    ld a, [wCameraY]
    sub b
    ld [wCameraY], a
    ld hl, wClimb
    ld a, [hl]
    add a, b
    ld [hl+], a
    ret nc
    inc [hl]
    ret

; A platform is made when its row is LOOKAHEAD_ROWS or fewer rows above the screen's top
; row and the last one's rows are all drawn.
GenerateAhead:
    ld a, [wDrawLeft]
    and a
    ret nz
    ld a, [wNextRow]
    ld b, a
    ld a, [wCameraY]
    rrca
    rrca
    rrca
    and NUM_ROWS - 1
    sub b
    and NUM_ROWS - 1
    cp LOOKAHEAD_ROWS + 1
    ret nc
; Platform wNextIndex on row wNextRow, the two rows below it emptied, all three queued to
; draw. Generator: low byte bits 0-3 the start offset; high byte bits 0-1 the length - 3,
; bit 2 a coin, bit 3 its column (start + 1 or + 2).
GenPlatform:
    call Rng
    ld a, c
    and LEN_CHOICES - 1
    add a, MIN_LEN
    ld e, a
    ld a, b
    and $0F
    ld hl, StartOffsets
    add a, l
    ld l, a
    adc a, h
    sub l
    ld h, a
    ld a, [wGenCol]
    add a, [hl]
    ld d, a
    bit 7, a
    jr z, .right_edge
    ld d, 0
.right_edge:
    ld a, SCREEN_COLS
    sub e
    cp d
    jr nc, .placed
    ld d, a
.placed:
    ld a, d
    ld [wGenCol], a
    bit 2, c
    ld b, NO_COIN
    jr z, .entry
    ld a, c
    rrca
    rrca
    rrca
    and 1
    inc a
    add a, d
    ld b, a
.entry:
    ld a, [wNextRow]
    call RowEntry
    ld a, d
    ld [hl+], a
    ld a, e
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld a, [wNextIndex]
    ld [hl+], a
    ld a, [wNextIndex + 1]
    ld [hl], a
    ld a, [wNextRow]
    inc a
    call ClearEntry
    ld a, [wNextRow]
    add a, 2
    call ClearEntry
    ld a, [wNextRow]
    add a, 2
    and NUM_ROWS - 1
    ld [wDrawRow], a
    ld a, 3
    ld [wDrawLeft], a
    ld a, [wNextRow]
    sub ROW_SPACING
    and NUM_ROWS - 1
    ld [wNextRow], a
    ld hl, wNextIndex
    inc [hl]
    ret nz
    inc hl
    inc [hl]
    ret

ClearEntry:                 ; row A's entry: no platform, no coin, index 0
    call RowEntry
    xor a
    ld [hl+], a
    ld [hl+], a
    ld [hl], NO_COIN
    inc hl
    ld [hl+], a
    ld [hl], a
    ret

RowEntry:                   ; HL = the wRows entry of BG row A (mod 32); clobbers A
    and NUM_ROWS - 1
    add a, a
    add a, a
    add a, a
    ld l, a
    ld h, HIGH(wRows)
    ret

; BG row A (0..31) from the ring: blanks, its platform's cells, blanks, then the coin of
; the platform below it (that row never has a platform of its own).
DrawRow:
    ld b, a
    and 7
    swap a
    add a, a
    ld e, a
    ld a, b
    rrca
    rrca
    rrca
    and 3
    add a, $98
    ld d, a                 ; DE = the row's first cell in the BG map
    ld a, b
    inc a
    call RowEntry
    inc hl
    inc hl
    ld c, [hl]              ; the coin column of the row below
    push bc
    ld a, b
    call RowEntry
    ld a, [hl+]
    ld b, a                 ; start
    ld c, [hl]              ; length
    ld h, d
    ld l, e
    ld a, SCREEN_COLS
    sub b
    sub c
    ld e, a                 ; cells after the platform
    ld a, TILE_BLANK
    inc b
    jr .lead_next
.lead:
    ld [hl+], a
.lead_next:
    dec b
    jr nz, .lead
    ld a, TILE_PLATFORM
    inc c
    jr .platform_next
.platform:
    ld [hl+], a
.platform_next:
    dec c
    jr nz, .platform
    ld a, TILE_BLANK
    inc e
    jr .tail_next
.tail:
    ld [hl+], a
.tail_next:
    dec e
    jr nz, .tail
    pop bc
    ld a, c
    cp SCREEN_COLS
    ret nc                  ; NO_COIN
    ld a, l
    sub SCREEN_COLS
    add a, c
    ld l, a
    ld [hl], TILE_COIN
    ret

; The player's centre pixel on a coin's cell takes it: score + 1, the cell cleared at the
; next VBlank.
TakeCoin:
    ld a, [wPlayerY]
    add a, 4
    ld b, a
    ld a, [wCameraY]
    add a, b
    rrca
    rrca
    rrca
    and NUM_ROWS - 1
    ld d, a                 ; the centre's BG row
    inc a
    call RowEntry
    inc hl
    inc hl
    ld a, [wPlayerX]
    add a, 4
    rrca
    rrca
    rrca
    and $1F
    ld e, a                 ; the centre's column
    cp [hl]
    ret nz
    ld [hl], NO_COIN
    ld a, d
    and 7
    swap a
    add a, a
    or e
    ld [wCoinErase], a
    ld a, d
    rrca
    rrca
    rrca
    and 3
    add a, $98
    ld [wCoinErase + 1], a
    ld hl, wCoins
    inc [hl]
    jr nz, .points
    inc hl
    inc [hl]
.points:
    ld a, COIN_POINTS
    ld e, COIN_POINTS
    jp AddPoints
"""
