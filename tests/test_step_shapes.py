"""The step kernel's shapes give exactly the same machine: the CPU's (kernels/step/step_cpu.py,
the inlined shape dispatching by opcode), the plain inlined one (the field decode alone)
and the GPU's (kernels/step/step_cuda.py).

The CUDA backends launch ``StepFeatures(units_out_of_line=True)``; no GPU runs here, so
this runs that shape on the CPU device (``units_out_of_line=True``) beside the default
shape and compares every per-env array of the machine after every step, on ROMs that
reach each unit it keeps out of line: interrupts (``check_interrupts``), code in HRAM
and WRAM (``fetch_outside_rom``: OAM DMA routines, ``flow``), the general decode
(HALT, EI/RETI, CB on [HL], and in the GPU shape every fast memory opcode whose access
is not plain WRAM/HRAM), the unit syncs and the quiet-HALT loop, mapper writes. The
plain inlined shape runs beside them (``opcode_dispatch=False``): each of the CPU
dispatch's 256 copies of the fast paths must do what the field decode does.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.backends.checks import check_opcode_dispatch
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.kernels.step.step import StepFeatures, step_kernel, step_kernel_variant

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


SHAPES = {  # label: the backend's step kernel options
    "cpu dispatch": {},
    "inlined, field decode": {"opcode_dispatch": False},
    "gpu shape": {"units_out_of_line": True},
    # the GPU shape before its call-free instruction loop (issue #41), kept for timing
    "gpu shape, no hot loop": {"units_out_of_line": True, "hot_loop": False},
}


def assert_shapes_agree(rom: str, label: str, steps: int, envs: int, seed: int) -> None:
    """Every shape on the CPU, the same random buttons per env, every per-env array equal
    to the CPU dispatch's after every step."""
    kwargs = dict(num_envs=envs, threads=1, frames_per_step=4, release_after_frames=2)
    runs = [
        WarpVecCpuBackend(rom, action_codec="buttons", **shape, **kwargs)
        for shape in SHAPES.values()
    ]
    assert runs[0]._step_kernel() is step_kernel_variant(opcode_dispatch=True)
    assert runs[1]._step_kernel() is step_kernel
    assert runs[2]._step_kernel() is step_kernel_variant(units_out_of_line=True)
    rng = np.random.default_rng(seed)
    try:
        for step in range(steps):
            buttons = rng.integers(0, 256, size=envs)
            for backend in runs:
                backend.step(buttons)
            states = [machine_state(b) for b in runs]
            for shape, state in zip(list(SHAPES)[1:], states[1:], strict=True):
                for field, value in states[0].items():
                    if not np.array_equal(value, state[field]):
                        bad = np.argwhere(value != state[field])[0]
                        pytest.fail(
                            f"{label} step {step}: {field} of the {shape} differs from the "
                            f"cpu dispatch's first at {tuple(bad)}"
                        )
    finally:
        for backend in runs:
            backend.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_agree(name):
    assert_shapes_agree(rom_path(name), name, CASES[name], envs=4, seed=len(name) + 7)


def test_shape_defaults_and_modules():
    assert StepFeatures().module is None
    assert StepFeatures(units_out_of_line=True).module == "gbxcule.kernels.step.step_cuda"
    assert StepFeatures(hooks=True, units_out_of_line=True).module == "unique"
    from gbxcule.kernels.step import step_cuda

    assert step_cuda.step_kernel is step_kernel_variant(units_out_of_line=True)
    assert step_cuda.step_kernel.module.name == "gbxcule.kernels.step.step_cuda"
    with pytest.raises(TypeError, match="units_out_of_line"):
        WarpVecCpuBackend(str(spec_rom_file(get_rom("flow"))), units_out_of_line="yes")


def test_cpu_dispatch_defaults_module_and_bad_options():
    assert StepFeatures(opcode_dispatch=True).module == "gbxcule.kernels.step.step_cpu"
    assert StepFeatures(hooks=True, opcode_dispatch=True).module == "unique"
    with pytest.raises(ValueError, match="units_out_of_line"):
        StepFeatures(opcode_dispatch=True, units_out_of_line=True)
    from gbxcule.kernels.step import step_cpu

    assert step_cpu.step_kernel is step_kernel_variant(opcode_dispatch=True)
    assert step_cpu.step_kernel.module.name == "gbxcule.kernels.step.step_cpu"
    assert check_opcode_dispatch(None, is_cuda=False, units_out_of_line=False) is True
    assert check_opcode_dispatch(None, is_cuda=False, units_out_of_line=True) is False
    assert check_opcode_dispatch(None, is_cuda=True, units_out_of_line=False) is False
    assert check_opcode_dispatch(False, is_cuda=False, units_out_of_line=False) is False
    with pytest.raises(ValueError, match="CPU device"):
        check_opcode_dispatch(True, is_cuda=True, units_out_of_line=False)
    rom = str(spec_rom_file(get_rom("flow")))
    with pytest.raises(ValueError, match="inlined shape"):
        WarpVecCpuBackend(rom, units_out_of_line=True, opcode_dispatch=True)
    with pytest.raises(TypeError, match="opcode_dispatch"):
        WarpVecCpuBackend(rom, opcode_dispatch=1)


