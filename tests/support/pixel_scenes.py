"""Drive our renderers from PyBoy's own state, and compare with PyBoy's screen.

A scene is poked into a running PyBoy (VRAM, OAM, LCD registers) between frames;
after two more frames (so PyBoy's per-frame window state has seen the new WY) the
screen is converted to shade indices. The renderer input is built from what PyBoy
holds: its VRAM/OAM copied into a 1-env ``frame_video`` row, and per-line latches from its
registers (SCX/SCY/WX/WY per line from ``screen.tilemap_position_list``). The
window flags and line counter come from ``window_model``, our model of PyBoy's
per-frame window bookkeeping (what kernels/ppu/ppu.py must produce).

Set GBXCULE_PIXEL_DUMP=dir to get expected/got/diff PNGs for every mismatch.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import warp as wp
from PIL import Image

from gbxcule.asm import build_rom
from gbxcule.backends.pyboy_backend import make_pyboy, shades_from_rgba
from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import OAM_SIZE, VRAM_SIZE
from gbxcule.kernels.ppu import render

REG_ADDR = {
    px.LATCH_LCDC: 0xFF40,
    px.LATCH_SCY: 0xFF42,
    px.LATCH_SCX: 0xFF43,
    px.LATCH_BGP: 0xFF47,
    px.LATCH_OBP0: 0xFF48,
    px.LATCH_OBP1: 0xFF49,
    px.LATCH_WY: 0xFF4A,
    px.LATCH_WX: 0xFF4B,
}

IDLE_SOURCE = """
Main:
    di
.loop:
    jr .loop
"""


def start_pyboy(source: str = IDLE_SOURCE, name: str = "scene"):
    """The oracle's PyBoy (our boot ROM, grey palette) on a ROM built from ``source``."""
    pyboy = make_pyboy(build_rom(source, title=name.upper()[:11]))
    pyboy.tick(2, True)
    return pyboy


def screen_shades(pyboy) -> np.ndarray:
    """PyBoy's screen as uint8 [144, 160] shade indices (exact colour match)."""
    return shades_from_rgba(pyboy.screen.ndarray)


def poke(pyboy, vram: bytes | None = None, oam: bytes | None = None, **regs: int) -> None:
    """Write VRAM/OAM and LCD registers (keys: LATCH_* names without the prefix, lower case)."""
    if vram is not None:
        pyboy.memory[0x8000 : 0x8000 + len(vram)] = [int(v) for v in vram]
    if oam is not None:
        pyboy.memory[0xFE00 : 0xFE00 + len(oam)] = [int(v) for v in oam]
    for key, value in regs.items():
        pyboy.memory[REG_ADDR[getattr(px, "LATCH_" + key.upper())]] = int(value)


def video_row(pyboy) -> np.ndarray:
    """1-env ``frame_video`` [1, FRAME_VIDEO_BYTES]: PyBoy's VRAM and OAM."""
    row = np.zeros((1, px.FRAME_VIDEO_BYTES), dtype=np.uint8)
    row[0, px.VIDEO_VRAM_OFF : px.VIDEO_VRAM_OFF + VRAM_SIZE] = pyboy.memory[0x8000:0xA000]
    row[0, px.VIDEO_OAM_OFF : px.VIDEO_OAM_OFF + OAM_SIZE] = pyboy.memory[0xFE00:0xFEA0]
    return row


def window_model(latch: np.ndarray, win_line_start: int = -1) -> None:
    """Fill LATCH_FLAGS (WINDOW_ACTIVE) and LATCH_WIN_LINE in ``latch`` [144, F] in place.

    PyBoy: the window becomes active once WY == LY at a line start (until the frame
    ends); its counter advances on each line where it is drawn.
    """
    active = False
    counter = win_line_start
    for ly in range(px.SCREEN_H):
        active = active or int(latch[ly, px.LATCH_WY]) == ly
        lcdc, wx = int(latch[ly, px.LATCH_LCDC]), int(latch[ly, px.LATCH_WX])
        if lcdc & 0x20 and active and wx - 7 < px.SCREEN_W:
            counter += 1
        latch[ly, px.LATCH_FLAGS] = px.LATCH_FLAG_WINDOW_ACTIVE if active else 0
        latch[ly, px.LATCH_WIN_LINE] = counter & 0xFF


