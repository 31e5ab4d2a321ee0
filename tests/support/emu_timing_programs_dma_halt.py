"""Timing stress programs around OAM DMA and HALT (bodies for ``emu_timing_programs.program``).

Split from ``emu_timing_programs.py``, which registers them in ``PROGRAMS``.
"""

from __future__ import annotations

# OAM DMA from WRAM run from HRAM, with OAM reads and source writes during the copy,
# and DMA restarts at varying distances.
DMA_RACE = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $C100
    ld b, $A0
    ld a, $11
.fill:
    ld [hl+], a
    add a, 7
    dec b
    jr nz, .fill
    ld hl, Routine
    ld de, $FFB0
    ld b, RoutineEnd - Routine
.copy:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    ld c, 1
.loop:
    ld a, c
    ldh [$90], a
    call $FFB0
    ld hl, $FE00
    ld de, $C400
    ld b, $A0
.snap:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .snap
    inc c
    ld a, c
    and $0F
    ld c, a
    jr nz, .loop
    inc c
    jr .loop
Routine:
    ld a, $C1
    ldh [$46], a
    ldh a, [$90]
    ld b, a
.w1:
    dec b
    jr nz, .w1
    ld hl, $FE10
    ld a, [hl]
    ldh [$91], a
    ld a, b
    ld [$C150], a
    ldh a, [$90]
    cp 8
    jr c, .norestart
    ld a, $C1
    ldh [$46], a
.norestart:
    ld a, 44
.w2:
    dec a
    jr nz, .w2
    ld a, [hl]
    ldh [$92], a
    ret
RoutineEnd:
Hook:
Rst0:
    ret
"""

# HALT corner cases: DI+HALT with a pending interrupt (no dispatch), EI;HALT with a
# pending interrupt (handler returns to the HALT), and an IE write by the interrupt
# push (SP = $0000) that cancels the dispatch (PC = 0 -> Rst0).
HALT_QUIRKS = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld a, $04
    ldh [$FF], a
    ld a, $05
    ldh [$07], a
Round:
    di
    ld a, $04
    ldh [$0F], a
    halt
    inc d
    ld a, d
    call LogByteAndRegs
    ld a, $04
    ldh [$0F], a
    ei
    halt
    inc e
    ld a, e
    call LogByteAndRegs
    di
    ldh a, [$82]
    inc a
    ldh [$82], a
    and $03
    jr nz, Round
    ld sp, $0000
    ld a, $04
    ldh [$FF], a
    ei
.spin:
    jr .spin
Hook:
    ret
Rst0:
    ld sp, $DFF0
    ld a, $EE
    call LogByteAndRegs
    ld a, $04
    ldh [$FF], a
    jp Round
"""

# HALT (IME off) while an OAM DMA or a serial transfer runs, with TIMA counting every 16
# cycles so the log of each wake-up pins it down: the fused halted slices (kernels/step/step.py,
# halt_through_lcd) must leave them to the DMA (whose bytes set the next lines' mode-3
# length: sources $D1 = 40 tall objects, $D2 = none, alternating) and to the serial event.
HALT_EVENTS = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld hl, $D100
    ld b, 40
    ld c, 16
.objects:
    ld a, c
    ld [hl+], a
    ld a, b
    add a, a
    add a, a
    ld [hl+], a
    xor a
    ld [hl+], a
    ld [hl+], a
    ld a, c
    add a, 7
    cp 160
    jr c, .next
    sub 144
.next:
    ld c, a
    dec b
    jr nz, .objects
    ld a, $97
    ldh [$40], a
    ld a, $05
    ldh [$07], a
    ld a, $08
    ldh [$41], a
    ld d, 0
.loop:
    ld a, d
    and $1F
    inc a
.delay:
    dec a
    jr nz, .delay
    ld a, $02
    ldh [$FF], a
    ld a, d
    and $01
    add a, $D1
    ld b, a
    xor a
    ldh [$0F], a
    ld a, b
    ldh [$46], a
    halt
    nop
    ld a, $02
    call LogByteAndRegs
    ld a, $08
    ldh [$FF], a
    ld a, d
    ldh [$01], a
    xor a
    ldh [$0F], a
    ld a, $81
    ldh [$02], a
    halt
    nop
    ld a, $08
    call LogByteAndRegs
    inc d
    jr .loop
Hook:
Rst0:
    ret
"""

# OAM DMA from VRAM while the CPU runs from HRAM: every fetch there catches the DMA up,
# operand bytes with PyBoy's 4-cycle access offset, under which a VRAM source byte moved
# in mode 3 reads $FF. OAM is logged to WRAM after each copy.
DMA_VRAM_HRAM = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $8000
    ld b, $A0
    ld a, 1
.fill:
    ld [hl+], a
    add a, 3
    dec b
    jr nz, .fill
    ld hl, Routine
    ld de, $FFB0
    ld b, RoutineEnd - Routine
.copy:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    ld c, 1
    ld de, $C000
.loop:
    ld a, c
    and $3F
    inc a
.delay:
    dec a
    jr nz, .delay
    call $FFB0
    ld hl, $FE00
    ld b, $A0
.snap:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .snap
    ld a, d
    cp $E0
    jr c, .next
    ld d, $C0
.next:
    inc c
    jr .loop
Routine:
    ld a, $80
    ldh [$46], a
    ld a, 60
.w:
    ld b, 1
    dec a
    jr nz, .w
    ret
RoutineEnd:
Hook:
Rst0:
    ret
"""

# OAM DMA from WRAM while code in ROM reaches HRAM only as data (LDH, and PUSH/POP with
# SP in HRAM): each of those accesses catches the copy up, and the WRAM source bytes
# written after it (some already due) show in OAM whether it did.
DMA_HRAM_DATA = """
SECTION "main", ROM0[$0150]
Main:
    ld sp, $FFFE
    ld c, 1
.loop:
    ld a, c
    ldh [$80], a
    ld hl, $C100
    ld b, 10
    ld a, $C1
    ldh [$46], a
.race:
    ldh a, [$80]
    ld [hl+], a
    push bc
    ld [hl+], a
    pop bc
    ld [hl+], a
    ldh [$81], a
    ld [hl+], a
    inc a
    ldh [$80], a
    dec b
    jr nz, .race
    ld a, c
    and $1F
    inc a
.wait:
    dec a
    jr nz, .wait
    inc c
    jr .loop
Hook:
Rst0:
    ret
"""
