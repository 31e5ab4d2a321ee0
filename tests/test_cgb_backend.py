"""The CPU backend's Game Boy Color machines (``cgb=True``, experimental, issue #46): the
same envs as PyBoy ``cgb=True`` after the boot and after steps (registers by RAM, banks,
the IO page), start states and resets, and the refusals of what is not built yet."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.asm import build_rom
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import pixels as px

from .support import cgb_pixel_fuzz as cgb_fuzz
from .support.cgb_support import pyboy_cgb
from .test_cgb_lockstep import _state_program

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def colour_only_rom(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cgb")
    (folder / "colour.gb").write_bytes(build_rom(_state_program()))  # the DMG build
    path = folder / "colour.gbc"
    path.write_bytes(build_rom(_state_program(), cgb_flag=0xC0))
    return path


def _assert_same_memory(b, pyboy) -> None:
    """Every env's WRAM (the bank at D000 selected), VRAM (the bank selected) and IO page
    as PyBoy's."""
    for env in range(b.num_envs):
        for lo, hi in ((0xC000, 0xE000), (0x8000, 0xA000), (0xFF00, 0xFF80)):
            ours = b.read_memory(env, lo, hi)
            want = np.asarray(pyboy.memory[lo:hi], np.uint8)
            bad = np.nonzero(ours != want)[0]
            assert bad.size == 0, (env, hex(lo + int(bad[0])), ours[bad[0]], want[bad[0]])


def _pyboy_after(rom: bytes, frames: int):
    pyboy = pyboy_cgb(rom)
    pyboy.tick(frames, False)
    return pyboy


def test_a_cgb_backend_steps_as_pyboy_cgb_does(colour_only_rom):
    rom = colour_only_rom.read_bytes()
    b = WarpVecCpuBackend(
        colour_only_rom, num_envs=2, cgb=True, boot="pyboy", frames_per_step=1,
        action_codec="buttons:noop,a",
        release_after_frames=1, threads=2,
    )  # fmt: skip
    try:
        b.reset()
        # the boot ends mid-frame 64 (PC 0x0100); PyBoy's frames end where ours do after it
        pyboy = _pyboy_after(rom, 64)
        for _ in range(8):
            b.step(np.zeros(2, dtype=np.int64))
            pyboy.tick(1, False)
        _assert_same_memory(b, pyboy)
        pyboy.stop(save=False)
    finally:
        b.close()


def test_a_cgb_backend_refuses_what_is_not_built_yet(colour_only_rom):
    with pytest.raises(ValueError, match="CGB boot ROM"):
        WarpVecCpuBackend(colour_only_rom, cgb=True, boot="dmg")
    with pytest.raises(ValueError, match="packed2 holds 2-bit DMG shades"):
        WarpVecCpuBackend(colour_only_rom, cgb=True, boot="pyboy", render_pixels_packed=True)
    b = WarpVecCpuBackend(colour_only_rom, cgb=True, boot="pyboy", threads=1)
    try:
        with pytest.raises(ValueError, match="in colour, not DMG shades"):
            b.frame_shades(0)
        out = torch.zeros(px.DOWN_H * px.DOWN_W, dtype=torch.uint8)
        for fmt in ("u8", "packed2"):
            with pytest.raises(ValueError, match="not drawn by a Game Boy Color machine"):
                b.render_obs(out, 0, fmt)
        with pytest.raises(ValueError, match="need 17280"):
            b.render_obs(out, 0, "rgb")
    finally:
        b.close()
    with pytest.raises(Exception, match="Game Boy Color only"):
        WarpVecCpuBackend(colour_only_rom, cgb=False)  # a DMG refuses a Color-only game
    with pytest.raises(ValueError, match="a DMG machine's screen has no colour"):
        WarpVecCpuBackend(colour_only_rom.with_suffix(".gb"), render_pixels_rgb=True)


