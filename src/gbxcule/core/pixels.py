"""The pixel contract: what a policy sees, how it is packed, and the per-line latch.

NOTE TO THE PPU TIMING ENGINEER (kernels/ppu/ppu.py, kernels/step/step.py): import the
``LATCH_*`` constants below; do not redefine them. During the LAST frame of each
step, at the moment PyBoy renders a line (its mode 3 -> mode 0 switch, the same
moment it records ``screen.tilemap_position_list``), write for env ``i`` and line
``ly`` (0..143) into ``Machine.line_latch[i, ly, :]``:

    LATCH_LCDC, LATCH_SCX, LATCH_SCY, LATCH_WX, LATCH_WY, LATCH_BGP, LATCH_OBP0,
    LATCH_OBP1  - the raw register values at that moment (WX unmodified, not -7);
    LATCH_WIN_LINE - the window's internal line counter AFTER this line's
                  increment, i.e. the window map row fetched on this line. PyBoy
                  keeps it in ``Renderer.ly_window``: +1 on each line where the
                  window is drawn (``kernels.ppu.render.window_drawn`` says when), set
                  to -1 (store 0xFF) after line 143 is rendered; it is 0, not -1,
                  before the first line 143 after power-on;
    LATCH_FLAGS - LATCH_FLAG_WINDOW_ACTIVE: PyBoy's ``wy_activated_frame`` at that
                  moment (WY == LY was seen at a line start this frame);
                  LATCH_FLAG_BLANK: the line shows BGP colour 0 only (PyBoy's
                  ``blank_screen``: LCD off at the frame's end, or the first frame
                  after the LCD is switched on; then write all 144 lines with this
                  flag and BGP as it was when PyBoy blanked).
Fields 10..15 are reserved (write 0).

ALSO, right after latching line 143 (PyBoy's last rendered line), copy the env's
VRAM and OAM into ``Machine.frame_video[i]`` (``kernels.ppu.render.snapshot_frame_video``
does it): VRAM at VIDEO_VRAM_OFF, OAM at VIDEO_OAM_OFF. PyBoy's frame ends after
VBlank, and games rewrite OAM (DMA) and maps in VBlank, so the memory at the end of
a step is one frame ahead of the picture. The renderers read the latches plus that
snapshot (or, for tests, a ``Machine.mem``-layout array: offsets are told apart by
the row width, see ``video_offsets``).

AND, because PyBoy draws each line with VRAM/OAM as they are when it draws that line,
every CPU or OAM DMA write that changes a VRAM/OAM byte after line L (0..142) is drawn
and before line L + 1 is, in the last frame of a step, is recorded in
``Machine.video_log[i]`` (``kernels.video_log``): ``(L, frame_video offset, old
value)``. Line ``ly`` of the picture shows ``frame_video`` with, for each byte, the old
value of its earliest entry whose line is >= ``ly`` (``video_at_line``). A write before
line 0 is drawn, after line 143 is, in VBlank, with the LCD off, or in an earlier frame
needs no entry. The renderers look a byte up in the log only when its bitmap bit is
set and some entry follows the line (one test per byte otherwise). The log holds
``VLOG_CAP`` entries per frame; writes past that are counted (``VLOG_DROPPED``, and
``VLOG_OVERFLOWS`` counts such frames) and the lines they would have changed show the
later value: ``WarpVecBase.video_log_overflows`` reports it and ``frame_shades`` warns.

Frames (all uint8, shade indices 0..3 AFTER the palette, 0 = lightest):
  * full     ``[N, 144, 160]``  every pixel (debug, video, parity).
  * shades   ``[N, 72, 80]``    downsampled: output (oy, ox) is the full-frame pixel
                                at (2*oy, 2*ox). No filtering: a pure decimation.
  * packed2  ``[N, 72, 20]``    4 pixels per byte, 2 bits each: shade of output
                                pixel x = 4*b + k sits in bits 2k..2k+1 of byte b.
All are env-major and C-contiguous, so one env's frame is one contiguous block.

``PACKED_L1_LUT[a, b]`` is the L1 distance between the 4 shades packed in byte
``a`` and those in byte ``b`` (sum over k of |a_k - b_k|, 0..12); the distance of
two packed frames is ``PACKED_L1_LUT[a, b].sum()``, equal to the L1 distance of
their unpacked shades.
"""

