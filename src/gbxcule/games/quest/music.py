"""Quest's music engine (ROM0) and song (its own bank).

Every frame the engine reads NR52 (which channels still sound), writes NR50-NR52 and,
for each channel with a note in the song's current row, its registers: NR10 and NR13/NR14
(with a vibrato while channel 1 still sounds), NR21/NR23/NR24, NR30/NR32/NR33/NR34,
NR43/NR44; a row's first frame also triggers its notes (NR11/NR12, NR22, NR31,
NR41/NR42). Channel 1 and the drums stop by their length counters, which the engine sees
through NR52. A row lasts ``ROW_FRAMES``; the song is 64 rows and loops. The engine maps
the music bank and maps the game's bank (``wBank``) back before it returns.
"""

from __future__ import annotations

import functools

from gbxcule.asm.routines import db_lines
from gbxcule.games.quest import layout as L

ROW_FRAMES = 8
SONG_ROWS = 64
NOTES = 36  # C3..B5; note n (1..36) is 2**((n - 1) / 12) times C3
KICK, SNARE, HAT = 0x51, 0x34, 0x12  # NR43 values of the drums


def note_periods() -> list[int]:
    return [round(2048 - 131072 / (130.8128 * 2 ** (n / 12))) for n in range(NOTES)]


@functools.cache
def song() -> bytes:
    """64 rows x (melody, harmony, bass, drum); notes 1..36, 0 = nothing this row."""
    scale = (0, 2, 4, 5, 7, 9, 11)
    chords = (0, 5, 3, 4)  # I, vi, IV, V as scale degrees
    melody = (4, 2, 0, 2, 4, 4, 4, 0, 2, 2, 2, 0, 4, 6, 6, 0)
    out = bytearray()
    for row in range(SONG_ROWS):
        root = chords[row // 16]

        def note(degree: int, octave: int, root: int = root) -> int:
            d = degree + root
            return 1 + 12 * (octave + d // 7) + scale[d % 7]

        m = melody[row % 16]
        lead = note(m, 1) if row % 8 != 7 else 0
        harmony = note(m - 2, 1) if row % 2 == 0 else 0
        bass = note(0, 0) if row % 4 == 0 else note(4, 0) if row % 4 == 2 else 0
        drum = KICK if row % 4 == 0 else SNARE if row % 4 == 2 else HAT
        out += bytes((lead, harmony, bass, drum))
    return bytes(out)


def music_bank_source() -> str:
    periods = ", ".join(f"${p:04X}" for p in note_periods())
    rows = db_lines(song())
    return f"""
SECTION "music", ROMX[$4000], BANK[{L.MUSIC_BANK}]
NoteTable:
    dw {periods}
Song:
{rows}
"""


MUSIC_SOURCE = f"""
InitSound:                  ; APU on, the wave channel's samples (a triangle)
    ld a, $80
    ldh [$26], a
    xor a
    ldh [$1A], a
    ld hl, WaveTable
    ld c, $30
.wave:
    ld a, [hl+]
    ldh [c], a
    inc c
    ld a, c
    cp $40
    jr nz, .wave
    ret

WaveTable:
    db $01, $23, $45, $67, $89, $AB, $CD, $EF, $FE, $DC, $BA, $98, $76, $54, $32, $10

MusicTick:
    ldh a, [$26]
    ld [wMusicNr52], a
    ld a, $80
    ldh [$26], a
    ld a, $77
    ldh [$24], a
    ld a, [wMusicRow]
    and $10
    ld a, $FF
    jr z, .pan
    ld a, $ED
.pan:
    ldh [$25], a
    ld a, MUSIC_BANK
    ld [$2000], a
    ld a, [wMusicTick]
    and a
    ld a, 0
    jr nz, .held
    ld a, $80
.held:
    ld [wMusicTrig], a
    ld a, [wMusicRow]
    ld l, a
    ld h, 0
    add hl, hl
    add hl, hl
    ld de, Song
    add hl, de
    call Ch1
    call Ch2
    call Ch3
    call Ch4
    ld hl, wMusicTick
    inc [hl]
    ld a, [hl]
    cp {ROW_FRAMES}
    jr nz, .done
    ld [hl], 0
    ld hl, wMusicRow
    ld a, [hl]
    inc a
    and {SONG_ROWS - 1}
    ld [hl], a
.done:
    ld a, [wBank]
    ld [$2000], a
    ret

NotePeriod:                 ; A = note (0: none, Z) -> DE = its period, NZ; keeps HL
    and a
    ret z
    push hl
    add a, a
    ld e, a
    ld d, 0
    ld hl, NoteTable - 2
    add hl, de
    ld e, [hl]
    inc hl
    ld d, [hl]
    pop hl
    ld a, [wMusicNotes]
    inc a
    ld [wMusicNotes], a
    or 1
    ret

Ch1:                        ; HL = the row's melody note; returns HL + 1
    xor a
    ldh [$10], a
    ld a, [hl+]
    call NotePeriod
    ret z
    ld a, [wMusicTrig]
    and a
    jr z, .sounding
    ld a, $A0
    ldh [$11], a
    ld a, $C3
    ldh [$12], a
    jr .write
.sounding:
    ld a, [wMusicNr52]
    and $01
    ret z
    ld a, [wMusicTick]
    and $02
    jr z, .write
    inc e
.write:
    ld a, e
    ldh [$13], a
    ld a, [wMusicTrig]
    or $40
    or d
    ldh [$14], a
    ret

Ch2:
    ld a, $40
    ldh [$16], a
    ld a, [hl+]
    call NotePeriod
    ret z
    ld a, [wMusicTrig]
    and a
    jr z, .write
    ld a, $84
    ldh [$17], a
.write:
    ld a, e
    ldh [$18], a
    ld a, [wMusicTrig]
    or d
    ldh [$19], a
    ret

Ch3:
    ld a, $80
    ldh [$1A], a
    ld a, $20
    ldh [$1C], a
    ld a, [hl+]
    call NotePeriod
    ret z
    ld a, [wMusicTrig]
    and a
    jr z, .write
    xor a
    ldh [$1B], a
.write:
    ld a, e
    ldh [$1D], a
    ld a, [wMusicTrig]
    or d
    ldh [$1E], a
    ret

Ch4:
    ld a, [hl+]
    and a
    ret z
    ldh [$22], a
    ld a, [wMusicTrig]
    and a
    jr z, .held
    ld a, $38
    ldh [$20], a
    ld a, $A1
    ldh [$21], a
.held:
    ld a, [wMusicTrig]
    or $40
    ldh [$23], a
    ret
"""
