"""Interrupt micro ROM: priorities, IE masking, nesting, RETI, EI's delay, DI, HALT wake.

The LCD is switched off first so no VBlank arrives on its own; every request comes
from writing IF or from the timer. Each handler traces its vector ($40-$60); a
one-shot mode byte (``hMode``) makes the next handler do something extra (nest,
request another interrupt, show B). Main code traces markers $8x, so the trace is
the event order, which Python knows from Pan Docs rules:

* pending and enabled interrupts are served lowest bit first (VBlank $40 .. Joypad $60);
* IME is cleared on dispatch, RETI sets it at once, EI after the next instruction;
* HALT waits until IE & IF != 0; with IME = 1 the handler runs, with IME = 0 it does
  not (IF stays set) and execution goes on after HALT.

Not covered: the HALT bug (HALT with IME = 0 and an interrupt already pending runs
the next byte twice): PyBoy 2.8.1 does not model it (history/pyboy-deviations.md).
"""

from __future__ import annotations

from bench.roms.suite._lib import HRAM_ROM_VARS, SelfCheckingRom, TraceBuilder, rom_spec

VECTORS = (0x40, 0x48, 0x50, 0x58, 0x60)  # IF/IE bit n -> vector $40 + 8n
MODE_NEST, MODE_LATE, MODE_SHOW_B = 1, 2, 3
NEST_DONE, LATE_DONE = 0xD0, 0xD1
TIMER_BIT = 0x04

HANDLERS = f"""
IntCommon:
    call LibTrace
    ldh a, [hMode]
    cp {MODE_NEST}
    jr z, .nest
    cp {MODE_LATE}
    jr z, .late
    cp {MODE_SHOW_B}
    jr z, .show_b
    pop af
    reti
.nest:                  ; EI, then request VBlank: it is served inside this handler
    xor a
    ldh [hMode], a
    ei
    ld a, $01
    ldh [rIF], a
    ld a, ${NEST_DONE:02X}
    call LibTrace
    pop af
    reti
.late:                  ; request VBlank with IME off: it waits for RETI
    xor a
    ldh [hMode], a
    ld a, $01
    ldh [rIF], a
    ld a, ${LATE_DONE:02X}
    call LibTrace
    pop af
    reti
.show_b:
    xor a
    ldh [hMode], a
    ld a, b
    call LibTrace
    pop af
    reti
"""


def _marker(v: int) -> str:
    return f"    ld a, ${v:02X}\n    call LibTrace\n"


def _request(ie: int, if_: int, mode: int = 0) -> str:
    """DI, IF cleared, then IE, hMode and IF written (IF last)."""
    return (
        f"    di\n    xor a\n    ldh [rIF], a\n    ld a, ${ie:02X}\n    ldh [rIE], a\n"
        f"    ld a, {mode}\n    ldh [hMode], a\n    ld a, ${if_:02X}\n    ldh [rIF], a\n"
    )


TRACE_IF = "    ldh a, [rIF]\n    and $1F\n    call LibTrace\n"
# Timer: TIMA = $F0, TMA = 0, 16 T-cycles per tick: the overflow comes 256 T-cycles
# (64 M-cycles) after TAC is written, long after the few instructions up to HALT.
ARM_TIMER = (
    "    xor a\n    ldh [rTAC], a\n    ldh [rTMA], a\n    ld a, $F0\n    ldh [rTIMA], a\n"
    "    ld a, $05\n    ldh [rTAC], a\n"
)
STOP_TIMER = "    xor a\n    ldh [rTAC], a\n"
# TIMA's high nibble right after the wake: 0 once it overflowed, $F0 had HALT not waited.
TRACE_TIMA_HIGH = "    ldh a, [rTIMA]\n    and $F0\n    call LibTrace\n"


