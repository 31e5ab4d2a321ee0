"""The CPU's fast paths (kernels/cpu/cpu_fast.py) give exactly what cpu_step's general phases give.

Two backends run the same ROM and buttons, one with ``cpu_fast_paths=False`` (every
opcode through the phases); every per-env array of the machine must be equal after
every step. PyBoy checks both ways elsewhere (lockstep, fuzz traces); this compares
them with each other over longer runs, on several envs at once.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend

pytestmark = pytest.mark.l3

CASES = {  # suite ROM: steps of 4 frames
    "demo_game": 150,
    "flow": 30,
    "interrupts": 30,
    "hw_mbc5": 20,
    "hw_oam_dma": 20,
}


def machine_state(backend) -> dict[str, np.ndarray]:
    return {name: arr.numpy().copy() for name, arr in per_env_arrays(backend.machine)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_paths_equal_the_general_phases(name):
    rom = str(spec_rom_file(get_rom(name)))
    kwargs = dict(num_envs=4, threads=1, frames_per_step=4, release_after_frames=2)
    runs = [
        WarpVecCpuBackend(rom, action_codec="buttons", cpu_fast_paths=fast, **kwargs)
        for fast in (True, False)
    ]
    rng = np.random.default_rng(len(name))
    try:
        for step in range(CASES[name]):
            buttons = rng.integers(0, 256, size=4)
            for backend in runs:
                backend.step(buttons)
            fast, general = (machine_state(b) for b in runs)
            for field, value in fast.items():
                if not np.array_equal(value, general[field]):
                    bad = np.argwhere(value != general[field])[0]
                    pytest.fail(f"{name} step {step}: {field} differs first at {tuple(bad)}")
        assert runs[0].machine.cpu_fast_paths == 1 and runs[1].machine.cpu_fast_paths == 0
    finally:
        for backend in runs:
            backend.close()
