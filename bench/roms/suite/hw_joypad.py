"""Joypad micro-ROMs: P1 select lines, scripted input logs, the joypad interrupt, input hashing.

P1 (Pan Docs, Joypad Input): writing bit 5 = 0 selects the action buttons
(A, B, Select, Start on bits 0-3), bit 4 = 0 the d-pad (Right, Left, Up,
Down); a pressed button reads 0; bits 6-7 read 1. The ROMs always write P1
before reading it, mask the read to bits 0-3 and 6-7, and never select both
groups while buttons are held (see history/pyboy-deviations.md for why).

Input timing rule (PyBoy 2.8.1, matched by every backend; frames counted from
reset, which leaves the CPU at $0100). Step k's buttons (the "buttons" codec
mask) are held during frames ``k*F .. k*F+R-1`` (F = frames_per_step,
R = release_after_frames) and released from frame ``k*F+R`` on. Held means
from the very start of the frame, before its first CPU cycle, so the VBlank
handler of frame f reads exactly ``held_mask(f)``. With R == F the release and
the next step's press land at the same instant: a button pressed in
consecutive steps stays down, but PyBoy still requests the joypad interrupt
again, so the interrupt ROM only uses F = 2, R = 1 (a released frame between
presses). The ROM's first VBlank is in frame 0, so the VBlank count when a
handler runs in frame f is f.

The log ROMs sample P1 in every VBlank handler, wait for the first sample with
a button down, record its frame number, then record ``window`` samples of raw
P1 nibbles and stop; frame number and samples are absolute expectations computed
here from ``inputs`` by :func:`held_mask`. ``hw_joypad_hash`` also folds the
window into a 16-bit hash (h = h * 33 + mask) and scrolls the background by it:
driven with other inputs (per-env actions in the lockstep harness) its WRAM and
screen diverge per env, and its own verdict is then "Failed", as it should be.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.roms.suite._hwlib import HW_ROUTINES, SCRATCH, Probe, byte_probe, hw_spec, probe_rom
from bench.roms.suite._lib import RESULTS_BASE, ResultTable, SelfCheckingRom, db_lines

RIGHT, LEFT, UP, DOWN, A, B, SELECT, START = (1 << i for i in range(8))
DPAD = RIGHT | LEFT | UP | DOWN

COUNT = SCRATCH  # 16-bit: VBlanks (samples) so far
PHASE = SCRATCH + 2  # 0 waiting for a press, 1 recording, 2 done
INDEX = SCRATCH + 3  # samples recorded
JOY_COUNT = SCRATCH + 4  # joypad interrupts recorded
SYNC_TABLE = RESULTS_BASE  # 16-bit frame of the first sample with a button down
WINDOW_TABLE = RESULTS_BASE + 2  # 2 bytes per sample: d-pad nibble, button nibble (raw)


def held_mask(inputs: Sequence[int], frames_per_step: int, release_after: int, frame: int) -> int:
    """Buttons held during ``frame`` (see the module doc's timing rule)."""
    step, offset = divmod(frame, frames_per_step)
    return inputs[step % len(inputs)] if offset < release_after else 0


def pad_nibbles(mask: int) -> bytes:
    """What P1 reads (bits 0-3) with the d-pad, then the buttons, selected."""
    return bytes([~mask & 0x0F, ~mask >> 4 & 0x0F])


def hash_step(h: int, mask: int) -> int:
    return (h * 33 + mask) & 0xFFFF


READ_PAD = """
; D = d-pad nibble, E = button nibble, as P1 bits 0-3 read them (0 = pressed).
HwReadPad:
    ld a, $20           ; P14 low: d-pad
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    and $0F
    ld d, a
    ld a, $10           ; P15 low: buttons
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    and $0F
    ld e, a
    ld a, $30
    ldh [rP1], a
    ret
"""

# Tile 0 (the whole background map after power-on) gets a pattern so scroll shows.
TILE_PATTERN = bytes.fromhex("FFFF818100003C00003C18180000C3C3")
HASH_PER_SAMPLE = """
    ld a, e
    swap a
    or d
    cpl                 ; A = buttons-codec mask
    ld c, a
    ld b, 0
    ld a, [{hash}]
    ld l, a
    ld a, [{hash} + 1]
    ld h, a
    ld d, h
    ld e, l
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, hl
    add hl, de          ; h * 33
    add hl, bc
    ld a, l
    ld [{hash}], a
    ld a, h
    ld [{hash} + 1], a
"""
HASH_PER_FRAME = """
    ld a, [{count}]
    or a
    jr nz, .scroll
    ld a, [{count} + 1]
    or a
    jr nz, .scroll
    ld hl, HwTilePattern
    ld de, $8000
    ld b, 16
    call HwCopy         ; first VBlank: VRAM is free
.scroll:
    ld a, [{hash}]
    ldh [$FF43], a      ; SCX
    ld a, [{hash} + 1]
    ldh [$FF42], a      ; SCY
"""


def _logger_rom(
    name: str, window: int, hashed: bool, tables: tuple[ResultTable, ...]
) -> SelfCheckingRom:
    hash_addr = WINDOW_TABLE + 2 * window
    per_sample = HASH_PER_SAMPLE.format(hash=f"${hash_addr:04X}") if hashed else ""
    per_frame = (
        HASH_PER_FRAME.format(count=f"${COUNT:04X}", hash=f"${hash_addr:04X}") if hashed else ""
    )
    isr = f"""
HwPadVBlank:
    push af
    push bc
    push de
    push hl
    call HwReadPad
    ld a, [${PHASE:04X}]
    cp 2
    jr z, .count
    or a
    jr nz, .record
    ld a, d
    and e
    cp $0F
    jr z, .count        ; nothing pressed yet
    ld a, 1
    ld [${PHASE:04X}], a
    ld a, [${COUNT:04X}]
    ld [${SYNC_TABLE:04X}], a
    ld a, [${COUNT + 1:04X}]
    ld [${SYNC_TABLE + 1:04X}], a
.record:
    ld a, [${INDEX:04X}]
    ld l, a
    ld h, 0
    add hl, hl
    ld bc, ${WINDOW_TABLE:04X}
    add hl, bc
    ld [hl], d
    inc hl
    ld [hl], e
{per_sample}
    ld a, [${INDEX:04X}]
    inc a
    ld [${INDEX:04X}], a
    cp {window}
    jr nz, .count
    ld a, 2
    ld [${PHASE:04X}], a
.count:
{per_frame}
    ld hl, ${COUNT:04X}
    inc [hl]
    jr nz, .out
    inc hl
    inc [hl]
.out:
    pop hl
    pop de
    pop bc
    pop af
    reti
{READ_PAD}
"""
    body = f"""
    xor a
    ld hl, ${SCRATCH:04X}
    ld b, 8
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    ld [${hash_addr:04X}], a
    ld [${hash_addr + 1:04X}], a
    ldh [rIF], a        ; drop the VBlank request left by the boot ROM
    ld a, $01
    ldh [rIE], a
    ei
.wait:
    halt
    nop
    ld a, [${PHASE:04X}]
    cp 2
    jr nz, .wait
"""
    return SelfCheckingRom(
        name=name,
        body=body,
        tables=tables,
        routines=isr + HW_ROUTINES,
        vectors={0x40: "    jp HwPadVBlank"},
        data=f'SECTION "tile", ROM0\nHwTilePattern:\n{db_lines(TILE_PATTERN)}\n',
    )


def _logger_spec(
    name: str,
    description: str,
    inputs: tuple[int, ...],
    *,
    frames_per_step: int,
    release_after: int,
    window: int,
    steps: int,
    hashed: bool = False,
):
    frames = steps * frames_per_step
    held = [held_mask(inputs, frames_per_step, release_after, f) for f in range(frames)]
    first = next((f for f, m in enumerate(held) if m), None)
    if first is None or first == 0 or first + window > frames - 1:
        raise ValueError(
            f"{name}: inputs must press nothing in frame 0 and leave {window} frames after the "
            f"first press within {frames} frames"
        )
    masks = held[first : first + window]
    tables = [
        ResultTable("sync frame", SYNC_TABLE, first.to_bytes(2, "little")),
        ResultTable(
            "pad window",
            WINDOW_TABLE,
            b"".join(pad_nibbles(m) for m in masks),
            record_size=2,
            describe=lambda i: f"frame {first + i} (buttons ${masks[i]:02X})",
        ),
    ]
    if hashed:
        h = 0
        for m in masks:
            h = hash_step(h, m)
        tables.append(ResultTable("input hash", WINDOW_TABLE + 2 * window, h.to_bytes(2, "little")))

    return hw_spec(
        name,
        description,
        lambda: _logger_rom(name, window, hashed, tuple(tables)),
        steps=steps,
        inputs=inputs,
        frames_per_step=frames_per_step,
        release_after_frames=release_after,
        tags=("joypad", "hw"),
    )


def _irq_spec(name: str, inputs: tuple[int, ...], steps: int):
    """Joypad interrupt: a handler logs (VBlank count, button nibble) per interrupt."""
    fps, release_after = 2, 1
    if any(m & DPAD for m in inputs):
        raise ValueError(f"{name}: only buttons; PyBoy raises the interrupt for unselected d-pad")
    presses = [k * fps for k in range(steps) if inputs[k % len(inputs)]]
    if not presses or presses[0] == 0 or len(presses) > 40:
        raise ValueError(f"{name}: need 1..40 presses, none in step 0")
    expected = b"".join(
        f.to_bytes(2, "little") + pad_nibbles(held_mask(inputs, fps, release_after, f))[1:]
        for f in presses
    )
    count = len(presses)
    table = ResultTable(
        "joypad interrupts",
        RESULTS_BASE,
        expected,
        record_size=3,
        describe=lambda i: f"interrupt {i} (press in frame {presses[i]})",
    )
    routines = f"""
HwIrqVBlank:
    push af
    push hl
    ld hl, ${COUNT:04X}
    inc [hl]
    jr nz, .out
    inc hl
    inc [hl]
.out:
    pop hl
    pop af
    reti

HwIrqJoypad:
    push af
    push bc
    push hl
    ld a, [${JOY_COUNT:04X}]
    cp {count}
    jr z, .out          ; table full
    ld c, a
    add a, a
    add a, c
    ld c, a
    ld b, 0
    ld hl, ${RESULTS_BASE:04X}
    add hl, bc          ; 3 bytes per interrupt
    ld a, [${COUNT:04X}]
    ld [hl+], a
    ld a, [${COUNT + 1:04X}]
    ld [hl+], a
    ld a, $10
    ldh [rP1], a
    ldh a, [rP1]
    ldh a, [rP1]
    and $0F
    ld [hl], a
    ld a, [${JOY_COUNT:04X}]
    inc a
    ld [${JOY_COUNT:04X}], a
.out:
    pop hl
    pop bc
    pop af
    reti
"""
    body = f"""
    xor a
    ld [${COUNT:04X}], a
    ld [${COUNT + 1:04X}], a
    ld [${JOY_COUNT:04X}], a
    ld a, $10           ; select the buttons: a press pulls a P1 line low
    ldh [rP1], a
    xor a
    ldh [rIF], a
    ld a, $11           ; VBlank + joypad
    ldh [rIE], a
    ei
.wait:
    halt
    nop
    ld a, [${JOY_COUNT:04X}]
    cp {count}
    jr nz, .wait
"""
    return hw_spec(
        name,
        "Joypad interrupt ($0060) on each button press: VBlank count and P1 nibble per interrupt",
        lambda: SelfCheckingRom(
            name=name,
            body=body,
            tables=(table,),
            routines=routines,
            vectors={0x40: "    jp HwIrqVBlank", 0x60: "    jp HwIrqJoypad"},
        ),
        steps=steps,
        inputs=inputs,
        frames_per_step=fps,
        release_after_frames=release_after,
        tags=("joypad", "interrupt", "hw"),
    )


def _p1_probes(held: int) -> list[Probe]:
    probes = []
    for select, group in (
        (0x20, "d-pad"),
        (0x10, "buttons"),
        (0x30, "none"),
        (0x20, "d-pad again"),
    ):
        nibble = {0x20: pad_nibbles(held)[0], 0x10: pad_nibbles(held)[1], 0x30: 0x0F}[select]
        code = f"    ld a, ${select:02X}\n    ldh [rP1], a\n    ldh a, [rP1]\n    ldh a, [rP1]\n"
        code += "    and $CF\n"  # bits 4-5 read back as written on hardware, not in PyBoy
        probes.append(
            byte_probe(f"P1 ${select:02X} ({group}) with ${held:02X} held", code, 0xC0 | nibble)
        )
    return probes


P1_HELD = UP | START
LOG_INPUTS = (
    (0, 0, 0, RIGHT, LEFT, UP, DOWN, A, B, SELECT, START, 0)
    + (RIGHT | A, LEFT | B, UP | SELECT, DOWN | START, 0, 0xFF, 0xFF, 0, DPAD, 0xF0)
    + (0x55, 0xAA, A, A, A, 0, RIGHT | LEFT, UP | DOWN, A | B, SELECT | START, 0)
)
HOLD_INPUTS = (0, RIGHT, A | START, DOWN | B, 0, LEFT | SELECT, 0xFF, UP, UP)
IRQ_INPUTS = (0, 0, A, 0, B, START, 0, A | B, SELECT, 0, 0, 0xF0, A, A, 0)


def _hash_inputs(n: int) -> tuple[int, ...]:
    """Two idle steps, then ``n`` pseudo-random masks (a fixed LCG, so the ROM is reproducible)."""
    x, out = 0x2545, [0, 0]
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return tuple(out)


ROMS = [
    hw_spec(
        "hw_joypad_p1",
        "P1 select lines: $20 d-pad, $10 buttons, $30 none with Up+Start held; bits 6-7 read 1",
        lambda: probe_rom("hw_joypad_p1", _p1_probes(P1_HELD)),
        inputs=(P1_HELD,),
        tags=("joypad", "hw"),
    ),
    _logger_spec(
        "hw_joypad_log",
        "Joypad log: P1 nibbles per VBlank vs scripted inputs (1 frame/step), absolute frame sync",
        LOG_INPUTS,
        frames_per_step=1,
        release_after=1,
        window=30,
        steps=40,
    ),
    _logger_spec(
        "hw_joypad_hold",
        "Joypad log with 4 frames/step, release after 2: held and released frames per step",
        HOLD_INPUTS,
        frames_per_step=4,
        release_after=2,
        window=30,
        steps=10,
    ),
    _irq_spec("hw_joypad_irq", IRQ_INPUTS, steps=15),
    _logger_spec(
        "hw_joypad_hash",
        "Divergence workload: 16-bit hash of 100 frames of inputs in WRAM, scrolls BG by it",
        _hash_inputs(62),
        frames_per_step=1,
        release_after=1,
        window=100,
        steps=110,
        hashed=True,
    ),
]
