"""Game Boy Color scanlines: both VRAM banks, the palette RAM and the line latches -> RGB.

Rules follow PyBoy 2.8.1's CGB renderer (learned from its source, written anew); the
latches, the window and the write log are the DMG renderer's (``render.py``):
  * A blank line (the LCD off, or the first frame after it is switched on) shows the
    colour of PyBoy's default CGB background palette that BGP's colour 0 selects
    (``core.pixels.CGB_BLANK_RGB``: white for BGP = $FC).
  * The background is always drawn: LCDC bit 0 is the objects' master priority.
  * A map entry's attributes are the byte at the same offset in VRAM bank 1: palette
    (bits 0-2), the tile's bank (3), X flip (5), Y flip (6), priority over objects (7).
  * Objects: the first 10 in OAM order whose rows cover the line; at a pixel the lowest
    OAM index among those shown wins. A pixel is shown when its colour is non-zero and
    LCDC bit 0 is clear, or the BG/window colour index there is 0, or neither the
    object's priority bit nor the map entry's is set: each object is tested against the
    background only, so a hidden object does not mask one behind it (as in PyBoy).
    Palette: attribute bits 0-2; tile bank: bit 3.
  * A colour is a 15-bit palette word; R, G and B are its 5-bit fields shifted left by 3.
The sources are a CGB machine's ``Machine.frame_video`` (``core.pixels``: VRAM bank 0,
OAM, VRAM bank 1, the palettes) and ``Machine.video_log``. The kernels run as their CGB
variants (``render_cgb_kernels``), which read the CGB log layout (``video_log.py``) and
the objects' bank bit (``render.line_sprites``).
"""

from __future__ import annotations

import warp as wp

from gbxcule.core import pixels as px
from gbxcule.kernels.ppu.render import (
    DOWN_W,
    F_BGP,
    F_FLAGS,
    F_LCDC,
    SCREEN_W,
    VIDEO_OAM,
    VIDEO_VRAM,
    VIDEO_VRAM1,
    LineRegs,
    SpriteList,
    line_blank,
    line_log,
    line_regs,
    line_sprites,
    tile_colour,
)
from gbxcule.kernels.ppu.video_log import video_byte

wp.set_module_options({"enable_backward": False})

VIDEO_BG_PALETTES = wp.constant(px.VIDEO_BG_PALETTES_OFF)
VIDEO_OBJ_PALETTES = wp.constant(px.VIDEO_OBJ_PALETTES_OFF)
BLANK0 = wp.constant(px.CGB_BLANK_RGB[0])
BLANK1 = wp.constant(px.CGB_BLANK_RGB[1])
BLANK2 = wp.constant(px.CGB_BLANK_RGB[2])
BLANK3 = wp.constant(px.CGB_BLANK_RGB[3])
LUMA_R = wp.constant(px.LUMA_WEIGHTS[0])
LUMA_G = wp.constant(px.LUMA_WEIGHTS[1])
LUMA_B = wp.constant(px.LUMA_WEIGHTS[2])


@wp.func
def blank_rgb(bgp: int) -> int:
    """``0xRRGGBB`` of a blank line: PyBoy's default CGB background colour for BGP's colour 0."""
    shade = bgp & 3
    rgb = BLANK3
    if shade == 0:
        rgb = BLANK0
    elif shade == 1:
        rgb = BLANK1
    elif shade == 2:
        rgb = BLANK2
    return rgb


@wp.func
def palette_rgb(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    at: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
) -> int:
    """``0xRRGGBB`` of the palette word at frame_video offset ``at``."""
    word = video_byte(video, env, at, log, first, n_log)
    word = word | (video_byte(video, env, at + 1, log, first, n_log) << 8)
    red = (word & 0x1F) << 3
    green = ((word >> 5) & 0x1F) << 3
    blue = ((word >> 10) & 0x1F) << 3
    return (red << 16) | (green << 8) | blue


