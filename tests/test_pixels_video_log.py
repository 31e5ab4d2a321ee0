"""The renderers' use of the mid-frame write log (kernels/ppu/video_log.py, core/pixels.py).

Random frame_video snapshots and random logs (many writes to the same few bytes, lines
in write order, lines >= 128 included): every line our kernels draw equals that line
drawn from ``core.pixels.video_at_line`` (the snapshot with the later writes undone)
without a log.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.pixels import PixelBuffers
from gbxcule.core import pixels as px

from .support import pixel_scenes as ps

pytestmark = pytest.mark.l1

N = 3


def log_row(entries: list[tuple[int, int, int]]) -> np.ndarray:
    """One env's ``video_log`` row holding ``entries`` ((line, key, old), write order)."""
    row = np.zeros(px.VIDEO_LOG_WORDS, dtype=np.int64)
    row[px.VLOG_COUNT] = len(entries)
    for k, (line, key, old) in enumerate(entries):
        row[px.VLOG_ENTRIES + k] = (line << 24) | (key << 8) | old
        row[px.VLOG_BITS + key // 32] |= 1 << (key % 32)
    return row.astype(np.uint32).view(np.int32)


def random_scene(seed: int):
    rng = np.random.default_rng(seed)
    video = rng.integers(0, 256, (N, px.FRAME_VIDEO_BYTES), dtype=np.uint8)
    video[:, px.VIDEO_OAM_OFF : px.VIDEO_OAM_OFF + 160 : 4] = rng.integers(0, 170, (N, 40))
    latch = rng.integers(0, 256, (N, px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    latch[:, :, px.LATCH_LCDC] |= 0x83
    latch[:, :, px.LATCH_FLAGS] &= px.LATCH_FLAG_WINDOW_ACTIVE
    logs = np.zeros((N, px.VIDEO_LOG_WORDS), dtype=np.int32)
    for env in range(N):
        hot = np.concatenate(
            [
                rng.integers(0x1800, 0x2000, 24),  # map bytes
                rng.integers(0, 0x1800, 40),  # tile data
                px.VIDEO_OAM_OFF + rng.integers(0, 160, 24),  # OAM
            ]
        )
        count = [0, 5, 700][env]
        lines = np.sort(rng.integers(0, px.SCREEN_H - 1, count))
        keys = rng.choice(hot, count)
        olds = rng.integers(0, 256, count)
        logs[env] = log_row(list(zip(lines.tolist(), keys.tolist(), olds.tolist())))
    return video, latch, logs


@pytest.mark.parametrize("seed", [0, 1])
def test_each_line_sees_the_video_of_its_draw(seed):
    video, latch, logs = random_scene(seed)
    full, shades, packed = ps.render_all(video, latch, logs)
    # Reference: for each (env, line), the undone video rendered without a log.
    per_line = np.stack(
        [px.video_at_line(video[e], logs[e], ly) for e in range(N) for ly in range(px.SCREEN_H)]
    )
    ref_latch = np.repeat(latch, px.SCREEN_H, axis=0)
    ref_full, _, _ = ps.render_all(per_line, ref_latch)
    expected = ref_full.reshape(N, px.SCREEN_H, px.SCREEN_H, px.SCREEN_W)
    expected = expected[:, np.arange(px.SCREEN_H), np.arange(px.SCREEN_H)]
    for env in range(N):
        assert np.array_equal(full[env], expected[env]), f"env {env}"
    down = px.downsample(expected)
    assert np.array_equal(shades, down)
    assert np.array_equal(packed, px.pack_shades(down))
    plain, _, _ = ps.render_all(video, latch)
    assert np.array_equal(plain[0], full[0]), "an empty log changes nothing"
    assert not np.array_equal(plain[2], full[2]), "the 700-entry log should show"


def test_video_at_line_takes_the_earliest_write_after_the_line():
    video = np.full(px.FRAME_VIDEO_BYTES, 9, dtype=np.uint8)
    log = log_row([(3, 100, 1), (5, 100, 2), (5, 100, 3), (130, 7, 5), (140, 100, 4)])
    assert px.video_log_entries(log)[4] == (140, 100, 4)
    at = [int(px.video_at_line(video, log, ly)[100]) for ly in (0, 3, 4, 5, 6, 140, 141)]
    assert at == [1, 1, 2, 2, 4, 4, 9]
    assert int(px.video_at_line(video, log, 131)[7]) == 9


def test_a_log_goes_with_a_frame_video_source_only():
    video, latch, logs = random_scene(0)
    bufs = PixelBuffers(N, "cpu")
    video_wp = wp.array(video, dtype=wp.uint8)
    latch_wp = wp.array(latch, dtype=wp.uint8)
    log_wp = wp.array(logs, dtype=wp.int32)
    full = bufs.render_full(video_wp, latch_wp, range(N), video_log=log_wp)
    assert np.array_equal(full, ps.render_all(video, latch, logs)[0])
    mem = wp.zeros((N, 0x4200), dtype=wp.uint8)
    with pytest.raises(ValueError, match="frame_video source"):
        bufs.render_full(mem, latch_wp, [0], video_log=log_wp)
    with pytest.raises(ValueError, match="video_log must be int32"):
        bufs.render_full(video_wp, latch_wp, [0], video_log=wp.zeros((N, 8), dtype=wp.int32))
