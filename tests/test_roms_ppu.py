"""PPU micro ROMs: build each, run it on PyBoy, apply its absolute self-check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench.roms.spec import RomSpec, check_spec, make_spec_backend, run_spec, spec_rom_file
from bench.roms.suite import ppu_bg, ppu_midframe, ppu_sprites, ppu_stat, ppu_window
from bench.roms.suite.ppu_common import check_frame
from bench.roms.suite.ppu_reference import render_frame
from gbxcule.backends.protocol import Backend

pytestmark = pytest.mark.tooling


def run_on_pyboy(
    spec: RomSpec,
    tmp_path: Path,
    inputs: tuple[int, ...] | None = None,
    steps: int | None = None,
) -> Backend:
    """The PyBoy oracle after running ``spec`` (optionally other inputs / step count)."""
    if inputs is not None or steps is not None:
        spec = replace(spec, inputs=spec.inputs if inputs is None else inputs)
        spec = replace(spec, steps=spec.steps if steps is None else steps)
    backend = make_spec_backend(spec, "pyboy", rom_path=spec_rom_file(spec, tmp_path))
    run_spec(spec, backend)
    return backend


# Imported directly (not through bench.roms.build.all_roms) so another suite module's
# state cannot hide these tests; test_ppu_roms_are_in_the_suite covers the registry.
PPU_MODULES = (ppu_bg, ppu_window, ppu_sprites, ppu_midframe, ppu_stat)
PPU_ROMS = [spec for module in PPU_MODULES for spec in module.ROMS]


def test_ppu_roms_are_in_the_suite():
    from bench.roms.build import all_roms

    names = {s.name for s in all_roms()}
    assert {s.name for s in PPU_ROMS} <= names
    assert all("ppu" in s.tags for s in PPU_ROMS)


@pytest.mark.parametrize("spec", PPU_ROMS, ids=lambda s: s.name)
def test_ppu_rom_passes_on_pyboy(spec: RomSpec):
    check_spec(spec, "pyboy")


class _FixedFrame:
    def __init__(self, frame):
        self.frame = frame

    def frame_shades(self, env):
        return self.frame


def test_pixel_check_names_first_wrong_pixel():
    expected = np.zeros((144, 160), dtype=np.uint8)
    wrong = expected.copy()
    wrong[37, 101] = 2
    wrong[90, 5] = 1
    check_frame(_FixedFrame(expected), 0, expected, "same")  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match=r"2 pixels differ; first at \(y=37, x=101\)"):
        check_frame(_FixedFrame(wrong), 0, expected, "wrong")  # type: ignore[arg-type]


def _by_name(name: str) -> RomSpec:
    return next(s for s in PPU_ROMS if s.name == name)


def test_check_fails_on_another_roms_frame(tmp_path):
    """A real PyBoy frame from one ROM must fail a different ROM's pixel check."""
    backend = run_on_pyboy(_by_name("ppu_bg_two_colour"), tmp_path)
    try:
        with pytest.raises(AssertionError, match="pixels differ; first at"):
            _by_name("ppu_bg_palette_inverted").check(backend, 0)
    finally:
        backend.close()


def test_check_fails_before_the_picture_is_set_up(tmp_path):
    spec = _by_name("ppu_obj_8x8")
    backend = run_on_pyboy(spec, tmp_path, steps=1)
    try:
        with pytest.raises(AssertionError, match="frames drawn after setup"):
            spec.check(backend, 0)
    finally:
        backend.close()


@pytest.mark.parametrize(
    "make, strip",
    [
        (ppu_sprites.objects_8x8_scene, "objects"),
        (ppu_sprites.objects_8x16_scene, "objects"),
        (ppu_sprites.line_limit_scene, "objects"),
        (ppu_sprites.priority_scene, "objects"),
        (ppu_window.toggled_scene, "changes"),
        (ppu_midframe.scroll_split_scene, "changes"),
        (ppu_midframe.palette_split_scene, "changes"),
        (ppu_midframe.status_bar_scene, "changes"),
    ],
)
def test_scene_feature_shows_in_the_picture(make, strip):
    """The objects / mid-frame changes a scene exists for change its expected frame."""
    scene = make()
    bare = replace(scene, oam=bytes(160)) if strip == "objects" else replace(scene, changes=())
    full = render_frame(scene.vram, scene.oam, scene.line_regs())
    plain = render_frame(bare.vram, bare.oam, bare.line_regs())
    assert (full != plain).sum() > 100


def test_line_limit_drops_objects():
    """Without the off-screen X=0 object, slot 11 would show on lines 64-67."""
    scene = ppu_sprites.line_limit_scene()
    oam = bytearray(scene.oam)
    oam[0] = 0  # hide slot 0 (Y=0)
    shifted = render_frame(scene.vram, bytes(oam), scene.line_regs())
    full = render_frame(scene.vram, scene.oam, scene.line_regs())
    assert (shifted[64:68] != full[64:68]).any()
    assert (shifted[:60] == full[:60]).all()


class _Tampered:
    """A backend whose WRAM reads have some bytes replaced."""

    def __init__(self, inner, overrides: dict[int, int]):
        self.inner = inner
        self.overrides = overrides

    def read_memory(self, env, lo, hi):
        data = self.inner.read_memory(env, lo, hi).copy()
        for addr, value in self.overrides.items():
            if lo <= addr < hi:
                data[addr - lo] = value
        return data


@pytest.mark.parametrize(
    "name, overrides, message",
    [
        ("ppu_ly_lyc_poll", {ppu_stat.FLAG_PAGE + 30: 3}, "LYC=LY flag set or missing"),
        ("ppu_ly_lyc_poll", {ppu_stat.SEEN_PAGE + 100: 0}, "LY values never read"),
        ("ppu_ly_lyc_poll", {ppu_stat.MODE_PAGE + 150: 0b0011}, "on VBlank LY 150"),
        ("ppu_stat_irq_sources", {ppu_stat.HITS_BASE + 10: 2}, "2 interrupts at LY=10"),
        ("ppu_stat_irq_sources", {ppu_stat.HITS_BASE + 0x660: 1}, "phase 6"),
        ("ppu_irq_order", {ppu_stat.LOG_BASE + 3: 2}, "interrupt log"),
        ("ppu_irq_order", {ppu_stat.W_DONE: 0}, "did not finish"),
    ],
)
def test_wram_checks_fail_on_wrong_results(tmp_path, name, overrides, message):
    spec = _by_name(name)
    backend = run_on_pyboy(spec, tmp_path)
    try:
        spec.check(backend, 0)
        with pytest.raises(AssertionError, match=message):
            spec.check(_Tampered(backend, overrides), 0)  # type: ignore[arg-type]
    finally:
        backend.close()


def test_bg_over_obj_bit_matters_in_the_object_grid():
    """Objects with bit 7 lie over BG colours 0 (drawn) and 1-3 (hidden) alike."""
    scene = ppu_sprites.objects_8x8_scene()
    oam = bytearray(scene.oam)
    for n in range(40):
        oam[4 * n + 3] &= 0x7F
    full = render_frame(scene.vram, scene.oam, scene.line_regs())
    in_front = render_frame(scene.vram, bytes(oam), scene.line_regs())
    assert (full != in_front).sum() > 50
