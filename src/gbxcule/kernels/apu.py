"""The sound unit (FF10-FF3F) as the CPU sees it, as PyBoy 2.8.1 models it with sound on.

What a game can observe: the register read masks, NR52's channel-on bits (triggers,
DACs, length counters running out, the channel-1 sweep overflowing), power-off
clearing every register but the DMG length timers, and wave RAM while channel 3 plays
(on DMG only on the cycle channel 3 reads it, else $FF). PyBoy's frame sequencer is a
512 Hz clock of its own (every 8192 cycles from power-on), restarted by DIV writes and
NR52 power-on, not DIV's bit 12. Channel 3's period timer, the sweep's overflow check
32 cycles after it reaches $7FF and the envelopes are kept exact; the pulse and noise
channels' period timers, duty positions and LFSR only shape audio samples, which we do
not make, so they stay as the last trigger or load left them (``APU_SAMPLE_ONLY``).

Synchronised lazily like the timer: ``apu_sync(m, i, cycles)`` replays the frame
sequencer's edges since the last sync in order, with the channels' timers advanced to
each edge in one jump, and skips runs of edges that change nothing. It runs when a sound
register or DIV is accessed, at the end of every step, and where PyBoy's slice target
could come from the sound unit: PyBoy takes the minimum of its relative targets and the
sound unit's *absolute* next sample or sequencer cycle, which only wins in the first
few hundred cycles after power-on (``apu_slice_target``).

PyBoy's next sample cycle is a float64 sum of 4194304 / 48000 per sample. It is kept
exact as ``K * 2**(E - 52)`` (``SND_SAMPLE_K``, ``SND_SAMPLE_E``): within one binary
exponent every addition adds the same rounded step, so runs of samples are one multiply.

Per-env state is one row of ``Machine.apu`` (int64), columns below. Host side (at the
end): ``apu_from_pyboy`` / ``apu_to_pyboy`` map PyBoy's sound block of a save state.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from gbxcule.kernels.state import CYCLES, TIM_COUNTER, Machine

wp.set_module_options({"enable_backward": False})

# ---- columns of Machine.apu ----------------------------------------------------
SND_LAST = wp.constant(0)  # CPU cycle count of the last sync (PyBoy's last_cycles)
SND_CYCLES = wp.constant(1)  # the unit's own clock (PyBoy's sound.cycles)
SND_SAMPLE_K = wp.constant(2)  # next sample cycle = K * 2**(E - 52) (PyBoy's cycles_target)
SND_SAMPLE_E = wp.constant(3)
SND_FS_TARGET = wp.constant(4)  # next frame-sequencer edge (cycles_target_512Hz)
SND_TO_IRQ = wp.constant(5)  # PyBoy's _cycles_to_interrupt (absolute, as of the last sync)
SND_DIV_COUNTER = wp.constant(6)  # div_apu_counter
SND_DIV_APU = wp.constant(7)  # div_apu: frame-sequencer steps
SND_POWERON = wp.constant(8)  # 0 or 0x80
SND_AFTER_DIV = wp.constant(9)  # apu_poweron_after_div_write
SND_NR50 = wp.constant(10)
SND_NR51 = wp.constant(11)  # the eight panning flags as one byte
SND_FRAME_SAMPLES = wp.constant(12)  # samples PyBoy took since the frame began (its buffer)
# (PyBoy's last_div_write_cycles and last_power_off_cycles only count on CGB: not kept)
# Four channel blocks of CH_STRIDE columns: sweep (NR1x), tone (NR2x), wave (NR3x), noise.
CH0 = 16
CH_STRIDE = 17
LEN_EN = wp.constant(0)  # length_enable
INIT_LEN = wp.constant(1)  # init_length_timer
LEN = wp.constant(2)  # lengthtimer
ENABLE = wp.constant(3)  # enable: 0 or the channel's NR52 bit
ENV_VOL = wp.constant(4)  # envelope_volume (register)
ENV_DIR = wp.constant(5)
ENV_PACE = wp.constant(6)
ENV_TIMER = wp.constant(7)  # envelopetimer
VOLUME = wp.constant(8)  # current volume
FREQ = wp.constant(9)  # sound_period (the 11-bit register value)
PERIOD = wp.constant(10)  # period in cycles
TIMER = wp.constant(11)  # periodtimer
FRAME = wp.constant(12)  # waveframe
SUPPRESSED = wp.constant(13)  # sample_suppressed
DUTY = wp.constant(14)  # wave_duty
PENDING_DUTY = wp.constant(15)  # CGB only: pending_wave_duty
DUTY_PENDING = wp.constant(16)  # CGB only: duty_update_pending
EXTRA = CH0 + 4 * CH_STRIDE
SW_PACE = wp.constant(EXTRA + 0)
SW_DIR = wp.constant(EXTRA + 1)
SW_MAG = wp.constant(EXTRA + 2)
SW_TIMER = wp.constant(EXTRA + 3)  # sweeptimer
SW_CHECK = wp.constant(EXTRA + 4)  # sweepchecktimer: cycles to the second overflow check
SW_CALC = wp.constant(EXTRA + 5)  # CGB only: sweepcalctimer
SW_HOLD = wp.constant(EXTRA + 6)  # CGB only: sweep_restart_hold
SW_NEG = wp.constant(EXTRA + 7)  # sweep_negate_used
SW_EN = wp.constant(EXTRA + 8)  # sweepenable (PyBoy keeps ``pace or magnitude``)
SW_SHADOW = wp.constant(EXTRA + 9)
W_DAC = wp.constant(EXTRA + 10)  # dacpow
W_VOLREG = wp.constant(EXTRA + 11)
W_VOLSHIFT = wp.constant(EXTRA + 12)
W_ACCESS = wp.constant(EXTRA + 13)  # wave_access: channel 3 read wave RAM this cycle
W_RESTART = wp.constant(EXTRA + 14)  # CGB only: restart_pending
W_SAMPLEFRAME = wp.constant(EXTRA + 15)
N_CLKPOW = wp.constant(EXTRA + 16)
N_REGWID = wp.constant(EXTRA + 17)
N_CLKDIV = wp.constant(EXTRA + 18)
N_LFSR = wp.constant(EXTRA + 19)  # shiftregister
N_FEED = wp.constant(EXTRA + 20)  # lfsrfeed
N_COUNTER = wp.constant(EXTRA + 21)  # CGB only from here: counter
N_COUNTDOWN = wp.constant(EXTRA + 22)
N_ALIGN = wp.constant(EXTRA + 23)
N_RUNNING = wp.constant(EXTRA + 24)
WAVE_RAM = wp.constant(EXTRA + 25)  # 16 columns: FF30-FF3F
APU_FIELDS = EXTRA + 25 + 16

FS_PERIOD = wp.constant(wp.int64(8192))
# PyBoy's cycles_per_sample, 4194304 / 48000 as a float64: SAMPLE_M * 2**-46 exactly
SAMPLE_M = wp.constant(wp.int64(6148914691236517))
TWO52 = wp.constant(wp.int64(1 << 52))
TWO53 = wp.constant(wp.int64(1 << 53))

# Fields only audio samples depend on: not advanced here (see the module doc).
APU_SAMPLE_ONLY = ("tone timers and duty positions", "noise timer and LFSR", "audio buffer")


@wp.func
def col(ch: int, field: int) -> int:
    return CH0 + ch * CH_STRIDE + field


# ---- PyBoy's next-sample cycle, a float64 sum kept exact --------------------------


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
def sample_step(m: wp.ref[Machine], i: int):
    """One float64 ``target += cycles_per_sample``, in the ``K * 2**(E-52)`` form."""
    a = m.apu
    a[i, SND_FRAME_SAMPLES] = a[i, SND_FRAME_SAMPLES] + wp.int64(1)
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


@wp.func
def sample_advance(m: wp.ref[Machine], i: int, now: wp.int64):
    """Advance the next sample cycle past ``now`` (PyBoy: ``while cycles >= target``)."""
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
            a[i, SND_FRAME_SAMPLES] = a[i, SND_FRAME_SAMPLES] + needed
            return
        if safe > wp.int64(0):
            a[i, SND_SAMPLE_K] = k + safe * step
            a[i, SND_FRAME_SAMPLES] = a[i, SND_FRAME_SAMPLES] + safe
        sample_step(m, i)


# ---- the frame sequencer's clocks --------------------------------------------------


@wp.func
def tick_length(m: wp.ref[Machine], i: int, ch: int):
    a = m.apu
    if a[i, col(ch, LEN_EN)] != wp.int64(0) and a[i, col(ch, LEN)] > wp.int64(0):
        a[i, col(ch, LEN)] = a[i, col(ch, LEN)] - wp.int64(1)
        if a[i, col(ch, LEN)] == wp.int64(0):
            a[i, col(ch, ENABLE)] = wp.int64(0)


@wp.func
def tick_envelope(m: wp.ref[Machine], i: int, ch: int):
    a = m.apu
    timer = a[i, col(ch, ENV_TIMER)]
    if timer != wp.int64(0):
        timer = timer - wp.int64(1)
        if timer == wp.int64(0):
            vol = a[i, col(ch, VOLUME)] + wp.where(
                a[i, col(ch, ENV_DIR)] != wp.int64(0), wp.int64(1), wp.int64(-1)
            )
            if vol < wp.int64(0) or vol > wp.int64(15):
                timer = wp.int64(0)
            else:
                timer = a[i, col(ch, ENV_PACE)]
                a[i, col(ch, VOLUME)] = vol
        a[i, col(ch, ENV_TIMER)] = timer


@wp.func
def sweep_calc(m: wp.ref[Machine], i: int, save: int) -> int:
    """PyBoy's ``SweepChannel.sweep``: 1 when a new period was written back."""
    a = m.apu
    shadow = a[i, SW_SHADOW]
    shift = a[i, SW_MAG]
    new = shadow + (shadow >> shift)
    if a[i, SW_DIR] != wp.int64(0):
        a[i, SW_NEG] = wp.int64(1)
        new = shadow - (shadow >> shift)
    if new >= wp.int64(0x800):
        a[i, col(0, ENABLE)] = wp.int64(0)
        return 0
    if save != 0 and shift != wp.int64(0):
        a[i, SW_SHADOW] = new
        a[i, col(0, FREQ)] = new
        if new == wp.int64(0x7FF):
            a[i, SW_CHECK] = wp.int64(32)  # the second check, 8 M-cycles later
        a[i, col(0, PERIOD)] = wp.int64(4) * (wp.int64(0x800) - new)
        return 1
    return 0


