"""The CUDA backend runs the same kernels as the CPU backend and must agree with it exactly.

The CPU backend is proven against PyBoy elsewhere; here every env of a CUDA
batch must equal the same env on the CPU device after every step, on ROMs that
cover the CPU (random programs), interrupts and HALT (the demo game), the MBC3
clock, OAM DMA and IO access timing. A last test runs 65,536 envs with a
128 KiB cart RAM (mem rows beyond 2^31 bytes in total) in both memory layouts.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.backends.warp_vec import WarpVecCpuBackend, WarpVecCudaBackend

from .support.emu_cpu_fuzz import fuzz_source
from .support.emu_cpu_support import program_rom

pytestmark = [pytest.mark.l3, pytest.mark.gpu]

NUM_ENVS = 16
STEPS = 12
PACING = {"frames_per_step": 2, "release_after_frames": 1, "action_codec": "buttons"}
REGIONS = ((0x8000, 0xA000), (0xA000, 0xC000), (0xC000, 0xE000), (0xFE00, 0x10000))


def fuzz_rom_path() -> str:
    body, extra = fuzz_source(1, 1500)
    rom, _ = program_rom(body, extra=extra)
    path = Path(tempfile.mkdtemp()) / "fuzz1.gb"
    path.write_bytes(rom)
    return str(path)


def timing_rom_path() -> str:
    from gbxcule.asm import build_rom
    from tests.test_emu_cpu_timing import program

    path = Path(tempfile.mkdtemp()) / "timing.gb"
    path.write_bytes(build_rom(program()))
    return str(path)


ROMS = {
    "fuzz": fuzz_rom_path,
    "timing": timing_rom_path,
    "demo_game": lambda: str(spec_rom_file(get_rom("demo_game"))),
    "hw_mbc3": lambda: str(spec_rom_file(get_rom("hw_mbc3"))),
    "hw_oam_dma": lambda: str(spec_rom_file(get_rom("hw_oam_dma"))),
}


def snapshot(backend, env: int) -> dict:
    out: dict = {"cpu": backend.get_cpu_state(env)}
    for lo, hi in REGIONS:
        out[(lo, hi)] = backend.read_memory(env, lo, hi)
    return out


@pytest.mark.parametrize("name", sorted(ROMS))
def test_cuda_equals_cpu(name: str) -> None:
    rom = ROMS[name]()
    actions = np.random.default_rng(3).integers(0, 256, size=(STEPS, NUM_ENVS))
    cuda = WarpVecCudaBackend(rom, num_envs=NUM_ENVS, mem_layout="interleaved", **PACING)
    cpu = WarpVecCpuBackend(rom, num_envs=NUM_ENVS, threads=4, **PACING)
    try:
        for step in range(STEPS + 1):
            if step:
                cuda.step(actions[step - 1])
                cpu.step(actions[step - 1])
            for env in range(NUM_ENVS):
                a, b = snapshot(cuda, env), snapshot(cpu, env)
                assert a["cpu"] == b["cpu"], (
                    f"{name} step {step} env {env}: {a['cpu']} != {b['cpu']}"
                )
                for rng in REGIONS:
                    bad = np.nonzero(a[rng] != b[rng])[0]
                    assert not len(bad), (
                        f"{name} step {step} env {env}: {len(bad)} bytes differ from "
                        f"${rng[0] + bad[0]:04X}"
                    )
    finally:
        cuda.close()
        cpu.close()


@pytest.mark.parametrize("layout", ["env_major", "interleaved"])
def test_65536_envs_with_128k_cart_ram(layout: str) -> None:
    """hw_mbc5 walks all 16 RAM banks; the last env must match the first (no index wrap)."""
    spec = get_rom("hw_mbc5")
    n = 65536
    backend = WarpVecCudaBackend(
        str(spec_rom_file(spec)),
        num_envs=n,
        frames_per_step=spec.frames_per_step,
        release_after_frames=spec.release_after_frames,
        action_codec="buttons",
        mem_layout=layout,
    )
    try:
        assert backend.machine.mem.shape[1] * n > 2**31
        for _ in range(spec.steps):
            backend.step(np.zeros(n, dtype=np.int64))
        for env in (0, n // 2 + 1, n - 1):
            spec.check(backend, env)
        first, last = snapshot(backend, 0), snapshot(backend, n - 1)
        assert first["cpu"] == last["cpu"]
        for rng in REGIONS:
            assert np.array_equal(first[rng], last[rng]), f"env {n - 1} differs in {rng}"
    finally:
        backend.close()
