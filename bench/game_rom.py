"""A game-like benchmark ROM that never HALTs: banked tables, entities, OAM DMA, LCD polls.

``bench/busy_rom.py`` is one tight loop; this ROM runs the kinds of work a game's main
loop does, in one loop that never waits in HALT, on an MBC1 cartridge of 8 ROM banks
(128 KiB). Each pass of ``MainLoop``:

* ``PollLcd`` reads LY and STAT into a hash;
* ``PlayerInput`` sets entity 0's velocity from the buttons the VBlank handler read;
* ``UpdateEntities`` maps the pass's level bank (2-7, from ``LevelBanks``) and moves 8
  entities (8-byte structs in WRAM: x, y as 8.8 fixed point, signed vx, vy, tile,
  flags): 16-bit ``add hl,de`` / ``add hl,bc`` with sign-extended velocities, bounces
  off the screen edges, a level-map read from banked ROM at a computed address
  ($4000 + row * 32 + column) and a metatile-attribute table lookup there (solid:
  bounce; the attribute also sets the sprite tile); one LY poll per entity;
* ``RunAi`` dispatches each entity by its kind through a jump table (``rst $00`` is
  ``jp hl``): a frame counter, a chaser that steers toward entity 0 (signed clamps),
  gravity with a floor bounce, and a sine-table velocity (ROM0 table lookup);
* ``FarCall`` maps bank 1 and calls ``BankedMix`` there (code running from banked
  ROM), which sums 32 words of a bank-1 table at strided computed addresses and
  keeps the larger of that and a WRAM hash (16-bit compare), then maps the level
  bank back;
* ``Sum16`` runs a 16-bit prefix-sum loop over 32 words of WRAM (``add hl,de``,
  ``inc hl``, a ``dec bc`` / ``ld a,b`` / ``or c`` loop test, a threshold test on the
  running sum's high byte);
* ``DrawRow`` copies 8 bytes of the level map from banked ROM into the BG map,
  each write after a STAT poll loop waiting for mode 0 or 1;
* ``BuildShadowOam`` writes the 8 entities' sprites into the shadow OAM in WRAM;
* counters and the camera (SCX) are updated and the next level bank is chosen.

Every ``SetBank`` records the bank in ``wBanksSeen`` (bit per bank) and counts in
``wBankSwitches``. The LCD is on (BG and sprites), IE = VBlank with IME on; the
VBlank handler runs the OAM DMA from an HRAM routine, counts DMAs in ``wDmaCount``,
writes SCX and reads the joypad. All data (tiles, level maps, attributes, tables) is
generated here by a fixed LCG, so the ROM is the same on every build; the run depends
only on the buttons. ``python -m bench.sweep --rom game``.
"""

from __future__ import annotations

import math
from pathlib import Path

from gbxcule.asm import build_rom
from gbxcule.asm.routines import ASM_ROUTINES, OAM_DMA_ROUTINE, db_lines
from gbxcule.files import write_atomic

ROM_BANKS = 8
LEVEL_BANKS = (2, 3, 4, 5, 6, 7)
NUM_ENTITIES = 8
ENTITY_SIZE = 8
NUM_TILES = 16
NUM_METATILES = 16
SUM16_WORDS = 32
MIX_WORDS = 128

# WRAM: shadow OAM (page aligned, the DMA source), entities, variables, scratch words.
W_SHADOW_OAM = 0xC000
W_ENTITIES = 0xC100
W_VARS = 0xC200
W_SCRATCH = 0xC300
H_DMA = 0xFF80
LEVEL_MAP = 0x4000  # 32 x 32 metatile ids in every level bank
META_ATTR = 0x4400  # 4 bytes per metatile: flags (bit 0 solid), tile, score, 0
WORD_TABLE = 0x4100  # bank 1, after BankedMix


def _lcg(seed: int):
    """A fixed 31-bit LCG: the same bytes on every Python and NumPy version."""
    x = seed
    while True:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        yield (x >> 16) & 0xFF


