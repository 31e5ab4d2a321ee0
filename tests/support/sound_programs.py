"""Sound-unit probe programs for the lockstep tests (assembled with our own assembler).

Each program writes the sound registers (FF10-FF3F), DIV and NR52, waits, and reads
them back, logging every read to WRAM through DE, so any difference from PyBoy's sound
unit (``sound_emulated=True``) in a read value or in when it changes shows as a RAM diff.
``sound_probe`` covers the behaviours one by one (``PROBES``); ``random_sound_program``
mixes random writes, reads and delays.
"""

from __future__ import annotations

import random

from .emu_timing_programs import program

STORE = "    ld [de], a\n    inc de\n    ld a, d\n    and $0F\n    or $D0\n    ld d, a\n"


def _write(reg: int, value: int) -> str:
    return f"    ld a, ${value & 0xFF:02X}\n    ldh [${reg:02X}], a\n"


def _read(reg: int) -> str:
    return f"    ldh a, [${reg:02X}]\n" + STORE


def _delay(label: str, count: int, inner: int = 1) -> str:
    """About ``count * inner * 16`` cycles."""
    if inner <= 1:
        return f"    ld b, {count}\n{label}:\n    dec b\n    jr nz, {label}\n"
    return (
        f"    ld c, {count}\n{label}o:\n    ld b, {inner}\n{label}:\n    dec b\n    jr nz, {label}\n"
        f"    dec c\n    jr nz, {label}o\n"
    )


def _read_all(label: str) -> str:
    """Reads every register FF10-FF26 and wave RAM (24 + 16 reads)."""
    return (
        f"    ld c, $10\n{label}:\n    ldh a, [c]\n" + STORE + f"    inc c\n    ld a, c\n"
        f"    cp $40\n    jr nz, {label}\n"
    )


def _nr52_poll(label: str, count: int) -> str:
    """Reads NR52 ``count`` times (up to 65535), one every 40 cycles: when a channel
    stops, to 10 M-cycles (a 16384-cycle length clock is about 400 reads)."""
    return (
        f"    ld bc, {count}\n{label}:\n"
        + _read(0x26)
        + f"    dec bc\n    ld a, b\n    or c\n    jr nz, {label}\n"
    )


def _body(text: str) -> bytes:
    return program(
        'SECTION "main", ROM0[$0150]\nMain:\n    call LogInit\n    ld de, $D000\n'
        f"Body:\n{text}.halt:\n    jr .halt\nHook:\nRst0:\n    ret\n"
    )


POWER_ON = _write(0x26, 0x80) + _write(0x25, 0xFF) + _write(0x24, 0x77)

