"""Timing stress programs for the lockstep tests (assembled with our own assembler).

Every program shares one frame: interrupt vectors that log each dispatched
interrupt (kind, LY, STAT, DIV, TIMA, IF) to a WRAM ring at $C000-$CFFF through
the pointer at HRAM $FF80, then call the program's ``Hook`` with A = kind. The
lockstep compares all RAM and IO every frame, so any difference in when an
interrupt is taken, or in what a register read returns, shows up as a diff.
"""

from __future__ import annotations

from gbxcule.asm import build_rom

from .emu_memmap_edges import memmap_edges_body
from .emu_timing_programs_dma_halt import (
    DMA_HRAM_DATA,
    DMA_RACE,
    DMA_VRAM_HRAM,
    HALT_EVENTS,
    HALT_QUIRKS,
)
from .emu_timing_programs_stack import STACK_TIMER, STACK_TIMER_EI

FRAME = """
SECTION "rst0", ROM0[$0000]
    jp Rst0
SECTION "vec40", ROM0[$0040]
    push af
    ld a, $01
    jp LogIrq
SECTION "vec48", ROM0[$0048]
    push af
    ld a, $02
    jp LogIrq
SECTION "vec50", ROM0[$0050]
    push af
    ld a, $04
    jp LogIrq
SECTION "vec58", ROM0[$0058]
    push af
    ld a, $08
    jp LogIrq
SECTION "vec60", ROM0[$0060]
    push af
    ld a, $10
    jp LogIrq

SECTION "lib", ROM0[$3000]
LogInit:
    xor a
    ldh [$80], a
    ld a, $C0
    ldh [$81], a
    ret

; Appends A and LY, STAT, DIV, TIMA, IF to the log. Keeps BC, DE, HL.
LogByteAndRegs:
    push hl
    push bc
    ld b, a
    ldh a, [$80]
    ld l, a
    ldh a, [$81]
    ld h, a
    ld a, b
    ld [hl+], a
    ldh a, [$44]
    ld [hl+], a
    ldh a, [$41]
    ld [hl+], a
    ldh a, [$04]
    ld [hl+], a
    ldh a, [$05]
    ld [hl+], a
    ldh a, [$0F]
    ld [hl+], a
    ld a, l
    ldh [$80], a
    ld a, h
    and $0F
    or $C0
    ldh [$81], a
    pop bc
    pop hl
    ret

LogIrq:
    push bc
    ld c, a
    call LogByteAndRegs
    ld a, c
    call Hook
    pop bc
    pop af
    reti
"""


def program(body: str) -> bytes:
    """ROM with ``FRAME`` plus ``body`` (which defines Main at $0150, Hook and Rst0)."""
    return build_rom(FRAME + body)


TIMER_HALT = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    xor a
    ldh [$06], a
    ld a, $05
    ldh [$07], a
    ld a, $04
    ldh [$FF], a
    ld c, 0
    ei
.loop:
    halt
    nop
    inc c
    ld a, c
    and $0F
    jr nz, .loop
    ldh a, [$07]          ; every 16 wakes: next rate, TMA = C, reset DIV
    inc a
    and $03
    or $04
    ldh [$07], a
    ld a, c
    ldh [$06], a
    ldh [$04], a
    jr .loop
Hook:
Rst0:
    ret
"""

# TIMA reloads every 16 cycles (TMA = $FF) while the CPU reads and writes the timer
# in a tight loop: reload states, TIMA writes during reload, TAC/DIV edge increments.
TIMER_BUSY = """
SECTION "main", ROM0[$0150]
Main:
    ld a, $FF
    ldh [$06], a
    ld a, $05
    ldh [$07], a
    ld hl, $C000
    ld e, 0
.loop:
    ldh a, [$05]
    ld [hl+], a
    ldh a, [$0F]
    ld [hl+], a
    ldh a, [$04]
    ld [hl+], a
    inc e
    ld a, e
    and $07
    jr nz, .nowrite
    ld a, e
    ldh [$05], a          ; TIMA write (ignored in reload state 2)
.nowrite:
    ld a, e
    and $1F
    jr nz, .notac
    ldh a, [$07]          ; switch rate: may clock TIMA on the falling edge
    xor $03
    ldh [$07], a
    ldh [$04], a
    ld a, e
    ldh [$06], a
    xor a
    ldh [$0F], a
.notac:
    ld a, h
    cp $D0
    jr nz, .loop
    ld h, $C0
    ld a, $FF
    ldh [$06], a
    jr .loop
Hook:
Rst0:
    ret
