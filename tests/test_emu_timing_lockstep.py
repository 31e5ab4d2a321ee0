"""L3: our step kernel in lockstep with PyBoy 2.8.1, compared after every step.

Registers, the T-cycle counter, VRAM, cart RAM, WRAM, OAM, FEA0-FEFF, the IO page,
HRAM, IE and the serial output must be equal after every step, for the timing
stress programs (tests/support/emu_timing_programs.py), every micro ROM of the suite and
the demo game under random inputs, and random IO-access programs.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from bench.roms.build import all_roms, get_rom
from gbxcule.asm import build_rom
from gbxcule.backends.warp_base import field_view

from .support.emu_timing_programs import (
    FRAME,
    PROGRAMS,
    TIMER_HALT,
    program,
    random_io_program,
)
from .support.emu_timing_support import (
    diff_states,
    lockstep,
    pyboy_boot,
    pyboy_step,
    warp_boot,
    warp_step,
)

pytestmark = pytest.mark.l3


def assert_lockstep(rom: bytes, steps: int, masks=None, frames: int = 1, release_after: int = 1):
    step, diff = lockstep(rom, steps, masks, frames, release_after)
    assert step < 0, f"diverged after step {step}:\n  " + "\n  ".join(diff)


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - {"joypad"}))
def test_timing_program(name):
    source, steps = PROGRAMS[name]
    assert_lockstep(program(source), steps)


@pytest.mark.parametrize("frames,release_after", [(1, 1), (3, 2), (4, 4)])
def test_joypad_program_random_inputs(frames, release_after):
    source, steps = PROGRAMS["joypad"]
    rng = np.random.default_rng(frames * 10 + release_after)
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.3] = 0
    assert_lockstep(program(source), steps // frames + 1, masks, frames, release_after)


@pytest.mark.parametrize("seed", range(6))
def test_random_io_program(seed):
    """Random mixes of timer/LCD/STAT/IF/IE/DMA/serial accesses, HALTs and delays."""
    assert_lockstep(random_io_program(seed), 40)


SUITE = [spec.name for spec in all_roms()]


@pytest.mark.parametrize("name", SUITE)
def test_suite_rom(name):
    spec = get_rom(name)
    assert_lockstep(
        spec.build(), spec.steps, spec.inputs, spec.frames_per_step, spec.release_after_frames
    )


@pytest.mark.parametrize("frames,release_after", [(1, 1), (4, 2), (24, 8)])
def test_demo_game_random_inputs(frames, release_after):
    """At least 600 frames of the demo game under random buttons."""
    spec = get_rom("demo_game")
    steps = max(600 // frames, 40)
    rng = np.random.default_rng(7 + frames)
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.4] = 0
    assert_lockstep(spec.build(), steps, masks, frames, release_after)


def test_lockstep_detects_a_timer_off_by_four_cycles():
    """The comparison can fail: shifting our divider by 4 cycles must show up."""
    rom = program(TIMER_HALT)
    pyboy = pyboy_boot(rom)
    m = warp_boot(rom)
    try:
        counter = field_view(m, "tim_counter").numpy()
        counter[0] = (counter[0] + 4) & 0xFFFF
        field_view(m, "tim_counter").assign(wp.array(counter, dtype=wp.int32, device="cpu"))
        diffs = []
        for _ in range(20):
            pyboy_step(pyboy, 0, 1, 1)
            warp_step(m, [0], 1, 1)
            diffs = diff_states(pyboy, m, 0, b"")
            if diffs:
                break
        assert diffs, "a 4-cycle divider shift went unnoticed for 20 frames"
    finally:
        pyboy.stop(save=False)


def test_busy_benchmark_rom_in_lockstep():
    """The never-halting benchmark ROM (bench/busy_rom.py) runs exactly as on PyBoy."""
    from bench.busy_rom import busy_rom_path

    assert_lockstep(busy_rom_path().read_bytes(), 60)


def banked_code_rom(banks: int = 8) -> bytes:
    """MBC1 code run from every switchable bank: bank 0 selects a bank and calls $4000;
    each bank's routine (the same layout in all of them) logs to WRAM, then switches to
    the next bank under its own feet, so the instructions after the switch come from the
    new bank (``ld c, N`` there logs which one ran)."""
    routines = []
    for bank in range(1, banks):
        routines.append(f"""
SECTION "code{bank}", ROMX[$4000], BANK[{bank}]
    ld a, [hl]
    add a, {bank * 3 + 1}
    ld [hl+], a
    ld a, {bank % (banks - 1) + 1}
    ld [$2000], a
    ld c, {bank}
    ld a, c
    ld [hl+], a
    ld a, l
    and $7F
    ld l, a
    ret
""")
    main = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $C100
    ld e, 0
.loop:
    inc e
    ld a, e
    and $07
    ld [$2000], a
    call $4000
    ld a, e
    ld [$C0FF], a
    jr .loop
Hook:
Rst0:
    ret
"""
    return build_rom(FRAME + main + "".join(routines), cart_type="MBC1", rom_banks=banks)


def test_code_in_switched_rom_banks():
    """Code fetched from every switchable bank, and a bank switched under the code running
    from it, through the step kernel's loop (which keeps the banks' bases in registers
    for a run of instructions: a mapper write must end the run)."""
    assert_lockstep(banked_code_rom(), 12)