@wp.func
def tick_sweep(m: wp.ref[Machine], i: int):
    a = m.apu
    if a[i, SW_HOLD] != wp.int64(0):
        return
    if a[i, SW_EN] != wp.int64(0) and a[i, col(0, ENABLE)] != wp.int64(0):
        a[i, SW_TIMER] = a[i, SW_TIMER] - wp.int64(1)
        if a[i, SW_TIMER] <= wp.int64(0):
            pace = a[i, SW_PACE]
            a[i, SW_TIMER] = wp.where(pace != wp.int64(0), pace, wp.int64(8))
            if pace != wp.int64(0):
                if sweep_calc(m, i, 1) != 0 and a[i, SW_CHECK] == wp.int64(0):
                    sweep_calc(m, i, 0)


@wp.func
def frame_sequencer_tick(m: wp.ref[Machine], i: int):
    """PyBoy's ``_tick_frame_sequencer`` (DMG)."""
    a = m.apu
    counter = a[i, SND_DIV_COUNTER]
    if counter == wp.int64(2) or counter == wp.int64(5):
        a[i, SND_DIV_COUNTER] = wp.int64(1)
        return
    if counter == wp.int64(1):
        a[i, SND_DIV_COUNTER] = wp.int64(3)
    else:
        a[i, SND_DIV_APU] = a[i, SND_DIV_APU] + wp.int64(1)
    if a[i, SND_POWERON] == wp.int64(0):
        return
    step = a[i, SND_DIV_APU]
    if step % wp.int64(2) == wp.int64(1):
        for ch in range(4):
            tick_length(m, i, ch)
    if step % wp.int64(4) == wp.int64(3):
        tick_sweep(m, i)
    if step % wp.int64(8) == wp.int64(7):
        tick_envelope(m, i, 0)
        tick_envelope(m, i, 1)
        tick_envelope(m, i, 3)


