"""Scanline renderers: per-line register latches + VRAM/OAM -> shade frames.

Rules follow PyBoy 2.8.1's DMG renderer (learned from its source, written anew):
  * A line is blank (every pixel = BGP colour 0, no sprites) when the LCD is off
    or the latch's BLANK flag is set.
  * The window is drawn when LCDC bit 5 is set, the WINDOW_ACTIVE flag is set and
    WX - 7 < 160; it then covers x >= WX - 7 using map row ``win_line`` (the
    latched internal counter), and the background is drawn left of it EVEN IF
    LCDC bit 0 is clear. Without the window, LCDC bit 0 clear gives BGP colour 0
    that counts as opaque for sprite priority (BG-priority sprites are hidden).
  * Sprites (LCDC bit 1): the first 10 in OAM order whose rows cover the line
    (X is not looked at); on overlap the smaller X wins, then the lower OAM index.
    A sprite pixel is a candidate only when its colour is non-zero and either its
    BG-priority bit is clear or the BG/window colour index there is 0; the
    best-ranked candidate is shown (a hidden better sprite does not mask a worse
    one, as in PyBoy).
One thread per (env, line) for the full frame, per (env, output row) for the
downsampled frames; both share ``pixel_shade``. The kernels read VRAM/OAM from a
``video`` array at offsets ``vram``/``oam`` (``core.pixels.video_offsets``): the
``Machine.frame_video`` snapshot that ``snapshot_frame_video`` takes at line 143 with
the frame's ``Machine.video_log``, so each line sees VRAM/OAM as PyBoy drew it
(``kernels/ppu/video_log.py``), or a ``Machine.mem``-layout array with no log.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import (
    CGB_BG_PALETTES_OFF,
    CGB_VRAM_OTHER_OFF,
    OAM_OFF,
    OAM_SIZE,
    VRAM_OFF,
    VRAM_SIZE,
)
from gbxcule.kernels.board.ioregs import VBK, reg
from gbxcule.kernels.ppu.video_log import VLOG_COUNT, log_first, video_byte
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})

SCREEN_W = wp.constant(px.SCREEN_W)
DOWN_W = wp.constant(px.DOWN_W)
MEM_VRAM = wp.constant(VRAM_OFF)
MEM_OAM = wp.constant(OAM_OFF)
VIDEO_VRAM = wp.constant(px.VIDEO_VRAM_OFF)
VIDEO_OAM = wp.constant(px.VIDEO_OAM_OFF)
VRAM_BYTES = wp.constant(VRAM_SIZE)
VIDEO_VRAM1 = wp.constant(px.VIDEO_VRAM1_OFF)
VIDEO_PALETTES = wp.constant(px.VIDEO_BG_PALETTES_OFF)
CGB_OTHER_VRAM = wp.constant(CGB_VRAM_OTHER_OFF)
CGB_PALETTES = wp.constant(CGB_BG_PALETTES_OFF)  # then the object palettes
PALETTE_BYTES = wp.constant(128)
CGB = False  # True in the CGB variant (kernels/variant.py): two VRAM banks, palette RAM
OAM_BYTES = wp.constant(OAM_SIZE)
F_LCDC = wp.constant(px.LATCH_LCDC)
F_SCX = wp.constant(px.LATCH_SCX)
F_SCY = wp.constant(px.LATCH_SCY)
F_WX = wp.constant(px.LATCH_WX)
F_BGP = wp.constant(px.LATCH_BGP)
F_OBP0 = wp.constant(px.LATCH_OBP0)
F_OBP1 = wp.constant(px.LATCH_OBP1)
F_WIN_LINE = wp.constant(px.LATCH_WIN_LINE)
F_FLAGS = wp.constant(px.LATCH_FLAGS)
FLAG_WINDOW_ACTIVE = wp.constant(px.LATCH_FLAG_WINDOW_ACTIVE)
FLAG_BLANK = wp.constant(px.LATCH_FLAG_BLANK)

MAX_SPRITES_PER_LINE = 10
OAM_ENTRIES = wp.constant(40)
SpriteList = wp.types.vector(length=MAX_SPRITES_PER_LINE, dtype=wp.int32)
NO_SPRITE = wp.constant(1 << 30)


@wp.func
def window_drawn(lcdc: int, wx: int, flags: int) -> bool:
    """Whether the window shows on a line (and so advances its line counter)."""
    return (lcdc & 0x20) != 0 and (flags & FLAG_WINDOW_ACTIVE) != 0 and wx - 7 < SCREEN_W


@wp.func
def snapshot_frame_video(m: wp.ref[Machine], i: int):
    """Copy env i's VRAM and OAM into ``m.frame_video[i]``; ppu.py calls it after latching
    line 143, before VBlank code rewrites them (PyBoy's picture predates those writes)."""
    for k in range(VRAM_BYTES):
        m.frame_video[i, VIDEO_VRAM + k] = m.mem[i, MEM_VRAM + k]
    for k in range(OAM_BYTES):
        m.frame_video[i, VIDEO_OAM + k] = m.mem[i, MEM_OAM + k]
    if wp.static(CGB):  # bank 1 too (mem holds the bank VBK selects), and the palettes
        selected = VIDEO_VRAM
        other = VIDEO_VRAM1
        if (reg(m, i, VBK) & 1) != 0:
            selected = VIDEO_VRAM1
            other = VIDEO_VRAM
        for k in range(VRAM_BYTES):
            m.frame_video[i, selected + k] = m.mem[i, MEM_VRAM + k]
            m.frame_video[i, other + k] = m.cgb[i, CGB_OTHER_VRAM + k]
        for k in range(PALETTE_BYTES):
            m.frame_video[i, VIDEO_PALETTES + k] = m.cgb[i, CGB_PALETTES + k]


@wp.func
def line_blank(lcdc: int, flags: int) -> bool:
    return (lcdc & 0x80) == 0 or (flags & FLAG_BLANK) != 0


@wp.func
def tile_colour(lo: int, hi: int, col: int) -> int:
    """Colour index 0..3 of column ``col`` (0 = leftmost) of one tile row."""
    bit = 7 - col
    return (((hi >> bit) & 1) << 1) | ((lo >> bit) & 1)


@wp.func
def map_tile_row(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    vram: int,
    lcdc: int,
    map_base: int,
    mx: int,
    my: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
) -> int:
    """Low | high << 8 of the tile row under pixel (mx, my) of a 256x256 tile map."""
    k = vram + map_base + ((my >> 3) & 31) * 32 + ((mx >> 3) & 31)
    tile = video_byte(video, env, k, log, first, n_log)
    if (lcdc & 0x10) == 0:
        tile = (tile ^ 0x80) + 128  # signed index from 0x9000 -> tiles 128..383
    row = vram + tile * 16 + (my & 7) * 2
    lo = video_byte(video, env, row, log, first, n_log)
    return lo | (video_byte(video, env, row + 1, log, first, n_log) << 8)


@wp.struct
class LineRegs:
    """One line's latched registers, decoded once per line."""

    lcdc: wp.int32
    bgp: wp.int32
    obp0: wp.int32
    obp1: wp.int32
    bg_map: wp.int32  # VRAM offset of the BG map
    bg_y: wp.int32  # BG map row pixel: (ly + SCY) & 255
    scx: wp.int32
    bg_on: wp.int32  # BG pixels drawn (else BGP colour 0, opaque for priority)
    win_x: wp.int32  # first window column (WX - 7), or SCREEN_W when no window
    win_map: wp.int32
    win_y: wp.int32  # window map row pixel (the latched internal line counter)


@wp.func
def line_regs(latch: wp.array3d(dtype=wp.uint8), env: int, ly: int) -> LineRegs:
    r = LineRegs()
    lcdc = int(latch[env, ly, F_LCDC])
    wx = int(latch[env, ly, F_WX])
    r.lcdc = lcdc
    r.bgp = int(latch[env, ly, F_BGP])
    r.obp0 = int(latch[env, ly, F_OBP0])
    r.obp1 = int(latch[env, ly, F_OBP1])
    r.bg_map = 0x1800 + ((lcdc >> 3) & 1) * 0x400
    r.bg_y = (ly + int(latch[env, ly, F_SCY])) & 255
    r.scx = int(latch[env, ly, F_SCX])
    r.win_map = 0x1800 + ((lcdc >> 6) & 1) * 0x400
    r.win_y = int(latch[env, ly, F_WIN_LINE])
    r.win_x = SCREEN_W
    r.bg_on = lcdc & 1
    if window_drawn(lcdc, wx, int(latch[env, ly, F_FLAGS])):
        r.win_x = wx - 7
        r.bg_on = 1
    return r


@wp.func
def line_sprites(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    vram: int,
    oam: int,
    ly: int,
    lcdc: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
):
    """The first 10 sprites in OAM order whose rows cover ``ly``, as (left x, pattern, count).

    pattern = tile-row low byte | high byte << 8 | attributes << 16, the row already
    chosen for ``ly`` (Y flip applied); X flip is applied per pixel.
    """
    lefts = SpriteList()
    patterns = SpriteList()
    count = wp.int32(0)
    height = 8 + ((lcdc >> 2) & 1) * 8
    if (lcdc & 0x02) != 0:
        for n in range(OAM_ENTRIES):
            base = oam + n * 4
            dy = ly - (video_byte(video, env, base, log, first, n_log) - 16)
            if count < MAX_SPRITES_PER_LINE and dy >= 0 and dy < height:
                tile = video_byte(video, env, base + 2, log, first, n_log)
                attr = video_byte(video, env, base + 3, log, first, n_log)
                if height == 16:
                    tile = tile & 0xFE
                if (attr & 0x40) != 0:
                    dy = height - 1 - dy
                row = vram + tile * 16 + dy * 2
                if wp.static(CGB):  # attribute bit 3: the tile is in VRAM bank 1
                    if (attr & 0x08) != 0:
                        row = VIDEO_VRAM1 + tile * 16 + dy * 2
                lefts[count] = video_byte(video, env, base + 1, log, first, n_log) - 8
                lo = video_byte(video, env, row, log, first, n_log)
                hi = video_byte(video, env, row + 1, log, first, n_log)
                patterns[count] = lo | (hi << 8) | (attr << 16)
                count += 1
    return lefts, patterns, count


@wp.func
def sprite_pixel(
    x: int, bg_colour0: bool, lefts: SpriteList, patterns: SpriteList, count: int
) -> int:
    """``(palette << 2) | colour`` of the sprite pixel shown at x, or -1 for none.

    Rank: smaller X first, then OAM order (= selection order k).
    """
    best_rank = NO_SPRITE
    result = wp.int32(-1)
    for k in range(count):
        dx = x - lefts[k]
        if dx >= 0 and dx < 8:
            pattern = patterns[k]
            attr = pattern >> 16
            if (attr & 0x20) != 0:
                dx = 7 - dx
            colour = tile_colour(pattern & 0xFF, (pattern >> 8) & 0xFF, dx)
            rank = (lefts[k] + 8) * 16 + k
            visible = colour != 0 and ((attr & 0x80) == 0 or bg_colour0)
            if visible and rank < best_rank:
                best_rank = rank
                result = ((attr >> 4) & 1) * 4 + colour
    return result


@wp.func
def bg_colour(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    vram: int,
    x: int,
    r: LineRegs,
    key: int,
    row: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    n_log: int,
):
    """(colour index 0..3 of the BG or window at x, or -1 where neither is drawn; key; row).

    ``key``/``row`` carry the last tile row read along a line (key -1: none yet): the
    pixels of one tile share it, so a line reads each tile once. The key names the
    tile column and the layer; the map row is the same for the whole line.
    """
    map_base = r.bg_map
    mx = (x + r.scx) & 255
    my = r.bg_y
    layer = 0
    if x >= r.win_x:
        map_base = r.win_map
        mx = x - r.win_x
        my = r.win_y
        layer = 32
    elif r.bg_on == 0:
        return -1, key, row
    tile_key = layer + ((mx >> 3) & 31)
    if tile_key != key:
        row = map_tile_row(video, env, vram, r.lcdc, map_base, mx, my, log, first, n_log)
    return tile_colour(row & 0xFF, row >> 8, mx & 7), tile_key, row


@wp.func
def pixel_shade(
    x: int, colour: int, r: LineRegs, lefts: SpriteList, patterns: SpriteList, count: int
) -> int:
    """Final shade 0..3 of pixel x of a line that is not blank, whose BG/window colour
    index there is ``colour`` (``bg_colour``)."""
    shade = r.bgp & 3  # BG off: colour 0 through BGP, opaque for sprite priority
    if colour >= 0:
        shade = (r.bgp >> (2 * colour)) & 3
    sprite = sprite_pixel(x, colour == 0, lefts, patterns, count)
    if sprite >= 0:
        obp = r.obp0
        if sprite >= 4:
            obp = r.obp1
        shade = (obp >> (2 * (sprite & 3))) & 3
    return shade


@wp.func
def line_log(video_log: wp.array2d(dtype=wp.int32), env: int, ly: int):
    """(first entry written after line ``ly`` was drawn, entry count) of ``env``'s
    ``video_log`` (kernels/ppu/video_log.py); (0, 0) without a log."""
    n_log = wp.int32(0)
    first = wp.int32(0)
    if video_log:
        n_log = video_log[env, VLOG_COUNT]
        if n_log > 0:
            first = log_first(video_log, env, ly, n_log)
    return first, n_log


@wp.kernel
def render_full_kernel(
    video: wp.array2d(dtype=wp.uint8),
    vram: int,
    oam: int,
    line_latch: wp.array3d(dtype=wp.uint8),
    video_log: wp.array2d(dtype=wp.int32),
    envs: wp.array(dtype=wp.int32),
    out: wp.array3d(dtype=wp.uint8),
):
    """``out[j, ly, :]`` = full-resolution line ``ly`` of env ``envs[j]``; dim = (len(envs), 144).
    ``video_log``: the frame's write log (``video`` must then be frame_video), or None."""
    j, ly = wp.tid()
    env = envs[j]
    lcdc = int(line_latch[env, ly, F_LCDC])
    if line_blank(lcdc, int(line_latch[env, ly, F_FLAGS])):
        blank = wp.uint8(int(line_latch[env, ly, F_BGP]) & 3)
        for x in range(SCREEN_W):
            out[j, ly, x] = blank
        return
    first, n_log = line_log(video_log, env, ly)
    regs = line_regs(line_latch, env, ly)
    lefts, patterns, count = line_sprites(video, env, vram, oam, ly, lcdc, video_log, first, n_log)
    key = wp.int32(-1)
    row = wp.int32(0)
    for x in range(SCREEN_W):
        colour, key, row = bg_colour(video, env, vram, x, regs, key, row, video_log, first, n_log)
        out[j, ly, x] = wp.uint8(pixel_shade(x, colour, regs, lefts, patterns, count))


@wp.kernel
def render_shades_kernel(
    video: wp.array2d(dtype=wp.uint8),
    vram: int,
    oam: int,
    line_latch: wp.array3d(dtype=wp.uint8),
    video_log: wp.array2d(dtype=wp.int32),
    shades: wp.array3d(dtype=wp.uint8),
    packed: wp.array3d(dtype=wp.uint8),
):
    """Downsampled row ``oy`` of env ``i`` (line 2*oy, even columns); dim = (N, 72).

    Writes ``shades[i, oy, :80]`` and/or ``packed[i, oy, :20]``; pass None for an
    output that is not wanted. Both come from the same pass. ``video_log`` as in
    ``render_full_kernel``.
    """
    env, oy = wp.tid()
    ly = oy * 2
    lcdc = int(line_latch[env, ly, F_LCDC])
    blank = line_blank(lcdc, int(line_latch[env, ly, F_FLAGS]))
    blank_shade = int(line_latch[env, ly, F_BGP]) & 3
    first = wp.int32(0)
    n_log = wp.int32(0)
    if not blank:
        first, n_log = line_log(video_log, env, ly)
    regs = line_regs(line_latch, env, ly)
    lefts, patterns, count = line_sprites(video, env, vram, oam, ly, lcdc, video_log, first, n_log)
    byte = wp.int32(0)
    key = wp.int32(-1)
    row = wp.int32(0)
    for ox in range(DOWN_W):
        shade = blank_shade
        if not blank:
            colour, key, row = bg_colour(
                video, env, vram, ox * 2, regs, key, row, video_log, first, n_log
            )
            shade = pixel_shade(ox * 2, colour, regs, lefts, patterns, count)
        if shades:
            shades[env, oy, ox] = wp.uint8(shade)
        byte = byte | (shade << (2 * (ox & 3)))
        if (ox & 3) == 3:
            if packed:
                packed[env, oy, ox >> 2] = wp.uint8(byte)
            byte = 0