from __future__ import annotations

import numpy as np

from gbxcule.core.memory_layout import MEM_BASE_BYTES, OAM_OFF, OAM_SIZE, VRAM_OFF, VRAM_SIZE

SCREEN_H = 144
SCREEN_W = 160
DOWNSAMPLE = 2
DOWN_H = SCREEN_H // DOWNSAMPLE  # 72
DOWN_W = SCREEN_W // DOWNSAMPLE  # 80
PIXELS_PER_BYTE = 4
PACKED_W = DOWN_W // PIXELS_PER_BYTE  # 20
NUM_SHADES = 4

# ---- per-line register latch: Machine.line_latch uint8 [N, SCREEN_H, LATCH_FIELDS] ----
LATCH_FIELDS = 16
LATCH_LCDC = 0
LATCH_SCX = 1
LATCH_SCY = 2
LATCH_WX = 3
LATCH_WY = 4
LATCH_BGP = 5
LATCH_OBP0 = 6
LATCH_OBP1 = 7
LATCH_WIN_LINE = 8
LATCH_FLAGS = 9
LATCH_FLAG_WINDOW_ACTIVE = 0x01
LATCH_FLAG_BLANK = 0x02

# ---- the frame's VRAM/OAM snapshot: Machine.frame_video uint8 [N, FRAME_VIDEO_BYTES] ----
VIDEO_VRAM_OFF = 0
VIDEO_OAM_OFF = VRAM_SIZE
FRAME_VIDEO_BYTES = VRAM_SIZE + OAM_SIZE

# ---- the frame's mid-frame write log: Machine.video_log int32 [N, VIDEO_LOG_WORDS] ----
# Header words, then a bitmap over the frame_video bytes (bit k of word VLOG_BITS + k // 32:
# byte k has an entry), then up to VLOG_CAP entries in write order, each
# ``line << 24 | key << 8 | old`` (bit 31 set for lines >= 128: mask after shifting): the last line drawn before the write (0..142), the
# frame_video offset written (VRAM 0..8191, OAM 8192..8351) and the byte it held.
VLOG_COUNT = 0  # entries of the current (last rendered) frame
VLOG_DROPPED = 1  # writes of that frame not logged because the log was full
VLOG_OVERFLOWS = 2  # frames whose log overflowed since the env was reset (never cleared)
# word 3 reserved (0). Whether writes are being logged now, and as after which line, is
# the step's own state: Machine.i32 column ``vlog_line`` (kernels/state.py).
VLOG_BITS = 4
VLOG_BITMAP_WORDS = (FRAME_VIDEO_BYTES + 31) // 32  # 261
VLOG_ENTRIES = VLOG_BITS + VLOG_BITMAP_WORDS
VLOG_CAP = 1024
VIDEO_LOG_WORDS = VLOG_ENTRIES + VLOG_CAP

# ---- a Game Boy Color machine's frame_video and log (the CGB variant, history/cgb.md) ----
# The DMG bytes, then VRAM bank 1 and the palette RAM (8 palettes x 4 colours, each a
# little-endian 15-bit word: red in bits 0-4, green 5-9, blue 10-14), as of line 143.
# Writes while a frame is drawn are logged by the bank they reach and by palette byte.
VIDEO_VRAM1_OFF = FRAME_VIDEO_BYTES
VIDEO_BG_PALETTES_OFF = VIDEO_VRAM1_OFF + VRAM_SIZE
VIDEO_OBJ_PALETTES_OFF = VIDEO_BG_PALETTES_OFF + 64
FRAME_VIDEO_BYTES_CGB = VIDEO_OBJ_PALETTES_OFF + 64
VLOG_BITMAP_WORDS_CGB = (FRAME_VIDEO_BYTES_CGB + 31) // 32  # 521
VLOG_ENTRIES_CGB = VLOG_BITS + VLOG_BITMAP_WORDS_CGB
VIDEO_LOG_WORDS_CGB = VLOG_ENTRIES_CGB + VLOG_CAP


