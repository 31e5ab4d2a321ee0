"""tools/snapshot.py writes the backend's frames as grey PNG/GIF."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bench.roms.suite.ppu_bg import unsigned_scroll_scene
from bench.roms.suite.ppu_common import scene_source
from bench.roms.suite.ppu_reference import render_frame
from gbxcule.asm import build_rom
from gbxcule.core.pixels import shades_to_grey
from gbxcule.images import to_image

pytestmark = pytest.mark.tooling

TOOL = Path(__file__).resolve().parents[1] / "tools" / "snapshot.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("snapshot_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_snapshot_png_and_gif_show_the_frame(tmp_path, capsys):
    scene = unsigned_scroll_scene()
    rom = tmp_path / "bg.gb"
    rom.write_bytes(build_rom(scene_source(scene)))
    tool = load_tool()
    argv = [str(rom), "--backend", "pyboy", "--steps", "6", "--scale", "1", "--gif"]
    assert tool.main([*argv, "--envs", "0", "--out", str(tmp_path / "snap")]) == 0
    png, gif = (Path(p) for p in capsys.readouterr().out.split())
    expected = shades_to_grey(render_frame(scene.vram, scene.oam, scene.line_regs()))
    assert np.array_equal(np.asarray(Image.open(png)), expected)
    with Image.open(gif) as frames:
        assert frames.size == (160, 144)
        total_ms = 0
        for i in range(frames.n_frames):  # Pillow merges equal neighbours, adding durations
            frames.seek(i)
            total_ms += frames.info["duration"]
        assert total_ms == 6 * 50
        assert np.array_equal(np.asarray(frames.convert("L")), expected)
    big = to_image(render_frame(scene.vram, scene.oam, scene.line_regs()), 3)
    assert big.size == (480, 432)
