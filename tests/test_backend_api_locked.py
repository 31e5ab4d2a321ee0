"""Illegal opcodes through the backend: the env locks, is reported, stays frozen, and
the others run on; resets give it a running state again.

PyBoy hangs on these opcodes (history/pyboy-deviations.md), so there is no oracle run:
the check is that one bad env cannot stall or disturb a batch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.asm import build_rom
from gbxcule.backends.warp_vec import WarpVecCpuBackend

from .support.backend_api_support import write_rom

pytestmark = pytest.mark.api

# Counts in WRAM each pass; while A is held it runs into 0xDD, an illegal opcode.
LOCK_ON_A = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $C000
.loop:
    ld a, $10            ; select the action buttons (PyBoy computes P1 on writes)
    ldh [$00], a
    ldh a, [$00]
    bit 0, a
    jr z, .bad
    inc [hl]
    jr .loop
.bad:
    db $DD
"""
A = 1 << 4  # "a" in the buttons codec
N = 4


@pytest.fixture(scope="module")
def rom_path(tmp_path_factory):
    return write_rom(tmp_path_factory.mktemp("locked"), "lock.gb", build_rom(LOCK_ON_A))


@pytest.fixture
def backend(rom_path):
    pace = {"frames_per_step": 2, "release_after_frames": 1, "action_codec": "buttons"}
    with WarpVecCpuBackend(rom_path, num_envs=N, threads=2, **pace) as b:
        b.reset()
        yield b


def counters(b) -> np.ndarray:
    return b.wram_torch()[:, 0].numpy().copy()


def test_illegal_opcode_locks_only_that_env_and_is_reported(backend):
    b = backend
    b.step(np.zeros(N, dtype=np.int64))
    assert b.locked_envs() == []
    assert b.locked_torch().dtype == torch.int32 and b.locked_torch().shape == (N,)
    b.step(np.array([0, A, 0, A]))
    assert b.locked_envs() == [1, 3]
    assert b.locked_torch().tolist() == [0, 0x1DD, 0, 0x1DD]
    frozen = [b.capture_state(e) for e in (1, 3)]
    pc = b.get_cpu_state(1)["pc"]
    assert b.read_memory(1, pc, pc + 1)[0] == 0xDD
    before = counters(b)
    for _ in range(3):
        b.step(np.zeros(N, dtype=np.int64))
    after = counters(b)
    assert after[0] != before[0] and after[2] != before[2]  # the others run on
    for e, state in zip((1, 3), frozen):
        now = b.capture_state(e)
        assert all(np.array_equal(now[k], state[k]) for k in state), f"env {e} changed"


def test_resets_unlock(backend):
    b = backend
    slot = b.capture_start_state(0)
    b.step(np.array([A, A, A, 0]))
    assert b.locked_envs() == [0, 1, 2]
    b.reset_envs(b.locked_torch() != 0, slots=np.full(N, slot))
    assert b.locked_envs() == []
    b.step(np.zeros(N, dtype=np.int64))
    assert b.locked_envs() == []
    b.step(np.array([0, 0, A, 0]))
    assert b.locked_envs() == [2]
    b.restore_state(2, b.capture_state(0))
    assert b.locked_envs() == []
    b.step(np.full(N, A))
    assert b.locked_envs() == [0, 1, 2, 3]
    b.load_state(b.save_snapshot(0), envs=[3])  # a snapshot carries no lock
    assert b.locked_envs() == [0, 1, 2]
    b.reset()
    assert b.locked_envs() == []
