"""The sound unit's channels: what the frame sequencer clocks (length counters, the
channel-1 sweep, envelopes) and what register writes do (triggers, DACs, the length
quirks, power-off), as PyBoy 2.8.1's ``Sound`` and channel classes do on DMG."""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.apu.apu_layout import (
    DUTY,
    ENABLE,
    ENV_DIR,
    ENV_PACE,
    ENV_TIMER,
    ENV_VOL,
    FRAME,
    FREQ,
    FS_PERIOD,
    INIT_LEN,
    LEN,
    LEN_EN,
    N_ALIGN,
    N_CLKDIV,
    N_CLKPOW,
    N_COUNTDOWN,
    N_COUNTER,
    N_FEED,
    N_LFSR,
    N_REGWID,
    N_RUNNING,
    PERIOD,
    SND_AFTER_DIV,
    SND_CYCLES,
    SND_DIV_APU,
    SND_DIV_COUNTER,
    SND_FS_TARGET,
    SND_LAST_DIV_WRITE,
    SND_LAST_POWER_OFF,
    SND_NR50,
    SND_NR51,
    SND_POWERON,
    SUPPRESSED,
    SW_CALC,
    SW_CHECK,
    SW_DIR,
    SW_EN,
    SW_HOLD,
    SW_MAG,
    SW_NEG,
    SW_PACE,
    SW_SHADOW,
    SW_TIMER,
    TIMER,
    VOLUME,
    W_ACCESS,
    W_DAC,
    W_RESTART,
    W_SAMPLEFRAME,
    W_VOLREG,
    W_VOLSHIFT,
    WAVE_RAM,
    col,
)
from gbxcule.kernels.ppu.ppu import speed_shift
from gbxcule.kernels.state import TIM_COUNTER, Machine

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py): double speed

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
def tick_envelope_extra(m: wp.ref[Machine], i: int, ch: int):
    """CGB hardware: the step a timer flagged by the NRx2 glitch (bit 3) owes, on even steps."""
    a = m.apu
    timer = a[i, col(ch, ENV_TIMER)]
    if (timer & wp.int64(8)) != wp.int64(0):
        a[i, col(ch, ENV_TIMER)] = timer & wp.int64(7)
        step = wp.where(a[i, col(ch, ENV_DIR)] != wp.int64(0), wp.int64(1), wp.int64(-1))
        vol = a[i, col(ch, VOLUME)] + step
        if vol >= wp.int64(0) and vol <= wp.int64(15):
            a[i, col(ch, VOLUME)] = vol


@wp.func(inline=False)
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


@wp.func(inline=False)
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


@wp.func(inline=False)
def frame_sequencer_tick(m: wp.ref[Machine], i: int):
    """PyBoy's ``_tick_frame_sequencer``."""
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
    envelope_step = wp.int64(7)
    if wp.static(CGB):  # envelopes on step 0, and owed glitch steps on even ones
        envelope_step = wp.int64(0)
        if step % wp.int64(2) == wp.int64(0):
            tick_envelope_extra(m, i, 0)
            tick_envelope_extra(m, i, 1)
            tick_envelope_extra(m, i, 3)
    if step % wp.int64(2) == wp.int64(1):
        for ch in range(4):
            tick_length(m, i, ch)
    if step % wp.int64(4) == wp.int64(3):
        tick_sweep(m, i)
    if step % wp.int64(8) == envelope_step:
        tick_envelope(m, i, 0)
        tick_envelope(m, i, 1)
        tick_envelope(m, i, 3)


@wp.func(inline=False)
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


# ---- register writes --------------------------------------------------------------


@wp.func
def nrx2_glitch(m: wp.ref[Machine], i: int, ch: int, v: int):
    """CGB hardware: an NRx2 write to a playing channel steps, inverts or re-arms its
    envelope (PyBoy's ``nrx2_glitch``; a re-armed timer owes a step, its bit 3)."""
    a = m.apu
    if a[i, col(ch, ENABLE)] != wp.int64(0) and (v & 0xF8) != 0:
        old = int(a[i, col(ch, ENV_VOL)] << wp.int64(4) | a[i, col(ch, ENV_DIR)] << wp.int64(3))
        old = old | int(a[i, col(ch, ENV_PACE)])
        volume = int(a[i, col(ch, VOLUME)])
        tick = (v & 7) != 0 and (old & 7) == 0
        if (v & 0xF) == 8 and (old & 0xF) == 8:
            tick = True
        if ((v ^ old) & 8) != 0:
            if (v & 8) != 0:
                if (old & 7) == 0:
                    volume = volume ^ 0xF
                else:
                    volume = (0xE - volume) & 0xF
                tick = False
            else:
                volume = (0x10 - volume) & 0xF
        if tick:
            volume = (volume + wp.where((v & 8) != 0, 1, -1)) & 0xF
        a[i, col(ch, VOLUME)] = wp.int64(volume)
        if (v & 7) == 0:
            a[i, col(ch, ENV_TIMER)] = wp.int64(0)
        elif (old & 7) == 0:
            a[i, col(ch, ENV_TIMER)] = wp.int64((v & 7) | 8)


