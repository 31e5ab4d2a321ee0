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
from gbxcule.core.memory_layout import wramx_bank_offset
from gbxcule.demo import colour, game
from gbxcule.games import bundled_rom_path

pytestmark = pytest.mark.api


def tally_ours(b, env: int) -> np.ndarray:
    row = b.machine.mem.numpy()[env]
    at = wramx_bank_offset(len(row), colour.TALLY_BANK)
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


@pytest.mark.parametrize("kind", ["warp", "pyboy"])
def test_a_task_reads_a_wram_bank_the_game_has_not_mapped(kind):
    """demo-colour keeps its tally in WRAM bank 2 and maps bank 1: a task's ``bank=2``
    read at D000 sees the tally (Warp: the parked bank on the device; PyBoy: its banked
    memory), ``bank=None`` the mapped bank 1; a bank outside 1-7, or a DMG machine, is
    refused by name."""
    import torch

    from gbxcule.tasks import U8, Progress, Task
    from gbxcule.tasks.session import TaskSession, make_task_backend

    reads = {f"tally{k}": U8(colour.D_TALLY + k, bank=colour.TALLY_BANK) for k in range(8)}
    reads["coins"] = U8(game.W_SCORE)
    reads["mapped"] = U8(colour.D_TALLY)
    task = Task(
        name="tally", rom="bundled:demo-colour", reads=reads,
        reward={"coins": Progress("coins")}, actions="pokemonred_puffer_v1", max_steps=500,
        frames_per_step=8, release_after_frames=8,
    )  # fmt: skip
    backend = make_task_backend(task, 1, kind=kind, **({"threads": 1} if kind == "warp" else {}))
    session = TaskSession(task, backend)
    try:
        session.start()
        result = session.new_result()
        for _ in range(100):
            action = greedy(backend.read_memory(0, 0xC000, 0xC200))
            session.step(torch.tensor([action]), result)
        values = session.runtime.read_all()
        tally = [int(values[f"tally{k}"][0]) for k in range(8)]
        assert sum(tally) == int(values["coins"][0]) >= 3
        assert int(values["mapped"][0]) == int(backend.read_memory(0, 0xD000, 0xD001)[0])
    finally:
        backend.close()
    bad = Task(name="t", rom="bundled:demo-colour", reads={"x": U8(0xD000, bank=8)},
               reward={"x": Progress("x")})  # fmt: skip
    backend = make_task_backend(bad, 1, kind=kind, **({"threads": 1} if kind == "warp" else {}))
    try:
        with pytest.raises(Exception, match="WRAM banks 1-7"):
            TaskSession(bad, backend)
    finally:
        backend.close()


def test_the_cli_shows_the_colour_game_in_colour(tmp_path):
    """`gbxcule demo`, `record` and `task check` on the Game Boy Color game write colour
    images (the demo's grid PNG in RGB, GIFs of RGB screens and of luminance)."""
    from PIL import Image

    from gbxcule.cli import main

    assert main(["demo", "--game", "demo-colour", "--envs", "2", "--steps", "3",
                 "--out", str(tmp_path / "demo")]) == 0  # fmt: skip
    png = Image.open(tmp_path / "demo" / "final_frames.png")
    assert png.mode == "RGB" and len(png.getcolors(4096) or []) > 4
    rec = tmp_path / "rec.gif"
    assert main(["record", str(bundled_rom_path("demo-colour")), "--steps", "4",
                 "--out", str(rec)]) == 0  # fmt: skip
    assert rec.stat().st_size > 0
    sheet = tmp_path / "check.gif"
    assert main(["task", "check", "demo-colour-coins", "--envs", "2", "--steps", "8",
                 "--gif", str(sheet)]) in (0, 1)  # fmt: skip
    assert sheet.stat().st_size > 0
