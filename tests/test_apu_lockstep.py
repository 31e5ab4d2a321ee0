"""L2/L3: the sound unit (kernels/apu/apu.py) in lockstep with PyBoy 2.8.1, ``sound_emulated=True``.

Every register read the probe programs log (tests/support/sound_programs.py) lands in
WRAM, and the lockstep compares all RAM, the IO page (FF10-FF3F as the CPU reads them),
registers and the cycle counter after every frame. ``PROBES`` covers one behaviour each:
read masks and power-off, DACs and triggers, length counters running out (polled every
10 M-cycles), the NRx4 length quirks on odd sequencer steps, the channel-1 sweep and its
second overflow check, wave RAM while channel 3 plays, and DIV writes clocking the frame
sequencer. The random programs mix all of them; the wave programs hit channel 3's
one-cycle wave RAM window at random M-cycles, where PyBoy's sample clock decides.
"""

from __future__ import annotations

import pytest

from .support.emu_timing_support import lockstep
from .support.sound_programs import (
    PROBES,
    random_sound_program,
    random_wave_access_program,
    random_wave_program,
    sound_probe,
)

pytestmark = pytest.mark.l3


def assert_lockstep(rom: bytes, steps: int) -> None:
    step, diff = lockstep(rom, steps)
    assert step < 0, f"diverged after step {step}:\n  " + "\n  ".join(diff)


@pytest.mark.parametrize("name", sorted(PROBES))
def test_sound_probe(name):
    assert_lockstep(sound_probe(name), 40)


@pytest.mark.parametrize("seed", range(4))
def test_random_sound_program(seed):
    assert_lockstep(random_sound_program(seed), 40)


@pytest.mark.parametrize("seed", range(4))
def test_random_wave_program(seed):
    assert_lockstep(random_wave_program(seed), 20)


@pytest.mark.parametrize("seed", range(3))
def test_random_wave_access_program(seed):
    """Every instruction form that reads or writes wave RAM (each meets the one-cycle
    window at its own M-cycle), with period, DAC, length, volume and NR52 events."""
    assert_lockstep(random_wave_access_program(seed), 8)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 40))
def test_random_wave_access_program_more(seed):
    assert_lockstep(random_wave_access_program(seed), 8)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4, 60))
def test_random_sound_program_more(seed):
    assert_lockstep(random_sound_program(seed), 60)
    assert_lockstep(random_wave_program(seed), 30)