def test_a_cgb_backend_draws_what_pyboy_cgb_shows(tmp_path):
    """2 envs on 2 threads of a CGB screen fuzz ROM (tests/support/cgb_pixel_fuzz.py),
    2 frames a step: the render-on-step luminance and RGB, the snapshots into a tensor at
    an offset and the full RGB screens of both envs equal PyBoy ``cgb=True``'s screen."""
    rom = cgb_fuzz.fuzz_rom(3)
    path = tmp_path / "fuzz.gbc"
    path.write_bytes(rom)
    b = WarpVecCpuBackend(
        path, num_envs=2, cgb=True, boot="pyboy", frames_per_step=2,
        action_codec="buttons:noop,a", release_after_frames=1, threads=2,
        render_pixels=True, render_pixels_rgb=True,
    )  # fmt: skip
    pyboy = pyboy_cgb(rom)
    try:
        b.reset()
        pyboy.tick(64, False)  # the boot ends mid-frame 64, as the backend's reset does
        frame = px.DOWN_H * px.DOWN_W
        out = torch.full((5 + 2 * frame * 4,), 7, dtype=torch.uint8)
        for step in range(40):
            b.step(np.zeros(2, dtype=np.int64))
            pyboy.tick(2, True)
            want = np.asarray(pyboy.screen.ndarray)[:, :, :3]
            down = np.ascontiguousarray(want[::2, ::2])
            screens = b.screens([0, 1])
            assert screens.shape == (2, px.SCREEN_H, px.SCREEN_W, 3)
            for env in range(2):
                assert np.array_equal(screens[env], want), (step, env)
                assert np.array_equal(b.pixels_rgb_torch()[env].numpy(), down), (step, env)
                assert np.array_equal(b.pixels_torch()[env].numpy(), px.luma(down)), (step, env)
            b.render_obs(out, 5, "luma")
            b.render_obs(out, 5 + 2 * frame, "rgb")
            assert out[:5].eq(7).all()
            lumas = out[5 : 5 + 2 * frame].view(2, px.DOWN_H, px.DOWN_W).numpy()
            rgbs = out[5 + 2 * frame :].view(2, px.DOWN_H, px.DOWN_W, 3).numpy()
            assert np.array_equal(lumas, np.stack([px.luma(down)] * 2))
            assert np.array_equal(rgbs, np.stack([down] * 2))
        assert len(np.unique(want.reshape(-1, 3), axis=0)) >= 32
        assert b.video_log_overflows().tolist() == [0, 0]
    finally:
        pyboy.stop(save=False)
        b.close()


def test_a_pyboy_cgb_state_as_a_start_state_of_a_cgb_backend(colour_only_rom):
    """PyBoy's save state (double speed, an HBlank HDMA running) added to the start-state
    cache, envs reset to it, stepped: PyBoy loading the same file steps alike."""
    import io

    rom = colour_only_rom.read_bytes()
    source = _pyboy_after(rom, 70)
    buf = io.BytesIO()
    source.save_state(buf)
    source.stop(save=False)
    b = WarpVecCpuBackend(
        colour_only_rom, num_envs=2, cgb=True, boot="pyboy", frames_per_step=1,
        action_codec="buttons:noop,a", release_after_frames=1, threads=2,
    )  # fmt: skip
    pyboy = pyboy_cgb(rom)
    try:
        b.reset()
        slot = b.add_start_state(buf.getvalue())
        b.reset_envs(np.ones(2, dtype=bool), slots=slot)
        pyboy.load_state(io.BytesIO(buf.getvalue()))
        # the screen PyBoy saved is what both show until the next frame is drawn
        loaded = np.asarray(pyboy.screen.ndarray)[:, :, :3]
        assert np.array_equal(b.screens([0, 1]), np.stack([loaded] * 2))
        for _ in range(6):
            b.step(np.zeros(2, dtype=np.int64))
            pyboy.tick(1, False)
        _assert_same_memory(b, pyboy)
    finally:
        pyboy.stop(save=False)
        b.close()