def tile_data() -> bytes:
    """16 tiles of 2bpp pixels; tile 0 is blank."""
    rng = _lcg(0x7111)
    return bytes(16) + bytes(next(rng) for _ in range((NUM_TILES - 1) * 16))


def level_map(bank: int) -> bytes:
    """Bank ``bank``'s 32 x 32 map: a solid floor from row 18, random metatiles above."""
    rng = _lcg(0x1E7E1 + bank)
    out = bytearray()
    for row in range(32):
        for _ in range(32):
            r = next(rng)
            if row >= 18:
                out.append(1)
            elif r < 48:
                out.append(2 + r % (NUM_METATILES - 2))
            else:
                out.append(0)
    return bytes(out)


def meta_attrs(bank: int) -> bytes:
    """Per metatile: flags (bit 0: solid; 1 and the odd ids), sprite tile, score, 0."""
    out = bytearray()
    for k in range(NUM_METATILES):
        solid = 1 if k == 1 or (k >= 2 and k % 2 == 1) else 0
        out += bytes([solid, (k * 5 + bank) % NUM_TILES, (k * 7 + bank * 3) & 0xFF, 0])
    return bytes(out)


def spawn_table() -> bytes:
    """The entities at reset: x, y (8.8), vx, vy, tile, flags (kind = flags & 3)."""
    out = bytearray()
    for k in range(NUM_ENTITIES):
        vx = (8 + 3 * k) * (1 if k % 2 == 0 else -1)
        vy = (5 + 2 * k) * (-1 if k % 3 == 0 else 1)
        out += bytes([0, 24 + 16 * k, 0x80, 32 + 12 * k, vx & 0xFF, vy & 0xFF, k, k & 3])
    return bytes(out)


def sine_table() -> bytes:
    return bytes(round(20 * math.sin(2 * math.pi * k / 64)) & 0xFF for k in range(64))


def word_table() -> bytes:
    rng = _lcg(0x3A11)
    return bytes(next(rng) for _ in range(2 * MIX_WORDS))


_LEVEL_SECTIONS = "\n".join(
    f'SECTION "level_{b}", ROMX[${LEVEL_MAP:04X}], BANK[{b}]\n{db_lines(level_map(b))}\n'
    f'SECTION "attrs_{b}", ROMX[${META_ATTR:04X}], BANK[{b}]\n{db_lines(meta_attrs(b))}'
    for b in LEVEL_BANKS
)