PROBES: dict[str, str] = {
    # read masks and write-only bits; power-off clears all but the DMG length timers
    "read_masks": (
        POWER_ON
        + "".join(_write(r, 0xFF) for r in range(0x10, 0x26) if r not in (0x14, 0x19, 0x1E, 0x23))
        + _read_all(".a")
        + _write(0x26, 0x00)
        + _read_all(".b")
        + _write(0x11, 0xC8)
        + _write(0x12, 0xF0)
        + _read_all(".c")
        + _write(0x26, 0x80)
        + _read_all(".d")
    ),
    # triggers and DACs: NR52 bits set and cleared by NRx2 / NR30
    "dac_trigger": (
        POWER_ON
        + _write(0x12, 0xF0)
        + _write(0x14, 0x80)
        + _read(0x26)
        + _write(0x17, 0x08)
        + _write(0x19, 0x80)
        + _read(0x26)
        + _write(0x1A, 0x80)
        + _write(0x1E, 0x80)
        + _read(0x26)
        + _write(0x21, 0x10)
        + _write(0x23, 0x80)
        + _read(0x26)
        + _write(0x12, 0x00)
        + _read(0x26)
        + _write(0x17, 0x00)
        + _read(0x26)
        + _write(0x1A, 0x00)
        + _read(0x26)
        + _write(0x21, 0x00)
        + _read(0x26)
        + _write(0x17, 0x00)
        + _write(0x19, 0x80)
        + _read(0x26)
    ),
    # length counters run out at frame-sequencer edges, polled to the M-cycle
    "length": (
        POWER_ON
        + _write(0x12, 0xF0)
        + _write(0x11, 0x3E)
        + _write(0x14, 0xC0)
        + _write(0x17, 0xF0)
        + _write(0x16, 0x3C)
        + _write(0x19, 0xC0)
        + _write(0x1A, 0x80)
        + _write(0x1B, 0xFD)
        + _write(0x1E, 0xC0)
        + _write(0x21, 0xF0)
        + _write(0x20, 0x3A)
        + _write(0x23, 0xC0)
        + _nr52_poll(".p", 2600)
    ),
    # NRx4 length-enable writes on odd sequencer steps clock the length counter
    "length_quirks": "".join(
        _write(0x26, 0x80)
        + _write(0x12, 0xF0)
        + _write(0x11, 0x3F)
        + _delay(f".w{k}", 20 + 37 * k, 4)
        + _write(0x14, 0x40)
        + _read(0x26)
        + _write(0x14, 0xC0)
        + _read(0x26)
        + _write(0x11, 0x3F)
        + _write(0x14, 0xC0)
        + _read(0x26)
        + _nr52_poll(f".p{k}", 450)
        + _write(0x26, 0x00)
        for k in range(6)
    ),
    # the sweep: overflow on trigger, overflow after iterations, the $7FF second check,
    # negate-then-positive disabling
    "sweep": (
        POWER_ON
        + _write(0x12, 0xF0)
        + _write(0x10, 0x11)
        + _write(0x13, 0xF0)
        + _write(0x14, 0x87)
        + _read(0x26)
        + _nr52_poll(".a", 20)
        + _write(0x10, 0x21)
        + _write(0x13, 0x00)
        + _write(0x14, 0x84)
        + _nr52_poll(".b", 1500)
        + _write(0x10, 0x19)
        + _write(0x13, 0x00)
        + _write(0x14, 0x84)
        + _read(0x26)
        + _write(0x10, 0x11)
        + _read(0x26)
        + _write(0x10, 0x17)
        + _write(0x13, 0xFF)
        + _write(0x14, 0x86)
        + _read(0x26)
        + _nr52_poll(".c", 600)
        + _write(0x10, 0x01)
        + _write(0x13, 0xAA)
        + _write(0x14, 0x87)
        + _read(0x26)
        + _nr52_poll(".d", 600)
        + _write(0x10, 0x12)
        + _write(0x13, 0xF8)
        + _write(0x14, 0x87)
        + _read(0x26)
        + _nr52_poll(".e", 900)
    ),
    # wave RAM while channel 3 plays: $FF except on the cycle it reads; retrigger corruption
    "wave_ram": (
        POWER_ON
        + "".join(_write(0x30 + k, 0x11 * k) for k in range(16))
        + _write(0x1A, 0x80)
        + _write(0x1C, 0x20)
        + "".join(
            _write(0x1D, period & 0xFF)
            + _write(0x1E, 0x80 | (period >> 8))
            + "".join(_read(0x30 + (k % 16)) for k in range(24))
            + _write(0x30, 0x5A)
            + _write(0x37, 0xA5)
            + _write(0x1E, 0x80 | (period >> 8))
            + _read(0x30)
            + _read(0x31)
            for period in (0x7FF, 0x7FE, 0x7FD, 0x7FC, 0x7F0, 0x7C3, 0x700)
        )
        + _write(0x1A, 0x00)
        + _read_all(".r")
    ),
    # DIV writes clock the frame sequencer on a falling bit 12; NR52 power-on after one
    "div_sequencer": "".join(
        _write(0x26, 0x00)
        + _write(0x26, 0x80)
        + _write(0x12, 0xF0)
        + _write(0x11, 0x3E)
        + _write(0x14, 0xC0)
        + _delay(f".d{k}", 3 + 29 * k, 5)
        + _write(0x04, 0)
        + _read(0x26)
        + _write(0x11, 0x3F)
        + _write(0x14, 0xC0)
        + _write(0x04, 0)
        + _nr52_poll(f".p{k}", 500)
        + _write(0x26, 0x00)
        + _delay(f".e{k}", 7 + 13 * k, 3)
        + _write(0x04, 0)
        + _delay(f".f{k}", 5 + 11 * k, 3)
        + _write(0x26, 0x80)
        + _write(0x12, 0xF0)
        + _write(0x11, 0x3F)
        + _write(0x14, 0xC0)
        + _nr52_poll(f".q{k}", 500)
        for k in range(5)
    ),
    # wave RAM read by the first instruction of a slice (HALT wakes with IME off) with
    # ``ldh a, [c]``, which reads on its first cycle: PyBoy ticked the unit at that very
    # cycle at the slice's end, which closes the window (``ldh a, [n]`` reads 4 later)
    "wave_after_halt": (
        POWER_ON
        + "".join(_write(0x30 + k, 0x10 + k) for k in range(16))
        + _write(0x1A, 0x80)
        + _write(0x1C, 0x20)
        + _write(0x0F, 0x00)
        + _write(0xFF, 0x03)  # IE: VBlank, STAT
        + _write(0x41, 0x08)  # STAT: the HBlank interrupt
        + "    di\n"
        + "".join(
            _write(0x1D, period & 0xFF)
            + _write(0x1E, 0x80 | (period >> 8))
            + "".join(
                f"    ld c, ${0x30 + k % 16:02X}\n    halt\n    ldh a, [c]\n"
                + STORE
                + _read(0x30 + (k % 16))
                + _write(0x0F, 0x00)
                for k in range(40)
            )
            for period in (0x7FF, 0x7FE, 0x7FD, 0x7FB, 0x7F8)
        )
    ),
    # NRx2 writes to playing channels 1, 2 and 4 (CGB hardware's envelope glitch: steps,
    # inversions, a re-armed timer owing a step) between envelope clocks; the volumes are
    # in the sound unit's state (the CGB lockstep compares it; PCM12/PCM34 follow duty
    # positions, not emulated), NR52 in the log
    "envelope": "".join(
        POWER_ON
        + _write(nrx2, 0x80)
        + _write(nrx2 + 2, 0x80)
        + "".join(
            _write(nrx2, v) + _read(0x26) + _delay(f".e{nrx2:x}{k}", 4 + 8 * k, 160)
            for k, v in enumerate((0x88, 0x89, 0x81, 0x08, 0x08, 0xF0, 0xF7, 0xA3, 0xAB, 0x90))
        )
        for nrx2 in (0x12, 0x17, 0x21)
    ),
}


