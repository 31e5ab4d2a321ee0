"""Pixel buffers of a Warp backend: render modes, zero-copy Torch views, explicit snapshots.

``WarpVecBase`` owns one :class:`PixelBuffers` and delegates to it:

* render-on-step: built with ``render_pixels=True`` and/or ``render_pixels_packed=True``,
  :meth:`PixelBuffers.render_step` (called at the end of every ``step()``) fills the
  owned ``[N, 72, 80]`` shades and/or ``[N, 72, 20]`` packed2 buffers in one pass;
  :meth:`pixels_torch` / :meth:`pixels_packed_torch` / :meth:`pixels_wp` return views of
  those buffers (the same data_ptr for the buffer's whole life, no copy).
* snapshot: :meth:`render_pixels_snapshot_to_torch` and
  :meth:`render_pixels_snapshot_packed_to_torch` render the current state of all N envs
  into a caller's contiguous uint8 tensor at an element offset (rollout slots).
* full resolution: :meth:`render_full` returns ``[M, 144, 160]`` for chosen envs.

A Game Boy Color machine's buffers (``colour=True``) are in colour (``kernels/ppu/render_cgb.py``):
``render_pixels`` fills ``[N, 72, 80]`` 8-bit luminance (``core.pixels.luma``) where a DMG's
are shades, ``render_pixels_rgb`` an ``[N, 72, 80, 3]`` RGB buffer, the snapshots take
``obs_format`` "luma" or "rgb", and :meth:`render_full` returns ``[M, 144, 160, 3]`` RGB;
packed2 (2-bit shades) has no colour form and is refused.

:class:`PixelBackendMixin` gives a backend all of these as its own methods.

Every render reads a ``video`` source (VRAM + OAM) and the per-line latches: the
backend passes ``Machine.frame_video`` (VRAM/OAM as of the last rendered line, see
:mod:`gbxcule.core.pixels`) with ``video_log=Machine.video_log`` (the writes made while
that frame was drawn, so every line shows VRAM/OAM as PyBoy drew it); a
``Machine.mem``-layout array without a log works too (tests). A log whose frame
overflowed (``video_log_overflowed``) makes :meth:`PixelBuffers.render_full` warn
(:class:`VideoLogOverflowWarning`).

On the CPU the downsampled renders are split into the backend's env slices
(:class:`~gbxcule.backends.env_slices.EnvSlices`), one launch per worker thread, as
the step is. On CUDA the downsampled renders go on the current Torch stream of the buffers' device
(or a ``stream`` the caller passes), ordered after the work already queued on Warp's
current stream for the device (the emulator's step) and before any later work there,
by GPU-side events; the host never waits. The frame layout is the contract of
:mod:`gbxcule.core.pixels`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from gbxcule.backends.env_slices import EnvSlices, PerEnv
from gbxcule.backends.protocol import check_obs_format
from gbxcule.core import pixels as px
from gbxcule.kernels.ppu import render
from gbxcule.kernels.ppu.render_cgb import render_cgb_kernels

FRAME_BYTES = px.DOWN_H * px.DOWN_W  # 5760
PACKED_FRAME_BYTES = px.DOWN_H * px.PACKED_W  # 1440
RGB_FRAME_BYTES = FRAME_BYTES * 3


class PixelsNotEnabledError(RuntimeError):
    """A pixel accessor was used on a backend built without that render mode."""


class VideoLogOverflowWarning(RuntimeWarning):
    """A frame had more mid-frame VRAM/OAM writes than ``VLOG_CAP``: some of its lines
    show bytes written after PyBoy drew them."""


def video_log_overflowed(video_log: wp.array, envs: Sequence[int] | np.ndarray) -> list[int]:
    """The envs among ``envs`` whose last rendered frame dropped writes (host copy)."""
    dropped = video_log[:, px.VLOG_DROPPED].numpy()
    return [int(e) for e in np.asarray(envs).reshape(-1) if dropped[int(e)] != 0]


class PixelBuffers:
    """Owned pixel outputs of N envs on one Warp device."""

    def __init__(
        self,
        num_envs: int,
        device: str | wp.context.Device = "cpu",
        *,
        render_pixels: bool = False,
        render_pixels_packed: bool = False,
        render_pixels_rgb: bool = False,
        slices: EnvSlices | None = None,
        colour: bool = False,
    ) -> None:
        """``slices``: how CPU renders split the envs (the backend's own; default one slice);
        ``colour``: a Game Boy Color machine's buffers (luminance and RGB)."""
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if colour and render_pixels_packed:
            raise ValueError(
                "render_pixels_packed: packed2 holds 2-bit DMG shades; a Game Boy Color "
                "machine renders luminance (render_pixels) and RGB (render_pixels_rgb)"
            )
        if render_pixels_rgb and not colour:
            raise ValueError("render_pixels_rgb: a DMG machine's screen has no colour")
        if slices is not None and slices.num_envs != num_envs:
            raise ValueError(f"slices cover {slices.num_envs} envs, the buffers {num_envs}")
        self.num_envs = num_envs
        self._slices = slices if slices is not None else EnvSlices(num_envs)
        self.device = wp.get_device(device)
        self.torch_device = torch.device(wp.device_to_torch(self.device))
        self.render_pixels = render_pixels
        self.render_pixels_packed = render_pixels_packed
        self.colour = bool(colour)
        self._shades = self._alloc(px.DOWN_W) if render_pixels else None
        self._packed = self._alloc(px.PACKED_W) if render_pixels_packed else None
        self._rgb = self._alloc(px.DOWN_W, 3) if render_pixels_rgb else None
        self._shades_torch = wp.to_torch(self._shades) if self._shades is not None else None
        self._packed_torch = wp.to_torch(self._packed) if self._packed is not None else None
        self._rgb_torch = wp.to_torch(self._rgb) if self._rgb is not None else None
        self._streams: dict[int, wp.Stream] = {}
        self._recorded_step: tuple[wp.array, wp.array, wp.array | None, list] | None = None

    def _alloc(self, *row: int) -> wp.array:
        return wp.zeros((self.num_envs, px.DOWN_H, *row), dtype=wp.uint8, device=self.device)

    # ---- accessors ------------------------------------------------------------------

    def pixels_wp(self) -> wp.array:
        """The owned ``uint8 [N, 72, 80]`` buffer (filled by every step): shades 0..3, or
        on a Game Boy Color machine luminance 0..255."""
        if self._shades is None:
            raise PixelsNotEnabledError(
                "pixels were not enabled: build the backend with render_pixels=True"
            )
        return self._shades

    def pixels_torch(self) -> torch.Tensor:
        """Zero-copy Torch view of :meth:`pixels_wp` (same data_ptr every step)."""
        self.pixels_wp()
        return self._shades_torch

    def pixels_packed_wp(self) -> wp.array:
        """The owned ``uint8 [N, 72, 20]`` packed2 buffer (filled by every step)."""
        if self._packed is None:
            raise PixelsNotEnabledError(
                "packed pixels were not enabled: build the backend with render_pixels_packed=True"
            )
        return self._packed

    def pixels_packed_torch(self) -> torch.Tensor:
        """Zero-copy Torch view of :meth:`pixels_packed_wp` (same data_ptr every step)."""
        self.pixels_packed_wp()
        return self._packed_torch

    def pixels_rgb_torch(self) -> torch.Tensor:
        """Zero-copy Torch view of the owned ``uint8 [N, 72, 80, 3]`` RGB buffer of a Game
        Boy Color machine (filled by every step)."""
        if self._rgb_torch is None:
            raise PixelsNotEnabledError(
                "RGB pixels were not enabled: build a Game Boy Color backend with "
                "render_pixels_rgb=True"
            )
        return self._rgb_torch

    # ---- rendering ------------------------------------------------------------------

    def render_step(
        self,
        video: wp.array,
        line_latch: wp.array,
        stream: wp.Stream | None = None,
        *,
        video_log: wp.array | None = None,
    ) -> None:
        """Fill the enabled owned buffers from the step's latches (no-op if none enabled)."""
        if self._shades is None and self._packed is None and self._rgb is None:
            return
        second = self._rgb if self.colour else self._packed
        if self.device.is_cuda:
            self._render_shades(video, line_latch, video_log, self._shades, second, stream)
            return
        # On the CPU the same launches repeat every step: recorded once per source triple.
        rec = self._recorded_step
        if (
            rec is None
            or rec[0] is not video
            or rec[1] is not line_latch
            or rec[2] is not video_log
        ):
            args = self._cpu_render_args(video, line_latch, video_log, self._shades, second)
            launches = self._slices.record(
                self._down_kernel(), args, device=self.device, dim_tail=(px.DOWN_H,)
            )
            rec = self._recorded_step = (video, line_latch, video_log, launches)
        self._slices.replay(rec[3])

    def render_pixels_snapshot_to_torch(
        self,
        video: wp.array,
        line_latch: wp.array,
        out: torch.Tensor,
        base_offset: int = 0,
        stream: wp.Stream | None = None,
        *,
        video_log: wp.array | None = None,
    ) -> None:
        """Render all N envs' ``[72, 80]`` shades into ``out.view(-1)[base_offset:]``."""
        check_obs_format("u8", self.colour)
        target = self._target(out, base_offset, (px.DOWN_W,), "base_offset")
        self._render_shades(video, line_latch, video_log, target, None, stream)

    def render_pixels_snapshot_packed_to_torch(
        self,
        video: wp.array,
        line_latch: wp.array,
        out: torch.Tensor,
        base_offset_bytes: int = 0,
        stream: wp.Stream | None = None,
        *,
        video_log: wp.array | None = None,
    ) -> None:
        """Render all N envs' ``[72, 20]`` packed2 frames into ``out.view(-1)[base_offset_bytes:]``."""
        check_obs_format("packed2", self.colour)
        target = self._target(out, base_offset_bytes, (px.PACKED_W,), "base_offset_bytes")
        self._render_shades(video, line_latch, video_log, None, target, stream)

    def render_obs_to_torch(
        self,
        video: wp.array,
        line_latch: wp.array,
        out: torch.Tensor,
        offset: int,
        obs_format: str,
        stream: wp.Stream | None = None,
        *,
        video_log: wp.array | None = None,
    ) -> None:
        """All N envs' 72x80 frames in ``obs_format`` into ``out.view(-1)[offset:]``: the
        two above on a DMG ("u8", "packed2"); luminance ("luma", ``[72, 80]``) or RGB
        ("rgb", ``[72, 80, 3]``) on a Game Boy Color machine."""
        check_obs_format(obs_format, self.colour)
        if obs_format == "u8":
            self.render_pixels_snapshot_to_torch(
                video, line_latch, out, offset, stream, video_log=video_log
            )
        elif obs_format == "packed2":
            self.render_pixels_snapshot_packed_to_torch(
                video, line_latch, out, offset, stream, video_log=video_log
            )
        elif obs_format == "luma":
            target = self._target(out, offset, (px.DOWN_W,), "offset")
            self._render_shades(video, line_latch, video_log, target, None, stream)
        else:
            target = self._target(out, offset, (px.DOWN_W, 3), "offset")
            self._render_shades(video, line_latch, video_log, None, target, stream)

    def render_full(
        self,
        video: wp.array,
        line_latch: wp.array,
        envs: Sequence[int] | np.ndarray,
        *,
        video_log: wp.array | None = None,
    ) -> np.ndarray:
        """``uint8 [len(envs), 144, 160]`` full-resolution frames of the chosen envs (host
        copy; ``[len(envs), 144, 160, 3]`` RGB on a Game Boy Color machine); warns
        (:class:`VideoLogOverflowWarning`) for an env whose log overflowed."""
        env_ids = np.asarray(envs, dtype=np.int64).reshape(-1)
        if env_ids.size == 0:
            raise ValueError("render_full needs at least one env")
        if env_ids.min() < 0 or env_ids.max() >= self.num_envs:
            raise IndexError(f"env ids must be in 0..{self.num_envs - 1}, got {env_ids.tolist()}")
        offsets = self._check_inputs(video, line_latch, video_log)
        envs_wp = wp.array(env_ids.astype(np.int32), dtype=wp.int32, device=self.device)
        shape = (env_ids.size, px.SCREEN_H, px.SCREEN_W) + ((3,) if self.colour else ())
        out = wp.empty(shape, dtype=wp.uint8, device=self.device)
        if self.colour:
            kernel, inputs = render_cgb_kernels()[0], [video, line_latch, video_log, envs_wp, out]
        else:
            kernel = render.render_full_kernel
            inputs = [video, *offsets, line_latch, video_log, envs_wp, out]
        # Warp's own stream: the host copy below is ordered after it.
        wp.launch(kernel, dim=(env_ids.size, px.SCREEN_H), inputs=inputs, device=self.device)
        frames = out.numpy()
        overflowed = [] if video_log is None else video_log_overflowed(video_log, env_ids)
        if overflowed:
            warnings.warn(
                f"envs {overflowed}: more than {px.VLOG_CAP} VRAM/OAM writes while the frame "
                "was drawn; lines before the dropped writes may show later bytes",
                VideoLogOverflowWarning,
                stacklevel=2,
            )
        return frames

    # ---- internals ------------------------------------------------------------------

    def _down_kernel(self) -> Any:
        return render_cgb_kernels()[1] if self.colour else render.render_shades_kernel

    def _down_inputs(self, video, offsets, line_latch, video_log, first, second) -> list:
        """The downsampling kernel's inputs; ``first``/``second``: shades/packed2 on a DMG,
        luminance/RGB on a Game Boy Color machine (None: not wanted)."""
        if self.colour:
            return [video, line_latch, video_log, second, first]
        return [video, *offsets, line_latch, video_log, first, second]

    def _render_shades(self, video, line_latch, video_log, first, second, stream) -> None:
        if not self.device.is_cuda:  # one launch per env slice, on the step's worker threads
            args = self._cpu_render_args(video, line_latch, video_log, first, second)
            self._slices.launch(
                self._down_kernel(), args, device=self.device, dim_tail=(px.DOWN_H,)
            )
            return
        offsets = self._check_inputs(video, line_latch, video_log)
        dim = (self.num_envs, px.DOWN_H)
        inputs = self._down_inputs(video, offsets, line_latch, video_log, first, second)
        target = stream if stream is not None else self._torch_stream()
        own = wp.get_stream(self.device)  # where the emulator's kernels run
        if target.cuda_stream != own.cuda_stream:
            target.wait_stream(own)  # render after the step that wrote VRAM and latches
        wp.launch(self._down_kernel(), dim=dim, inputs=inputs, stream=target)
        if target.cuda_stream != own.cuda_stream:
            own.wait_stream(target)  # the next step must not overwrite what this reads
        # GPU-side events only: the host never waits here.

    def _cpu_render_args(self, video, line_latch, video_log, first, second) -> list:
        offsets = self._check_inputs(video, line_latch, video_log)
        per_env = [PerEnv(a) for a in (video, line_latch, video_log, first, second)]
        return self._down_inputs(*per_env[:1], offsets, *per_env[1:])

    def _torch_stream(self) -> wp.Stream:
        """The current Torch stream of the buffers' CUDA device, as a (cached) Warp stream."""
        torch_stream = torch.cuda.current_stream(self.torch_device)
        handle = int(torch_stream.cuda_stream)
        if handle not in self._streams:
            self._streams[handle] = wp.stream_from_torch(torch_stream)
        return self._streams[handle]

    def _check_inputs(
        self, video: wp.array, line_latch: wp.array, video_log: wp.array | None = None
    ) -> tuple[int, int]:
        """Validate the sources; returns the (VRAM, OAM) offsets of ``video``'s rows."""
        want_latch = (self.num_envs, px.SCREEN_H, px.LATCH_FIELDS)
        if video.ndim != 2 or video.shape[0] != self.num_envs or video.dtype != wp.uint8:
            raise ValueError(
                f"video must be uint8 [{self.num_envs}, row bytes] (frame_video or mem), "
                f"got {video.shape}"
            )
        if tuple(line_latch.shape) != want_latch or line_latch.dtype != wp.uint8:
            raise ValueError(f"line_latch must be uint8 {list(want_latch)}, got {line_latch.shape}")
        sources = [("video", video), ("line_latch", line_latch)]
        frame_bytes = px.FRAME_VIDEO_BYTES_CGB if self.colour else px.FRAME_VIDEO_BYTES
        if self.colour and video.shape[1] != frame_bytes:
            raise ValueError(
                f"a Game Boy Color machine's video is its frame_video [{self.num_envs}, "
                f"{frame_bytes}], got {video.shape}"
            )
        if video_log is not None:
            words = px.VIDEO_LOG_WORDS_CGB if self.colour else px.VIDEO_LOG_WORDS
            want_log = (self.num_envs, words)
            if tuple(video_log.shape) != want_log or video_log.dtype != wp.int32:
                raise ValueError(f"video_log must be int32 {list(want_log)}, got {video_log.shape}")
            if video.shape[1] != frame_bytes:
                raise ValueError("a video_log goes with a frame_video source, not a mem array")
            sources.append(("video_log", video_log))
        for name, arr in sources:
            if arr.device != self.device:
                raise ValueError(f"{name} is on {arr.device}, pixel buffers on {self.device}")
        return px.video_offsets(video.shape[1])

    def _target(
        self, out: torch.Tensor, offset: int, row: tuple[int, ...], offset_name: str
    ) -> wp.array:
        """``out`` as a Warp array ``[N, 72, *row]`` starting at element ``offset``."""
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
        if out.dtype != torch.uint8:
            raise TypeError(f"out must have dtype torch.uint8, got {out.dtype}")
        if out.device != self.torch_device:
            raise ValueError(f"out is on {out.device}, the emulator on {self.torch_device}")
        if not out.is_contiguous():
            raise ValueError("out must be contiguous (call .contiguous() or allocate it so)")
        if not isinstance(offset, (int, np.integer)) or offset < 0:
            raise ValueError(f"{offset_name} must be an int >= 0, got {offset!r}")
        needed = self.num_envs * px.DOWN_H * int(np.prod(row))
        if out.numel() < offset + needed:
            frame = "x".join(map(str, (px.DOWN_H, *row)))
            raise ValueError(
                f"out has {out.numel()} elements; {self.num_envs} frames of {frame} "
                f"at {offset_name}={offset} need {offset + needed}"
            )
        return wp.array(
            ptr=out.data_ptr() + int(offset),
            dtype=wp.uint8,
            shape=(self.num_envs, px.DOWN_H, *row),
            device=self.device,
        )


class PixelBackendMixin:
    """The pixel methods of a Warp backend, delegating to its :class:`PixelBuffers`.

    The backend provides ``self.machine`` (with ``frame_video`` and ``line_latch``) and
    ``self.pixels`` (a ``PixelBuffers`` built in its ``__init__`` from its
    ``render_pixels`` / ``render_pixels_packed`` arguments), and calls
    :meth:`render_pixels_after_step` at the end of ``step()``.
    """

    machine: Any
    pixels: PixelBuffers
    cgb: bool = False

    def render_pixels_after_step(self) -> None:
        m = self.machine
        self.pixels.render_step(m.frame_video, m.line_latch, video_log=m.video_log)

    def pixels_wp(self) -> wp.array:
        return self.pixels.pixels_wp()

    def pixels_torch(self) -> torch.Tensor:
        return self.pixels.pixels_torch()

    def pixels_packed_wp(self) -> wp.array:
        return self.pixels.pixels_packed_wp()

    def pixels_packed_torch(self) -> torch.Tensor:
        return self.pixels.pixels_packed_torch()

    def pixels_rgb_torch(self) -> torch.Tensor:
        return self.pixels.pixels_rgb_torch()

    def render_pixels_snapshot_to_torch(self, out: torch.Tensor, base_offset: int = 0) -> None:
        m = self.machine
        self.pixels.render_pixels_snapshot_to_torch(
            m.frame_video, m.line_latch, out, base_offset, video_log=m.video_log
        )

    def render_pixels_snapshot_packed_to_torch(
        self, out: torch.Tensor, base_offset_bytes: int = 0
    ) -> None:
        m = self.machine
        self.pixels.render_pixels_snapshot_packed_to_torch(
            m.frame_video, m.line_latch, out, base_offset_bytes, video_log=m.video_log
        )

    def render_obs(self, out: torch.Tensor, offset: int, obs_format: str) -> None:
        """``TrainingBackend.render_obs``: one snapshot render launch into ``out``."""
        m = self.machine
        self.pixels.render_obs_to_torch(
            m.frame_video, m.line_latch, out, offset, obs_format, video_log=m.video_log
        )

    def screens(self, envs: Any) -> np.ndarray:
        """``TrainingBackend.screens``: one full render launch for ``envs`` (RGB on a Game
        Boy Color machine)."""
        m = self.machine
        return self.pixels.render_full(m.frame_video, m.line_latch, envs, video_log=m.video_log)

    def frame_shades(self, env: int) -> np.ndarray:
        """``uint8 [144, 160]`` shades of the last frame of ``env`` (protocol method)."""
        if self.cgb:
            raise ValueError(
                "a Game Boy Color machine's frames are in colour, not DMG shades: use "
                "screens(envs) (RGB) or render_obs with 'luma' or 'rgb'"
            )
        m = self.machine
        return self.pixels.render_full(m.frame_video, m.line_latch, [env], video_log=m.video_log)[0]

    def video_log_overflows(self) -> np.ndarray:
        """int32 [N] (host copy): per env, the frames since its reset whose mid-frame
        VRAM/OAM writes overflowed the log (``core.pixels.VLOG_CAP``); 0 everywhere for
        every game measured (history/midframe-video.md)."""
        return self.machine.video_log[:, px.VLOG_OVERFLOWS].numpy().copy()


def measure_render_cost(
    step: Callable[[], None],
    render_once: Callable[[], None],
    device: str | wp.context.Device,
    *,
    iters: int = 20,
    warmup: int = 3,
) -> dict[str, float]:
    """Benchmark hook: mean wall seconds of ``step()`` and of ``render_once()`` on ``device``.

    Each timing synchronises the device before reading the clock. Returns
    ``{"step_s", "render_s", "render_over_step"}``; ``step`` should be a step without
    render-on-step so the two costs are separate.
    """
    if iters < 1 or warmup < 0:
        raise ValueError(f"need iters >= 1 and warmup >= 0, got {iters}, {warmup}")
    dev = wp.get_device(device)

    def mean_seconds(fn: Callable[[], None]) -> float:
        for _ in range(warmup):
            fn()
        wp.synchronize_device(dev)
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        wp.synchronize_device(dev)
        return (time.perf_counter() - start) / iters

    step_s = mean_seconds(step)
    render_s = mean_seconds(render_once)
    return {"step_s": step_s, "render_s": render_s, "render_over_step": render_s / step_s}


def backend_render_cost(
    backend: Any, actions: Any, *, packed: bool = False, iters: int = 20
) -> dict[str, float]:
    """:func:`measure_render_cost` for a Warp backend (a :class:`PixelBackendMixin` with
    ``step``): its ``step(actions)`` against one
    snapshot render of all envs (packed2 when ``packed``) into a preallocated tensor.

    Build the backend without render-on-step so its step time excludes rendering.
    """
    pixels = backend.pixels
    per_env = PACKED_FRAME_BYTES if packed else FRAME_BYTES
    out = torch.empty(pixels.num_envs * per_env, dtype=torch.uint8, device=pixels.torch_device)
    if packed:
        render_once = lambda: backend.render_pixels_snapshot_packed_to_torch(out)  # noqa: E731
    else:
        render_once = lambda: backend.render_pixels_snapshot_to_torch(out)  # noqa: E731
    return measure_render_cost(
        lambda: backend.step(actions), render_once, pixels.device, iters=iters
    )