def log_entries_offset(log_words: int) -> int:
    """Where the entries start in a video_log row of ``log_words`` words (DMG or CGB)."""
    if log_words == VIDEO_LOG_WORDS:
        return VLOG_ENTRIES
    if log_words == VIDEO_LOG_WORDS_CGB:
        return VLOG_ENTRIES_CGB
    raise ValueError(
        f"a video_log row is {VIDEO_LOG_WORDS} words (DMG) or {VIDEO_LOG_WORDS_CGB} (CGB), "
        f"got {log_words}"
    )


def video_log_entries(log_row: np.ndarray) -> list[tuple[int, int, int]]:
    """``(line, frame_video offset, old value)`` of each entry in one env's log row."""
    n = int(log_row[VLOG_COUNT])
    at = log_entries_offset(len(log_row))
    words = np.asarray(log_row[at : at + n], dtype=np.int64)
    return [(int((w >> 24) & 0xFF), int((w >> 8) & 0xFFFF), int(w & 0xFF)) for w in words]


def video_at_line(video_row: np.ndarray, log_row: np.ndarray, ly: int) -> np.ndarray:
    """One env's VRAM + OAM (and on CGB the rest of frame_video) as line ``ly`` saw them: ``video_row`` (frame_video) with the
    log undone for every write after line ``ly`` was drawn (the reference the kernels match)."""
    out = np.array(video_row, dtype=np.uint8, copy=True)
    for line, key, old in reversed(video_log_entries(log_row)):
        if line >= ly:
            out[key] = old
    return out


def video_offsets(row_width: int) -> tuple[int, int]:
    """(VRAM, OAM) offsets in a renderer source row: a frame_video snapshot or a mem row."""
    if row_width in (FRAME_VIDEO_BYTES, FRAME_VIDEO_BYTES_CGB):
        return VIDEO_VRAM_OFF, VIDEO_OAM_OFF
    if row_width >= MEM_BASE_BYTES:
        return VRAM_OFF, OAM_OFF
    raise ValueError(
        f"a video source row is {FRAME_VIDEO_BYTES} bytes (frame_video) or >= "
        f"{MEM_BASE_BYTES} (Machine.mem), got {row_width}"
    )


# PyBoy's DMG palettes, shade 0 first: the one the oracle runs with
# (backends.pyboy_backend.make_pyboy), and PyBoy 2.8.1's default ("Grey"), what a stock
# ``PyBoy(rom)`` draws with and so what the screen in a user's save state holds.
SHADE_RGB = (0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000)
STOCK_SHADE_RGB = (0xFFFFFF, 0x999999, 0x555555, 0x000000)
# Grey levels for images, shade 0 = white: the oracle's greys, so our PNGs and PyBoy's
# screens look the same.
GREY_LEVELS = np.array([rgb & 0xFF for rgb in SHADE_RGB], dtype=np.uint8)


# ---- observations: one 72x80 frame per format (backends.protocol.OBS_FORMATS) ----------
# DMG: shades 0..3 one a byte ("u8") or four a byte ("packed2"); Game Boy Color: 8-bit
# luminance ("luma") or RGB ("rgb", channels last). A frame is C-contiguous, env-major.
OBS_FRAME_SHAPES = {
    "packed2": (DOWN_H, PACKED_W),
    "u8": (DOWN_H, DOWN_W),
    "luma": (DOWN_H, DOWN_W),
    "rgb": (DOWN_H, DOWN_W, 3),
}
OBS_HIGH = {"packed2": 255, "u8": NUM_SHADES - 1, "luma": 255, "rgb": 255}  # largest value


# ---- Game Boy Color pixels ----------------------------------------------------------------
# PyBoy's colour of a 15-bit palette word: each 5-bit channel shifted left by 3, no
# correction. An LCD-off (blank) line on a Colour machine shows the background colour of
# PyBoy's default ``cgb_color_palette`` that BGP's colour 0 selects (white for BGP=$FC).
CGB_BLANK_RGB = (0xFFFFFF, 0x7BFF31, 0x0063C5, 0x000000)
# 8-bit luminance of an RGB pixel: ITU-R BT.601 weights in 1/256 steps, rounded
# (white 248,248,248 -> 248; a colour frame's "luma" observation).
LUMA_WEIGHTS = (77, 150, 29)


