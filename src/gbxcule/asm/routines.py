"""SM83 routines shared by the bundled games and the PPU micro ROMs, included as text
in a program's source: LcdOff, MemCopy, MemFill."""

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
