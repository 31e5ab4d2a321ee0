"""The sound unit's state: the columns of ``Machine.apu`` (one int64 row per env) and
the constants ``kernels/apu/apu.py`` and its helpers share."""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})

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
# CGB hardware only (PyBoy keeps them unsaved): the unit's clock at the last DIV write that
# clocked the sequencer and at the last power-off (NR52's power-on alignment reads them)
SND_LAST_DIV_WRITE = wp.constant(13)
SND_LAST_POWER_OFF = wp.constant(14)
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
SW_EN = wp.constant(EXTRA + 8)  # sweepenable
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

# PyBoy's sound fields only audio samples depend on: not advanced here, so a state
# exported after running holds them as the last trigger or load left them.
APU_SAMPLE_ONLY = (
    "sound.audiobuffer",
    "sound.sweep.periodtimer",
    "sound.sweep.waveframe",
    "sound.tone.periodtimer",
    "sound.tone.waveframe",
    "sound.noise.periodtimer",
    "sound.noise.shiftregister",
)
# On CGB hardware PyBoy also keeps, per channel, state that only its samples (and PCM12/
# PCM34) read: the noise channel's counter model (the counter, its countdown and run flag,
# a 2-bit cycle alignment, which clock the LFSR) and the pulse channels' trigger delay
# (the first sample suppressed) and delayed duty change (the new duty held until the
# channel's next step; NRx1 reads the new one either way). Loaded and saved here, not
# advanced: the duty changes at once (history/cgb.md).
APU_CGB_SAMPLE_ONLY = (
    "sound.noise.counter",
    "sound.noise.counter_countdown",
    "sound.noise.counter_running",
    "sound.noise.alignment",
    *(
        f"sound.{ch}.{f}"
        for ch in ("sweep", "tone")
        for f in ("sample_suppressed", "pending_wave_duty", "duty_update_pending")
    ),
)


@wp.func
def col(ch: int, field: int) -> int:
    return CH0 + ch * CH_STRIDE + field