@wp.func
def sequencer_is_idle(m: wp.ref[Machine], i: int) -> int:
    """1 when frame-sequencer edges would only count: no length counter, sweep, sweep
    check or envelope running (powered off, none can)."""
    a = m.apu
    counter = a[i, SND_DIV_COUNTER]
    if counter != wp.int64(0) and counter != wp.int64(3):
        return 0
    if a[i, SND_POWERON] == wp.int64(0):
        return 1
    for ch in range(4):
        if a[i, col(ch, LEN_EN)] != wp.int64(0) and a[i, col(ch, LEN)] > wp.int64(0):
            return 0
    if a[i, SW_EN] != wp.int64(0) and a[i, col(0, ENABLE)] != wp.int64(0):
        return 0
    if a[i, SW_CHECK] != wp.int64(0) or a[i, SW_HOLD] != wp.int64(0):
        return 0
    if (
        a[i, col(0, ENV_TIMER)] != wp.int64(0)
        or a[i, col(1, ENV_TIMER)] != wp.int64(0)
        or a[i, col(3, ENV_TIMER)] != wp.int64(0)
    ):
        return 0
    return 1


# ---- channel timers between edges ------------------------------------------------


@wp.func
def sample_edge_at(m: wp.ref[Machine], i: int, t: wp.int64) -> int:
    """1 when a sample boundary of PyBoy's tick loop falls on cycle ``t``: some
    ``ceil(target) == t`` (the targets before ``t - 1`` are passed here, which the sync
    would do anyway)."""
    sample_advance(m, i, t - wp.int64(1))
    return wp.where(sample_ceil(m, i) == t, 1, 0)


@wp.func
def advance_channels(m: wp.ref[Machine], i: int, start: wp.int64, end: wp.int64):
    """The powered unit's channel ticks from ``start`` to ``end`` (no edge in between)."""
    a = m.apu
    dt = end - start
    if a[i, SW_HOLD] != wp.int64(0):
        a[i, SW_HOLD] = wp.max(wp.int64(0), a[i, SW_HOLD] - dt)
    if a[i, SW_CHECK] != wp.int64(0):
        left = a[i, SW_CHECK] - dt
        if left <= wp.int64(0):
            a[i, SW_CHECK] = wp.int64(0)
            if a[i, SW_MAG] != wp.int64(0):
                sweep_calc(m, i, 0)
        else:
            a[i, SW_CHECK] = left
    if a[i, col(2, ENABLE)] == wp.int64(0):
        return
    # channel 3: its period timer and the one-cycle wave RAM access window
    timer = a[i, col(2, TIMER)] - dt
    access = wp.int64(0)
    if timer <= wp.int64(0):
        period = wp.max(a[i, col(2, PERIOD)], wp.int64(1))
        n = (-timer) / period + wp.int64(1)
        timer = timer + n * period
        frame = (a[i, col(2, FRAME)] + n) % wp.int64(32)
        a[i, col(2, FRAME)] = frame
        a[i, W_SAMPLEFRAME] = frame
        a[i, col(2, SUPPRESSED)] = wp.int64(0)
        a[i, W_RESTART] = wp.int64(0)
        if timer >= period - wp.int64(1):
            last = end - (period - timer)  # the cycle of the last read
            if last == end:
                access = wp.int64(1)
            elif last > start and sample_edge_at(m, i, last) == 0:
                # PyBoy's last tick chunk starts after that read only at a sample boundary
                access = wp.int64(1)
    a[i, col(2, TIMER)] = timer
    a[i, W_ACCESS] = access