def test_shapes_agree_on_every_suite_rom():
    """Every micro ROM of the suite (52), 25 steps of 4 frames, 3 envs with their own random
    buttons, every per-env array after every step (~6 s)."""
    from bench.roms.build import all_roms

    for spec in all_roms():
        assert_shapes_agree(str(spec_rom_file(spec)), spec.name, 25, envs=3, seed=1)


def test_shapes_stop_at_stop_pc_inside_a_run():
    """``stop_pc`` (what the boot hand-over launches with) stops every shape at the first
    fetch of that address with the boot ROM unmapped, also where the CPU dispatch would
    be inside a run of fast-path instructions: ``cpu_run_fast`` tests no ``stop_pc``, so
    ``cpu_tick`` must not call it while one is set (kernels/step/step.py)."""
    from bench.busy_rom import busy_rom_path
    from bench.cpu_profile import trace
    from gbxcule.backends.env_slices import PerEnv
    from gbxcule.backends.warp_base import field_view

    rom = str(busy_rom_path())
    loop = [int(pc) for pc in trace(rom, 64, 2)[0][:, 1]]  # the busy loop's PCs, in order
    states = []
    for shape in SHAPES.values():
        env = WarpVecCpuBackend(rom, num_envs=1, threads=1, action_codec="buttons", **shape)
        try:
            env.step(np.zeros(1, dtype=np.int64))
            pc = int(field_view(env.machine, "pc").numpy()[0])
            stop = loop[loop.index(pc) + 3]  # three instructions on: inside the run
            env._slices.launch(
                env._step_kernel(hooks=False),
                [*env._step_machine, PerEnv(env._buttons), 1, 0, 0, stop],
                device=env.device,
            )
            assert int(field_view(env.machine, "pc").numpy()[0]) == stop, shape
            states.append(machine_state(env))
        finally:
            env.close()
    for state in states[1:]:
        for field, value in states[0].items():
            assert np.array_equal(value, state[field]), field


@pytest.mark.slow
@pytest.mark.parametrize(("name", "steps"), [("demo_game", 2000), ("game_bench", 300)])
def test_gpu_shape_soak(name, steps):
    """What CUDA runs, the GPU shape, env-major and interleaved, against the CPU dispatch over
    long runs of 24-frame steps (48,000 frames of the demo game), 8 envs with their own
    random buttons; every env's whole state (``capture_state``, layout-free) every 50
    steps and at the end."""
    kwargs = dict(num_envs=8, threads=1, frames_per_step=24, release_after_frames=8)
    shapes = {
        "cpu dispatch": {},
        "gpu shape": {"units_out_of_line": True},
        "gpu shape, interleaved": {"units_out_of_line": True, "mem_layout": "interleaved"},
    }
    runs = [
        WarpVecCpuBackend(rom_path(name), action_codec="buttons", **shape, **kwargs)
        for shape in shapes.values()
    ]
    rng = np.random.default_rng(11)
    try:
        for step in range(steps):
            buttons = rng.integers(0, 256, size=8)
            buttons[rng.random(8) < 0.4] = 0
            for backend in runs:
                backend.step(buttons)
            if step % 50 != 49 and step != steps - 1:
                continue
            for e in range(8):
                want = runs[0].capture_state(e)
                for label, backend in zip(list(shapes)[1:], runs[1:], strict=True):
                    got = backend.capture_state(e)
                    for field, value in want.items():
                        if not np.array_equal(np.asarray(value), np.asarray(got[field])):
                            pytest.fail(f"{name} step {step}: env {e}'s {field} in the {label}")
    finally:
        for backend in runs:
            backend.close()


@pytest.mark.parametrize("rom", ["quest", "game_bench"])
def test_envs_sorted_by_pc_step_exactly_as_in_launch_order(rom):
    """env_order="pc" (kernels/step/env_order.py): the GPU shape's threads step the envs sorted
    by PC, the state staying in the user's order; every per-env array equals the launch
    order's after every step of per-env random actions, and the order really moved."""
    from gbxcule.games import bundled_rom_path

    path = str(bundled_rom_path("quest")) if rom == "quest" else rom_path(rom)
    n, rng = 16, np.random.default_rng(3)
    kw = dict(num_envs=n, threads=1, frames_per_step=4, units_out_of_line=True)
    with (
        WarpVecCpuBackend(path, **kw) as launch,
        WarpVecCpuBackend(path, env_order="pc", **kw) as by_pc,
    ):
        moved = False
        for step in range(12):
            actions = rng.integers(0, 7, size=n)
            launch.step(actions)
            by_pc.step(actions)
            a, b = machine_state(launch), machine_state(by_pc)
            bad = [k for k in a if not np.array_equal(a[k], b[k])]
            assert not bad, f"step {step}: {bad}"
            order = by_pc._env_order.parts[0].numpy()[:n]
            assert sorted(order.tolist()) == list(range(n))
            moved = moved or order.tolist() != list(range(n))
        assert moved, "the envs never left launch order: nothing was sorted"


def test_env_order_is_checked():
    path = rom_path("flow")
    with pytest.raises(ValueError, match="env_order must be one of"):
        WarpVecCpuBackend(path, num_envs=2, threads=1, env_order="random")
    with pytest.raises(ValueError, match="GPU shape"):
        WarpVecCpuBackend(path, num_envs=2, threads=1, env_order="pc")
    with pytest.raises(ValueError, match="threads=1"):
        WarpVecCpuBackend(path, num_envs=4, threads=2, env_order="pc", units_out_of_line=True)
