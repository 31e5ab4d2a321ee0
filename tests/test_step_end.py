"""Steps of their own length: actions with their own hold and frames, and a step that
ends early on a RAM byte (core/step_end.py), lockstep with PyBoy 2.8.1 sound on."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.actions import codec_from_buttons
from gbxcule.core.step_end import StepEnd, StepEndError
from gbxcule.demo import game as g
from gbxcule.demo.rom import demo_rom_path

ACTIONS = ["left hold=4 frames=30", "right", "up+right hold=2", "a frames=10", "noop frames=3"]
CODEC = codec_from_buttons(ACTIONS).name
N = 3

pytestmark = pytest.mark.l2


def _pair(end: StepEnd | None, frames_per_step: int = 12):
    opts = dict(num_envs=N, frames_per_step=frames_per_step, release_after_frames=6)
    ours = WarpVecCpuBackend(demo_rom_path(), action_codec=CODEC, threads=1, **opts)
    ref = PyBoySingleBackend(demo_rom_path(), action_codec=CODEC, render=True, **opts)
    for b in (ours, ref):
        b.set_step_end(end)
    return ours, ref


def _same(ours, ref, step: int) -> None:
    for env in range(N):
        assert ours.get_cpu_state(env) == ref.get_cpu_state(env), f"step {step} env {env}"
        for lo, hi in ((0x8000, 0xA000), (0xC000, 0xE000), (0xFE00, 0xFEA0), (0xFF00, 0x10000)):
            a, b = ours.read_memory(env, lo, hi), ref.read_memory(env, lo, hi)
            assert np.array_equal(a, b), f"step {step} env {env} {lo:#06x}"
        assert np.array_equal(ours.frame_shades(env), ref.frame_shades(env)), f"step {step}"


@pytest.mark.parametrize(
    "end",
    [
        None,
        StepEnd(g.W_PLAYER_X, changes=True, min_frames=6),
        StepEnd(g.W_FRAME, mask=3, equals=0, min_frames=6),
    ],
    ids=["timed-actions", "x-changes", "frame-mod-4"],
)
def test_steps_of_their_own_length_match_pyboy(end):
    ours, ref = _pair(end)
    rng = np.random.default_rng(7)
    seen: set[int] = set()
    try:
        for step in range(40):
            acts = rng.integers(0, len(ACTIONS), N)
            ours.step(acts)
            ref.step(acts)
            frames = ours.step_frames()
            assert np.array_equal(frames, ref.step_frames()), f"step {step}"
            seen.update(frames.tolist())
            _same(ours, ref, step)
    finally:
        ours.close()
        ref.close()
    if end is None:
        assert seen == {30, 12, 10, 3}  # each action's own length, the backend's for the rest
    else:
        assert min(seen) < 10 and max(seen) > 6  # ended early, and not always at once


def test_the_step_ends_after_the_first_frame_that_meets_it():
    ours, ref = _pair(StepEnd(g.W_PLAYER_X, changes=True, min_frames=6), frames_per_step=60)
    try:
        for b in (ours, ref):
            b.step(np.full(N, 1))  # right
        x0 = ours.read_memory(0, g.W_PLAYER_X, g.W_PLAYER_X + 1)[0]
        ours.step(np.full(N, 1))
        ran = ours.step_frames()
        pyboy = ref.pyboy(0)  # the same step by hand: a frame at a time until X moves
        pyboy.button("right", 6)
        by_hand = 0
        while True:
            pyboy.tick(1, True)
            by_hand += 1
            if by_hand >= 6 and pyboy.memory[g.W_PLAYER_X] != x0:
                break
        assert 6 <= ran[0] == by_hand < 60
        assert ours.read_memory(0, g.W_PLAYER_X, g.W_PLAYER_X + 1)[0] != x0
        ours.set_step_end(None)
        ours.step(np.full(N, 1))
        assert (ours.step_frames() == 60).all()
    finally:
        ours.close()
        ref.close()


def test_bad_step_ends_and_timings_are_refused():
    with pytest.raises(StepEndError, match="exactly one condition"):
        StepEnd(0xC000)
    with pytest.raises(StepEndError, match="no bank switch"):
        StepEnd(0xA000, changes=True)
    with pytest.raises(StepEndError, match="byte"):
        StepEnd(0xC000, equals=256)
    with pytest.raises(ValueError, match="hold=N or frames=N"):
        codec_from_buttons(["a hold:2"])
    with pytest.raises(ValueError, match="longer than its step"):
        codec_from_buttons(["a hold=9 frames=4"])
    ours = WarpVecCpuBackend(
        demo_rom_path(),
        num_envs=1,
        frames_per_step=12,
        release_after_frames=6,
        action_codec=CODEC,
        threads=1,
    )
    try:
        with pytest.raises(ValueError, match="min_frames >= 6"):
            ours.set_step_end(StepEnd(0xC100, changes=True, min_frames=2))
        with pytest.raises(StepEndError, match="resolve the symbol"):
            ours.set_step_end(StepEnd("wPlayerX", changes=True, min_frames=6))
    finally:
        ours.close()
    with pytest.raises(ValueError, match="holds its buttons 9 frames in a step of 4"):
        WarpVecCpuBackend(
            demo_rom_path(),
            num_envs=1,
            frames_per_step=4,
            release_after_frames=4,
            action_codec=codec_from_buttons(["a hold=9"]).name,
            threads=1,
        )
