"""MBC3 real-time clock, driven by emulated T-cycles only.

PyBoy 2.8.1's clock advances by the CPU cycles elapsed between two clock
syncs (a sync happens on every cart-RAM access while an RTC register is
selected and on every write to 0x6000-0x7FFF). It falls back to the host
clock only when two syncs land on the same cycle count; we count that case as
zero elapsed time, so every env stays deterministic.

Per-env state is one row of ``Machine.rtc`` (int64), columns below.
"""

from __future__ import annotations

import warp as wp

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

CLOCK_RATE = wp.constant(wp.int64(4194304))


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