def latches_from_pyboy(
    pyboy, per_line: Callable[[int], dict[int, int]] | None = None
) -> np.ndarray:
    """[1, 144, LATCH_FIELDS] from PyBoy's registers; ``per_line(ly)`` may override fields.

    SCX/SCY/WX/WY are taken per line from PyBoy's own record of the frame.
    """
    latch = np.zeros((1, px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    for field, addr in REG_ADDR.items():
        latch[0, :, field] = pyboy.memory[addr]
    positions = pyboy.screen.tilemap_position_list
    if latch[0, 0, px.LATCH_LCDC] & 0x80:
        for ly, (scx, scy, wx_minus_7, wy) in enumerate(positions):
            latch[0, ly, px.LATCH_SCX] = scx
            latch[0, ly, px.LATCH_SCY] = scy
            latch[0, ly, px.LATCH_WX] = (wx_minus_7 + 7) & 0xFF
            latch[0, ly, px.LATCH_WY] = wy
    if per_line is not None:
        for ly in range(px.SCREEN_H):
            for field, value in per_line(ly).items():
                latch[0, ly, field] = value
    window_model(latch[0])
    return latch


def render_all(
    video: np.ndarray, latch: np.ndarray, video_log: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Our kernels on the CPU: (full [N,144,160], shades [N,72,80], packed [N,72,20]).

    ``video`` is [N, FRAME_VIDEO_BYTES] (frame_video) or [N, >= MEM_BASE_BYTES] (mem);
    ``video_log`` [N, VIDEO_LOG_WORDS] goes with a frame_video source.
    """
    n = video.shape[0]
    offsets = px.video_offsets(video.shape[1])
    log_wp = None if video_log is None else wp.array(video_log, dtype=wp.int32, device="cpu")
    mem_wp = wp.array(video, dtype=wp.uint8, device="cpu")
    latch_wp = wp.array(latch, dtype=wp.uint8, device="cpu")
    envs = wp.array(np.arange(n, dtype=np.int32), device="cpu")
    full = wp.zeros((n, px.SCREEN_H, px.SCREEN_W), dtype=wp.uint8, device="cpu")
    shades = wp.zeros((n, px.DOWN_H, px.DOWN_W), dtype=wp.uint8, device="cpu")
    packed = wp.zeros((n, px.DOWN_H, px.PACKED_W), dtype=wp.uint8, device="cpu")
    wp.launch(
        render.render_full_kernel,
        dim=(n, px.SCREEN_H),
        inputs=[mem_wp, *offsets, latch_wp, log_wp, envs, full],
    )
    wp.launch(
        render.render_shades_kernel,
        dim=(n, px.DOWN_H),
        inputs=[mem_wp, *offsets, latch_wp, log_wp, shades, packed],
    )
    return full.numpy(), shades.numpy(), packed.numpy()


def dump_mismatch(name: str, expected: np.ndarray, got: np.ndarray) -> str:
    """Write expected/got/diff PNGs when GBXCULE_PIXEL_DUMP is set; returns a short note."""
    bad = expected != got
    ys, xs = np.nonzero(bad)
    note = f"{name}: {int(bad.sum())} pixels differ, first at (y={ys[0]}, x={xs[0]})"
    out_dir = os.environ.get("GBXCULE_PIXEL_DUMP")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.join(out_dir, name.replace("/", "_"))
        Image.fromarray(px.shades_to_grey(expected)).save(stem + "_expected.png")
        Image.fromarray(px.shades_to_grey(got)).save(stem + "_got.png")
        Image.fromarray(np.where(bad, 255, 0).astype(np.uint8)).save(stem + "_diff.png")
        note += f" (PNGs in {out_dir})"
    return note


def assert_matches_pyboy(name: str, pyboy, latch: np.ndarray | None = None) -> int:
    """Render PyBoy's current state with our kernels and compare every pixel; returns pixels compared."""
    expected = screen_shades(pyboy)
    latch = latches_from_pyboy(pyboy) if latch is None else latch
    full, shades, packed = render_all(video_row(pyboy), latch)
    if not np.array_equal(full[0], expected):
        raise AssertionError(dump_mismatch(name + "_full", expected, full[0]))
    down = px.downsample(expected)
    if not np.array_equal(shades[0], down):
        raise AssertionError(dump_mismatch(name + "_down", down, shades[0]))
    if not np.array_equal(packed[0], px.pack_shades(down)):
        raise AssertionError(f"{name}: packed frame differs from packed PyBoy frame")
    return expected.size + down.size