# SM83 source of the game-like benchmark ROM (module doc).
GAME_SOURCE = f"""
SECTION "rst0", ROM0[$0000]
JumpHL:                     ; rst $00: jump to HL (the jump tables' dispatch)
    jp hl

SECTION "vblank_vector", ROM0[$0040]
    jp VBlankIsr

SECTION "shadow_oam", WRAM0[${W_SHADOW_OAM:04X}]
wShadowOam: ds 160
SECTION "entities", WRAM0[${W_ENTITIES:04X}]
wEnt: ds {NUM_ENTITIES * ENTITY_SIZE}
SECTION "vars", WRAM0[${W_VARS:04X}]
wIter: ds 2
wDmaCount: ds 2
wHash: ds 2
wSum: ds 2
wDrawPtr: ds 2
wBankSwitches: ds 2
wBanksSeen: ds 1
wCurBank: ds 1
wLevelBank: ds 1
wJoy: ds 1
wScroll: ds 1
wLyHash: ds 1
wAttr0: ds 1
wAttr1: ds 1
SECTION "scratch", WRAM0[${W_SCRATCH:04X}]
wScratch: ds {2 * SUM16_WORDS}

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld d, 0
    ld hl, ${W_SHADOW_OAM:04X}
    ld bc, $0400            ; shadow OAM, entities, variables, scratch
    call MemFill
    ld hl, $FE00
    ld bc, 160
    call MemFill
    ld hl, TileData
    ld de, $8000
    ld bc, {NUM_TILES * 16}
    call MemCopy
    ld a, {LEVEL_BANKS[0]}
    ld [wLevelBank], a
    call SetBank
    ld hl, {LEVEL_MAP}
    ld de, $9800
    ld bc, $0400
    call MemCopy
    ld hl, DmaRoutine
    ld de, ${H_DMA:04X}
    ld bc, DmaRoutineEnd - DmaRoutine
    call MemCopy
    ld hl, SpawnTable
    ld de, wEnt
    ld bc, {NUM_ENTITIES * ENTITY_SIZE}
    call MemCopy
    ld a, $E4
    ldh [$47], a            ; BGP
    ldh [$48], a            ; OBP0
    ld a, $93               ; LCD on, tiles at $8000, sprites on, BG on
    ldh [$40], a
    xor a
    ldh [$0F], a
    ld a, $01               ; IE: VBlank
    ldh [$FF], a
    ei

MainLoop:
    call PollLcd
    call PlayerInput
    call UpdateEntities
    call RunAi
    ld b, BANK(BankedMix)
    ld hl, BankedMix
    call FarCall
    call Sum16
    call DrawRow
    call BuildShadowOam
    ld a, [wEnt + 1]        ; camera follows entity 0
    sub 80
    ld [wScroll], a
    ld hl, wIter
    inc [hl]
    jr nz, .sameHigh
    inc hl
    inc [hl]
.sameHigh:
    ld a, [wIter]
    and 7
    ld c, a
    ld b, 0
    ld hl, LevelBanks
    add hl, bc
    ld a, [hl]
    ld [wLevelBank], a
    jp MainLoop

SetBank:                    ; map ROM bank A (1-7) at $4000; HL, DE kept
    ld [wCurBank], a
    ld [$2000], a
    push bc
    ld b, a
    ld a, 1
.mask:
    add a, a
    dec b
    jr nz, .mask
    ld b, a
    ld a, [wBanksSeen]
    or b
    ld [wBanksSeen], a
    ld a, [wBankSwitches]
    add a, 1
    ld [wBankSwitches], a
    ld a, [wBankSwitches + 1]
    adc a, 0
    ld [wBankSwitches + 1], a
    pop bc
    ret

FarCall:                    ; call HL in bank B, then map the caller's bank back
    ld a, [wCurBank]
    push af
    ld a, b
    call SetBank
    rst $00
    pop af
    jp SetBank

PollLcd:
    ldh a, [$44]
    ld b, a
    ldh a, [$41]
    and 3
    xor b
    ld hl, wLyHash
    add a, [hl]
    ld [hl], a
    ret

PlayerInput:                ; buttons (wJoy) steer entity 0
    ld a, [wJoy]
    ld b, a
    ld hl, wEnt + 4
    bit 0, b
    jr z, .notRight
    ld [hl], 20
.notRight:
    bit 1, b
    jr z, .notLeft
    ld [hl], -20
.notLeft:
    inc hl
    bit 2, b
    jr z, .notUp
    ld [hl], -20
.notUp:
    bit 3, b
    jr z, .notDown
    ld [hl], 20
.notDown:
    bit 4, b
    ret z
    ld [hl], -40
    ret

UpdateEntities:
    ld a, [wLevelBank]
    call SetBank
    ld hl, wEnt
    ld c, {NUM_ENTITIES}
.entity:
    push bc
    push hl
    ld a, [hl+]
    ld e, a
    ld a, [hl+]
    ld d, a                 ; DE = x (8.8)
    ld a, [hl+]
    ld c, a
    ld a, [hl+]
    ld b, a                 ; BC = y (8.8)
    ld a, [hl+]             ; vx; HL -> vy
    push hl
    ld l, a
    add a, a
    sbc a, a
    ld h, a                 ; HL = vx sign-extended
    add hl, de
    ld d, h
    ld e, l
    pop hl
    ld a, [hl]              ; vy
    push hl
    ld l, a
    add a, a
    sbc a, a
    ld h, a
    add hl, bc
    ld b, h
    ld c, l
    pop hl                  ; HL -> vy
    ld a, d
    cp 8
    jr c, .flipX
    cp 160
    jr c, .xOk
.flipX:
    dec hl
    ld a, [hl]
    cpl
    inc a
    ld [hl+], a
.xOk:
    ld a, b
    cp 16
    jr c, .flipY
    cp 152
    jr c, .yOk
.flipY:
    ld a, [hl]
    cpl
    inc a
    ld [hl], a
.yOk:
    ldh a, [$44]            ; updated during VBlank: a point
    cp 144
    jr c, .noBonus
    ld a, [wHash]
    inc a
    ld [wHash], a
.noBonus:
    push hl
    ld a, b                 ; level map at $4000 + (y >> 3) * 32 + (x >> 3)
    and $F8
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    ld a, d
    rrca
    rrca
    rrca
    and $1F
    add a, l
    ld l, a
    ld a, h
    adc a, HIGH({LEVEL_MAP})
    ld h, a
    ld a, [hl]              ; metatile id (banked ROM)
    and {NUM_METATILES - 1}
    add a, a
    add a, a
    ld l, a
    ld h, HIGH({META_ATTR})
    ld a, [hl+]
    ld [wAttr0], a
    ld a, [hl+]
    ld [wAttr1], a
    ld a, [wHash + 1]
    add a, [hl]             ; score
    ld [wHash + 1], a
    pop hl                  ; -> vy
    ld a, [wAttr0]
    bit 0, a
    jr z, .notSolid
    ld a, [hl]
    cpl
    inc a
    ld [hl], a
.notSolid:
    inc hl
    ld a, [wAttr1]
    ld [hl], a              ; tile
    pop hl                  ; entity base
    ld a, e
    ld [hl+], a
    ld a, d
    ld [hl+], a
    ld a, c
    ld [hl+], a
    ld a, b
    ld [hl+], a
    ld de, {ENTITY_SIZE - 4}
    add hl, de
    pop bc
    dec c
    jp nz, .entity
    ret

RunAi:                      ; each entity's handler by kind (flags & 3), DE = entity
    ld hl, wEnt
    ld c, {NUM_ENTITIES}
.loop:
    push bc
    push hl
    ld de, 7
    add hl, de
    ld a, [hl]
    and 3
    add a, a
    ld e, a
    ld d, 0
    ld hl, AiTable
    add hl, de
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    pop de
    push de
    rst $00
    pop hl
    ld de, {ENTITY_SIZE}
    add hl, de
    pop bc
    dec c
    jr nz, .loop
    ret

AiWalker:                   ; count in the flags' upper bits
    ld hl, 7
    add hl, de
    ld a, [hl]
    add a, 4
    ld [hl], a
    ret

AiChaser:                   ; steer vx toward entity 0's x, at most 24 either way
    ld h, d
    ld l, e
    inc hl
    ld a, [wEnt + 1]
    sub [hl]
    inc hl
    inc hl
    inc hl
    ld a, [hl]
    jr c, .left
    xor $80
    cp $80 + 24
    ret nc
    inc [hl]
    ret
.left:
    xor $80
    cp $80 - 23
    ret c
    dec [hl]
    ret

AiJumper:                   ; gravity on vy (at most 40), a jump off the floor line
    ld hl, 5
    add hl, de
    ld a, [hl]
    add a, 2
    ld b, a
    xor $80
    cp $80 + 40
    jr c, .store
    ld b, 40
.store:
    ld [hl], b
    ld hl, 3
    add hl, de
    ld a, [hl]
    cp 136
    ret c
    ld hl, 5
    add hl, de
    ld [hl], -36
    ret

AiSine:                     ; vx from the sine table, phase = pass + entity address
    ld a, [wIter]
    add a, e
    and 63
    ld c, a
    ld b, 0
    ld hl, SineTable
    add hl, bc
    ld a, [hl]
    ld hl, 4
    add hl, de
    ld [hl], a
    ret

Sum16:                      ; word[k] = word[k] + running + 1; running = that, kept < $C000
    ld hl, wScratch
    ld de, 0
    ld bc, {SUM16_WORDS}
.loop:
    push bc
    ld a, [hl+]
    ld c, a
    ld a, [hl-]
    ld b, a
    push hl
    ld h, b
    ld l, c
    add hl, de
    inc hl
    ld d, h
    ld e, l
    pop hl
    ld a, e
    ld [hl+], a
    ld a, d
    ld [hl+], a
    ld a, d
    cp $C0
    jr c, .ok
    res 7, d
.ok:
    pop bc
    dec bc
    ld a, b
    or c
    jr nz, .loop
    ld a, e
    ld [wSum], a
    ld a, d
    ld [wSum + 1], a
    ret

DrawRow:                    ; 8 level-map bytes (banked ROM) to the BG map, in mode 0/1
    ld a, [wDrawPtr]
    ld e, a
    ld a, [wDrawPtr + 1]
    ld d, a
    ld b, 8
.loop:
    ld l, e
    ld a, d
    add a, HIGH({LEVEL_MAP})
    ld h, a
    ld c, [hl]
    ld a, d
    add a, $98
    ld h, a
.wait:
    ldh a, [$41]
    and 2
    jr nz, .wait
    ld [hl], c
    inc de
    ld a, d
    and 3
    ld d, a
    dec b
    jr nz, .loop
    ld a, e
    ld [wDrawPtr], a
    ld a, d
    ld [wDrawPtr + 1], a
    ret

BuildShadowOam:
    ld hl, wEnt
    ld de, wShadowOam
    ld c, {NUM_ENTITIES}
.loop:
    inc hl
    ld a, [hl+]             ; x
    ld b, a
    inc hl
    ld a, [hl+]             ; y
    ld [de], a
    inc de
    ld a, b
    ld [de], a
    inc de
    inc hl
    inc hl
    ld a, [hl+]             ; tile
    ld [de], a
    inc de
    ld a, [hl+]             ; flags: bit 5 = x flip
    and $20
    ld [de], a
    inc de
    dec c
    jr nz, .loop
    ret

VBlankIsr:
    push af
    push bc
    push hl
    call ${H_DMA:04X}
    ld hl, wDmaCount
    inc [hl]
    jr nz, .counted
    inc hl
    inc [hl]
.counted:
    ld a, [wScroll]
    ldh [$43], a
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
    ldh a, [$00]
    cpl
    and $0F
    swap a
    or b
    ld [wJoy], a
    ld a, $30
    ldh [$00], a
    pop hl
    pop bc
    pop af
    reti

{OAM_DMA_ROUTINE}
{ASM_ROUTINES}

SECTION "tables", ROM0
AiTable:
    dw AiWalker, AiChaser, AiJumper, AiSine
LevelBanks:
    db {", ".join(str(LEVEL_BANKS[k % len(LEVEL_BANKS)]) for k in (0, 1, 2, 3, 4, 5, 2, 4))}
SpawnTable:
{db_lines(spawn_table())}
SineTable:
{db_lines(sine_table())}
TileData:
{db_lines(tile_data())}

SECTION "banked_code", ROMX[$4000], BANK[1]
BankedMix:                  ; sum 32 strided words of WordTable; wHash = max(wHash, sum) + 1
    ld a, [wIter]
    and {MIX_WORDS - 1}
    ld c, a
    ld de, 0
    ld b, 32
.loop:
    ld l, c
    ld h, 0
    add hl, hl
    push de
    ld de, WordTable
    add hl, de
    pop de
    ld a, [hl+]
    add a, e
    ld e, a
    ld a, [hl]
    adc a, d
    ld d, a
    ld a, c
    add a, 37
    and {MIX_WORDS - 1}
    ld c, a
    dec b
    jr nz, .loop
    ld hl, wHash
    ld a, [hl+]
    ld h, [hl]
    ld l, a
    ld a, l
    sub e
    ld a, h
    sbc a, d
    jr nc, .keep
    ld h, d
    ld l, e
.keep:
    inc hl
    ld a, l
    ld [wHash], a
    ld a, h
    ld [wHash + 1], a
    ret

SECTION "word_table", ROMX[${WORD_TABLE:04X}], BANK[1]
WordTable:
{db_lines(word_table())}

{_LEVEL_SECTIONS}
"""


