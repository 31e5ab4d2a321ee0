"""Timer micro ROM: DIV counting, TIMA at all 4 TAC rates, overflow -> TMA reload and IF,
DIV writes and TAC changes that tick TIMA (the falling-edge cases).

Each sequence is straight-line code whose M-cycle layout Python knows (instruction
cycles from the ISA table, exact delay loops). It starts by resetting DIV, so every
later timer access happens at a known value of the 16-bit system counter (4 T-cycles
per M-cycle, accesses in the last M-cycle of ``ldh``). ``TimerModel`` replays the
accesses as Pan Docs describes the DMG timer: DIV is the counter's high byte; TIMA
ticks on a falling edge of (counter bit for the TAC rate AND TAC enable), so resetting
DIV or changing TAC can tick it; on overflow TIMA gets TMA and IF bit 2 is set.

Robustness: the model refuses any result that depends on an access closer than
``MARGIN`` T-cycles to a counter edge deciding its outcome, so sub-M-cycle timing
differences between emulators and hardware cannot change an expected byte.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from bench.roms.suite._lib import RESULTS_BASE, ResultTable, SelfCheckingRom, rom_spec
from bench.roms.suite.cpu_model import instruction_cycles

MARGIN = 8
PERIODS = {0: 1024, 1: 16, 2: 64, 3: 256}  # TAC low bits -> T-cycles per TIMA tick
REGS = {"div": 0xFF04, "tima": 0xFF05, "tma": 0xFF06, "tac": 0xFF07, "if": 0xFF0F}
ENABLE = 0x04


def _near(c: int, step: int) -> bool:
    """Whether counter value ``c`` is within MARGIN of a multiple of ``step``."""
    r = c % step
    return min(r, step - r) < MARGIN


@dataclass
class TimerModel:
    """The DMG timer from the moment DIV was reset (counter = 0)."""

    tima: int = 0
    tma: int = 0
    tac: int = 0
    if_: int = 0
    counter: int = 0
    unsure: dict[str, str] = field(default_factory=dict)  # register -> why it is not known

    @property
    def enabled(self) -> bool:
        return bool(self.tac & ENABLE)

    @property
    def period(self) -> int:
        return PERIODS[self.tac & 3]

    def _signal(self) -> bool:
        return self.enabled and bool(self.counter & self.period // 2)

    def _tick(self) -> None:
        self.tima += 1
        if self.tima > 0xFF:
            self.tima = self.tma
            self.if_ |= 0x04

    def advance(self, t_cycles: int) -> None:
        for _ in range(t_cycles):
            before = self._signal()
            self.counter = (self.counter + 1) & 0xFFFF
            if before and not self._signal():
                self._tick()

    def _fragile(self, what: str, fragile: bool) -> None:
        """A write near an edge leaves TIMA and IF unknown until they are written again."""
        if fragile:
            self.unsure.update({"tima": what, "if": what})

    def read(self, reg: str) -> int:
        near = (
            _near(self.counter, 256)
            if reg == "div"
            else self.enabled and _near(self.counter, self.period)
        )
        if near or reg in self.unsure:
            why = self.unsure.get(reg, f"the read itself at counter {self.counter}")
            raise ValueError(
                f"timer read of {reg} depends on an access within {MARGIN} T of an edge: {why}"
            )
        return {"div": self.counter >> 8, "tima": self.tima, "if": self.if_}[reg]

    def write(self, reg: str, value: int) -> None:
        at = f"write {reg} at counter {self.counter}"
        if reg == "div":
            self._fragile(at, self.enabled and _near(self.counter, self.period // 2))
            if self._signal():
                self._tick()
            self.counter = 0
        elif reg == "tac":
            old_sig, old_period, old_enabled = self._signal(), self.period, self.enabled
            new_period = PERIODS[value & 3]
            self._fragile(at, old_enabled and _near(self.counter, old_period // 2))
            new_edge = new_period // (2 if old_sig else 1)
            self._fragile(at, bool(value & ENABLE) and _near(self.counter, new_edge))
            self.tac = value & 7
            if old_sig and not self._signal():
                self._tick()
        elif reg == "if":
            self.if_ = value & 0x1F
            self.unsure.pop("if", None)
        else:
            self._fragile(at, self.enabled and _near(self.counter, self.period))
            setattr(self, reg, value)
            if reg == "tima":
                self.unsure.pop("tima", None)


@functools.cache
def _cycles(text: str) -> tuple[int, int | None]:
    return instruction_cycles(text)


@dataclass
class Timeline:
    """Straight-line timer code: every ``ldh`` access lands at a chosen counter value."""

    label: str
    lines: list[str] = field(default_factory=list)
    t: int = 0  # M-cycles emitted so far
    origin: int | None = None  # M-cycle of the DIV reset
    events: list[tuple[int, str, str, int]] = field(default_factory=list)  # (M, op, reg, value)
    names: list[str] = field(default_factory=list)
    _loops: int = 0

    def emit(self, text: str) -> None:
        cycles, not_taken = _cycles(text)
        if not_taken is not None:
            raise ValueError(f"{text!r}: only straight-line code is timed")
        self.lines.append(f"    {text}")
        self.t += cycles

    def delay(self, m: int) -> None:
        """Exactly ``m`` M-cycles (clobbers B and the flags)."""
        ld, dec = _cycles("ld b, 1")[0], _cycles("dec b")[0]
        taken, maybe_not_taken = _cycles("jr nz, @")
        if maybe_not_taken is None:
            raise ValueError("the ISA table has no not-taken count for jr nz")
        not_taken = maybe_not_taken
        while m >= ld + dec + not_taken:
            n = min(256, (m - ld - not_taken + taken) // (dec + taken))
            self._loops += 1
            loop = f".{self.label.lower()}_d{self._loops}"
            self.lines += [f"    ld b, {n & 0xFF}", f"{loop}:", "    dec b", f"    jr nz, {loop}"]
            spent = ld + n * dec + (n - 1) * taken + not_taken
            self.t += spent
            m -= spent
        for _ in range(m):
            self.emit("nop")

    def _access(self, op: str, reg: str, value: int, at: int | None) -> None:
        text = f"ldh [${REGS[reg]:04X}], a" if op == "write" else f"ldh a, [${REGS[reg]:04X}]"
        access_offset = _cycles(text)[0] - 1  # the bus access is the last M-cycle
        if at is not None:
            origin = self.origin
            if origin is None or at % 4:
                raise ValueError(f"{self.label}: 'at' needs a DIV reset first and a multiple of 4")
            wait = origin + at // 4 - (self.t + access_offset)
            if wait < 0:
                raise ValueError(f"{self.label}: counter {at} is already past ({-wait} M-cycles)")
            self.delay(wait)
        self.events.append((self.t + access_offset, op, reg, value))
        if op == "write" and reg == "div":
            self.origin = self.t + access_offset
        self.emit(text)

    def write(self, reg: str, value: int, at: int | None = None) -> None:
        self.emit(f"ld a, ${value:02X}")
        self._access("write", reg, value, at)

    def read(self, reg: str, name: str, at: int | None = None) -> None:
        self._access("read", reg, 0, at)
        if reg == "if":
            self.emit("and $1F")
        self.emit("ld [hl+], a")
        self.names.append(name)

    def expected(self) -> bytes:
        model, out, clock = TimerModel(), bytearray(), None
        for m, op, reg, value in self.events:
            if clock is not None:
                model.advance(4 * (m - clock))
            if op == "read":
                if clock is None:
                    raise ValueError(f"{self.label}: read before the first DIV reset")
                out.append(model.read(reg))
            else:
                model.write(reg, value)
            if reg == "div" and op == "write":
                clock = m
            elif clock is not None:
                clock = m
        return bytes(out)


def _prologue(tl: Timeline) -> None:
    """Timer off, then DIV reset: the counter starts from 0 with nothing ticking."""
    tl.write("tac", 0)
    tl.write("div", 0)
    tl.write("tima", 0)
    tl.write("tma", 0)
    tl.write("if", 0)


def _div_sequence() -> Timeline:
    tl = Timeline("Div")
    _prologue(tl)
    # The last read is past the 16-bit wrap: counter 384 again, DIV = 1.
    for t in (128, 200, 300, 1408, 10368, 65408, 65536 + 384):
        tl.read("div", f"DIV {t} T after its reset", at=t)
    return tl


def _rate_sequence(sel: int) -> Timeline:
    """TIMA counts one per period at TAC rate ``sel``; reads sit mid-period."""
    period = PERIODS[sel]
    tl = Timeline(f"Rate{sel}")
    _prologue(tl)
    start = period // 2 + period * max(0, -(-(128 - period // 2) // period))
    tl.write("tac", ENABLE | sel, at=start)
    for k in (1, 3, 37):
        tl.read("tima", f"TIMA {k} periods of {period} T after enabling", at=start + k * period)
    if period >= 64:  # stop it with the rate bit low (no tick): it then stays put
        stop = start + 40 * period - period // 4
        tl.write("tac", sel, at=stop)
        tl.read("tima", f"TIMA after disabling at rate {period}", at=stop + 3 * period)
    return tl


def _overflow_sequence() -> Timeline:
    """Overflow reloads TMA and raises IF bit 2; TMA and TIMA writes while running."""
    tl = Timeline("Overflow")
    _prologue(tl)
    tl.write("tma", 0xC0)
    tl.write("tima", 0xFC)
    start = 8 + 16 * 10  # rate 16 T, mid-period
    tl.write("tac", ENABLE | 1, at=start)
    tl.read("if", "IF before the overflow", at=start + 16 * 1)
    tl.read("tima", "TIMA 3 ticks after $FC", at=start + 16 * 3)
    tl.read("tima", "TIMA 2 ticks after the overflow reloaded TMA $C0", at=start + 16 * 6)
    tl.read("if", "IF after the overflow", at=start + 16 * 8)
    tl.write("if", 0, at=start + 16 * 11)
    tl.write("tma", 0x80, at=start + 16 * 13)
    tl.write("tima", 0xFE, at=start + 16 * 15)
    tl.read("tima", "TIMA 1 tick after writing $FE", at=start + 16 * 16)
    tl.read("tima", "TIMA after overflowing into the new TMA $80", at=start + 16 * 19)
    tl.read("if", "IF after the second overflow", at=start + 16 * 21)
    tl.write("tac", 0)
    return tl


# (TAC rate, [(op, reg, value, T after the latest DIV reset, name)]) for the DIV-reset ticks.
DIV_WRITE_CASES = {
    0: [  # 1024 T: bit 9 is high for counter 512-1023
        ("write", "tac", ENABLE | 0, 256, ""),
        ("write", "div", 0, 768, ""),  # bit high: +1
        ("write", "div", 0, 256, ""),  # bit low: nothing
        ("read", "tima", 0, 384, "TIMA after a DIV reset with bit 9 high, then one with it low"),
        ("read", "tima", 0, 1536, "TIMA 1536 T after the last reset"),
    ],
    2: [  # 64 T: bit 5 is high for counter 32-63 (mod 64)
        ("write", "tac", ENABLE | 2, 144, ""),
        ("write", "div", 0, 176, ""),  # bit high: +1
        ("write", "div", 0, 20, ""),  # bit low: nothing
        ("read", "tima", 0, 40, "TIMA after a DIV reset with bit 5 high, then one with it low"),
        ("read", "tima", 0, 96, "TIMA 96 T after the last reset"),
    ],
}


def _div_write_sequence(sel: int) -> Timeline:
    """Resetting DIV while the rate bit is 1 ticks TIMA; while it is 0 it does not."""
    tl = Timeline(f"DivWrite{sel}")
    _prologue(tl)
    for op, reg, value, at, name in DIV_WRITE_CASES[sel]:
        if op == "write":
            tl.write(reg, value, at=at)
        else:
            tl.read(reg, name, at=at)
    tl.write("tac", 0)  # may tick TIMA; the next sequence rewrites it
    return tl


def _tac_sequence() -> Timeline:
    """TAC writes: disabling or slowing with the old bit high ticks TIMA (DMG)."""
    tl = Timeline("Tac")
    _prologue(tl)
    tl.write("tac", ENABLE | 0, at=768)  # enabling while bit 9 is high: no tick
    tl.read("tima", "TIMA after enabling with the bit high", at=800)
    tl.write("tac", 0, at=896)  # disabling, bit 9 high: +1
    tl.read("tima", "TIMA after disabling with bit 9 high", at=960)
    tl.write("tac", ENABLE | 0, at=1024 + 256)  # bit 9 low
    tl.write("tac", 0, at=1024 + 384)  # disabling, bit 9 low: nothing
    tl.read("tima", "TIMA after disabling with bit 9 low", at=1024 + 448)
    tl.write("tac", ENABLE | 0, at=2048 + 600)
    tl.write("tac", ENABLE | 2, at=2048 + 784)  # 1024 -> 64 T: bit 9 high, bit 5 low: +1
    tl.write("tac", ENABLE | 0, at=2048 + 816)  # 64 -> 1024 T: both bits high: nothing
    tl.read(
        "tima", "TIMA after 1024->64 T (bit 9 high, bit 5 low) and back (both high)", at=2048 + 840
    )
    tl.read("tima", "TIMA one 1024 T tick later", at=3072 + 512)
    tl.write("tac", 0, at=3072 + 768)  # bit 9 high: +1
    tl.read("tima", "TIMA after the final disable", at=3072 + 800)
    return tl


def _plan() -> SelfCheckingRom:
    timelines = [_div_sequence()]
    timelines += [_rate_sequence(sel) for sel in (1, 2, 3, 0)]
    timelines += [_overflow_sequence(), _div_write_sequence(0), _div_write_sequence(2)]
    timelines.append(_tac_sequence())
    body, tables, addr = [], [], RESULTS_BASE
    for tl in timelines:
        expected = tl.expected()
        names = list(tl.names)
        body.append(f"{tl.label}Seq:\n    ld hl, ${addr:04X}\n" + "\n".join(tl.lines) + "\n")
        tables.append(ResultTable(tl.label, addr, expected, 1, lambda i, n=names: n[i]))
        addr += len(expected)
    return SelfCheckingRom("timer", "".join(body), tuple(tables))


ROMS = [
    rom_spec(
        "timer",
        "DIV counting, TIMA at 4 rates, overflow/TMA/IF, DIV-reset and TAC-change ticks",
        _plan,
        steps=20,
        tags=("cpu", "timer"),
    )
]