def sound_probe(name: str) -> bytes:
    return _body(PROBES[name])


def random_sound_program(seed: int, snippets: int = 200) -> bytes:
    """Random sound-register writes (triggers, DACs, lengths, sweeps, NR52 off and on,
    DIV), reads of every register and wave RAM, and delays of random lengths."""
    rng = random.Random(seed)
    lines = [POWER_ON]
    regs = [r for r in range(0x10, 0x27) if r != 0x15 and r != 0x1F] + [0x30, 0x35, 0x3F]
    for k in range(snippets):
        r = rng.random()
        if r < 0.40:
            reg = rng.choice(regs)
            if reg in (0x14, 0x19, 0x1E, 0x23):
                value = rng.choice([0x80, 0xC0, 0x40, 0x00, 0x87, 0xC7]) | rng.randrange(8)
            elif reg == 0x26:
                value = rng.choice([0x80, 0x80, 0x80, 0x00, 0xFF])
            elif reg in (0x11, 0x16, 0x20):
                value = rng.choice([0x3F, 0x3E, 0x30, rng.randrange(256)])
            elif reg in (0x12, 0x17, 0x21):
                value = rng.choice([0xF0, 0x08, 0x00, 0xF3, 0x1A, rng.randrange(256)])
            else:
                value = rng.randrange(256)
            lines.append(_write(reg, value))
        elif r < 0.70:
            lines.append(_read(rng.choice(regs + [0x26, 0x26, 0x26])))
        elif r < 0.75:
            lines.append(_write(0x04, 0))
        elif r < 0.80:
            lines.append(_nr52_poll(f".p{k}", rng.randrange(2, 400)))
        elif r < 0.95:
            lines.append(_delay(f".d{k}", rng.randrange(1, 200), rng.choice([1, 1, 4, 16])))
        else:
            lines.append(_read_all(f".a{k}"))
    return _body("".join(lines))


def _wave_rounds(rng: random.Random, rounds: int, access) -> bytes:
    """Wave RAM filled at random, channel 3 started, then ``rounds`` rounds at random
    periods of 8-39 accesses ``access(rng, period)`` with 0-3 nops before each; at the end
    the channel stopped and every register read."""
    lines = [POWER_ON, "".join(_write(0x30 + k, rng.randrange(256)) for k in range(16))]
    lines.append(_write(0x1A, 0x80) + _write(0x1C, 0x20))
    for _round in range(rounds):
        period = rng.choice([0x7FF, 0x7FE, 0x7FD, 0x7FB, 0x7F7, 0x7E1, rng.randrange(0x700, 0x800)])
        lines.append(_write(0x1D, period & 0xFF) + _write(0x1E, 0x80 | (period >> 8)))
        for _access in range(rng.randrange(8, 40)):
            lines.append("    nop\n" * rng.randrange(4))
            lines.append(access(rng, period))
    lines.append(_write(0x1A, 0x00) + _read_all(".r"))
    return _body("".join(lines))


