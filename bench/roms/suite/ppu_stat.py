"""LY/LYC/STAT micro ROMs: what the CPU sees of the PPU's timing, kept in WRAM.

* ppu_ly_lyc_poll: polls LY/STAT for three frames and records, per LY value,
  that it was seen, the LYC=LY flag values and the modes seen.
* ppu_stat_irq_sources: seven phases of three frames, each with its own STAT
  interrupt sources; the handler counts interrupts per LY. Covers modes 0, 1
  and 2, LYC on a visible and on a VBlank line, and two cases of STAT
  blocking from Pan Docs ("Interrupt Sources"): mode 0 + mode 1 (no mode-1
  interrupt) and mode 0 + LYC on the line after an HBlank (no LYC interrupt).
* ppu_irq_order: logs (source, LY, STAT & 7) of every VBlank/STAT interrupt
  for three frames with LYC=40 and the mode-1 source enabled.

Excluded on purpose (Pan Docs is silent and hardware differs from PyBoy):
anything on line 153 or LY=0 during it, the mode-2 source at line 144, and
STAT read at the very first dots of a line.
"""

from __future__ import annotations

import numpy as np

from bench.roms.spec import RomSpec
from bench.roms.suite.ppu_common import ASM_HELPERS
from gbxcule.asm import build_rom
from gbxcule.backends.protocol import Backend

# STAT_FIRST_READ_NOTE: PyBoy reports mode 0 on the first STAT read after the LCD is
# switched on when LYC was written while it was off (our boot ROM does both), however
# late that read comes. Every ROM here reads STAT once at start, before measuring.
W_DONE = 0xC000  # $AA once the ROM has finished recording
DONE = 0xAA

# ---- ppu_ly_lyc_poll ----
POLL_LYC = 77
SEEN_PAGE = 0xC100  # [LY] = 1 when LY was read (between two equal LY reads)
FLAG_PAGE = 0xC200  # [LY] |= 1 when STAT.2 read 0, |= 2 when it read 1
MODE_PAGE = 0xC300  # [LY] |= 1 << mode

POLL_SOURCE = f"""
SECTION "vars", WRAM0[$C000]
wDone: ds 1
wFrames: ds 1
wPrevLy: ds 1

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    ldh a, [$41]            ; see STAT_FIRST_READ_NOTE
    xor a
    ldh [$FF], a
    ld hl, $C000
    ld bc, $0400
    ld d, 0
    call MemFill
    ld a, {POLL_LYC}
    ldh [$45], a
.sync:
    ldh a, [$44]
    cp 144
    jr nz, .sync
    ld [wPrevLy], a
Poll:
    ldh a, [$44]
    ld b, a
    ldh a, [$41]
    ld c, a
    ldh a, [$44]
    cp b
    jr nz, Poll             ; LY moved between the two reads: sample discarded
    ld h, HIGH({SEEN_PAGE:#06x})
    ld l, b
    ld [hl], 1
    inc h
    ld a, c
    and 4
    ld a, 1
    jr z, .flag
    ld a, 2
.flag:
    or [hl]
    ld [hl], a
    inc h
    ld a, c
    and 3
    ld e, 1
    jr z, .bit
.shift:
    sla e
    dec a
    jr nz, .shift
.bit:
    ld a, e
    or [hl]
    ld [hl], a
    ld a, [wPrevLy]         ; count VBlank entries: LY becomes 144
    cp 144
    ld a, b
    ld [wPrevLy], a
    jr z, Poll
    cp 144
    jr nz, Poll
    ld hl, wFrames
    inc [hl]
    ld a, [hl]
    cp 3
    jr c, Poll
    ld a, {DONE}
    ld [wDone], a
.done:
    jr .done
{ASM_HELPERS}
"""


def _read(backend: Backend, env: int, lo: int, n: int) -> np.ndarray:
    return backend.read_memory(env, lo, lo + n).astype(np.int64)


def _require_done(backend: Backend, env: int, name: str) -> None:
    done = int(backend.read_memory(env, W_DONE, W_DONE + 1)[0])
    if done != DONE:
        raise AssertionError(f"{name}: ROM did not finish (W_DONE={done:#04x})")


def check_poll(backend: Backend, env: int) -> None:
    name = "ppu_ly_lyc_poll"
    _require_done(backend, env, name)
    seen = _read(backend, env, SEEN_PAGE, 256)
    flags = _read(backend, env, FLAG_PAGE, 256)
    modes = _read(backend, env, MODE_PAGE, 256)
    missing = [ly for ly in range(153) if not seen[ly]]
    assert not missing, f"{name}: LY values never read: {missing}"
    beyond = [ly for ly in range(154, 256) if seen[ly]]
    assert not beyond, f"{name}: LY read values above 153: {beyond}"
    assert flags[POLL_LYC] & 2, f"{name}: LYC=LY flag never set while LY={POLL_LYC}"
    wrong = [ly for ly in range(154) if ly != POLL_LYC and seen[ly] and flags[ly] != 1]
    assert not wrong, f"{name}: LYC=LY flag set or missing on LY {wrong} (LYC={POLL_LYC})"
    visible = 0
    for ly in range(1, 144):
        assert modes[ly] & ~0b1101 == 0, f"{name}: mode bits {modes[ly]:04b} on visible LY {ly}"
        visible |= int(modes[ly])
    assert visible == 0b1101, f"{name}: modes seen on visible lines {visible:04b}, want 0,2,3"
    for ly in range(145, 153):
        assert modes[ly] == 0b0010, f"{name}: mode bits {modes[ly]:04b} on VBlank LY {ly}"


