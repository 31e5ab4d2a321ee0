"""The screen a PyBoy save state carries is what both backends show until the next frame.

PyBoy saves its screen buffer in a state, and after loading one it shows that screen: the
first observation of an episode started from a user's state. A stock PyBoy draws with its
default palette, so the PyBoy oracle (another palette) must read those colours too, and
the Warp backend draws the saved screen from a frame built for it (``px.frame_of_shades``).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from gbxcule.backends.pyboy_backend import PyBoySingleBackend, shades_from_rgba
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import pixels as px
from gbxcule.core.savestate import load_pyboy_state
from gbxcule.games import bundled_rom_path

pytestmark = pytest.mark.l2


def _words_of(shades: np.ndarray, palette: tuple[int, ...]) -> np.ndarray:
    """A PyBoy screen buffer (uint32 words, bytes R G B A from the lowest) of ``shades``."""
    grey = np.array([rgb & 0xFF for rgb in palette], dtype=np.uint32)[shades]
    return grey | grey << 8 | grey << 16 | np.uint32(0xFF) << 24


def _render(backend: WarpVecCpuBackend, latch: np.ndarray, video: np.ndarray) -> np.ndarray:
    m = backend.machine
    line_latch, frame_video, log = m.line_latch.numpy(), m.frame_video.numpy(), m.video_log.numpy()
    line_latch[0], frame_video[0], log[0] = latch, video, 0
    m.line_latch.assign(line_latch)
    m.frame_video.assign(frame_video)
    m.video_log.assign(log)
    return backend.screens([0])[0]


def test_a_frame_of_shades_renders_as_those_shades():
    rng = np.random.default_rng(5)
    with WarpVecCpuBackend(str(bundled_rom_path("demo")), num_envs=1) as b:
        b.reset()
        for shades in (
            rng.integers(0, 4, (144, 160), dtype=np.uint8),  # 360 different tiles
            np.full((144, 160), 3, np.uint8),
            np.tile(np.arange(160, dtype=np.uint8) % 4, (144, 1)),
        ):
            assert np.array_equal(_render(b, *px.frame_of_shades(shades)), shades)
        with pytest.raises(ValueError, match="0..3"):
            px.frame_of_shades(np.full((144, 160), 4, np.uint8))


def test_screen_words_of_either_palette_and_not_a_custom_one():
    shades = np.random.default_rng(1).integers(0, 4, (144, 160), dtype=np.uint8)
    for palette in (px.SHADE_RGB, px.STOCK_SHADE_RGB):
        assert np.array_equal(px.shades_of_screen_words(_words_of(shades, palette)), shades)
    # a zeroed buffer (a fresh PyBoy's, or a state our bridge wrote): black, as PyBoy shows
    assert np.all(px.shades_of_screen_words(np.zeros((144, 160), np.uint32)) == 3)
    custom = _words_of(shades, (0xE0F8D0, 0x88C070, 0x346856, 0x081820))
    assert px.shades_of_screen_words(custom) is None
    rgba = np.zeros((144, 160, 4), np.uint8)
    rgba[:, :, :3] = 0x99  # the stock palette's light grey
    assert np.all(shades_from_rgba(rgba) == 1)


@pytest.fixture(scope="module")
def stock_state(tmp_path_factory):
    """A stock PyBoy's state of the demo 200 frames in (a drawn screen), and that screen."""
    from pyboy import PyBoy

    pyboy = PyBoy(str(bundled_rom_path("demo")), window="null")
    pyboy.tick(200, True)
    screen = shades_from_rgba(pyboy.screen.ndarray)
    buf = io.BytesIO()
    pyboy.save_state(buf)
    pyboy.stop(save=False)
    path = tmp_path_factory.mktemp("screen") / "demo200.state"
    path.write_bytes(buf.getvalue())
    return path, screen


def test_both_backends_show_the_saved_screen_after_loading_it(stock_state):
    path, screen = stock_state
    assert len(np.unique(screen)) == 4  # a screen worth comparing
    state = load_pyboy_state(path.read_bytes())
    assert np.array_equal(px.shades_of_screen_words(state.renderer.screen), screen)
    rom = str(bundled_rom_path("demo"))
    one = torch.ones(1, dtype=torch.bool)
    slot = torch.zeros(1, dtype=torch.int32)
    obs, after = {}, {}
    for cls in (WarpVecCpuBackend, PyBoySingleBackend):
        with cls(rom, num_envs=1) as b:
            b.reset()
            b.add_start_state(str(path))
            b.reset_envs(one, slots=slot)
            assert np.array_equal(b.screens([0])[0], screen), cls.__name__
            out = torch.zeros(72 * 80, dtype=torch.uint8)
            b.render_obs(out, 0, "u8")
            obs[cls] = out.view(72, 80).numpy().copy()
            b.step(np.array([0]))
            after[cls] = b.screens([0])[0]
    assert np.array_equal(obs[WarpVecCpuBackend], px.downsample(screen))
    assert np.array_equal(obs[WarpVecCpuBackend], obs[PyBoySingleBackend])
    assert np.array_equal(after[WarpVecCpuBackend], after[PyBoySingleBackend])


def test_an_exported_state_shows_the_envs_last_frame_on_pyboy(tmp_path):
    rom = str(bundled_rom_path("demo"))
    with WarpVecCpuBackend(rom, num_envs=1) as w:
        w.reset()
        for a in range(12):
            w.step(np.array([a % 7]))
        frame = w.screens([0])[0]
        path = tmp_path / "export.state"
        path.write_bytes(w.export_pyboy_state(0))
    assert len(np.unique(frame)) > 1
    with PyBoySingleBackend(rom, num_envs=1) as b:
        b.load_state(str(path))
        assert np.array_equal(b.frame_shades(0), frame)


@pytest.mark.parametrize("boot", ["fast", "dmg", "pyboy"])
def test_with_no_start_state_both_show_the_screen_pyboy_boots_to(boot):
    """After the boot ROM: a fresh PyBoy's zero buffer (black) where the boot ROM hands
    over within the first frame, and the first frame's blank after its logo otherwise."""
    rom = str(bundled_rom_path("demo"))
    shown = []
    for cls in (WarpVecCpuBackend, PyBoySingleBackend):
        with cls(rom, num_envs=1, boot=boot) as b:
            b.reset()
            shown.append(b.screens([0])[0])
    assert np.array_equal(shown[0], shown[1])
    assert np.all(shown[0] == {"fast": 3, "dmg": shown[0][0, 0], "pyboy": 0}[boot])