def random_wave_program(seed: int, rounds: int = 40) -> bytes:
    """Channel 3 playing at random periods while wave RAM is read and written at random
    M-cycles (nops between), retriggered now and then: the one-cycle access window."""

    def access(rng: random.Random, period: int) -> str:
        r = rng.random()
        if r < 0.75:
            return _read(0x30 + rng.randrange(16))
        if r < 0.9:
            return _write(0x30 + rng.randrange(16), rng.randrange(256))
        return _write(0x1E, 0x80 | (period >> 8))

    return _wave_rounds(random.Random(seed), rounds, access)


# Every instruction form that reads or writes FF30-FF3F, and the M-cycle of the access
# (the window is one cycle wide, so each form meets it at its own offset).
WAVE_READS = (
    lambda a, v: f"    ldh a, [${a:02X}]\n",
    lambda a, v: f"    ld c, ${a:02X}\n    ldh a, [c]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    ld a, [hl]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    ld a, [hl+]\n",
    lambda a, v: f"    ld a, [$FF{a:02X}]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    bit 3, [hl]\n    push af\n    pop bc\n    ld a, c\n",
)
WAVE_WRITES = (
    lambda a, v: f"    ld a, ${v:02X}\n    ldh [${a:02X}], a\n",
    lambda a, v: f"    ld a, ${v:02X}\n    ld c, ${a:02X}\n    ldh [c], a\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    ld [hl], ${v:02X}\n",
    lambda a, v: f"    ld a, ${v:02X}\n    ld hl, $FF{a:02X}\n    ld [hl+], a\n",
    lambda a, v: f"    ld a, ${v:02X}\n    ld [$FF{a:02X}], a\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    inc [hl]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    dec [hl]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    set {v & 7}, [hl]\n",
    lambda a, v: f"    ld hl, $FF{a:02X}\n    swap [hl]\n",
)


WAVE_EVENTS = (
    # a new period without a trigger (taken at the timer's next reload)
    lambda rng, p: _write(0x1D, rng.randrange(0xE0, 0x100)),
    lambda rng, p: _write(0x1E, (p >> 8) | rng.choice([0x00, 0x40])),
    # the DAC off (the channel stops) and on again, then a trigger
    lambda rng, p: _write(0x1A, 0x00) + _write(0x1A, 0x80) + _write(0x1E, 0x80 | (p >> 8)),
    # a short length that runs out while the accesses go on
    lambda rng, p: _write(0x1B, rng.randrange(0xF0, 0x100)) + _write(0x1E, 0xC0 | (p >> 8)),
    # NR52 off (wave RAM keeps its bytes) and on, the channel set up again
    lambda rng, p: (
        _write(0x26, 0x00)
        + _write(0x26, 0x80)
        + _write(0x1A, 0x80)
        + _write(0x1C, 0x20)
        + _write(0x1D, p & 0xFF)
        + _write(0x1E, 0x80 | (p >> 8))
    ),
    # the volume
    lambda rng, p: _write(0x1C, rng.choice([0x00, 0x20, 0x40, 0x60])),
)


def random_wave_access_program(seed: int, rounds: int = 16) -> bytes:
    """As :func:`random_wave_program`, with every instruction form that reads or writes
    wave RAM (``ld a, [hl]``, ``ld [nn], a``, ``ld [hl], n``, read-modify-writes such as
    ``inc [hl]`` and ``swap [hl]``), each write followed by a read of its byte."""

    def access(rng: random.Random, period: int) -> str:
        reg, value = 0x30 + rng.randrange(16), rng.randrange(256)
        r = rng.random()
        if r < 0.45:
            return rng.choice(WAVE_READS)(reg, value) + STORE
        if r < 0.9:
            write = rng.choice(WAVE_WRITES)(reg, value)
            return write + "    nop\n" * rng.randrange(3) + rng.choice(WAVE_READS)(reg, 0) + STORE
        if r < 0.94:
            return _write(0x1E, 0x80 | (period >> 8))
        return rng.choice(WAVE_EVENTS)(rng, period)  # the channel's other registers

    return _wave_rounds(random.Random(seed), rounds, access)