# ---- ppu_stat_irq_sources ----
PHASES = (  # (STAT, LYC)
    (0x08, 200),  # 0: mode 0
    (0x20, 200),  # 1: mode 2
    (0x10, 200),  # 2: mode 1
    (0x40, 100),  # 3: LYC on a visible line
    (0x40, 150),  # 4: LYC on a VBlank line
    (0x18, 200),  # 5: mode 0 + mode 1: the mode-1 edge is blocked
    (0x48, 60),  # 6: mode 0 + LYC=60: line 59's HBlank blocks LY=60
)
FRAMES_PER_PHASE = 3
HITS_BASE = 0xC200  # phase k counts interrupts per LY at HITS_BASE + $100 * k


def _phase_table() -> str:
    return "\n".join(f"    db ${s:02X}, {lyc}" for s, lyc in PHASES)


SOURCES_SOURCE = f"""
SECTION "vblank_vector", ROM0[$0040]
    jp VBlank
SECTION "stat_vector", ROM0[$0048]
    jp Stat

SECTION "vars", WRAM0[$C000]
wDone: ds 1
wPhase: ds 1
wLeft: ds 1
wPage: ds 1

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    ldh a, [$41]            ; see STAT_FIRST_READ_NOTE
    xor a
    ldh [$FF], a
    ld hl, $C000
    ld bc, $0A00
    ld d, 0
    call MemFill
    ld a, HIGH({HITS_BASE:#06x}) - 1
    ld [wPage], a           ; page $C1 catches anything before phase 0
    ld a, 1
    ld [wLeft], a           ; the first VBlank starts phase 0
    ldh [$FF], a            ; IE: VBlank
    xor a
    ldh [$0F], a
    ei
.idle:
    halt
    nop
    jr .idle

VBlank:
    push af
    push bc
    push hl
    ld hl, wLeft
    dec [hl]
    call z, NextPhase
    pop hl
    pop bc
    pop af
    reti

; Runs with IME off at the start of VBlank. Our own STAT/LYC writes may raise an
; edge (and DMG's STAT write quirk may too): IF.1 is cleared after them.
NextPhase:
    ld a, 1
    ldh [$FF], a
    ld a, [wPhase]
    cp {len(PHASES)}
    jr nc, .finished
    ld l, a
    ld h, 0
    add hl, hl
    ld bc, PhaseTable
    add hl, bc
    ld a, [hl+]
    ldh [$41], a
    ld a, [hl]
    ldh [$45], a
    ld a, [wPhase]
    add HIGH({HITS_BASE:#06x})
    ld [wPage], a
    ld hl, wPhase
    inc [hl]
    ld a, {FRAMES_PER_PHASE}
    ld [wLeft], a
    ldh a, [$0F]
    and $FD
    ldh [$0F], a
    ld a, 3
    ldh [$FF], a
    ret
.finished:
    xor a
    ldh [$41], a
    ld a, {DONE}
    ld [wDone], a
    ld a, $FF
    ld [wLeft], a
    ret

Stat:
    push af
    push hl
    ld a, [wPage]
    ld h, a
    ldh a, [$44]
    ld l, a
    inc [hl]
    pop hl
    pop af
    reti
{ASM_HELPERS}
PhaseTable:
{_phase_table()}
"""


def expected_hits(stat: int, lyc: int) -> dict[int, int]:
    """Interrupts per LY over one phase; LYs not listed must stay 0, None = not checked.

    Phases start at a VBlank and last three VBlank-to-VBlank windows; IF.1 is
    cleared when a phase starts, so of the edges at LY=144 (coinciding with the
    VBlank interrupt) the phase's first and last are dropped: two remain.
    """
    hits = dict.fromkeys(range(256), 0)
    n = FRAMES_PER_PHASE
    if stat & 0x08:
        for ly in range(144):
            hits[ly] = n
    if stat & 0x20:
        for ly in range(144):
            hits[ly] = n
        hits[144] = None  # mode-2 source at line 144: not in Pan Docs
    if stat & 0x10 and not stat & 0x08:
        hits[144] = n - 1
    if stat & 0x40:
        blocked = stat & 0x08 and lyc < 144
        if not blocked:
            hits[lyc] = n
        else:
            hits[lyc] = 0  # LYC rises right after line lyc-1's HBlank; HBlank lyc is high too
    return hits