def rgb_from_bgr555(words: np.ndarray) -> np.ndarray:
    """``uint8 [..., 3]`` RGB of 15-bit CGB palette words (PyBoy's conversion)."""
    w = np.asarray(words, dtype=np.int64)
    rgb = np.stack([(w & 0x1F) << 3, ((w >> 5) & 0x1F) << 3, ((w >> 10) & 0x1F) << 3], -1)
    return rgb.astype(np.uint8)


def luma(rgb: np.ndarray) -> np.ndarray:
    """``uint8 [...]`` luminance of ``uint8 [..., 3]`` RGB pixels (``LUMA_WEIGHTS``)."""
    _check_uint8("rgb", rgb, 3)
    c = rgb.astype(np.int32)
    r, g, b = LUMA_WEIGHTS
    return ((r * c[..., 0] + g * c[..., 1] + b * c[..., 2] + 128) >> 8).astype(np.uint8)


def _check_uint8(name: str, a: np.ndarray, last_dim: int) -> None:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(a).__name__}")
    if a.dtype != np.uint8:
        raise TypeError(f"{name} must have dtype uint8, got {a.dtype}")
    if a.ndim < 1 or a.shape[-1] != last_dim:
        raise ValueError(f"{name} must have last dimension {last_dim}, got shape {a.shape}")


def downsample(full: np.ndarray, rgb: bool = False) -> np.ndarray:
    """``[..., 144, 160]`` full frames -> ``[..., 72, 80]``: the pixel at (2*oy, 2*ox);
    ``rgb``: ``[..., 144, 160, 3]`` colour frames -> ``[..., 72, 80, 3]`` alike."""
    if rgb:
        if full.shape[-3:] != (SCREEN_H, SCREEN_W, 3):
            raise ValueError(
                f"RGB frames must end in ({SCREEN_H}, {SCREEN_W}, 3), got {full.shape}"
            )
        return np.ascontiguousarray(full[..., ::DOWNSAMPLE, ::DOWNSAMPLE, :])
    if full.shape[-2:] != (SCREEN_H, SCREEN_W):
        raise ValueError(f"full frames must end in ({SCREEN_H}, {SCREEN_W}), got {full.shape}")
    return np.ascontiguousarray(full[..., ::DOWNSAMPLE, ::DOWNSAMPLE])


def pack_shades(shades: np.ndarray) -> np.ndarray:
    """``uint8[..., 80]`` shades 0..3 -> ``uint8[..., 20]`` packed2 (pixel 4b+k in bits 2k..)."""
    _check_uint8("shades", shades, DOWN_W)
    if shades.size and int(shades.max()) >= NUM_SHADES:
        raise ValueError(f"shades must be 0..3, found {int(shades.max())}")
    quads = shades.reshape(*shades.shape[:-1], PACKED_W, PIXELS_PER_BYTE)
    shifts = np.arange(0, 2 * PIXELS_PER_BYTE, 2, dtype=np.uint8)
    return np.bitwise_or.reduce(quads << shifts, axis=-1).astype(np.uint8)


def unpack_shades(packed: np.ndarray) -> np.ndarray:
    """``uint8[..., 20]`` packed2 -> ``uint8[..., 80]`` shades 0..3."""
    _check_uint8("packed", packed, PACKED_W)
    shifts = np.arange(0, 2 * PIXELS_PER_BYTE, 2, dtype=np.uint8)
    quads = (packed[..., None] >> shifts) & 0x3
    return quads.reshape(*packed.shape[:-1], DOWN_W).astype(np.uint8)


def _byte_shades() -> np.ndarray:
    """``[256, 4]``: the 4 shades held by each packed byte value."""
    values = np.arange(256, dtype=np.uint8)
    return (values[:, None] >> np.arange(0, 8, 2, dtype=np.uint8)) & 0x3


