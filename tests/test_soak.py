"""Soak: the fast suite's PyBoy comparisons, run much longer (``make test-slow``).

Each test here is a longer run of a check ``make test`` already makes, with new seeds:
- 32 more random instruction streams, traced instruction by instruction (from ROM and
  from WRAM);
- the demo game in lockstep with PyBoy for 240,000 frames per seed (registers and all
  RAM after every step);
- 512 more random IO-access programs;
- 5,000 more random pixel scenes of each kind;
- 4 envs of the demo game whose every step's pixels equal PyBoy's for 48,000 frames;
- 64 envs for 9,600 frames that equal their one-env runs.

Not in ``make test`` or CI (about 3 minutes on 2 cores); run it before trusting a
change to the step kernel's timing or the renderers.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.core import pixels as px
from gbxcule.demo import rom as demo_rom

from . import test_emu_cpu_multienv as multienv
from . import test_emu_cpu_ops as cpu_ops
from .support.emu_timing_programs import random_io_program
from .test_emu_timing_lockstep import assert_lockstep
from .test_pixels_emulator import demo_running, run_side_by_side
from .test_pixels_pyboy import SCENE_KINDS, SEEDS_PER_KIND, check_scenes
from .test_pixels_pyboy import pyboy as pyboy  # noqa: F401 - the fixture

pytestmark = [pytest.mark.l3, pytest.mark.slow]

DEMO_STEPS = 10_000  # x 24 frames
IO_SEEDS = range(1_000, 1_512)  # the fast suite uses seeds 0-5
SCENE_SEEDS = range(SEEDS_PER_KIND, SEEDS_PER_KIND + 5_000)
PIXEL_STEPS = 2_000  # x 24 frames, 4 envs
CPU_FUZZ_SEEDS = range(100, 132)  # the fast suite uses seeds 1-4
DEMO = str(spec_rom_file(get_rom("demo_game")))


@pytest.mark.parametrize("seed", range(4))
def test_soak_demo_game_lockstep(seed):
    rng = np.random.default_rng([seed, 2_500])
    masks = rng.integers(0, 256, size=DEMO_STEPS)
    masks[rng.random(DEMO_STEPS) < 0.4] = 0
    assert_lockstep(get_rom("demo_game").build(), DEMO_STEPS, masks, 24, 8)


@pytest.mark.parametrize("block", range(8))
def test_soak_random_io_programs(block):
    seeds = IO_SEEDS[block::8]
    for seed in seeds:
        assert_lockstep(random_io_program(seed), 40)


@pytest.mark.parametrize("block", range(4))
def test_soak_cpu_fuzz_programs(block):
    """Random instruction streams: every instruction's registers and cycles, then RAM,
    from ROM and copied to WRAM (fetches through the bus)."""
    for seed in CPU_FUZZ_SEEDS[block::4]:
        cpu_ops.test_random_program_from_rom(seed)
        cpu_ops.test_random_program_from_wram(seed)


@pytest.mark.parametrize("kind", sorted(SCENE_KINDS))
def test_soak_pixel_scenes(pyboy, kind):  # noqa: F811 - the fixture
    check_scenes(pyboy, kind, SCENE_SEEDS)


def test_soak_demo_game_pixels_every_step(tmp_path):
    inputs = np.random.default_rng(2_024).integers(0, 256, (PIXEL_STEPS, 4))
    inputs[np.random.default_rng(2_025).random(inputs.shape) < 0.4] = 0
    compared = run_side_by_side(
        tmp_path,
        demo_rom.demo_rom_bytes(),
        "demo_soak",
        demo_running,
        inputs,
        num_envs=4,
        frames_per_step=24,
        release_after_frames=8,
    )
    per_step = 4 * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)
    assert compared >= (PIXEL_STEPS - 2) * per_step


def test_soak_batch_envs_equal_single_env_runs():
    """64 envs of the demo game for 9,600 frames (interleaved memory, two threads) equal a
    permuted env-major batch on one thread env for env, and sampled one-env runs."""
    rng = np.random.default_rng(64)
    actions = rng.integers(0, 256, size=(400, 64))
    actions[rng.random(actions.shape) < 0.4] = 0
    pacing = {"frames_per_step": 24, "release_after_frames": 8}
    batch = multienv.run(DEMO, actions, threads=2, mem_layout="interleaved", **pacing)
    perm = rng.permutation(64)
    shuffled = multienv.run(DEMO, actions[:, perm], threads=1, **pacing)
    try:
        snaps = [multienv.snapshot(batch, env) for env in range(64)]
        assert len({snap[(0xC000, 0xE000)].tobytes() for snap in snaps}) > 32
        for new, old in enumerate(perm):
            multienv.assert_same_env(multienv.snapshot(shuffled, new), snaps[old], f"env {old}")
        for env in (0, 21, 42, 63):
            single = multienv.run(DEMO, actions[:, env : env + 1], threads=1, **pacing)
            try:
                multienv.assert_same_env(multienv.snapshot(single, 0), snaps[env], f"env {env}")
            finally:
                single.close()
    finally:
        batch.close()
        shuffled.close()