def check_sources(backend: Backend, env: int) -> None:
    name = "ppu_stat_irq_sources"
    _require_done(backend, env, name)
    for k, (stat, lyc) in enumerate(PHASES):
        got = _read(backend, env, HITS_BASE + 0x100 * k, 256)
        for ly, want in expected_hits(stat, lyc).items():
            if want is not None and got[ly] != want:
                raise AssertionError(
                    f"{name}: phase {k} (STAT=${stat:02X}, LYC={lyc}): "
                    f"{got[ly]} interrupts at LY={ly}, expected {want}"
                )


# ---- ppu_irq_order ----
ORDER_LYC = 40
LOG_BASE = 0xC100
LOG_ENTRIES = 9
TAG_VBLANK = 1
TAG_STAT = 2

ORDER_SOURCE = f"""
SECTION "vblank_vector", ROM0[$0040]
    push af
    push hl
    ld h, {TAG_VBLANK}
    jp Log
SECTION "stat_vector", ROM0[$0048]
    push af
    push hl
    ld h, {TAG_STAT}
    jp Log

SECTION "vars", WRAM0[$C000]
wDone: ds 1
wIndex: ds 1

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    ldh a, [$41]            ; see STAT_FIRST_READ_NOTE
    xor a
    ldh [$FF], a
    ld hl, $C000
    ld bc, $0200
    ld d, 0
    call MemFill
    ld a, {ORDER_LYC}
    ldh [$45], a
.vblank:                    ; skip the rest of the first frame after the boot ROM's LCD-on
    ldh a, [$44]
    cp 144
    jr nz, .vblank
.sync:
    ldh a, [$44]
    cp 10
    jr nz, .sync
    ld a, $50               ; STAT sources: LYC=LY and mode 1
    ldh [$41], a
    xor a
    ldh [$0F], a
    ld a, 3
    ldh [$FF], a
    ei
.idle:
    halt
    nop
    ld a, [wIndex]
    cp {3 * LOG_ENTRIES}
    jr c, .idle
    ld a, {DONE}
    ld [wDone], a
    jr .idle

; H = source tag; AF and HL pushed by the vector. Appends (tag, LY, STAT & 7)
; quickly enough that a STAT interrupt queued behind VBlank still reads LY=144.
Log:
    ldh a, [$44]
    ld l, a
    ld a, [wIndex]
    cp {3 * LOG_ENTRIES}
    jr nc, .out
    push de
    ld e, a
    ld d, HIGH({LOG_BASE:#06x})
    ld a, h
    ld [de], a
    inc e
    ld a, l
    ld [de], a
    inc e
    ldh a, [$41]
    and 7
    ld [de], a
    inc e
    ld a, e
    ld [wIndex], a
    pop de
.out:
    pop hl
    pop af
    reti
{ASM_HELPERS}
"""


def expected_order() -> list[tuple[int, int, int]]:
    frame = [
        # LYC=LY flag set; STAT is read ~200 dots into the line: past mode 2 (80 dots),
        # inside the shortest mode 3 (172 dots).
        (TAG_STAT, ORDER_LYC, 0x07),
        (TAG_VBLANK, 144, 0x01),
        (TAG_STAT, 144, 0x01),  # mode-1 STAT, served after the higher-priority VBlank
    ]
    return (frame * 3)[:LOG_ENTRIES]


def check_order(backend: Backend, env: int) -> None:
    name = "ppu_irq_order"
    _require_done(backend, env, name)
    raw = _read(backend, env, LOG_BASE, 3 * LOG_ENTRIES)
    got = [tuple(int(v) for v in raw[i : i + 3]) for i in range(0, len(raw), 3)]
    want = expected_order()
    assert got == want, f"{name}: interrupt log {got}, expected {want}"


ROMS = [
    RomSpec(
        name="ppu_ly_lyc_poll",
        description="LY runs 0..152(153), LYC=LY flag only on LYC, STAT modes per line",
        build=lambda: build_rom(POLL_SOURCE, title="PPU LY POLL"),
        check=check_poll,
        steps=8,
        tags=("ppu", "stat"),
    ),
    RomSpec(
        name="ppu_stat_irq_sources",
        description="STAT interrupts per LY for mode 0/1/2 and LYC sources, with STAT blocking",
        build=lambda: build_rom(SOURCES_SOURCE, title="PPU STAT SRC"),
        check=check_sources,
        steps=30,
        tags=("ppu", "stat"),
    ),
    RomSpec(
        name="ppu_irq_order",
        description="order of LYC STAT, VBlank and mode-1 STAT interrupts with STAT values",
        build=lambda: build_rom(ORDER_SOURCE, title="PPU IRQ ORDER"),
        check=check_order,
        steps=8,
        tags=("ppu", "stat"),
    ),
]
