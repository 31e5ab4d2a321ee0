"""Our renderers vs PyBoy 2.8.1's screen, every pixel, on scenes poked into PyBoy.

Each scene kind stresses one family of rules; every scene is rendered full-res,
downsampled and packed and compared exactly with PyBoy's frame.
"""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.core import pixels as px

from .support import pixel_scenes as ps

pytestmark = pytest.mark.l1

SEEDS_PER_KIND = 40


@pytest.fixture(scope="module")
def pyboy():
    pb = ps.start_pyboy()
    yield pb
    pb.stop(save=False)


def byte(rng) -> int:
    return int(rng.integers(0, 256))


def random_scene(rng) -> dict:
    """Everything random: tiles, maps, OAM, scroll, window, palettes, LCDC (LCD on)."""
    return dict(
        vram=rng.integers(0, 256, 0x2000, dtype=np.uint8),
        oam=rng.integers(0, 256, 160, dtype=np.uint8),
        lcdc=byte(rng) | 0x80,
        scx=byte(rng),
        scy=byte(rng),
        wx=int(rng.integers(0, 175)),
        wy=int(rng.integers(0, 150)),
        bgp=byte(rng),
        obp0=byte(rng),
        obp1=byte(rng),
    )


def crowded_sprites(rng) -> dict:
    """Sprites piled on a few rows and columns: >10 per line, equal X, overlaps, 8x16, flips."""
    scene = random_scene(rng)
    oam = scene["oam"].reshape(40, 4)
    oam[:, 0] = rng.choice(np.array([16, 20, 40, 80, 150, 8, 0], dtype=np.uint8), 40)
    oam[:, 1] = rng.choice(np.array([0, 4, 8, 9, 12, 16, 80, 161, 166, 168], dtype=np.uint8), 40)
    scene["lcdc"] = (scene["lcdc"] | 0x82) & ~0x20 if rng.random() < 0.5 else scene["lcdc"] | 0x82
    return scene


def priority_sprites(rng) -> dict:
    """BG-priority sprites over a BG with many colour-0 pixels, with and without BG enabled."""
    scene = crowded_sprites(rng)
    vram = scene["vram"]
    vram[:0x1800][rng.random(0x1800) < 0.5] = 0  # many transparent BG pixels
    scene["oam"].reshape(40, 4)[:, 3] |= 0x80 * (rng.random(40) < 0.7).astype(np.uint8)
    if rng.random() < 0.5:
        scene["lcdc"] &= ~0x01  # BG off: PyBoy blanks with BGP colour 0, opaque for priority
    return scene


def window_scene(rng) -> dict:
    """Status bars and side panels: window on, WX/WY at and around the edges."""
    scene = random_scene(rng)
    scene["lcdc"] |= 0xA0
    scene["wx"] = int(rng.choice([0, 1, 6, 7, 8, 80, 159, 165, 166, 167, 200]))
    scene["wy"] = int(rng.choice([0, 1, 100, 128, 143, 144, 200]))
    if rng.random() < 0.4:
        scene["lcdc"] &= ~0x01  # window still drawn by PyBoy with BG bit clear
    return scene


def lcd_off_scene(rng) -> dict:
    scene = random_scene(rng)
    scene["lcdc"] &= 0x7F
    return scene


SCENE_KINDS = {
    "random": random_scene,
    "crowded_sprites": crowded_sprites,
    "priority_sprites": priority_sprites,
    "window": window_scene,
    "lcd_off": lcd_off_scene,
}


def check_scenes(pyboy, kind: str, seeds: range) -> None:
    """Scenes of ``kind`` for ``seeds``, each poked into PyBoy and compared exactly."""
    compared = 0
    for seed in seeds:
        rng = np.random.default_rng([seed, sorted(SCENE_KINDS).index(kind)])
        scene = SCENE_KINDS[kind](rng)
        ps.poke(pyboy, scene.pop("vram"), scene.pop("oam"), **scene)
        pyboy.tick(3, True)  # PyBoy shows 2 blank frames after the LCD is switched back on
        compared += ps.assert_matches_pyboy(f"{kind}_{seed}", pyboy)
    assert compared == len(seeds) * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)


@pytest.mark.parametrize("kind", sorted(SCENE_KINDS))
def test_scenes_match_pyboy(pyboy, kind):
    check_scenes(pyboy, kind, range(SEEDS_PER_KIND))


def test_lcd_off_shows_bgp_colour0(pyboy):
    """LCD off: PyBoy fills the frame with BGP's colour 0 (not shade 0); so do we."""
    ps.poke(pyboy, lcdc=0x11, bgp=0b11100110)
    pyboy.tick(2, True)
    assert (ps.screen_shades(pyboy) == 0b10).all()
    ps.assert_matches_pyboy("lcd_off_bgp", pyboy)
    ps.poke(pyboy, lcdc=0x91, bgp=0xE4)


def test_frames_after_lcd_switch_on_are_blank_like_blank_flag_lines(pyboy):
    """LCD switched on between frames: PyBoy's next frame ends at once (screen unchanged),
    the one after is blanked with BGP colour 0 (= every line LATCH_FLAG_BLANK), then drawn."""
    ps.poke(pyboy, lcdc=0x11, bgp=0xE4)
    pyboy.tick(2, True)
    scene = random_scene(np.random.default_rng(99))
    ps.poke(pyboy, scene.pop("vram"), scene.pop("oam"), **{**scene, "bgp": 0b10010011})
    pyboy.tick(1, True)
    assert (ps.screen_shades(pyboy) == 0).all(), "the LCD-off blank (old BGP) should remain"
    pyboy.tick(1, True)
    assert (ps.screen_shades(pyboy) == 0b11).all()
    latch = ps.latches_from_pyboy(pyboy)
    latch[0, :, px.LATCH_FLAGS] |= px.LATCH_FLAG_BLANK
    ps.assert_matches_pyboy("lcd_on_blank", pyboy, latch)
    pyboy.tick(1, True)
    ps.assert_matches_pyboy("lcd_on_first_drawn", pyboy)


def test_blank_flag_blanks_lines_with_bgp_colour0():
    """LATCH_FLAG_BLANK lines (first frame after LCD on) show BGP colour 0 and no sprites."""
    rng = np.random.default_rng(7)
    video = rng.integers(0, 256, (1, px.FRAME_VIDEO_BYTES), dtype=np.uint8)
    latch = np.zeros((1, px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    latch[0, :, px.LATCH_LCDC] = 0xE7
    latch[0, :, px.LATCH_BGP] = 0b11011011
    latch[0, 50:60, px.LATCH_FLAGS] = px.LATCH_FLAG_BLANK
    full, _, _ = ps.render_all(video, latch)
    assert (full[0, 50:60] == 0b11).all()
    assert (full[0, :50] != 0b11).any() and (full[0, 60:] != 0b11).any()
