"""End to end: our emulator's latches and frame_video + our renderers vs PyBoy.

A Warp CPU backend (render-on-step on) and the PyBoy oracle run the PPU suite's
scene ROMs (static and mid-frame) side by side; once the scene's ROM reports it
has drawn ``MIN_STABLE_FRAMES`` frames (the suite's own rule), every step's full
frame, [N,72,80] shades and packed2 buffer are compared with PyBoy's frame.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.roms.suite.ppu_common import MIN_STABLE_FRAMES, W_FRAMES, scene_source
from gbxcule.asm import build_rom
from gbxcule.backends.pixels import FRAME_BYTES, PACKED_FRAME_BYTES
from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import pixels as px
from gbxcule.demo import game as demo_game
from gbxcule.demo import rom as demo_rom

from .support import pixel_scenes as ps
from .test_pixels_midframe import VBLANK_WRITER
from .test_pixels_suite_scenes import SCENES

pytestmark = pytest.mark.l3

STEPS = 8
FRAMES_PER_STEP = 2


def run_side_by_side(tmp_path, rom_bytes: bytes, name: str, ready, inputs=None, **kw) -> int:
    """Step both backends (buttons codec; ``inputs[k]`` = step k's masks, default none);
    compare every step where ``ready(oracle)``; returns pixels compared."""
    rom = tmp_path / f"{name}.gb"
    rom.write_bytes(rom_bytes)
    kwargs = dict(num_envs=2, frames_per_step=FRAMES_PER_STEP, release_after_frames=1)
    kwargs.update(kw, action_codec="buttons")
    warp = WarpVecCpuBackend(
        rom, threads=1, render_pixels=True, render_pixels_packed=True, **kwargs
    )
    oracle = PyBoySingleBackend(rom, **kwargs)
    if inputs is None:
        inputs = np.zeros((STEPS, warp.num_envs), dtype=np.int64)
    compared = 0
    try:
        pointers = (warp.pixels_torch().data_ptr(), warp.pixels_packed_torch().data_ptr())
        for actions in inputs:
            warp.step(actions)
            oracle.step(actions)
            if ready(oracle):
                compared += assert_step_pixels_match(name, warp, oracle)
        assert (warp.pixels_torch().data_ptr(), warp.pixels_packed_torch().data_ptr()) == pointers
    finally:
        warp.close()
        oracle.close()
    return compared


def assert_step_pixels_match(name: str, warp, oracle) -> int:
    shades, packed = warp.pixels_torch().numpy(), warp.pixels_packed_torch().numpy()
    for env in range(warp.num_envs):
        expected = oracle.frame_shades(env)
        got = warp.frame_shades(env)
        if not np.array_equal(got, expected):
            raise AssertionError(ps.dump_mismatch(f"{name}_env{env}", expected, got))
        down = px.downsample(expected)
        if not np.array_equal(shades[env], down):
            raise AssertionError(ps.dump_mismatch(f"{name}_env{env}_down", down, shades[env]))
        assert np.array_equal(packed[env], px.pack_shades(down)), f"{name}: packed differs"
    return warp.num_envs * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)


def scene_ready(oracle) -> bool:
    return int(oracle.read_memory(0, W_FRAMES, W_FRAMES + 1)[0]) >= MIN_STABLE_FRAMES


@pytest.mark.parametrize("name", sorted(SCENES))
def test_emulator_pixels_match_pyboy(tmp_path, name):
    rom = build_rom(scene_source(SCENES[name]))
    compared = run_side_by_side(tmp_path, rom, name, scene_ready)
    assert compared >= 2 * 2 * (px.SCREEN_H * px.SCREEN_W), "too few steps were compared"


def test_emulator_frame_video_predates_vblank_writes(tmp_path):
    """A ROM that moves a sprite and edits the map in every VBlank."""
    rom = build_rom(VBLANK_WRITER)
    compared = run_side_by_side(tmp_path, rom, "vblank", lambda _: True)
    assert compared == STEPS * 2 * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)


def demo_running(oracle) -> bool:
    ticks = oracle.read_memory(0, demo_game.W_FRAME, demo_game.W_FRAME + 2)
    return int(ticks[0]) | int(ticks[1]) << 8 >= 8


def test_emulator_demo_game_pixels_per_env(tmp_path):
    """Three envs of the demo game under different random buttons, each matched with PyBoy."""
    inputs = np.random.default_rng(3).integers(0, 256, (12, 3))
    compared = run_side_by_side(
        tmp_path,
        demo_rom.demo_rom_bytes(),
        "demo",
        demo_running,
        inputs,
        num_envs=3,
        frames_per_step=4,
        release_after_frames=2,
    )
    assert compared >= 8 * 3 * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)


def test_emulator_pixels_deterministic_across_backends_and_envs(tmp_path):
    """Same ROM and buttons: two backends give identical buffers; equal envs, equal frames;
    different buttons, different frames."""
    rom = tmp_path / "demo.gb"
    rom.write_bytes(demo_rom.demo_rom_bytes())
    kwargs = dict(num_envs=4, frames_per_step=3, release_after_frames=2, action_codec="buttons")
    kwargs.update(render_pixels=True, render_pixels_packed=True)
    runs = [WarpVecCpuBackend(rom, threads=1, **kwargs) for _ in range(2)]
    try:
        for step in range(10):
            buttons = np.array([1, 2, 1, 8 if step % 2 else 4])  # envs 0 and 2 twins
            for backend in runs:
                backend.step(buttons)
            a, b = (r.pixels_packed_torch().numpy() for r in runs)
            assert np.array_equal(a, b) and np.array_equal(a[0], a[2])
            assert np.array_equal(runs[0].pixels_torch().numpy(), runs[1].pixels_torch().numpy())
        assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[0], a[3])
    finally:
        for backend in runs:
            backend.close()


def test_emulator_pixels_same_on_worker_threads(tmp_path):
    """Five envs under different buttons: a backend stepping and rendering on two worker
    threads (env slices [0, 2) and [2, 5)) gives the one-thread backend's pixels, env by
    env: render-on-step buffers and snapshots at a nonzero offset."""
    rom = tmp_path / "demo.gb"
    rom.write_bytes(demo_rom.demo_rom_bytes())
    n = 5
    kwargs = dict(num_envs=n, frames_per_step=3, release_after_frames=2, action_codec="buttons")
    kwargs.update(render_pixels=True, render_pixels_packed=True)
    runs = [WarpVecCpuBackend(rom, threads=t, **kwargs) for t in (1, 2)]
    inputs = np.random.default_rng(11).integers(0, 256, (10, n))
    try:
        for buttons in inputs:
            frames = []
            for backend in runs:
                backend.step(buttons)
                offset = 2 * FRAME_BYTES + 1
                shades = torch.full((offset + n * FRAME_BYTES,), 0xEE, dtype=torch.uint8)
                backend.render_pixels_snapshot_to_torch(shades, base_offset=offset)
                packed = torch.full((offset + n * PACKED_FRAME_BYTES,), 0xEE, dtype=torch.uint8)
                backend.render_pixels_snapshot_packed_to_torch(packed, base_offset_bytes=offset)
                assert (shades[:offset] == 0xEE).all() and (packed[:offset] == 0xEE).all()
                frames.append(
                    (
                        backend.pixels_torch().numpy().copy(),
                        backend.pixels_packed_torch().numpy().copy(),
                        shades[offset:].numpy().reshape(n, px.DOWN_H, px.DOWN_W),
                        packed[offset:].numpy().reshape(n, px.DOWN_H, px.PACKED_W),
                    )
                )
            for one, two in zip(*frames):
                assert np.array_equal(one, two)
            assert np.array_equal(frames[1][2], frames[1][0])  # snapshot = render-on-step
            assert np.array_equal(frames[1][3], px.pack_shades(frames[1][0]))
        distinct = len({frame.tobytes() for frame in frames[0][0]})
        assert distinct == n  # every env differs, so a frame in the wrong place shows
    finally:
        for backend in runs:
            backend.close()