@wp.func
def map_entry_row(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    lcdc: int,
    map_base: int,
    mx: int,
    my: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
) -> int:
    """Low | high << 8 | attributes << 16 of the tile row under pixel (mx, my) of a tile
    map (Y flip and the tile's bank applied; X flip is the pixel's)."""
    k = map_base + ((my >> 3) & 31) * 32 + ((mx >> 3) & 31)
    tile = video_byte(video, env, VIDEO_VRAM + k, log, first, n_log)
    attr = video_byte(video, env, VIDEO_VRAM1 + k, log, first, n_log)
    if (lcdc & 0x10) == 0:
        tile = (tile ^ 0x80) + 128  # signed index from 0x9000 -> tiles 128..383
    y = my & 7
    if (attr & 0x40) != 0:
        y = 7 - y
    bank = VIDEO_VRAM
    if (attr & 0x08) != 0:
        bank = VIDEO_VRAM1
    row = bank + tile * 16 + y * 2
    lo = video_byte(video, env, row, log, first, n_log)
    hi = video_byte(video, env, row + 1, log, first, n_log)
    return lo | (hi << 8) | (attr << 16)


@wp.func
def bg_pixel(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    x: int,
    r: LineRegs,
    key: int,
    row: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
):
    """(colour index 0..3, map attributes, key, row) of the BG or window at x; ``key`` and
    ``row`` carry the last tile row read along the line, as in ``render.bg_colour``."""
    map_base = r.bg_map
    mx = (x + r.scx) & 255
    my = r.bg_y
    layer = 0
    if x >= r.win_x:
        map_base = r.win_map
        mx = x - r.win_x
        my = r.win_y
        layer = 32
    tile_key = layer + ((mx >> 3) & 31)
    if tile_key != key:
        row = map_entry_row(video, env, r.lcdc, map_base, mx, my, log, first, n_log)
    attr = row >> 16
    col = mx & 7
    if (attr & 0x20) != 0:
        col = 7 - col
    return tile_colour(row & 0xFF, (row >> 8) & 0xFF, col), attr, tile_key, row


@wp.func
def object_pixel(
    x: int,
    bg_index: int,
    bg_attr: int,
    master: int,
    lefts: SpriteList,
    patterns: SpriteList,
    count: int,
) -> int:
    """``palette << 2 | colour`` of the object pixel shown at x, or -1 for none: the lowest
    OAM index (selection order k) among the objects whose pixel there is shown."""
    result = wp.int32(-1)
    for k in range(count):
        dx = x - lefts[k]
        if result < 0 and dx >= 0 and dx < 8:
            pattern = patterns[k]
            attr = pattern >> 16
            if (attr & 0x20) != 0:
                dx = 7 - dx
            colour = tile_colour(pattern & 0xFF, (pattern >> 8) & 0xFF, dx)
            behind = master != 0 and bg_index != 0 and ((attr | bg_attr) & 0x80) != 0
            if colour != 0 and not behind:
                result = (attr & 7) * 4 + colour
    return result


@wp.func
def line_pixel(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    x: int,
    r: LineRegs,
    key: int,
    row: int,
    lefts: SpriteList,
    patterns: SpriteList,
    count: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
):
    """(``0xRRGGBB`` of pixel x of a line that is not blank, key, row)."""
    index, attr, key, row = bg_pixel(video, env, x, r, key, row, log, first, n_log)
    obj = object_pixel(x, index, attr, r.lcdc & 1, lefts, patterns, count)
    at = VIDEO_BG_PALETTES + (attr & 7) * 8 + index * 2
    if obj >= 0:
        at = VIDEO_OBJ_PALETTES + obj * 2
    return palette_rgb(video, env, at, log, first, n_log), key, row


@wp.func
def put_rgb(out: wp.array4d(dtype=wp.uint8), j: int, y: int, x: int, rgb: int):
    out[j, y, x, 0] = wp.uint8(rgb >> 16)
    out[j, y, x, 1] = wp.uint8((rgb >> 8) & 0xFF)
    out[j, y, x, 2] = wp.uint8(rgb & 0xFF)