@wp.func(inline=False)
def apu_sync(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """Bring the unit up to the CPU's ``cycles`` (PyBoy's ``Sound.tick``)."""
    a = m.apu
    delta = cycles - a[i, SND_LAST]
    a[i, SND_LAST] = cycles
    a[i, W_ACCESS] = wp.int64(0)
    t = a[i, SND_CYCLES]
    end = t + wp.max(delta, wp.int64(0))
    while a[i, SND_FS_TARGET] <= end:
        edge = a[i, SND_FS_TARGET]
        if sequencer_is_idle(m, i) != 0:
            # every edge up to the end only counts: one jump to the last of them
            n = (end - edge) / FS_PERIOD
            edge = edge + n * FS_PERIOD
            a[i, SND_DIV_APU] = a[i, SND_DIV_APU] + n
        if a[i, SND_POWERON] != wp.int64(0) and edge > t:
            advance_channels(m, i, t, edge)
        t = edge
        frame_sequencer_tick(m, i)
        a[i, SND_FS_TARGET] = edge + FS_PERIOD
    if a[i, SND_POWERON] != wp.int64(0) and end > t:
        advance_channels(m, i, t, end)
    a[i, SND_CYCLES] = end
    sample_advance(m, i, end)
    a[i, SND_TO_IRQ] = wp.min(sample_ceil(m, i), a[i, SND_FS_TARGET])


@wp.func
def apu_frame_start(m: wp.ref[Machine], i: int):
    """A ``PyBoy.tick()`` frame begins: its sample count starts from here."""
    sample_advance(m, i, m.i64[i, CYCLES])
    m.apu[i, SND_FRAME_SAMPLES] = wp.int64(0)


@wp.func
def apu_slice_target(m: wp.ref[Machine], i: int, others: wp.int64) -> wp.int64:
    """PyBoy's slice target: the minimum of the other units' (relative) targets and the
    sound unit's absolute next event, which is more than the cycle count, so it only
    matters while the cycle count is below the others."""
    cycles = m.i64[i, CYCLES]
    if cycles + wp.int64(1) >= others:
        return others
    apu_sync(m, i, cycles)
    return wp.min(others, m.apu[i, SND_TO_IRQ])


# ---- register writes --------------------------------------------------------------


@wp.func
def envelope_write(m: wp.ref[Machine], i: int, ch: int, v: int):
    a = m.apu
    a[i, col(ch, ENV_VOL)] = wp.int64((v >> 4) & 0x0F)
    a[i, col(ch, ENV_DIR)] = wp.int64((v >> 3) & 1)
    a[i, col(ch, ENV_PACE)] = wp.int64(v & 7)
    if (v & 0xF8) == 0:  # the DAC is off
        a[i, col(ch, ENABLE)] = wp.int64(0)


@wp.func
def envelope_trigger(m: wp.ref[Machine], i: int, ch: int, bit: int):
    a = m.apu
    a[i, col(ch, ENABLE)] = wp.int64(bit)
    if a[i, col(ch, LEN)] == wp.int64(0):
        a[i, col(ch, LEN)] = wp.int64(64)
    a[i, col(ch, TIMER)] = a[i, col(ch, PERIOD)]
    a[i, col(ch, ENV_TIMER)] = a[i, col(ch, ENV_PACE)]
    a[i, col(ch, VOLUME)] = a[i, col(ch, ENV_VOL)]
    if a[i, col(ch, ENV_VOL)] == wp.int64(0) and a[i, col(ch, ENV_DIR)] == wp.int64(0):
        a[i, col(ch, ENABLE)] = wp.int64(0)


@wp.func
def sweep_trigger(m: wp.ref[Machine], i: int):
    a = m.apu
    pending = a[i, SW_CHECK]
    envelope_trigger(m, i, 0, 0x02)
    if a[i, col(0, ENABLE)] != wp.int64(0):
        a[i, col(0, ENABLE)] = wp.int64(0x01)
    a[i, SW_SHADOW] = a[i, col(0, FREQ)]
    pace = a[i, SW_PACE]
    a[i, SW_TIMER] = wp.where(pace != wp.int64(0), pace, wp.int64(8))
    a[i, SW_CALC] = wp.int64(0)
    a[i, SW_HOLD] = wp.int64(0)
    a[i, SW_CHECK] = pending + wp.where(pending != wp.int64(0), wp.int64(8), wp.int64(0))
    a[i, SW_NEG] = wp.int64(0)
    a[i, SW_EN] = wp.where(pace != wp.int64(0), pace, a[i, SW_MAG])
    if a[i, SW_MAG] != wp.int64(0) and pending == wp.int64(0):
        sweep_calc(m, i, 0)


@wp.func
def tone_write(m: wp.ref[Machine], i: int, ch: int, reg: int, v: int, force: int):
    """NR1x (``ch`` 0, with NR10) and NR2x (``ch`` 1)."""
    a = m.apu
    if reg == 0:
        if ch == 0:
            old_dir = a[i, SW_DIR]
            a[i, SW_PACE] = wp.int64((v >> 4) & 7)
            a[i, SW_DIR] = wp.int64((v >> 3) & 1)
            a[i, SW_MAG] = wp.int64(v & 7)
            if (
                old_dir != wp.int64(0)
                and a[i, SW_DIR] == wp.int64(0)
                and a[i, SW_NEG] != wp.int64(0)
            ):
                a[i, col(0, ENABLE)] = wp.int64(0)
    elif reg == 1:
        if force == 0:
            a[i, col(ch, DUTY)] = wp.int64((v >> 6) & 3)
        a[i, col(ch, INIT_LEN)] = wp.int64(v & 0x3F)
        a[i, col(ch, LEN)] = wp.int64(64 - (v & 0x3F))
    elif reg == 2:
        envelope_write(m, i, ch, v)
    else:
        freq = a[i, col(ch, FREQ)]
        if reg == 3:
            freq = (freq & wp.int64(0x700)) | wp.int64(v)
        else:
            a[i, col(ch, LEN_EN)] = wp.int64((v >> 6) & 1)
            freq = wp.int64((v << 8) & 0x700) | (freq & wp.int64(0xFF))
        a[i, col(ch, FREQ)] = freq
        a[i, col(ch, PERIOD)] = wp.int64(4) * (wp.int64(0x800) - freq)
        if reg == 4 and (v & 0x80) != 0:
            if ch == 0:
                sweep_trigger(m, i)
            else:
                envelope_trigger(m, i, 1, 0x02)


@wp.func
def wave_trigger(m: wp.ref[Machine], i: int):
    a = m.apu
    if a[i, col(2, ENABLE)] != wp.int64(0) and a[i, col(2, TIMER)] == wp.int64(1):
        # DMG: retriggering on the cycle channel 3 reads corrupts the first wave bytes
        offset = int(((a[i, col(2, FRAME)] + wp.int64(1)) / wp.int64(2)) & wp.int64(0x0F))
        if offset < 4:
            a[i, WAVE_RAM] = a[i, WAVE_RAM + offset]
        else:
            start = offset & 0x0C
            for n in range(4):
                a[i, WAVE_RAM + n] = a[i, WAVE_RAM + start + n]
    a[i, col(2, ENABLE)] = wp.where(a[i, W_DAC] != wp.int64(0), wp.int64(0x04), wp.int64(0))
    if a[i, col(2, LEN)] == wp.int64(0):
        a[i, col(2, LEN)] = wp.int64(256)
    a[i, col(2, TIMER)] = a[i, col(2, PERIOD)] + wp.int64(5)
    a[i, col(2, FRAME)] = wp.int64(0)
    a[i, W_SAMPLEFRAME] = wp.int64(0)
    a[i, W_RESTART] = wp.int64(0)
    a[i, W_ACCESS] = wp.int64(0)
    a[i, col(2, SUPPRESSED)] = wp.int64(0)  # set by the trigger, cleared by Sound.set (DMG)


@wp.func
def wave_write(m: wp.ref[Machine], i: int, reg: int, v: int):
    a = m.apu
    if reg == 0:
        a[i, W_DAC] = wp.int64((v >> 7) & 1)
        if (v & 0x80) == 0:
            a[i, col(2, ENABLE)] = wp.int64(0)
            a[i, W_RESTART] = wp.int64(0)
    elif reg == 1:
        a[i, col(2, INIT_LEN)] = wp.int64(v)
        a[i, col(2, LEN)] = wp.int64(256 - v)
    elif reg == 2:
        volreg = (v >> 5) & 3
        a[i, W_VOLREG] = wp.int64(volreg)
        a[i, W_VOLSHIFT] = wp.int64(wp.where(volreg > 0, volreg - 1, 4))
    else:
        freq = a[i, col(2, FREQ)]
        if reg == 3:
            freq = (freq & wp.int64(0x700)) + wp.int64(v)
        else:
            a[i, col(2, LEN_EN)] = wp.int64((v >> 6) & 1)
            freq = wp.int64((v << 8) & 0x700) + (freq & wp.int64(0xFF))
        a[i, col(2, FREQ)] = freq
        a[i, col(2, PERIOD)] = wp.int64(2) * (wp.int64(0x800) - freq)
        if reg == 4 and (v & 0x80) != 0:
            wave_trigger(m, i)


@wp.func
def noise_write(m: wp.ref[Machine], i: int, reg: int, v: int):
    a = m.apu
    if reg == 1:
        a[i, col(3, INIT_LEN)] = wp.int64(v & 0x3F)
        a[i, col(3, LEN)] = wp.int64(64 - (v & 0x3F))
    elif reg == 2:
        envelope_write(m, i, 3, v)
    elif reg == 3:
        div = v & 7
        a[i, N_CLKPOW] = wp.int64((v >> 4) & 0x0F)
        a[i, N_REGWID] = wp.int64((v >> 3) & 1)
        a[i, N_CLKDIV] = wp.int64(div)
        base = wp.where(div == 0, 8, div * 16)
        a[i, col(3, PERIOD)] = wp.int64(base) << wp.int64((v >> 4) & 0x0F)
        a[i, N_FEED] = wp.int64(wp.where((v & 8) != 0, 0x4040, 0x4000))
    elif reg == 4:
        a[i, col(3, LEN_EN)] = wp.int64((v >> 6) & 1)
        if (v & 0x80) != 0:
            envelope_trigger(m, i, 3, 0x08)
            a[i, N_LFSR] = wp.int64(0x7FFF)


@wp.func
def channel_write(m: wp.ref[Machine], i: int, ch: int, reg: int, v: int, force: int):
    """PyBoy's ``Sound._set_channel`` (DMG), with its length-counter quirks on NRx4
    writes while the frame sequencer's step is odd."""
    a = m.apu
    old_len_en = a[i, col(ch, LEN_EN)]
    old_len = a[i, col(ch, LEN)]
    odd = (a[i, SND_DIV_APU] % wp.int64(2)) == wp.int64(1)
    clocked = 0
    if reg == 4 and odd and (v & 0xC0) == 0xC0:
        if old_len_en == wp.int64(0) and old_len > wp.int64(0):
            a[i, col(ch, LEN_EN)] = wp.int64(1)
            tick_length(m, i, ch)
            a[i, col(ch, LEN_EN)] = old_len_en
            clocked = 1
    if ch < 2:
        tone_write(m, i, ch, reg, v, force)
    elif ch == 2:
        wave_write(m, i, reg, v)
    else:
        noise_write(m, i, reg, v)
    if reg == 4 and odd:
        if (
            (v & 0x40) != 0
            and clocked == 0
            and (old_len_en == wp.int64(0) or old_len == wp.int64(0))
        ):
            tick_length(m, i, ch)
        elif clocked != 0 and old_len == wp.int64(1) and (v & 0x80) != 0:
            tick_length(m, i, ch)


@wp.func
def power_off(m: wp.ref[Machine], i: int):
    """NR52 bit 7 cleared: every register written 0; DMG keeps the length timers."""
    a = m.apu
    l0 = a[i, col(0, LEN)]
    l1 = a[i, col(1, LEN)]
    l2 = a[i, col(2, LEN)]
    l3 = a[i, col(3, LEN)]
    for n in range(20):
        channel_write(m, i, n / 5, n % 5, 0, 0)
    a[i, SND_NR50] = wp.int64(0)
    a[i, SND_NR51] = wp.int64(0)
    a[i, col(0, LEN)] = l0
    a[i, col(1, LEN)] = l1
    a[i, col(2, LEN)] = l2
    a[i, col(3, LEN)] = l3
    a[i, SW_CHECK] = wp.int64(0)


@wp.func
def nr52_write(m: wp.ref[Machine], i: int, v: int):
    a = m.apu
    was_on = a[i, SND_POWERON] != wp.int64(0)
    div_bit = (m.i32[i, TIM_COUNTER] >> 8) & 0x10  # PyBoy reads DIV as of its last sync
    if (v & 0x80) != 0 and not was_on:
        # starting the APU while DIV's bit is high after a DIV write skips its next edge
        if a[i, SND_AFTER_DIV] != wp.int64(0) and div_bit != 0:
            a[i, SND_DIV_COUNTER] = wp.int64(2)
        else:
            a[i, SND_DIV_COUNTER] = wp.int64(0)
    if (v & 0x80) == 0:
        power_off(m, i)
        a[i, SND_POWERON] = wp.int64(0)
        a[i, SND_DIV_COUNTER] = wp.int64(0)
        a[i, N_COUNTER] = wp.int64(0)
        a[i, N_COUNTDOWN] = wp.int64(0)
        a[i, N_ALIGN] = wp.int64(0)
        a[i, N_RUNNING] = wp.int64(0)
        return
    a[i, SND_POWERON] = wp.int64(0x80)
    if not was_on:  # a new frame-sequencer period
        a[i, SND_DIV_APU] = wp.int64(0)
        a[i, SND_FS_TARGET] = a[i, SND_CYCLES] + FS_PERIOD
    if a[i, SND_DIV_COUNTER] != wp.int64(0):
        a[i, SND_DIV_APU] = wp.int64(1)
        to_edge = 0x2000 - (m.i32[i, TIM_COUNTER] & 0x1FFF)
        a[i, SND_FS_TARGET] = a[i, SND_CYCLES] + wp.int64(to_edge)


@wp.func
def apu_write(m: wp.ref[Machine], i: int, r: int, v: int):
    """A CPU write to ``0xFF10 + r`` (``r`` 0..0x2F), the unit synced to the write."""
    a = m.apu
    powered = a[i, SND_POWERON] != wp.int64(0)
    if r < 20:
        # off, only the length timers (NRx1) take writes, and NRx1's duty is kept
        if powered or r % 5 == 1:
            channel_write(m, i, r / 5, r % 5, v, wp.where(powered, 0, 1))
        if r == 4:
            a[i, SND_AFTER_DIV] = wp.int64(0)
    elif r == 20:
        if powered:
            a[i, SND_NR50] = wp.int64(v)
    elif r == 21:
        if powered:
            a[i, SND_NR51] = wp.int64(v)
    elif r == 22:
        nr52_write(m, i, v)
    elif r >= 32:
        if a[i, col(2, ENABLE)] == wp.int64(0):
            a[i, WAVE_RAM + r - 32] = wp.int64(v)
        elif a[i, W_ACCESS] != wp.int64(0):
            a[i, WAVE_RAM + int(a[i, col(2, FRAME)] / wp.int64(2))] = wp.int64(v)


@wp.func
def apu_div_write(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """A DIV write, before the timer clears its counter: syncs the unit; a DIV bit 4
    (counter bit 12) falling this way clocks the frame sequencer; either way the
    sequencer's next edge is 8192 cycles away."""
    a = m.apu
    edge = (m.i32[i, TIM_COUNTER] >> 8) & 0x10
    apu_sync(m, i, cycles)
    if edge != 0:
        a[i, SND_AFTER_DIV] = wp.int64(1)
        frame_sequencer_tick(m, i)
    a[i, SND_FS_TARGET] = a[i, SND_CYCLES] + FS_PERIOD


# ---- register reads ----------------------------------------------------------------


@wp.func
def apu_peek(m: wp.ref[Machine], i: int, r: int, access: int) -> int:
    """The value of ``0xFF10 + r`` as of the last sync; ``access``: channel 3's read window
    counts (a CPU read right after its sync), else wave RAM reads $FF while it plays."""
    a = m.apu
    if r >= 32:
        if a[i, col(2, ENABLE)] == wp.int64(0):
            return int(a[i, WAVE_RAM + r - 32])
        if access != 0 and a[i, W_ACCESS] != wp.int64(0):
            return int(a[i, WAVE_RAM + int(a[i, col(2, FRAME)] / wp.int64(2))])
        return 0xFF
    if r == 20:
        return int(a[i, SND_NR50])
    if r == 21:
        return int(a[i, SND_NR51])
    if r == 22:
        on = a[i, SND_POWERON]
        for ch in range(4):
            on = on | a[i, col(ch, ENABLE)]
        return int(on) | 0x70
    if r > 22:
        return 0xFF
    ch = r / 5
    reg = r % 5
    if reg == 4:
        return int(a[i, col(ch, LEN_EN)] << wp.int64(6)) | 0xBF
    if ch == 2:
        if reg == 0:
            return int(a[i, W_DAC] << wp.int64(7)) | 0x7F
        if reg == 2:
            return int(a[i, W_VOLREG] << wp.int64(5)) | 0x9F
        return 0xFF
    if reg == 2:
        return int(
            (a[i, col(ch, ENV_VOL)] << wp.int64(4))
            | (a[i, col(ch, ENV_DIR)] << wp.int64(3))
            | a[i, col(ch, ENV_PACE)]
        )
    if ch == 3:
        if reg == 3:
            return int(
                (a[i, N_CLKPOW] << wp.int64(4)) | (a[i, N_REGWID] << wp.int64(3)) | a[i, N_CLKDIV]
            )
        return 0xFF
    if reg == 1:
        duty = a[i, col(ch, DUTY)]
        if a[i, col(ch, DUTY_PENDING)] != wp.int64(0):
            duty = a[i, col(ch, PENDING_DUTY)]
        return int(duty << wp.int64(6)) | 0x3F
    if reg == 0 and ch == 0:
        return (
            int((a[i, SW_PACE] << wp.int64(4)) | (a[i, SW_DIR] << wp.int64(3)) | a[i, SW_MAG])
            | 0x80
        )
    return 0xFF


@wp.func(inline=False)
def apu_read(m: wp.ref[Machine], i: int, r: int, cycles: wp.int64) -> int:
    apu_sync(m, i, cycles)
    return apu_peek(m, i, r, 1)


@wp.func(inline=False)
def apu_write_synced(m: wp.ref[Machine], i: int, r: int, v: int, cycles: wp.int64):
    apu_sync(m, i, cycles)
    apu_write(m, i, r, v)


# ---- power-on ----------------------------------------------------------------------


@wp.func
def apu_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``Sound()`` with sound emulated; every column not set here is 0."""
    a = m.apu
    a[i, SND_SAMPLE_K] = SAMPLE_M
    a[i, SND_SAMPLE_E] = wp.int64(6)
    a[i, SND_FS_TARGET] = FS_PERIOD
    a[i, SND_TO_IRQ] = wp.int64(88)  # ceil(min(87.38..., 8192))
    a[i, SND_DIV_APU] = wp.int64(3)
    for ch in range(4):
        a[i, col(ch, LEN)] = wp.int64(wp.where(ch == 2, 256, 64))
        a[i, col(ch, PERIOD)] = wp.int64(wp.where(ch == 3, 8, 4))
    a[i, N_LFSR] = wp.int64(1)
    a[i, N_FEED] = wp.int64(0x4000)
    for n in range(16):
        a[i, WAVE_RAM + n] = wp.int64(0xFF)


# ---- PyBoy save state (host side) ------------------------------------------------------

# PyBoy fields that the emulated sound does not save, so a load keeps the machine's:
APU_UNSAVED: frozenset[str] = frozenset()  # the whole row is loaded (last_div_write, ...: 0)

CHANNELS = ("sweep", "tone", "wave", "noise")  # the channel blocks of PyBoy's state
_COMMON = {
    "length_enable": LEN_EN,
    "init_length_timer": INIT_LEN,
    "lengthtimer": LEN,
    "enable": ENABLE,
    "sound_period": FREQ,
    "period": PERIOD,
    "periodtimer": TIMER,
    "waveframe": FRAME,
    "sample_suppressed": SUPPRESSED,
}
_ENVELOPE = {
    "envelope_volume": ENV_VOL,
    "envelope_direction": ENV_DIR,
    "envelope_pace": ENV_PACE,
    "envelopetimer": ENV_TIMER,
    "volume": VOLUME,
}
_TONE = {"wave_duty": DUTY, "pending_wave_duty": PENDING_DUTY, "duty_update_pending": DUTY_PENDING}
_EXTRA = {
    "sweep": {
        "sweep_pace": SW_PACE,
        "sweep_direction": SW_DIR,
        "sweep_magnitude": SW_MAG,
        "sweeptimer": SW_TIMER,
        "sweepchecktimer": SW_CHECK,
        "sweepcalctimer": SW_CALC,
        "sweep_restart_hold": SW_HOLD,
        "sweep_negate_used": SW_NEG,
        "sweepenable": SW_EN,
        "shadow": SW_SHADOW,
    },
    "wave": {
        "dacpow": W_DAC,
        "volreg": W_VOLREG,
        "volumeshift": W_VOLSHIFT,
        "wave_access": W_ACCESS,
        "restart_pending": W_RESTART,
        "sampleframe": W_SAMPLEFRAME,
    },
    "noise": {
        "clkpow": N_CLKPOW,
        "regwid": N_REGWID,
        "clkdiv": N_CLKDIV,
        "shiftregister": N_LFSR,
        "lfsrfeed": N_FEED,
        "counter": N_COUNTER,
        "counter_countdown": N_COUNTDOWN,
        "alignment": N_ALIGN,
        "counter_running": N_RUNNING,
    },
}
_GLOBAL = {
    "cycles": SND_CYCLES,
    "last_cycles": SND_LAST,
    "cycles_to_interrupt": SND_TO_IRQ,
    "div_apu_counter": SND_DIV_COUNTER,
    "div_apu": SND_DIV_APU,
    "apu_poweron_after_div_write": SND_AFTER_DIV,
    "poweron": SND_POWERON,
    "nr50": SND_NR50,
}
_PANNING = (
    ("noise_left", 0x80),
    ("wave_left", 0x40),
    ("tone_left", 0x20),
    ("sweep_left", 0x10),
    ("noise_right", 0x08),
    ("wave_right", 0x04),
    ("tone_right", 0x02),
    ("sweep_right", 0x01),
)


def _channel_columns(name: str) -> dict[str, int]:
    ch = CHANNELS.index(name)
    fields = dict(_COMMON)
    if name == "noise":  # no 11-bit period register, duty position or suppression
        for field in ("sound_period", "waveframe", "sample_suppressed"):
            del fields[field]
    if name != "wave":
        fields.update(_ENVELOPE)
    if name in ("sweep", "tone"):
        fields.update(_TONE)
    out = {field: CH0 + ch * CH_STRIDE + int(c) for field, c in fields.items()}
    out.update({field: int(c) for field, c in _EXTRA.get(name, {}).items()})
    return out


def sample_target_parts(target: float) -> tuple[int, int]:
    """A positive float64 as ``(K, E)`` with ``target == K * 2**(E - 52)``, 2**52 <= K < 2**53."""
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"sound cycles_target must be a positive number, not {target!r}")
    mant, exp = math.frexp(target)
    return int(mant * (1 << 53)), exp - 1


def sample_target_value(k: int, e: int) -> float:
    return math.ldexp(float(k), e - 52)


def apu_power_on_row() -> np.ndarray:
    """``apu_power_on``'s row, on the host."""
    row = np.zeros(APU_FIELDS, dtype=np.int64)
    row[SND_SAMPLE_K], row[SND_SAMPLE_E] = SAMPLE_M, 6
    row[SND_FS_TARGET], row[SND_TO_IRQ], row[SND_DIV_APU] = 8192, 88, 3
    for ch in range(4):
        row[CH0 + ch * CH_STRIDE + LEN] = 256 if ch == 2 else 64
        row[CH0 + ch * CH_STRIDE + PERIOD] = 8 if ch == 3 else 4
    row[N_LFSR], row[N_FEED] = 1, 0x4000
    row[WAVE_RAM : WAVE_RAM + 16] = 0xFF
    return row


def apu_from_pyboy(sound, version: int, row: np.ndarray) -> None:
    """Load PyBoy's sound block (a ``SoundState``) into one env's ``apu`` row. Files before
    v14 keep the sound unit PyBoy 2.8.1 was built with (v8-v13 load none of it or only
    part of it; both leave the cycle counts at 0, so the first sync catches up)."""
    if version < 14:
        row[:] = apu_power_on_row()
        return
    row[:] = 0
    for field, c in _GLOBAL.items():
        row[c] = int(getattr(sound, field))
    row[SND_NR51] = sum(bit for name, bit in _PANNING if getattr(sound, name))
    row[SND_FRAME_SAMPLES] = int(sound.audiobuffer_head) // 2
    row[SND_SAMPLE_K], row[SND_SAMPLE_E] = sample_target_parts(float(sound.cycles_target))
    row[SND_FS_TARGET] = math.ceil(float(sound.cycles_target_512hz))
    for name in CHANNELS:
        channel = getattr(sound, name)
        for field, c in _channel_columns(name).items():
            row[c] = int(getattr(channel, field))
    row[int(WAVE_RAM) : int(WAVE_RAM) + 16] = np.asarray(sound.wave.wavetable, dtype=np.int64)


def apu_to_pyboy(row: np.ndarray, sound) -> None:
    """Write one env's ``apu`` row into PyBoy's sound block (a ``SoundState``), in place.
    The audio buffer's bytes are left as they are (we make no samples); its head is
    where PyBoy's would be."""
    for field, c in _GLOBAL.items():
        setattr(sound, field, int(row[c]))
    for name, bit in _PANNING:
        setattr(sound, name, int(row[SND_NR51]) & bit)
    # two bytes per sample since the frame began, up to the buffer's end (PyBoy drops the rest)
    sound.audiobuffer_head = min(2 * int(row[SND_FRAME_SAMPLES]), len(sound.audiobuffer))
    sound.cycles_target = sample_target_value(int(row[SND_SAMPLE_K]), int(row[SND_SAMPLE_E]))
    sound.cycles_target_512hz = float(row[SND_FS_TARGET])
    for name in CHANNELS:
        channel = getattr(sound, name)
        for field, c in _channel_columns(name).items():
            setattr(channel, field, int(row[c]))
    sound.wave.wavetable = np.asarray(row[int(WAVE_RAM) : int(WAVE_RAM) + 16], dtype=np.uint8)
