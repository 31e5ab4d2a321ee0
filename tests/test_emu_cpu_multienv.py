"""Many envs in one launch behave exactly like one env each.

64 envs of the input-driven demo game get different random button sequences;
the batch runs interleaved (address-major ``mem``) on two worker threads. Every
env's registers and RAM must equal a one-env run on the same inputs (sampled
envs) and its counterpart in a second batch with the envs permuted (all envs).
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import get_rom
from bench.roms.spec import spec_rom_file
from gbxcule.backends.warp_vec import WarpVecCpuBackend

pytestmark = pytest.mark.l3

NUM_ENVS = 64
STEPS = 8
REGIONS = ((0x8000, 0xA000), (0xA000, 0xC000), (0xC000, 0xE000), (0xFE00, 0x10000))
PACING = {"frames_per_step": 4, "release_after_frames": 2, "action_codec": "buttons"}


def snapshot(backend, env: int) -> dict:
    out: dict = {"cpu": backend.get_cpu_state(env)}
    for lo, hi in REGIONS:
        out[(lo, hi)] = backend.read_memory(env, lo, hi)
    return out


def assert_same_env(a: dict, b: dict, label: str) -> None:
    assert a["cpu"] == b["cpu"], f"{label}: registers {a['cpu']} != {b['cpu']}"
    for rng in REGIONS:
        bad = np.nonzero(a[rng] != b[rng])[0]
        assert not len(bad), f"{label}: {len(bad)} bytes differ from ${rng[0] + bad[0]:04X}"


def run(rom: str, actions: np.ndarray, **kwargs) -> WarpVecCpuBackend:
    backend = WarpVecCpuBackend(rom, num_envs=actions.shape[1], **{**PACING, **kwargs})
    for row in actions:
        backend.step(row)
    return backend


@pytest.fixture(scope="module")
def demo_rom() -> str:
    return str(spec_rom_file(get_rom("demo_game")))


def test_batch_envs_equal_single_env_runs(demo_rom: str) -> None:
    rng = np.random.default_rng(7)
    actions = rng.integers(0, 256, size=(STEPS, NUM_ENVS))
    batch = run(demo_rom, actions, threads=2, mem_layout="interleaved")
    perm = rng.permutation(NUM_ENVS)
    shuffled = run(demo_rom, actions[:, perm], threads=3)
    try:
        # one snapshot per env: reading STAT has PyBoy's side effect (clears a one-shot flag)
        snaps = [snapshot(batch, env) for env in range(NUM_ENVS)]
        wram = {snap[(0xC000, 0xE000)].tobytes() for snap in snaps}
        assert len(wram) > NUM_ENVS // 2, f"only {len(wram)} distinct WRAM states: weak test"
        for new, old in enumerate(perm):
            assert_same_env(snapshot(shuffled, new), snaps[old], f"env {old} (permuted batch)")
        for env in (0, 1, 31, 32, 63):
            single = run(demo_rom, actions[:, env : env + 1], threads=1)
            try:
                assert_same_env(snapshot(single, 0), snaps[env], f"env {env} (one-env run)")
            finally:
                single.close()
    finally:
        batch.close()
        shuffled.close()