def _build_l1_lut() -> np.ndarray:
    shades = _byte_shades().astype(np.int16)
    lut = np.abs(shades[:, None, :] - shades[None, :, :]).sum(axis=-1)
    lut = lut.astype(np.uint8)
    lut.flags.writeable = False
    return lut


PACKED_L1_LUT = _build_l1_lut()  # uint8 [256, 256], values 0..12


def packed_l1_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """L1 distance of packed2 frames ``[..., 72, 20]`` -> int64 ``[...]`` (per frame)."""
    _check_uint8("a", a, PACKED_W)
    _check_uint8("b", b, PACKED_W)
    if a.shape[-2:] != (DOWN_H, PACKED_W):
        raise ValueError(f"packed frames must end in ({DOWN_H}, {PACKED_W}), got {a.shape}")
    per_byte = PACKED_L1_LUT[a, b].astype(np.int64)
    return per_byte.sum(axis=(-2, -1))


def shades_to_grey(shades: np.ndarray) -> np.ndarray:
    """Shade indices -> uint8 grey levels (``GREY_LEVELS``), same shape."""
    if shades.size and int(shades.max()) >= NUM_SHADES:
        raise ValueError(f"shades must be 0..3, found {int(shades.max())}")
    return GREY_LEVELS[shades]


# ---- Torch forms (imported lazily so core stays NumPy-only for its users) ----


def pack_shades_torch(shades):
    """Torch ``uint8[..., 80]`` -> ``uint8[..., 20]``, on the tensor's device."""
    import torch

    if shades.dtype != torch.uint8 or shades.shape[-1] != DOWN_W:
        raise ValueError(
            f"shades must be uint8 [..., {DOWN_W}], got {shades.dtype} {shape_of(shades)}"
        )
    quads = shades.reshape(*shades.shape[:-1], PACKED_W, PIXELS_PER_BYTE)
    out = quads[..., 0] | (quads[..., 1] << 2) | (quads[..., 2] << 4) | (quads[..., 3] << 6)
    return out.contiguous()


def unpack_shades_torch(packed):
    """Torch ``uint8[..., 20]`` -> ``uint8[..., 80]``, on the tensor's device."""
    import torch

    if packed.dtype != torch.uint8 or packed.shape[-1] != PACKED_W:
        raise ValueError(
            f"packed must be uint8 [..., {PACKED_W}], got {packed.dtype} {shape_of(packed)}"
        )
    quads = torch.stack([(packed >> s) & 0x3 for s in range(0, 8, 2)], dim=-1)
    return quads.reshape(*packed.shape[:-1], DOWN_W)


def packed_l1_distance_torch(a, b, lut=None):
    """Per-frame L1 distance of packed2 tensors ``[..., 72, 20]`` -> int64 ``[...]``.

    ``lut`` is ``PACKED_L1_LUT`` as a tensor on the inputs' device; pass it to avoid
    a host-to-device copy per call.
    """
    import torch

    for name, t in (("a", a), ("b", b)):
        if t.dtype != torch.uint8 or tuple(t.shape[-2:]) != (DOWN_H, PACKED_W):
            raise ValueError(
                f"{name} must be uint8 [..., {DOWN_H}, {PACKED_W}], got {t.dtype} {shape_of(t)}"
            )
    if lut is None:
        lut = torch.from_numpy(PACKED_L1_LUT.copy()).to(a.device)
    index = a.long() * 256 + b.long()
    return lut.reshape(-1)[index].long().sum(dim=(-2, -1))


def shape_of(t) -> tuple[int, ...]:
    return tuple(int(s) for s in t.shape)


# ---- PyBoy screens as shades, and a screen as a frame the renderers draw ----------------

_NOT_A_SHADE = 0xFF


def _shade_of_grey() -> np.ndarray:
    table = np.full(256, _NOT_A_SHADE, dtype=np.uint8)
    for palette in (SHADE_RGB, STOCK_SHADE_RGB):
        for shade, rgb in enumerate(palette):
            table[rgb & 0xFF] = shade
    return table


SHADE_OF_GREY = _shade_of_grey()


