"""PyBoy's next-sample cycle (``Sound.cycles_target``), a float64 sum kept exact in integers.

PyBoy adds ``4194304 / 48000`` per sample in float64. Within one binary exponent every
addition adds the same rounded step (the one tie, at exponent 7, depends on the parity
of the sum: one step at a time there), so the target is kept as ``K * 2**(E - 52)``
(``SND_SAMPLE_K``, ``SND_SAMPLE_E``) and a run of samples is one multiply."""

from __future__ import annotations

import math

import warp as wp

from gbxcule.kernels.apu.apu_layout import (
    SAMPLE_M,
    SND_FRAME_SAMPLES,
    SND_SAMPLE_E,
    SND_SAMPLE_K,
    TWO52,
    TWO53,
)
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def round_half_even(whole: wp.int64, frac: wp.int64, bits: int) -> wp.int64:
    """``whole + frac / 2**bits`` rounded to an integer, ties to even (0 <= frac < 2**bits)."""
    if bits <= 0:
        return whole
    half = wp.int64(1) << wp.int64(bits - 1)
    if frac > half or (frac == half and (whole & wp.int64(1)) == wp.int64(1)):
        return whole + wp.int64(1)
    return whole


@wp.func
def count_samples(m: wp.ref[Machine], i: int, n: wp.int64):
    m.apu[i, SND_FRAME_SAMPLES] = m.apu[i, SND_FRAME_SAMPLES] + n


@wp.func(inline=False)
def sample_step(m: wp.ref[Machine], i: int):
    """One float64 ``target += cycles_per_sample``, in the ``K * 2**(E-52)`` form."""
    a = m.apu
    count_samples(m, i, wp.int64(1))
    k = a[i, SND_SAMPLE_K]
    e = int(a[i, SND_SAMPLE_E])
    sh = e - 6  # the step in units of 2**(E-52) is SAMPLE_M / 2**sh
    whole = wp.int64(0)
    frac = wp.int64(0)
    if sh <= 0:
        whole = k + (SAMPLE_M << wp.int64(-sh))
        sh = 0
    else:
        whole = k + (SAMPLE_M >> wp.int64(sh))
        frac = SAMPLE_M & ((wp.int64(1) << wp.int64(sh)) - wp.int64(1))
    if whole < TWO53:
        r = round_half_even(whole, frac, sh)
        if r < TWO53:
            a[i, SND_SAMPLE_K] = r
        else:
            a[i, SND_SAMPLE_K] = TWO52
            a[i, SND_SAMPLE_E] = wp.int64(e + 1)
        return
    # the sum reaches the next exponent: round it to that exponent's unit
    r = round_half_even(
        whole >> wp.int64(1), ((whole & wp.int64(1)) << wp.int64(sh)) + frac, sh + 1
    )
    if r >= TWO53:
        a[i, SND_SAMPLE_K] = TWO52
        a[i, SND_SAMPLE_E] = wp.int64(e + 2)
    else:
        a[i, SND_SAMPLE_K] = r
        a[i, SND_SAMPLE_E] = wp.int64(e + 1)


@wp.func
def sample_ceil(m: wp.ref[Machine], i: int) -> wp.int64:
    """``ceil`` of the next sample cycle (PyBoy's ``double_to_uint64_ceil``)."""
    k = m.apu[i, SND_SAMPLE_K]
    e = int(m.apu[i, SND_SAMPLE_E])
    if e >= 52:
        return k << wp.int64(wp.min(e - 52, 10))
    sh = wp.int64(52 - e)
    return (k + (wp.int64(1) << sh) - wp.int64(1)) >> sh


@wp.func(inline=False)
def sample_advance(m: wp.ref[Machine], i: int, now: wp.int64):
    """Advance the next sample cycle past ``now`` (PyBoy: ``while cycles >= target``),
    counting the samples (``SND_FRAME_SAMPLES``)."""
    a = m.apu
    while True:
        k = a[i, SND_SAMPLE_K]
        e = int(a[i, SND_SAMPLE_E])
        if e >= 52:
            if sample_ceil(m, i) > now:
                return
            sample_step(m, i)
            continue
        sh = e - 6
        step = wp.int64(0)
        if sh <= 0:
            step = SAMPLE_M << wp.int64(-sh)
        else:
            frac = SAMPLE_M & ((wp.int64(1) << wp.int64(sh)) - wp.int64(1))
            half = wp.int64(1) << wp.int64(sh - 1)
            step = (SAMPLE_M >> wp.int64(sh)) + wp.where(frac > half, wp.int64(1), wp.int64(0))
            if frac == half:  # ties: the rounding depends on K's parity, one step at a time
                step = wp.int64(0)
        needed = TWO53  # steps still to take; "beyond this exponent" when now is past it
        if now < (wp.int64(1) << wp.int64(e + 1)):
            limit = now << wp.int64(52 - e)
            if k > limit:
                return
            if step > wp.int64(0):
                needed = (limit - k) / step + wp.int64(1)
        safe = wp.int64(0)
        if step > wp.int64(0):
            safe = wp.max(wp.int64(0), (TWO53 - wp.int64(1) - step - k) / step)
        if step > wp.int64(0) and needed <= safe:
            a[i, SND_SAMPLE_K] = k + needed * step
            count_samples(m, i, needed)
            return
        if safe > wp.int64(0):
            a[i, SND_SAMPLE_K] = k + safe * step
            count_samples(m, i, safe)
        sample_step(m, i)


# ---- host side ----------------------------------------------------------------------


def sample_target_parts(target: float) -> tuple[int, int]:
    """A positive float64 as ``(K, E)`` with ``target == K * 2**(E - 52)``, 2**52 <= K < 2**53."""
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"sound cycles_target must be a positive number, not {target!r}")
    mant, exp = math.frexp(target)
    return int(mant * (1 << 53)), exp - 1


def sample_target_value(k: int, e: int) -> float:
    return math.ldexp(float(k), e - 52)
