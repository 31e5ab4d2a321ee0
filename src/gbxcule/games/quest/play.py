"""Quest's play tick in SM83: the player's grid steps, arrivals (places, gems, doors), the
slimes, touches, gem respawns, the camera and the shadow OAM. Included by :mod:`.source`,
whose EQUs (from :mod:`.layout`) it uses."""

from gbxcule.games.quest import layout as L

assert L.NUM_GEMS == 6 and L.NUM_ENEMIES == 10  # TakeGem and TouchEnemies multiply by them

PLAY_SOURCE = """
PlayTick:
    call MovePlayer
    call MoveEnemies
    call TouchEnemies
    ld a, [wMode]
    cp MODE_PLAY
    ret nz                  ; game over: the screen stays as it is
    call RespawnGems
    ld hl, wInvuln
    ld a, [hl]
    and a
    jr z, .safe
    dec [hl]
.safe:
    call UpdateCamera
    jp BuildOam

; Standing: the first held direction (right, left, up, down) starts a step unless the cell
; ahead blocks; B held runs. Stepping: move, and on the next cell arrive there.
MovePlayer:
    ld a, [wMoveLeft]
    and a
    jr nz, .stepping
    ld a, [wJoypad]
    ld c, a
    ld b, 0
    bit 0, c
    jr nz, .go
    inc b
    bit 1, c
    jr nz, .go
    inc b
    bit 2, c
    jr nz, .go
    inc b
    bit 3, c
    ret z
.go:
    ld a, b
    ld [wMoveDir], a
    ld a, [wPlayerX]
    ld b, a
    ld a, [wPlayerY]
    ld c, a
    ld a, [wMoveDir]
    call NextCell
    ret c
    call CellAttr
    bit 0, a
    ret nz
    ld a, [wJoypad]
    bit 5, a
    ld a, 1
    ld b, STEP_FRAMES
    jr z, .walk
    ld a, 2
    ld b, RUN_STEP_FRAMES
.walk:
    ld [wSpeed], a
    ld a, b
    ld [wMoveLeft], a
.stepping:
    ld a, [wSpeed]
    ld b, a
    ld a, [wMoveDir]
    ld hl, wPlayerPx
    call StepPixels
    ld hl, wMoveLeft
    dec [hl]
    ret nz
    ld a, [wPlayerPx]
    srl a
    srl a
    srl a
    ld [wPlayerX], a
    ld a, [wPlayerPy]
    srl a
    srl a
    srl a
    ld [wPlayerY], a
    jp Arrive

StepPixels:                 ; [HL] = x ([HL+1] = y) moved B pixels in direction A
    cp 2
    jr c, .axis
    inc hl
.axis:
    cp 1
    jr z, .minus
    cp 2
    jr z, .minus
    ld a, [hl]
    add a, b
    ld [hl], a
    ret
.minus:
    ld a, [hl]
    sub b
    ld [hl], a
    ret

NextCell:                   ; cell (B, C) moved one cell in direction A; carry: off the map
    and a
    jr nz, .left
    inc b
    jr .check
.left:
    dec a
    jr nz, .up
    dec b
    jr .check
.up:
    dec a
    jr nz, .down
    dec c
    jr .check
.down:
    inc c
.check:
    ld a, b
    cp MAP_W
    ccf
    ret c
    ld a, c
    cp MAP_H
    ccf
    ret

CellAttr:                   ; A = TileAttr of the map's tile at (B, C); keeps BC
    call CellTile
    ld e, a
    ld d, 0
    ld hl, TileAttr
    add hl, de
    ld a, [hl]
    ret

CellTile:                   ; A = the mapped map bank's tile at (B, C); keeps BC
    ld l, c
    ld h, 0
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    ld a, l
    or b
    ld l, a
    ld a, h
    add a, HIGH(MAP_TILES)
    ld h, a
    ld a, [hl]
    ret

Arrive:                     ; the player is on a new cell: a door warps, else places, gems
    ld hl, wSteps
    inc [hl]
    jr nz, .counted
    inc hl
    inc [hl]
.counted:
    ld a, [wPlayerX]
    ld b, a
    ld a, [wPlayerY]
    ld c, a
    call CellAttr
    bit 1, a
    jr nz, Warp
    call MarkPlace
    jp TakeGems

Warp:                       ; the door at (B, C): its warp table entry says where to
    ld hl, MAP_WARPS
.find:
    ld a, [hl+]
    cp $FF
    ret z
    cp b
    jr nz, .next
    ld a, [hl]
    cp c
    jr nz, .next
    inc hl
    ld a, [hl+]
    ld [wMap], a
    ld a, [hl+]
    ld [wPlayerX], a
    ld a, [hl]
    ld [wPlayerY], a
    jp LoadMap
.next:
    inc hl
    inc hl
    inc hl
    inc hl
    jr .find

MarkPlace:                  ; flag map * 16 + (y / 8) * 4 + x / 8; first visit scores
    ld a, [wPlayerY]
    and $18
    rrca
    ld b, a
    ld a, [wPlayerX]
    rrca
    rrca
    rrca
    and $03
    or b
    ld b, a
    ld a, [wMap]
    swap a
    or b
    call SetFlag
    ret z
    ld a, PLACE_POINTS
    jp AddScore

SetFlag:                    ; sets event flag A; NZ if it was clear, Z if already set
    ld c, a
    srl a
    srl a
    srl a
    ld e, a
    ld d, 0
    ld hl, wFlags
    add hl, de
    ld a, c
    and 7
    ld b, a
    inc b
    ld a, 1
.shift:
    dec b
    jr z, .mask
    add a, a
    jr .shift
.mask:
    ld b, a
    ld a, [hl]
    and b
    jr nz, .already
    ld a, [hl]
    or b
    ld [hl], a
    or 1
    ret
.already:
    xor a
    ret

TakeGems:                   ; gems on the player's cell are taken
    ld hl, wGemTable
    ld c, 0
.gem:
    ld a, [hl+]
    and a
    jr nz, .skip
    ld a, [wPlayerX]
    cp [hl]
    jr nz, .skip
    inc hl
    ld a, [wPlayerY]
    cp [hl]
    dec hl
    jr nz, .skip
    dec hl
    ld a, GEM_RESPAWN_FRAMES
    ld [hl+], a
    push hl
    push bc
    call TakeGem
    pop bc
    pop hl
.skip:
    inc hl
    inc hl
    inc hl
    inc c
    ld a, c
    cp NUM_GEMS
    jr nz, .gem
    ret

TakeGem:                    ; gem slot C: counted, flagged, scored
    ld hl, wGems
    inc [hl]
    jr nz, .counted
    inc hl
    inc [hl]
.counted:
    ld a, [wMap]
    ld b, a
    add a, a
    add a, b
    add a, a                ; map * NUM_GEMS
    add a, c
    add a, FLAG_GEMS
    call SetFlag
    ld a, GEM_POINTS
    jp AddScore

MoveEnemies:
    ld hl, wEnemies
    ld c, NUM_ENEMIES
.enemy:
    push bc
    push hl
    call MoveEnemy
    pop hl
    pop bc
    ld de, ENEMY_SIZE
    add hl, de
    dec c
    jr nz, .enemy
    ret

; HL = a slime. It moves on frames where frame & its speed mask is 0; on a cell it turns
; at random (1 in 4) and turns back from a blocked cell ahead.
MoveEnemy:
    push hl
    ld de, 4
    add hl, de
    ld a, [wFrame]
    and [hl]
    pop hl
    ret nz
    ld a, [hl+]
    or [hl]
    dec hl
    and 7
    jr nz, .move
    push hl
    call Rng
    pop hl
    ld a, b
    and $C0
    jr nz, .keep
    ld a, c
    and 3
    inc hl
    inc hl
    ld [hl-], a
    dec hl
.keep:
    call EnemyBlocked
    jr z, .move
    inc hl
    inc hl
    ld a, [hl]
    xor 1
    ld [hl-], a
    dec hl
    call EnemyBlocked
    ret nz
.move:
    inc hl
    inc hl
    ld a, [hl-]
    dec hl
    ld b, 1
    jp StepPixels

EnemyBlocked:               ; HL = a slime on a cell (kept); NZ if the cell ahead blocks it
    push hl
    ld a, [hl+]
    rrca
    rrca
    rrca
    and $1F
    ld b, a
    ld a, [hl+]
    rrca
    rrca
    rrca
    and $1F
    ld c, a
    ld a, [hl]
    call NextCell
    jr c, .blocked
    call CellAttr
    pop hl
    and a
    ret
.blocked:
    pop hl
    or 1
    ret

TouchEnemies:               ; a slime within 5 pixels costs a life (unless safe)
    ld a, [wInvuln]
    and a
    ret nz
    ld hl, wEnemies
    ld c, 0
.enemy:
    ld a, [wPlayerPx]
    ld b, a
    ld a, [hl+]
    sub b
    add a, 5
    cp 11
    jr nc, .miss
    ld a, [wPlayerPy]
    ld b, a
    ld a, [hl]
    sub b
    add a, 5
    cp 11
    jr c, .hit
.miss:
    ld de, ENEMY_SIZE - 1
    add hl, de
    inc c
    ld a, c
    cp NUM_ENEMIES
    jr nz, .enemy
    ret
.hit:
    ld a, INVULN_FRAMES
    ld [wInvuln], a
    ld a, [wMap]
    ld b, a
    add a, a
    add a, a
    add a, b
    add a, a                ; map * NUM_ENEMIES
    add a, c
    add a, FLAG_ENEMIES
    call SetFlag
    ld hl, wLives
    dec [hl]
    ret nz
    jp GameOver

RespawnGems:                ; a taken gem's countdown runs out: back at a random free cell
    ld hl, wGemTable
    ld c, NUM_GEMS
.gem:
    ld a, [hl]
    and a
    jr z, .next
    dec a
    ld [hl], a
    jr nz, .next
    push hl
    push bc
    call PlaceGem
    pop bc
    pop hl
.next:
    ld de, GEM_SIZE
    add hl, de
    dec c
    jr nz, .gem
    ret

PlaceGem:                   ; HL = the gem; a blocked cell or the player's: next frame
    push hl
    call Rng
    pop hl
    ld a, b
    and $1F
    ld b, a
    ld a, c
    and $1F
    ld c, a
    push hl
    call CellAttr
    pop hl
    and a
    jr nz, .retry
    ld a, [wPlayerX]
    cp b
    jr nz, .place
    ld a, [wPlayerY]
    cp c
    jr z, .retry
.place:
    inc hl
    ld a, b
    ld [hl+], a
    ld [hl], c
    ret
.retry:
    ld [hl], 1
    ret

UpdateCamera:               ; SCX/SCY follow the player, clamped to the map
    ld a, [wPlayerPx]
    sub CAMERA_X
    jr nc, .x_low
    xor a
.x_low:
    cp MAX_SCX + 1
    jr c, .x_ok
    ld a, MAX_SCX
.x_ok:
    ld [wScx], a
    ld a, [wPlayerPy]
    sub CAMERA_Y
    jr nc, .y_low
    xor a
.y_low:
    cp MAX_SCY + 1
    jr c, .y_ok
    ld a, MAX_SCY
.y_ok:
    ld [wScy], a
    ret

; Sprite 0 the player (blinking while safe, flipped facing left), 1-10 the slimes, 11-16
; the gems; anything off the map view is hidden (Y = 0).
BuildOam:
    ld hl, wShadowOam
    ld a, [wInvuln]
    and 4
    jr nz, .player_hidden
    ld a, [wScy]
    ld b, a
    ld a, [wPlayerPy]
    sub b
    add a, 16
    ld [hl+], a
    ld a, [wScx]
    ld b, a
    ld a, [wPlayerPx]
    sub b
    add a, 8
    ld [hl+], a
    ld a, PLAYER
    ld [hl+], a
    ld a, [wMoveDir]
    cp 1
    ld a, 0
    jr nz, .facing
    ld a, $20
.facing:
    ld [hl+], a
    jr .slimes
.player_hidden:
    xor a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
.slimes:
    ld de, wEnemies
    ld c, NUM_ENEMIES
.enemy:
    push de
    ld a, [wScx]
    ld b, a
    ld a, [de]
    sub b
    cp 160
    jr nc, .hide
    add a, 8
    ld [wTemp], a
    inc de
    ld a, [wScy]
    ld b, a
    ld a, [de]
    sub b
    cp VIEW_H
    jr nc, .hide
    add a, 16
    ld [hl+], a
    ld a, [wTemp]
    ld [hl+], a
    inc de
    inc de
    ld a, [wFrame]
    and $10
    ld a, [de]
    jr z, .still
    xor SLIME_A ^ SLIME_B
.still:
    ld [hl+], a
    ld a, $10
    ld [hl+], a
    jr .next
.hide:
    xor a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
.next:
    pop de
    ld a, e
    add a, ENEMY_SIZE
    ld e, a
    dec c
    jr nz, .enemy
    ld de, wGemTable
    ld c, NUM_GEMS
.gem:
    push de
    ld a, [de]
    and a
    jr nz, .gem_hide
    inc de
    ld a, [wScx]
    ld b, a
    ld a, [de]
    add a, a
    add a, a
    add a, a
    sub b
    cp 160
    jr nc, .gem_hide
    add a, 8
    ld [wTemp], a
    inc de
    ld a, [wScy]
    ld b, a
    ld a, [de]
    add a, a
    add a, a
    add a, a
    sub b
    cp VIEW_H
    jr nc, .gem_hide
    add a, 16
    ld [hl+], a
    ld a, [wTemp]
    ld [hl+], a
    ld a, GEM
    ld [hl+], a
    xor a
    ld [hl+], a
    jr .gem_next
.gem_hide:
    xor a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
    ld [hl+], a
.gem_next:
    pop de
    ld a, e
    add a, GEM_SIZE
    ld e, a
    dec c
    jr nz, .gem
    ret
"""
