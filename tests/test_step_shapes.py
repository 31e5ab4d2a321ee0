"""The GPU-shaped step kernel (kernels/step_cuda.py) gives exactly what the inlined one gives.

The CUDA backends launch ``StepFeatures(units_out_of_line=True)``; no GPU runs here, so
this runs that shape on the CPU device (``units_out_of_line=True``) beside the default
shape and compares every per-env array of the machine after every step, on ROMs that
reach each unit it keeps out of line: interrupts (``check_interrupts``), code in HRAM
and WRAM (``fetch_outside_rom``: OAM DMA routines, ``flow``), the general decode
(HALT, EI/RETI, CB on [HL], and in the GPU shape every fast memory opcode whose access
is not plain WRAM/HRAM), the unit syncs and the quiet-HALT loop, mapper writes.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.kernels.step import StepFeatures, step_kernel, step_kernel_variant

pytestmark = pytest.mark.l3

CASES = {  # suite ROM (or the game-like benchmark ROM): steps of 4 frames
    "demo_game": 120,
    "flow": 30,
    "interrupts": 30,
    "hw_mbc5": 20,
    "hw_oam_dma": 20,
    # never halts; banked ROM tables, LY/STAT polls, OAM DMA from HRAM: the GPU shape's
    # fast memory path hands every non-WRAM/HRAM access to the general path
    "game_bench": 30,
}


def rom_path(name: str) -> str:
    if name == "game_bench":
        from bench.game_rom import game_rom_path

        return str(game_rom_path())
    return str(spec_rom_file(get_rom(name)))


def machine_state(backend) -> dict[str, np.ndarray]:
    return {name: arr.numpy().copy() for name, arr in per_env_arrays(backend.machine)}


def assert_shapes_agree(rom: str, label: str, steps: int, envs: int, seed: int) -> None:
    """Both shapes on the CPU, the same random buttons per env, every per-env array equal
    after every step."""
    kwargs = dict(num_envs=envs, threads=1, frames_per_step=4, release_after_frames=2)
    runs = [
        WarpVecCpuBackend(rom, action_codec="buttons", units_out_of_line=shape, **kwargs)
        for shape in (False, True)
    ]
    assert runs[0]._step_kernel() is step_kernel
    assert runs[1]._step_kernel() is step_kernel_variant(units_out_of_line=True)
    rng = np.random.default_rng(seed)
    try:
        for step in range(steps):
            buttons = rng.integers(0, 256, size=envs)
            for backend in runs:
                backend.step(buttons)
            inlined, outlined = (machine_state(b) for b in runs)
            for field, value in inlined.items():
                if not np.array_equal(value, outlined[field]):
                    bad = np.argwhere(value != outlined[field])[0]
                    pytest.fail(f"{label} step {step}: {field} differs first at {tuple(bad)}")
    finally:
        for backend in runs:
            backend.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_shape_equals_the_inlined_shape(name):
    assert_shapes_agree(rom_path(name), name, CASES[name], envs=4, seed=len(name) + 7)


def test_shape_defaults_and_modules():
    assert StepFeatures().module is None
    assert StepFeatures(units_out_of_line=True).module == "gbxcule.kernels.step_cuda"
    assert StepFeatures(hooks=True, units_out_of_line=True).module == "unique"
    from gbxcule.kernels import step_cuda

    assert step_cuda.step_kernel is step_kernel_variant(units_out_of_line=True)
    assert step_cuda.step_kernel.module.name == "gbxcule.kernels.step_cuda"
    with pytest.raises(TypeError, match="units_out_of_line"):
        WarpVecCpuBackend(str(spec_rom_file(get_rom("flow"))), units_out_of_line="yes")


def test_gpu_shape_equals_the_inlined_shape_on_every_suite_rom():
    """Every micro ROM of the suite (52), 25 steps of 4 frames, 3 envs with their own random
    buttons, every per-env array after every step (~6 s)."""
    from bench.roms.build import all_roms

    for spec in all_roms():
        assert_shapes_agree(str(spec_rom_file(spec)), spec.name, 25, envs=3, seed=1)