def game_rom_bytes() -> bytes:
    return build_rom(GAME_SOURCE, title="GBXGAME", cart_type="MBC1", rom_banks=ROM_BANKS)


# The music variant (``game-music``): the same game with a music engine in the VBlank
# handler, as games have one: every frame it reads NR52 (which channels still play),
# writes NR50/NR51/NR52 and all four channels' registers from a note table (23 writes),
# retriggering channel 1 every 8 frames, channel 2 every 12, channel 3 every 16 and the
# noise channel every 4, with length counters on so channels also stop by themselves.
MUSIC_ENGINE = """
MusicTick:                  ; keeps DE; the VBlank handler saved AF, BC, HL
    ldh a, [$26]
    ld [wMusicSeen], a
    ld a, $80
    ldh [$26], a
    ld a, $77
    ldh [$24], a
    ld a, $FF
    ldh [$25], a
    ld hl, wMusicFrame
    inc [hl]
    ld a, [hl]
    ld c, a                 ; C = frame
    rrca
    rrca
    rrca
    and $0F                 ; note = frame / 8 mod 16
    add a, a
    ld l, a
    ld h, HIGH(MusicNotes)
    ld a, [hl+]
    ld b, [hl]              ; B:A = the note's period
    ldh [$13], a
    ldh [$18], a
    ldh [$1D], a
    ld a, $15
    ldh [$10], a            ; sweep: pace 1, up, shift 5
    ld a, $B0
    ldh [$11], a            ; duty 2, length 48
    ldh [$16], a
    ld a, $F3
    ldh [$12], a            ; volume 15, down, pace 3
    ld a, $A5
    ldh [$17], a
    ld a, c
    and $07
    ld a, b
    jr nz, .no1
    or $C0                  ; trigger, length on
.no1:
    ldh [$14], a
    ld a, c
    and $0B
    ld a, b
    jr nz, .no2
    or $C0
.no2:
    ldh [$19], a
    ld a, $80
    ldh [$1A], a            ; channel 3 DAC on
    ld a, $C0
    ldh [$1B], a
    ld a, $20
    ldh [$1C], a
    ld a, c
    and $0F
    ld a, b
    jr nz, .no3
    or $C0
.no3:
    ldh [$1E], a
    ld a, $3A
    ldh [$20], a
    ld a, $C1
    ldh [$21], a
    ld a, c
    and $3F
    ldh [$22], a
    ld a, c
    and $03
    ld a, $00
    jr nz, .no4
    ld a, $C0
.no4:
    ldh [$23], a
    ret
"""

