"""The mid-frame write log: VRAM/OAM as each line of the last frame saw them.

PyBoy draws a line (and reads VRAM/OAM for it) when the LCD enters mode 0; our
renderers draw every line after the step, from ``Machine.frame_video`` (VRAM + OAM
copied when line 143 is drawn) and the per-line register latches. A write that lands
between the draws of lines L and L + 1 (L = 0..142) of the last frame changes what
lines L + 1..143 show but not lines 0..L; this module records the byte it replaced, so
the renderer can undo it for lines 0..L. Layout and rule: ``gbxcule.core.pixels``
(VLOG_*, ``video_at_line``).

Step side (``kernels/ppu/ppu.py``, ``memmap.py``, ``dma.py`` via ``ppu.oam_store``):
``video_log_line_drawn`` at each rendered line, ``video_log_write`` before a VRAM/OAM
store while logging (``m.i32[i, VLOG_LINE] != 0``: a column of the scalar block the
hot paths hold anyway, so they never load the log's descriptor), ``video_log_stop``
where a frame ends or is blanked. Cost when nothing is written mid-frame: one load and compare
per VRAM/OAM write, one store per drawn line and two at line 0 (the entry count; the
bitmap is cleared at the frame's first entry, so a bit may outlive its entry, which
only costs a scan that finds nothing). The LCD path makes no out-of-line call.

Render side (``kernels/ppu/render.py``): ``log_first`` once per (env, line) thread, then
``video_byte`` per byte read: the snapshot byte, unless some entry follows the line and
the byte's bitmap bit is set; then the log is scanned from that entry on.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core import pixels as px
from gbxcule.kernels.state import VLOG_LINE, Machine

wp.set_module_options({"enable_backward": False})

VLOG_COUNT = wp.constant(px.VLOG_COUNT)
VLOG_DROPPED = wp.constant(px.VLOG_DROPPED)
VLOG_OVERFLOWS = wp.constant(px.VLOG_OVERFLOWS)
VLOG_BITS = wp.constant(px.VLOG_BITS)
VLOG_ENTRIES = wp.constant(px.VLOG_ENTRIES)
VLOG_BITMAP_WORDS = wp.constant(px.VLOG_BITMAP_WORDS)
VLOG_CAP = wp.constant(px.VLOG_CAP)
VLOG_ENTRIES_CGB = wp.constant(px.VLOG_ENTRIES_CGB)
VLOG_BITMAP_WORDS_CGB = wp.constant(px.VLOG_BITMAP_WORDS_CGB)
# True in the CGB variant (kernels/variant.py): the log covers VRAM bank 1 and the palettes
CGB = False
LAST_LOGGED_LINE = wp.constant(px.SCREEN_H - 2)  # writes after line 143 is drawn: none


@wp.func
def video_log_line_drawn(m: wp.ref[Machine], i: int, ly: int):
    """PyBoy drew line ``ly`` (render on): writes from now on are logged as after it."""
    if ly == 0:  # a new picture: forget the previous frame's entries (the bitmap: at the
        log = m.video_log  # first write, see video_log_write; until then no entry reads it)
        log[i, VLOG_COUNT] = 0
        log[i, VLOG_DROPPED] = 0
    if ly <= LAST_LOGGED_LINE:
        m.i32[i, VLOG_LINE] = ly + 1
    else:
        m.i32[i, VLOG_LINE] = 0


@wp.func
def video_log_stop(m: wp.ref[Machine], i: int):
    """The frame ended or was blanked: no line of it reads VRAM/OAM any more."""
    m.i32[i, VLOG_LINE] = 0


# Out of line: it sits under every VRAM store and OAM store (the OAM DMA catch-up is
# inlined at every IO access); one copy keeps the step module small (history/midframe-video.md).
@wp.func(inline=False)
def video_log_write(m: wp.ref[Machine], i: int, key: int, old: int, new: int):
    """Record that frame_video byte ``key`` changes from ``old`` to ``new`` now (call it
    only while ``m.i32[i, VLOG_LINE] != 0``). An unchanged byte, or a second write to the
    byte just logged within the same line, needs no entry."""
    if old == new:
        return
    log = m.video_log
    line = m.i32[i, VLOG_LINE] - 1
    n = log[i, VLOG_COUNT]
    tag = (line << 16) | key
    entries = VLOG_ENTRIES
    bitmap_words = VLOG_BITMAP_WORDS
    if wp.static(CGB):
        entries = VLOG_ENTRIES_CGB
        bitmap_words = VLOG_BITMAP_WORDS_CGB
    if n > 0:
        if ((log[i, entries + n - 1] >> 8) & 0xFFFFFF) == tag:
            return
    if n == 0:  # the frame's first entry: clear the bits the previous frames left
        for w in range(bitmap_words):
            log[i, VLOG_BITS + w] = 0
    if n >= VLOG_CAP:
        if log[i, VLOG_DROPPED] == 0:
            log[i, VLOG_OVERFLOWS] = log[i, VLOG_OVERFLOWS] + 1
        log[i, VLOG_DROPPED] = log[i, VLOG_DROPPED] + 1
        return
    log[i, entries + n] = (tag << 8) | old
    log[i, VLOG_COUNT] = n + 1
    word = VLOG_BITS + (key >> 5)
    log[i, word] = log[i, word] | (1 << (key & 31))


# ---- render side ------------------------------------------------------------------------


@wp.func
def log_first(log: wp.array2d(dtype=wp.int32), env: int, ly: int, count: int) -> int:
    """Index of the first entry written after line ``ly`` was drawn (``count``: none).
    Entries are in write order, so their lines never decrease: a binary search."""
    entries = VLOG_ENTRIES
    if wp.static(CGB):
        entries = VLOG_ENTRIES_CGB
    lo = wp.int32(0)
    hi = count
    while lo < hi:
        mid = (lo + hi) >> 1
        if ((log[env, entries + mid] >> 24) & 0xFF) < ly:
            lo = mid + 1
        else:
            hi = mid
    return lo


@wp.func
def video_byte(
    video: wp.array2d(dtype=wp.uint8),
    env: int,
    k: int,
    log: wp.array2d(dtype=wp.int32),
    first: int,
    count: int,
) -> int:
    """frame_video byte ``k`` of ``env`` as the line whose ``log_first`` is ``first`` saw it."""
    entries = VLOG_ENTRIES
    if wp.static(CGB):
        entries = VLOG_ENTRIES_CGB
    value = int(video[env, k])
    if first < count:
        if ((log[env, VLOG_BITS + (k >> 5)] >> (k & 31)) & 1) != 0:
            for e in range(first, count):
                w = log[env, entries + e]
                if ((w >> 8) & 0xFFFF) == k:
                    return w & 0xFF
    return value