def _steps(t: TraceBuilder) -> None:
    t.step(
        "all five requested at once: served in priority order",
        _request(0x1F, 0x1F) + _marker(0x81) + "    ei\n    nop\n" + _marker(0x82),
        [0x81, *VECTORS, 0x82],
    )
    t.step(
        "IE masks: only STAT and serial served, the rest stay in IF",
        _request(0x0A, 0x1F) + "    ei\n    nop\n    di\n" + TRACE_IF + _marker(0x83),
        [0x48, 0x58, 0x15, 0x83],
    )
    t.step(
        "EI inside a handler lets a new request nest",
        _request(0x05, TIMER_BIT, MODE_NEST) + "    ei\n    nop\n" + _marker(0x84),
        [0x50, 0x40, NEST_DONE, 0x84],
    )
    t.step(
        "without EI a request made in a handler waits for RETI",
        _request(0x05, TIMER_BIT, MODE_LATE) + "    ei\n    nop\n" + _marker(0x85),
        [0x50, LATE_DONE, 0x40, 0x85],
    )
    t.step(
        "EI delay: the instruction after EI runs before the handler",
        _request(TIMER_BIT, TIMER_BIT, MODE_SHOW_B)
        + "    ld b, 0\n    ei\n    inc b\n    inc b\n    ld a, b\n    call LibTrace\n",
        [0x50, 0x01, 0x02],
    )
    t.step(
        "EI followed by DI: nothing served",
        _request(TIMER_BIT, TIMER_BIT) + "    ei\n    di\n    nop\n" + _marker(0x86) + TRACE_IF,
        [0x86, TIMER_BIT],
    )
    t.step(
        "DI: a pending enabled request is not served",
        _request(0x1F, 0x11) + "    nop\n    nop\n" + _marker(0x87) + TRACE_IF,
        [0x87, 0x11],
    )
    t.step(
        "RETI enables IME at once: served before the next instruction",
        _request(TIMER_BIT, TIMER_BIT)
        + "    ld hl, .back\n    push hl\n    reti\n.back:\n"
        + _marker(0x88),
        [0x50, 0x88],
    )
    t.step(
        "RET leaves IME off",
        _request(TIMER_BIT, TIMER_BIT)
        + "    ld hl, .back\n    push hl\n    ret\n.back:\n"
        + _marker(0x89)
        + TRACE_IF,
        [0x89, TIMER_BIT],
    )
    t.step(
        "HALT with IME = 1: the timer wakes it and its handler runs",
        _request(TIMER_BIT, 0)
        + ARM_TIMER
        + "    ei\n    nop\n    halt\n"
        + _marker(0x8A)
        + STOP_TIMER,
        [0x50, 0x8A],
    )
    t.step(
        "EI right before HALT, interrupt arriving later: handler, then after HALT",
        _request(TIMER_BIT, 0) + ARM_TIMER + "    ei\n    halt\n" + _marker(0x8B) + STOP_TIMER,
        [0x50, 0x8B],
    )
    t.step(
        "HALT with IME = 0: wakes without a handler, IF stays set",
        _request(TIMER_BIT, 0)
        + ARM_TIMER
        + "    halt\n    nop\n"
        + TRACE_TIMA_HIGH
        + _marker(0x8C)
        + TRACE_IF
        + STOP_TIMER,
        [0x00, 0x8C, TIMER_BIT],
    )
    t.step("quiet", "    di\n    xor a\n    ldh [rIF], a\n    ldh [rIE], a\n", [])


def _plan() -> SelfCheckingRom:
    t = TraceBuilder("irq")
    t.step("LCD off", "    call LibLcdOff\n", [])
    _steps(t)
    vectors = {v: f"    push af\n    ld a, ${v:02X}\n    jp IntCommon\n" for v in VECTORS}
    routines = f"hMode EQU ${HRAM_ROM_VARS:04X}\n" + HANDLERS
    return SelfCheckingRom("interrupts", t.body(), (t.table(),), routines=routines, vectors=vectors)


ROMS = [
    rom_spec(
        "interrupts",
        "IRQ priority, IE mask, nesting, RETI, EI delay, EI;DI, DI, HALT wake IME=1/0 -> event trace",
        _plan,
        steps=20,
    )
]