"""

# STAT sources and LYC rotate every VBlank; the CPU halts between interrupts.
STAT_ROTATE = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    xor a
    ldh [$82], a
    ld a, $03
    ldh [$FF], a
    ld a, $08
    ldh [$41], a
    ei
.loop:
    halt
    nop
    jr .loop
Hook:
    cp $01
    ret nz
    ldh a, [$82]
    inc a
    ldh [$82], a
    ld e, a
    and $07
    ld hl, Sources
    add a, l
    ld l, a
    ld a, [hl]
    ldh [$41], a
    ld a, e
    add a, a
    add a, e
    cp 154
    jr c, .lyc
    sub 100
.lyc:
    ldh [$45], a
    ret
Rst0:
    ret
Sources:
    db $08, $10, $20, $40, $48, $60, $28, $78
"""

# Switches the LCD off at a varying line, writes LYC while it is off, waits a varying
# time, switches it on and samples STAT/LY right away (first frame after switching on).
LCD_TOGGLE = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld a, $03
    ldh [$FF], a
    ld a, $48
    ldh [$41], a
    ld d, 20
    ei
.loop:
    ldh a, [$44]
    cp d
    jr nz, .loop
    ld a, $11
    ldh [$40], a
    ldh a, [$41]
    call LogByteAndRegs
    ld a, d
    ldh [$45], a
    ld b, d
.wait:
    dec b
    jr nz, .wait
    ld a, $91
    ldh [$40], a
    ldh a, [$41]
    call LogByteAndRegs
    ldh a, [$41]
    call LogByteAndRegs
    ld a, d
    add a, 23
    cp 150
    jr c, .next
    sub 148
.next:
    ld d, a
    ld b, 200
.settle:
    dec b
    jr nz, .settle
    jr .loop
Hook:
Rst0:
    ret
"""

# Serial: polled transfers, a transfer with the serial interrupt and HALT, and an
# external-clock transfer that never completes (then restarted with the internal clock).
SERIAL = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld hl, Text
.send:
    ld a, [hl+]
    or a
    jr z, .irq
    ldh [$01], a
    ld a, $81
    ldh [$02], a
.poll:
    ldh a, [$02]
    bit 7, a
    jr nz, .poll
    jr .send
.irq:
    ld a, $08
    ldh [$FF], a
    ld a, $55
    ldh [$01], a
    ld a, $80
    ldh [$02], a
    ldh a, [$02]
    call LogByteAndRegs
    ld a, $81
    ldh [$02], a
    ei
    halt
    nop
    ldh a, [$01]
    call LogByteAndRegs
.done:
    halt
    nop
    jr .done
Hook:
Rst0:
    ret
Text:
    db "Passed", 10, 0
"""

# Joypad: samples P1 with each select combination and logs joypad interrupts.
JOYPAD = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld a, $11
    ldh [$FF], a
    ld hl, $D000
    ei
.loop:
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    ld [hl+], a
    ld a, $10
    ldh [$00], a
    ldh a, [$00]
    ld [hl+], a
    ld a, $30
    ldh [$00], a
    ldh a, [$00]
    ld [hl+], a
    xor a
    ldh [$00], a
    ldh a, [$00]
    ld [hl+], a
    ld a, h
    cp $E0
    jr nz, .skip
    ld h, $D0
.skip:
    halt
    nop
    jr .loop
Hook:
Rst0:
    ret
"""

# VRAM locking: reads with LD A,[HL] (a cycle-offset access, locked in mode 3) and
# LD B,[HL] (not locked), and writes with LD [DE],A (locked in mode 3), LCD on.
VRAM_LOCK = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $8000
    ld b, 0
.fill:
    ld a, l
    or $01
    ld [hl+], a
    dec b
    jr nz, .fill
    ld hl, $8010
    ld de, $C000
.loop:
    ld a, [hl]
    ld [de], a
    inc de
    ld b, [hl]
    ld a, b
    ld [de], a
    inc de
    push de
    ld d, $80
    ld e, l
    ld a, e
    ld [de], a
    pop de
    inc l
    ld a, d
    cp $D0
    jr nz, .loop
    ld d, $C0
    jr .loop
Hook:
Rst0:
    ret
"""

# Mode 3 length: sprites on varying lines and X, SCX changing every frame; a tight
# STAT sampling loop records when each mode change becomes visible.
MODE3_SPRITES = """
SECTION "main", ROM0[$0150]
Main:
    call LogInit
    ld hl, $FE00
    ld b, 40
    ld c, 20
.oam:
    ld a, c
    ld [hl+], a
    ld a, c
    add a, a
    add a, b
    ld [hl+], a
    ld a, b
    ld [hl+], a
    xor a
    ld [hl+], a
    ld a, c
    add a, 3
    ld c, a
    dec b
    jr nz, .oam
    ld a, $93
    ldh [$40], a
    ld a, $01
    ldh [$FF], a
    ei
.frame:
    ld hl, $C400
.sample:
    ldh a, [$41]
    ld [hl+], a
    ldh a, [$44]
    ld [hl+], a
    ld a, h
    cp $D0
    jr nz, .sample
    jr .frame
Hook:
    ldh a, [$43]
    inc a
    ldh [$43], a
    ldh a, [$40]
    xor $04
    ldh [$40], a
    ret
Rst0:
    ret
"""

