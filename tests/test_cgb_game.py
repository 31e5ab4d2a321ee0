"""The bundled Game Boy Color game, ``demo-colour`` (gbxcule.demo.colour): the demo's
rules with colour palettes, map attributes sent by HDMA and a coin tally in WRAM bank 2.

A greedy player walks to the nearest coin; our CPU backend and PyBoy ``cgb=True`` (both
by the header's rule) agree every step in RAM (WRAM bank 2's tally included), VRAM and
the screen, and the tally counts the coins the score does."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from bench.cgb_screens import greedy
from gbxcule.core.memory_layout import CGB_WRAM_BANK_SIZE, CGB_WRAM_BANKS_OFF
from gbxcule.demo import colour, game
from gbxcule.games import bundled_rom_path

pytestmark = pytest.mark.api


def tally_ours(b, env: int) -> np.ndarray:
    row = b.machine.cgb.numpy()[env]
    at = CGB_WRAM_BANKS_OFF + (colour.TALLY_BANK - 1) * CGB_WRAM_BANK_SIZE
    return row[at : at + game.NUM_COINS]


def test_the_colour_edition_is_the_demo_in_colour():
    from gbxcule.demo.rom import demo_colour_rom_bytes, demo_rom_bytes

    rom = demo_colour_rom_bytes()
    assert rom[0x143] == 0x80 and demo_rom_bytes()[0x143] == 0
    assert hashlib.sha256(demo_rom_bytes()).hexdigest()[:16] == "414f74e6fc45dd3c"  # unchanged


def test_a_greedy_player_scores_alike_on_ours_and_pyboy():
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    path = bundled_rom_path("demo-colour")
    kw = dict(num_envs=1, frames_per_step=8, release_after_frames=8)
    ours = WarpVecCpuBackend(path, threads=1, **kw)
    ref = PyBoySingleBackend(path, **kw)
    try:
        assert ours.cgb and ref.cgb
        ours.reset()
        ref.reset()
        for step in range(160):
            action = greedy(ours.read_memory(0, 0xC000, 0xC200))
            ours.step([action])
            ref.step([action])
            for lo, hi in ((0xC000, 0xE000), (0x8000, 0xA000), (0xFF00, 0xFF76)):
                assert np.array_equal(ours.read_memory(0, lo, hi), ref.read_memory(0, lo, hi)), (
                    step,
                    hex(lo),
                )
            tally = np.asarray(ref.pyboy(0).memory[colour.TALLY_BANK, 0xD000:0xD008], np.uint8)
            assert np.array_equal(tally_ours(ours, 0), tally), step
            assert np.array_equal(ours.screens([0]), ref.screens([0])), step
        score = int.from_bytes(ours.read_memory(0, game.W_SCORE, game.W_SCORE + 2), "little")
        assert score >= 3 and int(tally.sum()) == score
        assert len(np.unique(ours.screens([0])[0].reshape(-1, 3), axis=0)) >= 10  # in colour
    finally:
        ours.close()
        ref.close()
