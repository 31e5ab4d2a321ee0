"""PNG and GIF of shade frames (``uint8 [H, W]``, 0 = lightest), in PyBoy's 4 DMG greys,
or of pixels (``shades=False``: grey ``[H, W]`` or RGB ``[H, W, 3]``, a Game Boy Color
game's screens).

Used by ``gbxcule demo``, ``gbxcule record`` and ``tools/snapshot.py``. Files are
written atomically (``gbxcule.files.write_atomic``).
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from PIL import Image

from gbxcule.core.pixels import shades_to_grey
from gbxcule.files import write_atomic


def to_image(frame: np.ndarray, scale: int = 1, shades: bool = True) -> Image.Image:
    """Shades (or pixels) -> an image, each pixel ``scale`` x ``scale``."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    image = Image.fromarray(shades_to_grey(frame) if shades else np.ascontiguousarray(frame))
    if scale != 1:
        image = image.resize((image.width * scale, image.height * scale), Image.NEAREST)
    return image


def write_png(frame: np.ndarray, path: str | Path, scale: int = 1, shades: bool = True) -> Path:
    buf = io.BytesIO()
    to_image(frame, scale, shades).save(buf, format="PNG")
    return write_atomic(path, buf.getvalue())


def gif_bytes(
    frames: list[np.ndarray], scale: int = 1, frame_ms: int = 50, shades: bool = True
) -> bytes:
    """One GIF frame per shade frame (or pixel frame), ``frame_ms`` each, looping."""
    if not frames:
        raise ValueError("a GIF needs at least one frame")
    images = [to_image(f, scale, shades) for f in frames]
    buf = io.BytesIO()
    images[0].save(
        buf, format="GIF", save_all=True, append_images=images[1:], duration=frame_ms, loop=0
    )
    return buf.getvalue()


def write_gif(
    frames: list[np.ndarray],
    path: str | Path,
    scale: int = 1,
    frame_ms: int = 50,
    shades: bool = True,
) -> Path:
    """:func:`gif_bytes` into ``path``, atomically."""
    return write_atomic(path, gif_bytes(frames, scale, frame_ms, shades))


GAP = 2  # pixels of black between tiles
GAP_SHADE = 3


def grid_cols(n: int) -> int:
    """Columns of a near-square grid of ``n`` tiles (8 for 64)."""
    return max(1, math.ceil(math.sqrt(n)))


def tile_frames(
    frames: list[np.ndarray], cols: int | None = None, gap: int = GAP_SHADE
) -> np.ndarray:
    """Shade frames (one size) tiled row-major, ``cols`` per row (default near-square),
    ``GAP`` black pixels apart: the demo's grids, eval's and TensorBoard's. Pixel frames
    (grey or RGB ``[H, W, 3]``) tile the same way with ``gap=0`` (black)."""
    if not frames:
        raise ValueError("tile_frames needs at least one frame")
    cols = cols or grid_cols(len(frames))
    h, w = frames[0].shape[:2]
    rows = -(-len(frames) // cols)
    shape = (rows * h + (rows - 1) * GAP, cols * w + (cols - 1) * GAP, *frames[0].shape[2:])
    grid = np.full(shape, gap, dtype=np.uint8)
    for k, frame in enumerate(frames):
        r, c = divmod(k, cols)
        grid[r * (h + GAP) : r * (h + GAP) + h, c * (w + GAP) : c * (w + GAP) + w] = frame
    return grid