@wp.func
def luma_of(rgb: int) -> int:
    """8-bit luminance of ``0xRRGGBB`` (``core.pixels.luma``)."""
    red = rgb >> 16
    green = (rgb >> 8) & 0xFF
    blue = rgb & 0xFF
    return (LUMA_R * red + LUMA_G * green + LUMA_B * blue + 128) >> 8


@wp.kernel
def _render_cgb_full(
    video: wp.array2d(dtype=wp.uint8),
    line_latch: wp.array3d(dtype=wp.uint8),
    video_log: wp.array2d(dtype=wp.int32),
    envs: wp.array(dtype=wp.int32),
    out: wp.array4d(dtype=wp.uint8),
):
    """``out[j, ly]`` = RGB line ``ly`` of env ``envs[j]``; dim = (len(envs), 144)."""
    j, ly = wp.tid()
    env = envs[j]
    lcdc = int(line_latch[env, ly, F_LCDC])
    if line_blank(lcdc, int(line_latch[env, ly, F_FLAGS])):
        blank = blank_rgb(int(line_latch[env, ly, F_BGP]))
        for x in range(SCREEN_W):
            put_rgb(out, j, ly, x, blank)
        return
    first, n_log = line_log(video_log, env, ly)
    regs = line_regs(line_latch, env, ly)
    lefts, patterns, count = line_sprites(
        video, env, VIDEO_VRAM, VIDEO_OAM, ly, lcdc, video_log, first, n_log
    )
    key = wp.int32(-1)
    row = wp.int32(0)
    for x in range(SCREEN_W):
        rgb, key, row = line_pixel(
            video, env, x, regs, key, row, lefts, patterns, count, video_log, first, n_log
        )
        put_rgb(out, j, ly, x, rgb)


@wp.kernel
def _render_cgb_down(
    video: wp.array2d(dtype=wp.uint8),
    line_latch: wp.array3d(dtype=wp.uint8),
    video_log: wp.array2d(dtype=wp.int32),
    rgb_out: wp.array4d(dtype=wp.uint8),
    luma_out: wp.array3d(dtype=wp.uint8),
):
    """Downsampled row ``oy`` of env ``i`` (line 2*oy, even columns); dim = (N, 72).
    Writes ``rgb_out[i, oy]`` ([80, 3]) and/or ``luma_out[i, oy]`` ([80]); None for an
    output that is not wanted."""
    env, oy = wp.tid()
    ly = oy * 2
    lcdc = int(line_latch[env, ly, F_LCDC])
    blank = line_blank(lcdc, int(line_latch[env, ly, F_FLAGS]))
    blank_colour = blank_rgb(int(line_latch[env, ly, F_BGP]))
    first = wp.int32(0)
    n_log = wp.int32(0)
    if not blank:
        first, n_log = line_log(video_log, env, ly)
    regs = line_regs(line_latch, env, ly)
    lefts, patterns, count = line_sprites(
        video, env, VIDEO_VRAM, VIDEO_OAM, ly, lcdc, video_log, first, n_log
    )
    key = wp.int32(-1)
    row = wp.int32(0)
    for ox in range(DOWN_W):
        rgb = blank_colour
        if not blank:
            rgb, key, row = line_pixel(
                video, env, ox * 2, regs, key, row, lefts, patterns, count, video_log, first, n_log
            )
        if rgb_out:
            put_rgb(rgb_out, env, oy, ox, rgb)
        if luma_out:
            luma_out[env, oy, ox] = wp.uint8(luma_of(rgb))


def render_cgb_kernels() -> tuple:
    """(full, downsampled) CGB render kernels, as the CGB variants they must run as."""
    from gbxcule.kernels.variant import cgb_variant

    return cgb_variant(_render_cgb_full), cgb_variant(_render_cgb_down)
