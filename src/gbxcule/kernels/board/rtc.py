"""MBC3 real-time clock, driven by emulated T-cycles only.

PyBoy 2.8.1's clock advances by the CPU cycles elapsed between two clock
syncs (a sync happens on every cart-RAM access while an RTC register is
selected and on every write to 0x6000-0x7FFF). It falls back to the host
clock only when two syncs land on the same cycle count; we count that case as
zero elapsed time, so every env stays deterministic.

Per-env state is one row of ``Machine.rtc`` (int64), columns below.

``rtc_from_pyboy`` / ``rtc_to_pyboy`` (host side, at the end) map PyBoy's clock block of
a save state.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from gbxcule.core import dmg
from gbxcule.core.pyboy_state import RtcState
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})

RTC_SEC = wp.constant(0)
RTC_MIN = wp.constant(1)
RTC_HOUR = wp.constant(2)
RTC_DAY_LOW = wp.constant(3)
RTC_DAY_HIGH = wp.constant(4)
RTC_HALT = wp.constant(5)
RTC_CARRY = wp.constant(6)
RTC_SUBSEC = wp.constant(7)  # cycles towards the next second
RTC_LAST = wp.constant(8)  # cycle count of the last sync
RTC_LATCHED = wp.constant(9)  # latch_enabled
RTC_LATCH0 = wp.constant(10)  # latched sec, min, hour, day low, day high: columns 10..14
RTC_FIELDS = 15

CLOCK_RATE = wp.constant(wp.int64(dmg.CLOCK_RATE))


@wp.func
def rtc_advance_seconds(m: wp.ref[Machine], i: int, seconds: wp.int64):
    s = int(m.rtc[i, RTC_SEC])
    mi = int(m.rtc[i, RTC_MIN])
    h = int(m.rtc[i, RTC_HOUR])
    day = (int(m.rtc[i, RTC_DAY_HIGH]) & 1) << 8 | int(m.rtc[i, RTC_DAY_LOW])
    carry = int(m.rtc[i, RTC_CARRY])
    if seconds > wp.int64(3600) and s < 60 and mi < 60 and h < 24:
        # PyBoy's shortcut for long gaps: plain arithmetic, no per-field rollover quirks
        total = wp.int64(h * 3600 + mi * 60 + s) + seconds
        days = int(total / wp.int64(86400))
        rest = int(total % wp.int64(86400))
        h = rest / 3600
        mi = (rest / 60) % 60
        s = rest % 60
        day = day + days
        if day > 0x1FF:
            carry = 1
            day = day & 0x1FF
    else:
        left = wp.int64(seconds)
        while left > wp.int64(0):
            old_s = s
            old_m = mi
            old_h = h
            if s == 59 or s == 0x3F:
                s = 0
            else:
                s = s + 1
            if old_s == 59:
                if mi == 59 or mi == 0x3F:
                    mi = 0
                else:
                    mi = mi + 1
                if old_m == 59:
                    if h == 23 or h == 0x1F:
                        h = 0
                    else:
                        h = h + 1
                    if old_h == 23:
                        day = day + 1
                        if day > 0x1FF:
                            day = 0
                            carry = 1
            left = left - wp.int64(1)
    m.rtc[i, RTC_SEC] = wp.int64(s)
    m.rtc[i, RTC_MIN] = wp.int64(mi)
    m.rtc[i, RTC_HOUR] = wp.int64(h)
    m.rtc[i, RTC_DAY_LOW] = wp.int64(day & 0xFF)
    m.rtc[i, RTC_DAY_HIGH] = wp.int64((day >> 8) & 1)
    m.rtc[i, RTC_CARRY] = wp.int64(carry)


@wp.func
def rtc_tick(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """Bring the clock up to ``cycles`` (PyBoy's ``RTC.tick``)."""
    last = m.rtc[i, RTC_LAST]
    m.rtc[i, RTC_LAST] = cycles
    if cycles > last and m.rtc[i, RTC_HALT] == wp.int64(0):
        sub = m.rtc[i, RTC_SUBSEC] + (cycles - last)
        m.rtc[i, RTC_SUBSEC] = sub % CLOCK_RATE
        seconds = sub / CLOCK_RATE
        if seconds > wp.int64(0):
            rtc_advance_seconds(m, i, seconds)


@wp.func
def rtc_command(m: wp.ref[Machine], i: int, value: int):
    """A write to 0x6000-0x7FFF: $00 then $01 latches the clock."""
    if value == 0:
        m.rtc[i, RTC_LATCHED] = wp.int64(0)
    if value == 1:
        if m.rtc[i, RTC_LATCHED] == wp.int64(0):
            m.rtc[i, RTC_LATCH0 + 0] = m.rtc[i, RTC_SEC] & wp.int64(0x3F)
            m.rtc[i, RTC_LATCH0 + 1] = m.rtc[i, RTC_MIN] & wp.int64(0x3F)
            m.rtc[i, RTC_LATCH0 + 2] = m.rtc[i, RTC_HOUR] & wp.int64(0x1F)
            m.rtc[i, RTC_LATCH0 + 3] = m.rtc[i, RTC_DAY_LOW]
            m.rtc[i, RTC_LATCH0 + 4] = m.rtc[i, RTC_DAY_HIGH] & wp.int64(1)
        m.rtc[i, RTC_LATCHED] = wp.int64(1)


@wp.func
def rtc_read(m: wp.ref[Machine], i: int, reg: int) -> int:
    """Register $08-$0C: latched time; $0C carries the live halt and carry bits."""
    v = int(m.rtc[i, RTC_LATCH0 + reg - 0x08])
    if reg == 0x0C:
        v = (v & 1) | (int(m.rtc[i, RTC_HALT]) << 6) | (int(m.rtc[i, RTC_CARRY]) << 7)
    return v


@wp.func
def rtc_write(m: wp.ref[Machine], i: int, reg: int, value: int):
    if reg == 0x08:
        m.rtc[i, RTC_SEC] = wp.int64(value & 0x3F)
        m.rtc[i, RTC_SUBSEC] = wp.int64(0)
    if reg == 0x09:
        m.rtc[i, RTC_MIN] = wp.int64(value & 0x3F)
    if reg == 0x0A:
        m.rtc[i, RTC_HOUR] = wp.int64(value & 0x1F)
    if reg == 0x0B:
        m.rtc[i, RTC_DAY_LOW] = wp.int64(value & 0xFF)
    if reg == 0x0C:
        m.rtc[i, RTC_DAY_HIGH] = wp.int64(value & 1)
        m.rtc[i, RTC_HALT] = wp.int64((value >> 6) & 1)
        m.rtc[i, RTC_CARRY] = wp.int64((value >> 7) & 1)


# ---- PyBoy save state (host side) ------------------------------------------------------


def rtc_from_pyboy(rtc: RtcState, layout: str, row: np.ndarray) -> None:
    """Load PyBoy's clock block into one env's ``rtc`` row (host side).

    v29 writes halt/carry twice; PyBoy 2.8.1 keeps the second copy, older layouts the
    first. The last sync is 0, as PyBoy sets it: the first clock access after loading
    advances the clock by the whole cycle count, as in PyBoy. Unlike PyBoy, the wall time
    since ``saved_at`` is *not* added: the emulated clock only follows cycles. The latch
    is not saved: it is kept from the machine loaded into."""
    halt, carry = (
        (rtc.halt_again, rtc.day_carry_again) if layout == "v29" else (rtc.halt, rtc.day_carry)
    )
    row[RTC_SEC] = rtc.seconds & 0x3F
    row[RTC_MIN] = rtc.minutes & 0x3F
    row[RTC_HOUR] = rtc.hours & 0x1F
    row[RTC_DAY_LOW] = rtc.day_low & 0xFF
    row[RTC_DAY_HIGH] = rtc.day_high & 1
    row[RTC_HALT] = halt & 1
    row[RTC_CARRY] = carry & 1
    row[RTC_SUBSEC] = rtc.rtc_cycles % int(CLOCK_RATE)
    row[RTC_LAST] = 0


def rtc_to_pyboy(row: np.ndarray) -> RtcState:
    """PyBoy's clock block for one env's ``rtc`` row. ``saved_at`` is +infinity, so PyBoy
    2.8.1 adds no wall time when it loads the export."""
    halt, carry = int(row[RTC_HALT]), int(row[RTC_CARRY])
    return RtcState(
        timezero=0.0,
        halt=halt,
        day_carry=carry,
        seconds=int(row[RTC_SEC]),
        minutes=int(row[RTC_MIN]),
        hours=int(row[RTC_HOUR]),
        day_low=int(row[RTC_DAY_LOW]),
        day_high=int(row[RTC_DAY_HIGH]),
        halt_again=halt,
        day_carry_again=carry,
        rtc_cycles=int(row[RTC_SUBSEC]),
        saved_at=math.inf,
    )