MUSIC_DATA = """
SECTION "music_notes", ROM0[$3E00]
MusicNotes:
    dw $0416, $0483, $04E5, $053B, $0563, $05AC, $05ED, $060A
    dw $0642, $0672, $069E, $06B2, $06D6, $06F7, $0706, $0721
SECTION "music_vars", WRAM0[$C280]
wMusicFrame: ds 1
wMusicSeen: ds 1
"""

MUSIC_SOURCE = (
    GAME_SOURCE.replace(
        "VBlankIsr:\n    push af\n    push bc\n    push hl\n",
        "VBlankIsr:\n    push af\n    push bc\n    push hl\n    call MusicTick\n",
    ).replace("DmaRoutine:", MUSIC_ENGINE + "\nDmaRoutine:", 1)
    + MUSIC_DATA
)


def game_music_rom_bytes() -> bytes:
    return build_rom(MUSIC_SOURCE, title="GBXMUSIC", cart_type="MBC1", rom_banks=ROM_BANKS)


OUT_DIR = Path(__file__).resolve().parent / "roms" / "out"


def game_rom_path(music: bool = False) -> Path:
    """``bench/roms/out/game_bench.gb`` (``game_music_bench.gb`` with the music engine),
    assembled from its source when it differs."""
    data = game_music_rom_bytes() if music else game_rom_bytes()
    path = OUT_DIR / ("game_music_bench.gb" if music else "game_bench.gb")
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data)
    return path