def shades_of_rgb(rgb: np.ndarray) -> np.ndarray | None:
    """``uint8 [..., 3+]`` colours (RGB first) of either DMG palette -> shades ``[...]``;
    ``None`` if any colour is in neither (a custom palette)."""
    rgb = np.asarray(rgb)
    shades = SHADE_OF_GREY[rgb[..., 0]]
    grey = np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 0], rgb[..., 2])
    if not grey or (shades == _NOT_A_SHADE).any():
        return None
    return shades


def shades_of_screen_words(words: np.ndarray) -> np.ndarray | None:
    """PyBoy's screen buffer as a save state holds it (``uint32 [144, 160]``, bytes R, G,
    B, A from the lowest) -> shades, or ``None`` (see :func:`shades_of_rgb`)."""
    rgba = np.ascontiguousarray(words, dtype="<u4").view(np.uint8)
    return shades_of_rgb(rgba.reshape(SCREEN_H, SCREEN_W, 4))


# Where frame_of_shades puts its tiles: the top 72 lines' 180 tiles at 0x8000 (LCDC bit 4
# set: tile n at 0x8000 + 16n), the bottom 72 lines' at 0x8B40 (bit 4 clear: signed
# indices from 0x9000, so 0x8B40 is index -76), one BG map at 0x9800.
_TOP_TILES = 0x0000
_BOTTOM_TILES = 0x0B40
_SIGNED_BASE = 0x1000
_BG_MAP = 0x1800
_LCDC_TOP = 0x91  # LCD on, tiles at 0x8000, BG on; window and objects off
_LCDC_BOTTOM = 0x81
_IDENTITY_BGP = 0xE4  # colour k is shade k


def frame_of_shades(shades: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A frame the renderers draw as ``shades`` (``uint8 [144, 160]``, 0..3): one env's
    ``(line_latch [144, LATCH_FIELDS], frame_video [FRAME_VIDEO_BYTES])``, the screen as
    360 background tiles of its own with an identity palette (an empty video log goes with
    it). How a PyBoy state's screen is shown until the first frame is drawn."""
    shades = np.asarray(shades, dtype=np.uint8)
    if shades.shape != (SCREEN_H, SCREEN_W) or (shades.size and int(shades.max()) >= 4):
        raise ValueError(f"shades must be uint8 [{SCREEN_H}, {SCREEN_W}] of 0..3")
    rows, cols = SCREEN_H // 8, SCREEN_W // 8  # 18 x 20 tiles
    tiles = shades.reshape(rows, 8, cols, 8).transpose(0, 2, 1, 3).reshape(rows * cols, 8, 8)
    weights = (1 << np.arange(7, -1, -1)).astype(np.uint16)  # pixel 0 is bit 7
    lo = ((tiles & 1) * weights).sum(axis=-1).astype(np.uint8)
    hi = ((tiles >> 1) * weights).sum(axis=-1).astype(np.uint8)
    data = np.stack([lo, hi], axis=-1).reshape(rows * cols, 16)  # [tile, row lo/hi]
    half = rows // 2 * cols  # 180 tiles a half
    video = np.zeros(FRAME_VIDEO_BYTES, dtype=np.uint8)
    top, bottom_at = VIDEO_VRAM_OFF + _TOP_TILES, VIDEO_VRAM_OFF + _BOTTOM_TILES
    video[top : top + 16 * half] = data[:half].reshape(-1)
    video[bottom_at : bottom_at + 16 * half] = data[half:].reshape(-1)
    index = np.arange(half)
    bottom = (_BOTTOM_TILES - _SIGNED_BASE) // 16 + index  # -76 .. 103
    ty, tx = np.divmod(np.arange(rows * cols), cols)
    video[VIDEO_VRAM_OFF + _BG_MAP + ty * 32 + tx] = np.concatenate([index, bottom]) & 0xFF
    latch = np.zeros((SCREEN_H, LATCH_FIELDS), dtype=np.uint8)
    latch[:, LATCH_LCDC] = np.where(np.arange(SCREEN_H) < SCREEN_H // 2, _LCDC_TOP, _LCDC_BOTTOM)
    latch[:, LATCH_BGP] = _IDENTITY_BGP
    return latch, video
