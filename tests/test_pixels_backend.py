"""PixelBuffers: render modes, zero-copy Torch views, snapshots at offsets, errors, CPU vs CUDA."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import warp as wp

from gbxcule.backends.env_slices import EnvSlices
from gbxcule.backends.pixels import (
    FRAME_BYTES,
    PACKED_FRAME_BYTES,
    PixelBackendMixin,
    PixelBuffers,
    PixelsNotEnabledError,
    backend_render_cost,
    measure_render_cost,
)
from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import MEM_BASE_BYTES, OAM_OFF, OAM_SIZE, VRAM_OFF, VRAM_SIZE

pytestmark = pytest.mark.api

N = 3


def random_machine(seed: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """Random VRAM/OAM and per-line latches that change from line to line (LCD on)."""
    rng = np.random.default_rng(seed)
    mem = rng.integers(0, 256, (n, MEM_BASE_BYTES), dtype=np.uint8)
    latch = rng.integers(0, 256, (n, px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    latch[:, :, px.LATCH_LCDC] |= 0x80
    latch[:, :, px.LATCH_FLAGS] &= px.LATCH_FLAG_WINDOW_ACTIVE
    latch[:, 100:104, px.LATCH_FLAGS] |= px.LATCH_FLAG_BLANK
    return mem, latch


def on_device(mem, latch, device):
    return wp.array(mem, dtype=wp.uint8, device=device), wp.array(
        latch, dtype=wp.uint8, device=device
    )


def test_step_buffers_agree_with_full_render_and_keep_their_pointers():
    mem, latch = random_machine(0)
    mem_wp, latch_wp = on_device(mem, latch, "cpu")
    bufs = PixelBuffers(N, "cpu", render_pixels=True, render_pixels_packed=True)
    shades_t, packed_t = bufs.pixels_torch(), bufs.pixels_packed_torch()
    ptrs = (shades_t.data_ptr(), packed_t.data_ptr())
    bufs.render_step(mem_wp, latch_wp)
    full = bufs.render_full(mem_wp, latch_wp, range(N))
    assert full.shape == (N, 144, 160) and int(full.max()) <= 3
    down = px.downsample(full)
    assert np.array_equal(bufs.pixels_wp().numpy(), down)
    assert np.array_equal(bufs.pixels_torch().numpy(), down)
    assert np.array_equal(bufs.pixels_packed_torch().numpy(), px.pack_shades(down))
    assert (full[:, 100:104] == (latch[:, 100:104, px.LATCH_BGP, None] & 3)).all()
    # a second step with new state: same tensors, new contents
    mem2, latch2 = random_machine(1)
    m2, l2 = on_device(mem2, latch2, "cpu")
    bufs.render_step(m2, l2)
    assert (bufs.pixels_torch().data_ptr(), bufs.pixels_packed_torch().data_ptr()) == ptrs
    assert np.array_equal(shades_t.numpy(), px.downsample(bufs.render_full(m2, l2, range(N))))


def test_packed_only_mode_renders_packed_directly():
    mem, latch = random_machine(2)
    mem_wp, latch_wp = on_device(mem, latch, "cpu")
    bufs = PixelBuffers(N, "cpu", render_pixels_packed=True)
    bufs.render_step(mem_wp, latch_wp)
    full = bufs.render_full(mem_wp, latch_wp, [2, 0])
    assert np.array_equal(
        bufs.pixels_packed_wp().numpy()[[2, 0]], px.pack_shades(px.downsample(full))
    )
    with pytest.raises(PixelsNotEnabledError, match="render_pixels=True"):
        bufs.pixels_torch()
    with pytest.raises(PixelsNotEnabledError, match="render_pixels=True"):
        bufs.pixels_wp()
    none = PixelBuffers(N, "cpu")
    none.render_step(mem_wp, latch_wp)  # nothing enabled: nothing to do
    with pytest.raises(PixelsNotEnabledError, match="render_pixels_packed=True"):
        none.pixels_packed_torch()


def test_snapshots_land_at_offsets_and_leave_the_rest():
    mem, latch = random_machine(3)
    mem_wp, latch_wp = on_device(mem, latch, "cpu")
    bufs = PixelBuffers(N, "cpu")
    down = px.downsample(bufs.render_full(mem_wp, latch_wp, range(N)))
    slots = torch.full((4, N, 72, 80), 0xEE, dtype=torch.uint8)
    bufs.render_pixels_snapshot_to_torch(mem_wp, latch_wp, slots, base_offset=2 * N * FRAME_BYTES)
    assert np.array_equal(slots[2].numpy(), down)
    assert (slots[[0, 1, 3]] == 0xEE).all()
    packed_slots = torch.full((5 * N * PACKED_FRAME_BYTES + 7,), 0xEE, dtype=torch.uint8)
    offset = 7 + N * PACKED_FRAME_BYTES
    bufs.render_pixels_snapshot_packed_to_torch(mem_wp, latch_wp, packed_slots, offset)
    got = packed_slots[offset : offset + N * PACKED_FRAME_BYTES].numpy().reshape(N, 72, 20)
    assert np.array_equal(got, px.pack_shades(down))
    assert (packed_slots[:offset] == 0xEE).all() and (
        packed_slots[offset + got.size :] == 0xEE
    ).all()


def test_sliced_cpu_render_writes_each_env_in_its_own_place():
    """Renders split into uneven env slices on worker threads: every env's frame (render-on-step
    and snapshots at an odd offset) equals its downsampled full frame, nothing else is written."""
    n = 5
    mem_wp, latch_wp = on_device(*random_machine(7, n), "cpu")
    slices = EnvSlices(n, 3)
    assert slices.ranges == [(0, 1), (1, 3), (3, 5)]
    bufs = PixelBuffers(n, "cpu", render_pixels=True, render_pixels_packed=True, slices=slices)
    try:
        down = px.downsample(bufs.render_full(mem_wp, latch_wp, range(n)))
        assert len({frame.tobytes() for frame in down}) == n  # envs tell apart: a wrong env shows
        bufs.render_step(mem_wp, latch_wp)
        assert np.array_equal(bufs.pixels_torch().numpy(), down)
        assert np.array_equal(bufs.pixels_packed_torch().numpy(), px.pack_shades(down))
        for packed, per_env in ((False, FRAME_BYTES), (True, PACKED_FRAME_BYTES)):
            offset = 3 + per_env
            out = torch.full((offset + (n + 1) * per_env,), 0xEE, dtype=torch.uint8)
            if packed:
                bufs.render_pixels_snapshot_packed_to_torch(mem_wp, latch_wp, out, offset)
            else:
                bufs.render_pixels_snapshot_to_torch(mem_wp, latch_wp, out, offset)
            got = out[offset : offset + n * per_env].numpy().reshape(n, 72, -1)
            assert np.array_equal(got, px.pack_shades(down) if packed else down)
            assert (out[:offset] == 0xEE).all() and (out[offset + n * per_env :] == 0xEE).all()
        with pytest.raises(ValueError, match="slices cover 5 envs"):
            PixelBuffers(n + 1, "cpu", slices=slices)
    finally:
        slices.close()


def test_bad_snapshot_targets_are_refused_clearly():
    mem_wp, latch_wp = on_device(*random_machine(4), "cpu")
    bufs = PixelBuffers(N, "cpu")
    good = torch.zeros(N * FRAME_BYTES, dtype=torch.uint8)
    cases = [
        (good.int(), TypeError, "torch.uint8"),
        (np.zeros(N * FRAME_BYTES, np.uint8), TypeError, "torch.Tensor"),
        (good[: N * FRAME_BYTES - 1], ValueError, "need 17280"),
        (torch.zeros((N * FRAME_BYTES, 2), dtype=torch.uint8).t(), ValueError, "contiguous"),
        (torch.zeros(N * FRAME_BYTES, dtype=torch.uint8, device="meta"), ValueError, "is on meta"),
    ]
    for out, error, message in cases:
        with pytest.raises(error, match=message):
            bufs.render_pixels_snapshot_to_torch(mem_wp, latch_wp, out)
    with pytest.raises(ValueError, match="base_offset must be an int >= 0"):
        bufs.render_pixels_snapshot_to_torch(mem_wp, latch_wp, good, -1)
    with pytest.raises(ValueError, match="base_offset_bytes=1"):
        bufs.render_pixels_snapshot_packed_to_torch(mem_wp, latch_wp, good[: N * 1440], 1)
    with pytest.raises(ValueError, match="line_latch must be uint8"):
        bufs.render_full(mem_wp, wp.zeros((N, 144, 8), dtype=wp.uint8), [0])
    with pytest.raises(ValueError, match="video must be uint8"):
        PixelBuffers(N + 1, "cpu", render_pixels=True).render_step(mem_wp, latch_wp)
    with pytest.raises(IndexError, match="0..2"):
        bufs.render_full(mem_wp, latch_wp, [N])


def test_env_minor_memory_renders_the_same():
    """mem may be a transposed [cols, N] array viewed as [N, cols] (mem_layout="env_minor")."""
    mem, latch = random_machine(7)
    major, latch_wp = on_device(mem, latch, "cpu")
    minor = wp.array(np.ascontiguousarray(mem.T), dtype=wp.uint8, device="cpu").transpose()
    assert minor.shape == major.shape and not minor.is_contiguous
    bufs = PixelBuffers(N, "cpu", render_pixels_packed=True)
    bufs.render_step(minor, latch_wp)
    got = bufs.pixels_packed_wp().numpy().copy()
    bufs.render_step(major, latch_wp)
    assert np.array_equal(got, bufs.pixels_packed_wp().numpy())
    assert np.array_equal(
        bufs.render_full(minor, latch_wp, [1]), bufs.render_full(major, latch_wp, [1])
    )


def test_frame_video_rows_render_like_mem_rows():
    """A [N, FRAME_VIDEO_BYTES] snapshot (VRAM then OAM) is read at its own offsets."""
    mem, latch = random_machine(9)
    video = np.concatenate(
        [mem[:, VRAM_OFF : VRAM_OFF + VRAM_SIZE], mem[:, OAM_OFF : OAM_OFF + OAM_SIZE]], axis=1
    )
    assert video.shape == (N, px.FRAME_VIDEO_BYTES)
    bufs = PixelBuffers(N, "cpu")
    from_mem = bufs.render_full(*on_device(mem, latch, "cpu"), range(N))
    assert np.array_equal(bufs.render_full(*on_device(video, latch, "cpu"), range(N)), from_mem)
    with pytest.raises(ValueError, match="8352 bytes"):
        bufs.render_full(*on_device(video[:, :-1], latch, "cpu"), [0])


class FakeBackend(PixelBackendMixin):
    def __init__(self, mem, latch, **modes):
        mem_wp, latch_wp = on_device(mem, latch, "cpu")
        self.machine = SimpleNamespace(frame_video=mem_wp, line_latch=latch_wp, video_log=None)
        self.pixels = PixelBuffers(mem.shape[0], "cpu", **modes)

    def step(self):
        self.render_pixels_after_step()


def test_backend_mixin_delegates():
    mem, latch = random_machine(8)
    backend = FakeBackend(mem, latch, render_pixels=True, render_pixels_packed=True)
    backend.step()
    full = np.stack([backend.frame_shades(env) for env in range(N)])
    assert full.shape == (N, 144, 160)
    down = px.downsample(full)
    assert np.array_equal(backend.pixels_torch().numpy(), down)
    assert backend.pixels_wp().ptr == backend.pixels_torch().data_ptr()
    assert np.array_equal(backend.pixels_packed_torch().numpy(), px.pack_shades(down))
    assert backend.pixels_packed_wp().ptr == backend.pixels_packed_torch().data_ptr()
    out = torch.zeros(N * FRAME_BYTES + 5, dtype=torch.uint8)
    backend.render_pixels_snapshot_to_torch(out, 5)
    assert np.array_equal(out[5:].numpy().reshape(N, 72, 80), down)
    packed = torch.zeros(N * PACKED_FRAME_BYTES, dtype=torch.uint8)
    backend.render_pixels_snapshot_packed_to_torch(packed)
    assert np.array_equal(packed.numpy().reshape(N, 72, 20), px.pack_shades(down))
    with pytest.raises(IndexError):
        backend.frame_shades(N)
    with pytest.raises(PixelsNotEnabledError):
        FakeBackend(mem, latch).pixels_torch()


def test_measure_render_cost_reports_both_costs():
    mem_wp, latch_wp = on_device(*random_machine(5), "cpu")
    bufs = PixelBuffers(N, "cpu", render_pixels=True)
    calls = []
    cost = measure_render_cost(
        lambda: calls.append(1),
        lambda: bufs.render_step(mem_wp, latch_wp),
        "cpu",
        iters=2,
        warmup=1,
    )
    assert len(calls) == 3 and set(cost) == {"step_s", "render_s", "render_over_step"}
    assert cost["render_s"] > 0 and cost["render_over_step"] == cost["render_s"] / cost["step_s"]
    backend = FakeBackend(*random_machine(5))
    backend.step = lambda actions: calls.append(actions)
    for packed in (False, True):
        cost = backend_render_cost(backend, "acts", packed=packed, iters=2)
        assert cost["render_s"] > 0 and cost["step_s"] > 0
    assert calls[-1] == "acts" and len(calls) == 3 + 2 * (2 + 3)


@pytest.mark.gpu
def test_cpu_and_cuda_pixels_are_bit_identical():
    wp.init()
    if not wp.is_cuda_available() or not torch.cuda.is_available():
        pytest.skip("needs CUDA visible to Warp and Torch")
    mem, latch = random_machine(6, n=64)
    cpu = PixelBuffers(64, "cpu", render_pixels=True, render_pixels_packed=True)
    gpu = PixelBuffers(64, "cuda:0", render_pixels=True, render_pixels_packed=True)
    cpu.render_step(*on_device(mem, latch, "cpu"))
    gpu_inputs = on_device(mem, latch, "cuda:0")
    ptr = gpu.pixels_torch().data_ptr()
    gpu.render_step(*gpu_inputs)
    torch.cuda.current_stream().synchronize()
    assert gpu.pixels_torch().is_cuda and gpu.pixels_torch().data_ptr() == ptr
    assert torch.equal(gpu.pixels_torch().cpu(), cpu.pixels_torch())
    assert torch.equal(gpu.pixels_packed_torch().cpu(), cpu.pixels_packed_torch())
    envs = [0, 17, 63]
    assert np.array_equal(
        gpu.render_full(*gpu_inputs, envs), cpu.render_full(*on_device(mem, latch, "cpu"), envs)
    )
    slots = torch.zeros((2, 64, 72, 20), dtype=torch.uint8, device="cuda:0")
    gpu.render_pixels_snapshot_packed_to_torch(*gpu_inputs, slots, 64 * PACKED_FRAME_BYTES)
    torch.cuda.current_stream().synchronize()
    assert torch.equal(slots[1].cpu(), cpu.pixels_packed_torch()) and not slots[0].any()
