"""Watching a run: TensorBoard, Weights & Biases, honest episode statistics, media.

:class:`Monitor` takes every metrics record the trainer appends to ``metrics.jsonl``:

* adds ``episode_return_recent`` / ``episode_length_recent``: the mean over the latest
  completed episodes, at least ``RECENT_EPISODES`` of them (whole updates, newest
  first), and ``episodes_recent`` (how many that was): an update's own mean favours
  its short episodes early in a run, the running one does not;
* writes every number of the record to TensorBoard (``<run>/tensorboard/``, written with
  ``torch.utils.tensorboard``) against env steps, grouped (``episode/``, ``losses/``,
  ``perf/``, ``reward/`` each task term);
* every ``media_every`` updates, a grid of 16 envs' screens and a clip of env 0's last
  rollout (an animated GIF in TensorBoard's images tab; W&B: an image and a video);
* with ``wandb`` ("offline" or "online"), the same to Weights & Biases (never required:
  without the package the run says how to install it and goes on).

Logging costs a few milliseconds an update (``bench`` numbers: history/rl-harness.md).
"""

from __future__ import annotations

import io
import sys
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gbxcule.core import pixels as px

RECENT_EPISODES = 100
GRID_ENVS = 16
GROUPS = {
    "episode": ("episode_return", "episode_length", "episode_frames", "episodes"),
    "losses": ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "nonfinite"),
}
SKIP = {"schema", "run_id", "time", "update", "env_steps", "world_size", "trained"}


def tag(key: str) -> str:
    """TensorBoard tag of a metrics key: ``reward/...`` as is, else grouped."""
    if "/" in key:
        return key
    for group, keys in GROUPS.items():
        if key in keys or key.startswith(keys):
            return f"{group}/{key}"
    return f"perf/{key}"


class RecentEpisodes:
    """The mean over the latest >= ``k`` completed episodes, from updates' sums."""

    def __init__(self, k: int = RECENT_EPISODES) -> None:
        self.k = k
        self.updates: deque[tuple[int, float, float]] = deque()

    def add(self, episodes: int, ret: float | None, length: float | None) -> dict[str, Any]:
        if episodes and ret is not None and length is not None:
            self.updates.append((episodes, ret * episodes, length * episodes))
            while (
                len(self.updates) > 1
                and sum(u[0] for u in self.updates) - self.updates[0][0] >= self.k
            ):
                self.updates.popleft()
        n = sum(u[0] for u in self.updates)
        if not n:
            return {"episodes_recent": 0, "episode_return_recent": None,
                    "episode_length_recent": None}  # fmt: skip
        return {
            "episodes_recent": n,
            "episode_return_recent": sum(u[1] for u in self.updates) / n,
            "episode_length_recent": sum(u[2] for u in self.updates) / n,
        }


def display_frames(frames: np.ndarray, obs_format: str) -> np.ndarray:
    """Observations ``[M, *frame]`` -> pixels to show: DMG shades (u8, packed2) as PyBoy's
    greys ``[M, 72, 80]``, a Game Boy Color game's luminance and RGB as they are."""
    if obs_format == "packed2":
        frames = px.unpack_shades(frames)
    if obs_format in ("packed2", "u8"):
        return px.shades_to_grey(frames)
    return frames


def screen_grid(frames: torch.Tensor, obs_format: str, envs: int = GRID_ENVS) -> np.ndarray:
    """uint8 ``[H, W]`` grey (``[H, W, 3]`` RGB) image: the first ``envs`` frames in a grid."""
    from gbxcule.images import tile_frames

    f = display_frames(frames[:envs].detach().cpu().numpy(), obs_format)
    return tile_frames(list(f), gap=0)


def clip_gif(frames: torch.Tensor, obs_format: str, env: int = 0) -> bytes:
    """An animated GIF of one env's frames ``[T, N, *frame]`` (100 ms a step)."""
    from gbxcule.images import gif_bytes

    f = display_frames(frames[:, env].detach().cpu().numpy(), obs_format)
    return gif_bytes(list(f), scale=2, frame_ms=100, shades=False)


class Monitor:
    """Metrics beyond metrics.jsonl (module doc); call :meth:`close` at the end."""

    def __init__(
        self, run_dir: Path, cfg: Any, *, tensorboard: bool, wandb: str, media_every: int
    ) -> None:
        self.media_every = media_every
        self.obs_format = cfg.obs_format
        self.recent = RecentEpisodes()
        self.tb = None
        self.wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                print(
                    "gbxcule train: no TensorBoard files: pip install tensorboard "
                    "(or gbxcule[tb]); metrics.jsonl is written either way",
                    file=sys.stderr,
                )
            else:
                self.tb = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))
        if wandb:
            self.wandb = _wandb_run(run_dir, cfg, wandb)

    def add_recent(self, record: dict[str, Any]) -> None:
        """The running episode statistics, into ``record`` (before it is written)."""
        record.update(
            self.recent.add(
                record.get("episodes", 0),
                record.get("episode_return"),
                record.get("episode_length"),
            )  # fmt: skip
        )

    def log(self, record: dict[str, Any]) -> None:
        step = int(record["env_steps"])
        numbers = {
            tag(k): float(v)
            for k, v in record.items()
            if k not in SKIP and isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if self.tb is not None:
            for key, value in numbers.items():
                self.tb.add_scalar(key, value, step)
        if self.wandb is not None:
            self.wandb.log(numbers, step=step)

    def media(self, update: int, env_steps: int, frames: torch.Tensor) -> bool:
        """Every ``media_every`` updates: the screens grid and env 0's clip from the rollout's
        frames ``[slots, N, 72, W]``; returns whether it wrote them."""
        if self.media_every <= 0 or update % self.media_every or (not self.tb and not self.wandb):
            return False
        grid = screen_grid(frames[-1], self.obs_format)
        gif = clip_gif(frames, self.obs_format)
        if self.tb is not None:
            image, layout = (grid, "HWC") if grid.ndim == 3 else (grid[None], "CHW")
            self.tb.add_image("media/screens", image, env_steps, dataformats=layout)
            self.tb.file_writer.add_summary(_gif_summary("media/env0", gif, grid.shape), env_steps)
        if self.wandb is not None:
            import wandb

            clip = io.BytesIO(gif)
            self.wandb.log(
                {"media/screens": wandb.Image(grid), "media/env0": wandb.Video(clip, format="gif")},
                step=env_steps,
            )
        return True

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.finish()


def _gif_summary(name: str, gif: bytes, shape: tuple[int, ...]) -> Any:
    """An image summary holding an animated GIF (TensorBoard shows it animated)."""
    from tensorboard.compat.proto.summary_pb2 import Summary

    colours = 3 if len(shape) == 3 else 1  # RGB (a Game Boy Color game's) or grey
    image = Summary.Image(height=px.DOWN_H * 2, width=px.DOWN_W * 2, colorspace=colours,
                          encoded_image_string=gif)  # fmt: skip
    return Summary(value=[Summary.Value(tag=name, image=image)])


def _wandb_run(run_dir: Path, cfg: Any, mode: str) -> Any:
    try:
        import wandb
    except ImportError:
        print(
            "gbxcule train: --wandb needs the wandb package (pip install wandb); "
            "going on without it",
            file=sys.stderr,
        )
        return None
    run_dir = Path(run_dir)
    return wandb.init(
        project="gbxcule",
        name=run_dir.name,
        id=run_dir.name.replace(":", "-")[-64:],
        dir=str(run_dir),
        mode=mode,
        config=cfg.to_json(),
        resume="allow",
    )