@wp.func
def envelope_write(m: wp.ref[Machine], i: int, ch: int, v: int):
    a = m.apu
    if wp.static(CGB):
        nrx2_glitch(m, i, ch, v)
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
    # PyBoy keeps ``pace or magnitude`` in a C bool (its .pxd): 0 or 1
    a[i, SW_EN] = wp.where(
        pace != wp.int64(0) or a[i, SW_MAG] != wp.int64(0), wp.int64(1), wp.int64(0)
    )
    if a[i, SW_MAG] != wp.int64(0) and pending == wp.int64(0):
        sweep_calc(m, i, 0)


@wp.func(inline=False)
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
    was_active = a[i, col(2, ENABLE)] != wp.int64(0)
    if not wp.static(CGB):
        if was_active and a[i, col(2, TIMER)] == wp.int64(1):
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
    restart = wp.int64(0)
    suppressed = wp.int64(0)  # DMG: set by the trigger, cleared by Sound.set
    if wp.static(CGB):  # a retrigger restarts at frame 1, playing on its sample frame
        restart = wp.where(was_active, wp.int64(1), wp.int64(0))
        suppressed = wp.int64(1)
    if restart != wp.int64(0):
        a[i, W_SAMPLEFRAME] = a[i, col(2, FRAME)]
    else:
        a[i, W_SAMPLEFRAME] = wp.int64(0)
        a[i, col(2, SUPPRESSED)] = suppressed
    a[i, col(2, FRAME)] = wp.int64(0)
    a[i, W_RESTART] = restart
    a[i, W_ACCESS] = wp.int64(0)


@wp.func(inline=False)
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


@wp.func(inline=False)
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


@wp.func(inline=False)
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


@wp.func(inline=False)
def power_off(m: wp.ref[Machine], i: int):
    """NR52 bit 7 cleared: every register written 0; DMG keeps the length timers (the CGB
    variant clears them)."""
    a = m.apu
    l0 = a[i, col(0, LEN)]
    l1 = a[i, col(1, LEN)]
    l2 = a[i, col(2, LEN)]
    l3 = a[i, col(3, LEN)]
    for n in range(20):
        channel_write(m, i, n / 5, n % 5, 0, 0)
    a[i, SND_NR50] = wp.int64(0)
    a[i, SND_NR51] = wp.int64(0)
    if not wp.static(CGB):  # CGB hardware clears the length timers too
        a[i, col(0, LEN)] = l0
        a[i, col(1, LEN)] = l1
        a[i, col(2, LEN)] = l2
        a[i, col(3, LEN)] = l3
    a[i, SW_CHECK] = wp.int64(0)


@wp.func(inline=False)
def nr52_write(m: wp.ref[Machine], i: int, v: int):
    a = m.apu
    was_on = a[i, SND_POWERON] != wp.int64(0)
    shift = 0
    if wp.static(CGB):  # DIV's bit 5 and a 0x4000-cycle period in double speed
        shift = speed_shift(m, i)
    div_bit = (m.i32[i, TIM_COUNTER] >> 8) & (0x10 << shift)  # DIV as of PyBoy's last sync
    if (v & 0x80) != 0 and not was_on:
        # starting the APU while DIV's bit is high after a DIV write skips its next edge
        skip = a[i, SND_AFTER_DIV] != wp.int64(0)
        if wp.static(CGB):  # on CGB hardware, within 8192 cycles of a DIV write or power-off
            now = a[i, SND_CYCLES]
            after_div = now - a[i, SND_LAST_DIV_WRITE] < wp.int64(8192)
            a[i, SND_AFTER_DIV] = wp.where(after_div, wp.int64(1), wp.int64(0))
            skip = after_div or now - a[i, SND_LAST_POWER_OFF] < wp.int64(8192)
        if skip and div_bit != 0:
            a[i, SND_DIV_COUNTER] = wp.int64(2)
        else:
            a[i, SND_DIV_COUNTER] = wp.int64(0)
    if (v & 0x80) == 0:
        power_off(m, i)
        if wp.static(CGB):
            a[i, SND_LAST_POWER_OFF] = a[i, SND_CYCLES]
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
        period = 0x2000 << shift
        to_edge = period - (m.i32[i, TIM_COUNTER] & (period - 1))
        a[i, SND_FS_TARGET] = a[i, SND_CYCLES] + wp.int64(to_edge >> shift)
