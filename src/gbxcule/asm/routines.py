"""SM83 routines shared by the bundled games and the benchmark and micro ROMs, included as
text in a program's source: LcdOff, MemCopy, MemFill (:data:`ASM_ROUTINES`), the OAM DMA
routine copied to HRAM (:data:`OAM_DMA_ROUTINE`, its program names ``wShadowOam``) and a
xorshift16 generator (:data:`XORSHIFT16_RNG`, its program names ``wRng``); and
:func:`db_lines`, data as ``db`` lines of source."""


def db_lines(data: bytes, per_line: int = 16) -> str:
    """``db`` lines holding ``data``, ``per_line`` bytes a line."""
    return "\n".join(
        "    db " + ", ".join(f"${b:02X}" for b in data[i : i + per_line])
        for i in range(0, len(data), per_line)
    )


ASM_ROUTINES = """
LcdOff:                     ; only ever switch the LCD off during VBlank
    ldh a, [$40]
    bit 7, a
    ret z
.wait:
    ldh a, [$44]
    cp 144
    jr c, .wait
    xor a
    ldh [$40], a
    ret

MemCopy:                    ; BC (> 0) bytes from HL to DE
    ld a, [hl+]
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, MemCopy
    ret

MemFill:                    ; BC (> 0) bytes at HL = D
    ld a, d
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, MemFill
    ret
"""

# Copied to HRAM by its program (DmaRoutine..DmaRoutineEnd): the CPU may only touch HRAM
# while the 160-byte DMA runs.
OAM_DMA_ROUTINE = """
DmaRoutine:
    ld a, HIGH(wShadowOam)
    ldh [$46], a
    ld a, 40
.wait:
    dec a
    jr nz, .wait
    ret
DmaRoutineEnd:
"""

XORSHIFT16_RNG = """
; xorshift16 (7, 9, 8) on wRng; returns B = low byte, C = high byte. Clobbers A, HL.
Rng:
    ld a, [wRng]
    ld l, a
    ld a, [wRng + 1]
    ld h, a
    rra
    ld a, l
    rra
    xor h
    ld h, a
    ld a, l
    rra
    ld a, h
    rra
    xor l
    ld l, a
    xor h
    ld h, a
    ld a, l
    ld [wRng], a
    ld b, a
    ld a, h
    ld [wRng + 1], a
    ld c, a
    ret
"""
