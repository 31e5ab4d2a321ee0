"""L3: the game-like benchmark ROM (bench/game_rom.py) in lockstep with PyBoy, and doing
what its docstring says: bank switching over all 7 banks, code running from banked ROM,
an OAM DMA every frame from the VBlank handler, IME on, and never a HALT."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bench.game_rom import GAME_SOURCE, W_VARS, game_rom_path
from gbxcule.asm import assemble
from gbxcule.backends.warp_base import field_view
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.lockstep import LockstepConfig, make_actions, run_lockstep

pytestmark = pytest.mark.l3


def test_game_rom_runs_in_lockstep_with_pyboy(tmp_path):
    """300 steps of 2 frames under random buttons: registers, the cycle counter, RAM, IO,
    serial and the screen equal after every step."""
    cfg = LockstepConfig(steps=300, frames_per_step=2, release_after_frames=1, compare_cycles=True)
    actions = make_actions("random", cfg.steps, 1, cfg.codec, seed=5)
    result = run_lockstep(game_rom_path(), actions, cfg, bundle_root=tmp_path, seed=5)
    assert result.ok, f"diverged at step {result.divergence_step}:\n" + "\n".join(result.diffs)
    assert result.checks == cfg.steps + 1


SYMBOLS = assemble(GAME_SOURCE).symbols


def _var(env: WarpVecCpuBackend, name: str, size: int = 1) -> int:
    addr = SYMBOLS[name]
    data = np.asarray(env.read_memory(0, addr, addr + size), dtype=np.int64)
    return int(sum(int(b) << (8 * k) for k, b in enumerate(data)))


def test_game_rom_exercises_banks_dma_and_never_halts():
    assert not re.search(r"^\s*(halt|stop)\b", GAME_SOURCE, re.M | re.I)
    assert SYMBOLS["wIter"] == W_VARS
    frames = 240
    env = WarpVecCpuBackend(str(game_rom_path()), num_envs=1, threads=1, frames_per_step=1)
    try:
        env.reset(0)
        actions = make_actions("random", frames, 1, "pokemonred_puffer_v1", seed=1)
        pcs, banks, halted, ime = [], set(), set(), set()
        dma_counts = []
        for a in actions:
            env.step(a)
            cpu = env.get_cpu_state(0)
            pcs.append(cpu["pc"])
            halted.add(cpu["halted"])
            ime.add(cpu["ime"])
            banks.add(int(field_view(env.machine, "rom_bank").numpy()[0]))
            dma_counts.append(_var(env, "wDmaCount", 2))
        assert halted == {0}
        assert 1 in ime
        assert banks >= {1, 2, 3}, banks
        assert any(0x4000 <= pc < 0x8000 for pc in pcs), "no sample in the banked code"
        assert _var(env, "wBanksSeen") == 0b11111110  # every bank 1-7 mapped at least once
        iterations = _var(env, "wIter", 2)
        assert iterations > 2 * frames  # ~2.9 passes of the main loop a frame
        assert _var(env, "wBankSwitches", 2) >= 3 * iterations
        # One DMA per VBlank once the LCD is on (after the first few frames of setup).
        steps = np.diff(dma_counts[10:])
        assert np.all(steps == 1), steps
        assert np.any(np.asarray(env.read_memory(0, 0xFE00, 0xFE20)) != 0)  # only DMA writes OAM
    finally:
        env.close()
