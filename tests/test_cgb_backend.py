"""The CPU backend's Game Boy Color machines (``cgb=True``, experimental, issue #46): the
same envs as PyBoy ``cgb=True`` after the boot and after steps (registers by RAM, banks,
the IO page), start states and resets, and the refusals of what is not built yet."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.asm import build_rom
from gbxcule.backends.warp_vec import WarpVecCpuBackend

from .support.cgb_support import pyboy_cgb
from .test_cgb_lockstep import _state_program

pytestmark = pytest.mark.api


@pytest.fixture(scope="module")
def colour_only_rom(tmp_path_factory):
    path = tmp_path_factory.mktemp("cgb") / "colour.gbc"
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
    with pytest.raises(ValueError, match="boot='pyboy'"):
        WarpVecCpuBackend(colour_only_rom, cgb=True)
    with pytest.raises(ValueError, match="renders no screens yet"):
        WarpVecCpuBackend(colour_only_rom, cgb=True, boot="pyboy", render_pixels=True)
    b = WarpVecCpuBackend(colour_only_rom, cgb=True, boot="pyboy", threads=1)
    try:
        with pytest.raises(NotImplementedError, match="not rendered yet"):
            b.frame_shades(0)
    finally:
        b.close()
    with pytest.raises(Exception, match="Game Boy Color only"):
        WarpVecCpuBackend(colour_only_rom)  # a DMG machine still refuses a Color-only game


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
        for _ in range(6):
            b.step(np.zeros(2, dtype=np.int64))
            pyboy.tick(1, False)
        _assert_same_memory(b, pyboy)
    finally:
        pyboy.stop(save=False)
        b.close()