PROGRAMS: dict[str, tuple[str, int]] = {
    "timer_halt": (TIMER_HALT, 150),
    "timer_busy": (TIMER_BUSY, 60),
    "stat_rotate": (STAT_ROTATE, 90),
    "lcd_toggle": (LCD_TOGGLE, 120),
    "dma_race": (DMA_RACE, 40),
    "serial": (SERIAL, 20),
    "joypad": (JOYPAD, 120),
    "halt_quirks": (HALT_QUIRKS, 40),
    "vram_lock": (VRAM_LOCK, 30),
    "mode3_sprites": (MODE3_SPRITES, 40),
    "halt_events": (HALT_EVENTS, 30),
    "dma_vram_hram": (DMA_VRAM_HRAM, 30),
    "dma_hram_data": (DMA_HRAM_DATA, 30),
    "stack_timer": (STACK_TIMER, 30),
    "stack_timer_ei": (STACK_TIMER_EI, 30),
    "memmap_edges": (memmap_edges_body(), 6),
}


def random_io_program(seed: int, snippets: int = 160) -> bytes:
    """A random mix of timer/LCD/STAT/IF/IE/DMA/serial accesses, HALTs and delays.

    Register reads are logged to WRAM $D000-$DFFF through DE; interrupts are
    logged by the shared frame. The sequence repeats forever.
    """
    import random

    rng = random.Random(seed)
    store = "    ld [de], a\n    inc de\n    ld a, d\n    and $0F\n    or $D0\n    ld d, a\n"
    writes = {
        0x04: lambda: 0,
        0x05: lambda: rng.choice([0xFE, 0xFF, 0x00, rng.randrange(256)]),
        0x06: lambda: rng.choice([0xC0, 0xE0, rng.randrange(0xE0)]),
        0x07: lambda: rng.choice([0, 1, 2, 3, 4, 6, 7, 4, 6, 7]),
        0x0F: lambda: rng.randrange(32),
        0xFF: lambda: rng.randrange(32),
        0x41: lambda: rng.randrange(256),
        0x42: lambda: rng.randrange(256),
        0x43: lambda: rng.randrange(256),
        0x45: lambda: rng.randrange(154),
        0x4A: lambda: rng.randrange(150),
        0x4B: lambda: rng.randrange(170),
        0x40: lambda: rng.choice([0x91, 0x93, 0x97, 0xB3, 0xF3, 0x91, 0x93, 0x11]),
        0x46: lambda: rng.choice([0xC0, 0xC1, 0xD0, 0xDF, 0x80, 0x00, 0xFE]),
        0x01: lambda: rng.randrange(256),
        0x02: lambda: rng.choice([0x81, 0x80, 0x01, 0x00]),
        0x00: lambda: rng.choice([0x10, 0x20, 0x30, 0x00]),
    }
    reads = (0x04, 0x05, 0x0F, 0x41, 0x44, 0x02, 0x00, 0x07, 0x46, 0x01)
    lines = []
    for k in range(snippets):
        r = rng.random()
        if r < 0.35:
            reg_ = rng.choice(list(writes))
            lines.append(f"    ld a, ${writes[reg_]():02X}\n    ldh [${reg_:02X}], a\n")
        elif r < 0.65:
            lines.append(f"    ldh a, [${rng.choice(reads):02X}]\n" + store)
        elif r < 0.72:
            addr = rng.choice([0x8000, 0x9800, 0xFE00, 0xFE40]) + rng.randrange(0x20)
            op = rng.choice(["ld a, [hl]", "ld b, [hl]\n    ld a, b", "ld [hl], a"])
            lines.append(f"    ld hl, ${addr:04X}\n    {op}\n" + store)
        elif r < 0.78:
            lines.append(
                f"    ld b, {rng.randrange(1, 120)}\n.d{k}:\n    dec b\n    jr nz, .d{k}\n"
            )
        elif r < 0.84:
            ie = rng.choice([0x01, 0x02, 0x05, 0x07, 0x0F, 0x1F]) | 0x04  # the timer wakes HALT
            lines.append(
                f"    ld a, ${ie:02X}\n    ldh [$FF], a\n    ld a, $05\n    ldh [$07], a\n"
            )
            lines.append(rng.choice(["    ei\n    halt\n    nop\n", "    halt\n    nop\n"]))
        elif r < 0.92:
            lines.append(
                rng.choice(["    ei\n", "    di\n", "    ei\n    di\n", "    nop\n    nop\n"])
            )
        else:
            lines.append(
                f"    ld a, [${rng.choice([0x8000, 0xFE00, 0xC000]) + rng.randrange(16):04X}]\n"
                + store
            )
    body = "".join(lines)
    return program(
        'SECTION "main", ROM0[$0150]\nMain:\n    call LogInit\n    ld de, $D000\n'
        f"Body:\n{body}    jp Body\nHook:\nRst0:\n    ret\n"
    )