def test_a_cgb_machine_exports_pyboy_cgb_states(colour_only_rom):
    """In lockstep with PyBoy ``cgb=True`` (the program ends in double speed with an HBlank
    HDMA running), our export at several steps equals PyBoy's own save field for field
    (sound, the per-line record and the wall clock aside: ``state_diffs``), its screen
    too; PyBoy continues from the export as from its own state, and the export loads
    back into our machine unchanged."""
    import io

    from gbxcule.core.savestate import load_pyboy_state
    from gbxcule.kernels.apu.apu_layout import APU_CGB_SAMPLE_ONLY

    from .support.backend_api_support import state_diffs

    rom = colour_only_rom.read_bytes()
    b = WarpVecCpuBackend(
        colour_only_rom, num_envs=2, cgb=True, boot="pyboy", frames_per_step=1,
        action_codec="buttons:noop,a", release_after_frames=1, threads=2,
    )  # fmt: skip
    pyboy = _pyboy_after(rom, 64)
    try:
        b.reset()
        for step in range(12):
            b.step(np.zeros(2, dtype=np.int64))
            pyboy.tick(1, True)
            if step % 4 != 3:
                continue
            exported = b.export_pyboy_state(1)
            buf = io.BytesIO()
            pyboy.save_state(buf)
            theirs = load_pyboy_state(buf.getvalue(), rom)
            ours = load_pyboy_state(exported, rom)
            assert ours.cgb and ours.lcd.cgb and ours.double_speed == theirs.double_speed
            skip = {"renderer.screen_attributes", *APU_CGB_SAMPLE_ONLY}
            assert not state_diffs(theirs, ours, skip=skip)
            assert np.array_equal(ours.renderer.screen, theirs.renderer.screen), step
        again = pyboy_cgb(rom)
        again.load_state(io.BytesIO(exported))
        b.load_state(exported)  # every env, from the export
        for _ in range(4):
            again.tick(1, False)
            b.step(np.zeros(2, dtype=np.int64))
        _assert_same_memory(b, again)
        again.stop(save=False)
    finally:
        pyboy.stop(save=False)
        b.close()


def test_the_pyboy_backend_runs_colour_games_as_the_warp_backend_does(tmp_path):
    """PyBoy's oracle backends with cgb left to the header (a Color-only game: a Game Boy
    Color machine, PyBoy's CGB boot ROM), stepped beside the Warp backend from their
    resets: registers and cycles, WRAM, VRAM, the IO page and the screens (RGB, luma and
    rgb observations) agree every step; a DMG state is refused by name."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.core.savestate import SavestateError

    path = tmp_path / "fuzz.gbc"
    path.write_bytes(cgb_fuzz.fuzz_rom(5))
    kw = dict(num_envs=2, frames_per_step=3, release_after_frames=1, action_codec="buttons:noop,a")
    ours = WarpVecCpuBackend(path, threads=2, **kw)
    ref = PyBoySingleBackend(path, **kw)
    try:
        assert ours.cgb and ref.cgb and ref.boot == "pyboy"
        ours.reset()
        ref.reset()
        rng = np.random.default_rng(0)
        frame = px.DOWN_H * px.DOWN_W
        for step in range(40):
            actions = rng.integers(0, 2, 2)
            ours.step(actions)
            ref.step(actions)
            for env in range(2):
                assert ours.get_cpu_state(env) == {
                    k: v for k, v in ref.get_cpu_state(env).items() if k in ours.get_cpu_state(env)
                }, step
                for lo, hi in ((0xC000, 0xE000), (0x8000, 0xA000), (0xFF00, 0xFF76)):
                    assert np.array_equal(
                        ours.read_memory(env, lo, hi), ref.read_memory(env, lo, hi)
                    )
            assert np.array_equal(ours.screens([0, 1]), ref.screens([0, 1])), step
            for fmt, size in (("luma", frame), ("rgb", 3 * frame)):
                a, b = (torch.zeros(2 * size, dtype=torch.uint8) for _ in range(2))
                ours.render_obs(a, 0, fmt)
                ref.render_obs(b, 0, fmt)
                assert torch.equal(a, b), (step, fmt)
        with pytest.raises(ValueError, match="in colour"):
            ref.frame_shades(0)
        dmg = tmp_path / "dmg.gb"
        dmg.write_bytes(build_rom(_state_program()))
        with PyBoySingleBackend(dmg) as plain:
            state = plain.save_state(0)
        with pytest.raises(SavestateError, match="a DMG save state"):
            ref.load_state(state)
    finally:
        ours.close()
        ref.close()
