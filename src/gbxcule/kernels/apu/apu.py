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

PyBoy's next sample cycle is a float64 sum of 4194304 / 48000 per sample, kept exact in
integers (``kernels/apu/apu_clock.py``); the channels' clocks and register writes are in
``kernels/apu/apu_channels.py``. Per-env state is one row of ``Machine.apu`` (int64), its
columns in ``kernels/apu/apu_layout.py``, plus two ``Machine.i64`` columns: each frame's start
(recorded by the step, no call) and the one the sample count runs from, for PyBoy's
audio-buffer head in save states. Host side (at the end): ``apu_from_pyboy`` /
``apu_to_pyboy`` map PyBoy's sound block of a save state. History: ``history/apu.md``.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from gbxcule.core.pyboy_state import SoundState
from gbxcule.kernels.apu.apu_channels import (
    channel_write,
    frame_sequencer_tick,
    nr52_write,
    sequencer_is_idle,
    sweep_calc,
)
from gbxcule.kernels.apu.apu_clock import (
    sample_advance,
    sample_ceil,
    sample_target_parts,
    sample_target_value,
)
from gbxcule.kernels.apu.apu_layout import (
    APU_FIELDS,
    APU_SAMPLE_ONLY,
    CH0,
    CH_STRIDE,
    DUTY,
    DUTY_PENDING,
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
    PENDING_DUTY,
    PERIOD,
    SAMPLE_M,
    SND_AFTER_DIV,
    SND_CYCLES,
    SND_DIV_APU,
    SND_DIV_COUNTER,
    SND_FRAME_SAMPLES,
    SND_FS_TARGET,
    SND_LAST,
    SND_LAST_DIV_WRITE,
    SND_NR50,
    SND_NR51,
    SND_POWERON,
    SND_SAMPLE_E,
    SND_SAMPLE_K,
    SND_TO_IRQ,
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
from gbxcule.kernels.state import (
    CYCLES,
    SND_COUNT_FROM,
    SND_FRAME_START,
    TIM_COUNTER,
    TIM_LAST,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py): double speed

__all__ = [  # the unit's API; its columns and constants are apu_layout's
    "APU_FIELDS",
    "APU_SAMPLE_ONLY",
    "APU_UNSAVED",
    "CHANNELS",
    "apu_div_write",
    "apu_step_end",
    "apu_from_pyboy",
    "apu_peek",
    "apu_power_on",
    "apu_power_on_row",
    "apu_read",
    "apu_slice_target",
    "apu_sync",
    "apu_to_pyboy",
    "apu_io_write",
    "apu_write",
]

# ---- channel timers between edges ------------------------------------------------


@wp.func
def sample_edge_at(m: wp.ref[Machine], i: int, t: wp.int64) -> int:
    """1 when a sample boundary of PyBoy's tick loop falls on cycle ``t``: some
    ``ceil(target) == t`` (the targets before ``t - 1`` are passed here, which the sync
    would do anyway)."""
    sample_advance(m, i, t - wp.int64(1))
    return wp.where(sample_ceil(m, i) == t, 1, 0)


@wp.func(inline=False)
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
    start = m.i64[i, SND_FRAME_START]
    if m.i64[i, SND_COUNT_FROM] != start:
        # a frame began since the sample count did (PyBoy cleared its audio buffer): the
        # samples up to its start were the earlier frames', the count starts there
        m.i64[i, SND_COUNT_FROM] = start
        if start < cycles:
            at = start
            if wp.static(CGB):  # the start in the unit's cycles (half the CPU's in double speed)
                gap = (start - a[i, SND_LAST]) >> wp.int64(speed_shift(m, i))
                at = a[i, SND_CYCLES] + gap
            sample_advance(m, i, at)
        a[i, SND_FRAME_SAMPLES] = wp.int64(0)
    delta = cycles - a[i, SND_LAST]
    shift = 0
    if wp.static(CGB):  # the unit counts half the CPU's cycles in double speed
        shift = speed_shift(m, i)
        delta = delta >> wp.int64(shift)
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
    a[i, SND_TO_IRQ] = wp.min(sample_ceil(m, i), a[i, SND_FS_TARGET]) << wp.int64(shift)


@wp.func(inline=False)
def apu_step_end(m: wp.ref[Machine], i: int):
    """The step ended (or stopped at a hook): the unit synced, as PyBoy's last slice end
    left it, so host reads and save states see it current. (Each frame's start is only
    recorded, ``snd_frame_start``: a call per frame cost the GPU step its stack budget.)"""
    apu_sync(m, i, m.i64[i, CYCLES])
    # the sync took the last frame's start: both marks 0 (the same state, and the one a load
    # and a snapshot give)
    m.i64[i, SND_FRAME_START] = wp.int64(0)
    m.i64[i, SND_COUNT_FROM] = wp.int64(0)


@wp.func
def apu_slice_target(m: wp.ref[Machine], i: int, others: wp.int64) -> wp.int64:
    """The next slice's target with the sound unit's (``apu_slice_end`` synced it)."""
    cycles = m.i64[i, CYCLES]
    if cycles + wp.int64(1) >= others:
        return others
    apu_sync(m, i, cycles)
    return wp.min(others, m.apu[i, SND_TO_IRQ])


@wp.func
def apu_write(m: wp.ref[Machine], i: int, r: int, v: int):
    """A CPU write to ``0xFF10 + r`` (``r`` 0..0x2F), the unit synced to the write."""
    a = m.apu
    powered = a[i, SND_POWERON] != wp.int64(0)
    if r < 20:
        # off, only the length timers (NRx1) take writes, and NRx1's duty is kept (DMG;
        # CGB hardware takes none)
        if powered or (r % 5 == 1 and not wp.static(CGB)):
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
        elif wp.static(CGB) or a[i, W_ACCESS] != wp.int64(0):  # CGB: the byte it plays
            a[i, WAVE_RAM + int(a[i, col(2, FRAME)] / wp.int64(2))] = wp.int64(v)


@wp.func(inline=False)
def apu_div_write(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """A DIV write, before the timer clears its counter: syncs the unit; a DIV bit 4
    (counter bit 12) falling this way clocks the frame sequencer; either way the
    sequencer's next edge is 8192 cycles away."""
    a = m.apu
    bit = 0x10
    if wp.static(CGB):  # DIV's bit 5 in double speed
        bit = 0x10 << speed_shift(m, i)
    edge = (m.i32[i, TIM_COUNTER] >> 8) & bit
    apu_sync(m, i, cycles)
    if edge != 0:
        a[i, SND_AFTER_DIV] = wp.int64(1)
        if wp.static(CGB):
            a[i, SND_LAST_DIV_WRITE] = a[i, SND_CYCLES]
        frame_sequencer_tick(m, i)
    a[i, SND_FS_TARGET] = a[i, SND_CYCLES] + FS_PERIOD


# ---- register reads ----------------------------------------------------------------


@wp.func(inline=False)
def apu_peek(m: wp.ref[Machine], i: int, r: int, access: int) -> int:
    """The value of ``0xFF10 + r`` as of the last sync; ``access``: channel 3's read window
    counts (a CPU read right after its sync), else wave RAM reads $FF while it plays."""
    a = m.apu
    if r >= 32:
        if a[i, col(2, ENABLE)] == wp.int64(0):
            return int(a[i, WAVE_RAM + r - 32])
        if wp.static(CGB) or (access != 0 and a[i, W_ACCESS] != wp.int64(0)):
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


@wp.func
def apu_pcm(m: wp.ref[Machine], i: int, r: int) -> int:
    """CGB PCM12 (``r`` 0x76) / PCM34 (0x77) as of the last sync: each channel's output as
    a nibble, 0 while it is off (PyBoy's ``sample()``). A playing channel's output depends
    on its duty position or LFSR, which are not emulated (audio samples): it reads as its
    volume (history/cgb.md)."""
    a = m.apu
    first = wp.where(r == 0x76, 0, 2)
    out = 0
    for k in range(2):
        level = wp.int64(0)
        if a[i, col(first + k, ENABLE)] != wp.int64(0):
            level = a[i, col(first + k, VOLUME)] & wp.int64(0xF)
        out = out | (int(level) << (4 * k))
    return out


@wp.func(inline=False)
def apu_pcm_read(m: wp.ref[Machine], i: int, r: int, cycles: wp.int64) -> int:
    """A CPU read of PCM12/PCM34: the unit synced, then ``apu_pcm``."""
    access_sync(m, i, cycles)
    return apu_pcm(m, i, r)


@wp.func
def access_sync(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """The sync of a CPU access. PyBoy also ticks the unit at every slice end (the timer's
    last sync, ``TIM_LAST``, marks it); when the access is the slice's first instruction,
    that tick was at this very cycle and the access's own tick spans no time, which
    clears channel 3's read window: wave RAM then reads $FF while it plays."""
    apu_sync(m, i, cycles)
    if m.i64[i, TIM_LAST] == cycles:
        m.apu[i, W_ACCESS] = wp.int64(0)


@wp.func(inline=False)
def apu_read(m: wp.ref[Machine], i: int, r: int, cycles: wp.int64) -> int:
    access_sync(m, i, cycles)
    return apu_peek(m, i, r, 1)


@wp.func(inline=False)
def apu_io_write(m: wp.ref[Machine], i: int, r: int, v: int, cycles: wp.int64):
    """A CPU write to ``0xFF00 + r``: DIV (``r`` 4, the timer synced, its counter not yet
    cleared) or a sound register (``r`` 0x10-0x3F). One call site for the bus."""
    if r == 0x04:
        apu_div_write(m, i, cycles)
    else:
        access_sync(m, i, cycles)
        apu_write(m, i, r - 0x10, v)


# ---- power-on ----------------------------------------------------------------------


@wp.func
def apu_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``Sound()`` with sound emulated; every column not set here is 0."""
    a = m.apu
    m.i64[i, SND_FRAME_START] = wp.int64(0)
    m.i64[i, SND_COUNT_FROM] = wp.int64(0)
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
# Fields PyBoy does not save, kept from the machine a state is loaded into: none (the
# per-frame sample count's marks are 0 between steps, and a load sets them so).
APU_UNSAVED: frozenset[str] = frozenset()

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


def apu_from_pyboy(sound, version: int, st: MachineState) -> None:
    """Load PyBoy's sound block (a ``SoundState``) into the host state ``st`` (its ``apu``
    row and frame start). Files before v14 keep the sound unit PyBoy 2.8.1 was built with
    (v8-v13 load none of it or only part of it; both leave the cycle counts at 0, so the
    first sync catches up)."""
    row = st["apu"]
    put_fields(st, {"snd_frame_start": 0, "snd_count_from": 0})  # no frame started since
    if version < 14:
        row[:] = apu_power_on_row()
        return
    row[:] = 0
    for field, c in _GLOBAL.items():
        row[c] = int(getattr(sound, field))
    row[SND_NR51] = sum(bit for name, bit in _PANNING if getattr(sound, name))
    row[SND_FRAME_SAMPLES] = int(sound.audiobuffer_head) // 2  # mid-frame: it goes on
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


def _apu_save(st: MachineState, cart, layout) -> dict:
    sound = SoundState()
    apu_to_pyboy(st["apu"], sound)
    return {"sound": sound}


APU = Unit(
    "apu",
    apu_power_on,
    load=lambda state, st, cart: apu_from_pyboy(state.sound, state.version, st),
    save=_apu_save,
    unsaved=APU_UNSAVED,
    arrays={"apu": (APU_FIELDS,)},
    sample_only=APU_SAMPLE_ONLY,
)
