"""The sound unit in save states, against PyBoy 2.8.1 with sound on (its default).

A game with a music engine (``bench/game_rom.py``'s ``game-music``: every frame it reads
NR52 and writes all four channels, with triggers, length counters, a sweep and wave
RAM playing) is saved by PyBoy between frames and in the middle of frames (in its VBlank
handler, before the music engine runs); our backend and PyBoy load each state and run
on in lockstep, and the whole machine as a PyBoy state, the sound block included (less
``APU_SAMPLE_ONLY``), must agree. Exporting: our backend runs the game, hands the env to
PyBoy, PyBoy's own save right after loading equals our export, and both continue alike.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from bench.game_rom import game_music_rom_bytes
from gbxcule.core.savestate import load_pyboy_state

from .support.backend_api_support import (
    lockstep,
    pyboy_full_state,
    pyboy_state_after,
    pyboy_states_at_hooks,
    state_diffs,
)
from .test_backend_api_savestates import make_pair

pytestmark = pytest.mark.l3

VBLANK = 0x0040


@pytest.fixture(scope="module")
def music(tmp_path_factory):
    pair = make_pair(tmp_path_factory, "music", game_music_rom_bytes())
    yield pair
    pair.close()


def test_the_game_keeps_the_sound_unit_busy(music):
    state = load_pyboy_state(pyboy_state_after(music.rom, 50, seed=3), music.rom)
    sound = state.sound
    assert sound.poweron and sound.nr50 == 0x77
    assert sound.sweep.enable or sound.tone.enable or sound.wave.enable or sound.noise.enable
    assert sound.div_apu > 40  # the frame sequencer ran


@pytest.mark.parametrize("frames", [17, 50, 123])
def test_states_pyboy_saves_between_frames_run_alike(music, frames):
    music.load(pyboy_state_after(music.rom, frames, seed=frames))
    assert not state_diffs(
        pyboy_full_state(music.pyboy, music.rom),
        load_pyboy_state(music.warp.export_pyboy_state(0), music.rom),
    )
    lockstep(music.pyboy, music.warp, music.rom, 30, seed=frames, full_every=5)


def test_states_pyboy_saves_mid_frame_run_alike(music):
    for k, state in enumerate(pyboy_states_at_hooks(music.rom, {VBLANK: [3, 20, 61]}, 80)):
        music.load(state)
        lockstep(music.pyboy, music.warp, music.rom, 20, seed=k, full_every=4)


def test_our_export_is_what_pyboy_saves_after_loading_it_and_runs_alike(music):
    music.warp.load_state(pyboy_state_after(music.rom, 5, seed=9))
    rng = np.random.default_rng(4)
    for k in range(48):  # random buttons, then none: no release is pending at the export
        music.warp.step(rng.integers(0, 256, size=1) if k < 40 else np.zeros(1, np.int64))
    exported = music.warp.export_pyboy_state(0)
    music.pyboy.load_state(exported)
    buf = io.BytesIO()
    music.pyboy.pyboy(0).save_state(buf)
    theirs = load_pyboy_state(buf.getvalue(), music.rom)
    ours = load_pyboy_state(exported, music.rom)
    assert ours.sound.poweron and ours.sound.div_apu > 40
    assert not state_diffs(theirs, ours)
    lockstep(music.pyboy, music.warp, music.rom, 30, seed=5, full_every=5)
