"""A trained policy as an agent any backend can drive.

``load_policy(run_dir_or_checkpoint, device="cpu")`` returns an :class:`Agent`:
``reset(mask=None)`` starts new episodes (all envs, or those in ``mask``) and
``act(frames)`` takes the current step's ``uint8 [N, 72, 80]`` shades (from our
backend's ``pixels_torch()`` or ``render_pixels_snapshot_to_torch``, or PyBoy's
``frame_shades`` downsampled by :func:`gbxcule.core.pixels.downsample`; a Game Boy Color
policy's: ``[N, 72, 80]`` luminance or ``[N, 72, 80, 3]`` RGB, ``render_obs``) and returns
int64 actions ``[N]``. The agent keeps its own frame stack, with zeros before an
episode's first frame, exactly as the rollout buffer stacks frames in training.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gbxcule.core import pixels as px
from gbxcule.rl.experiment import CheckpointError, load_checkpoint, newest_valid_checkpoint
from gbxcule.rl.models import ConvPolicy, sample_actions


class Agent:
    def __init__(self, model: ConvPolicy, device: Any = "cpu") -> None:
        self.model = model.eval()
        self.device = torch.device(device)
        self.stack = model.stack
        self.obs_format = model.obs_format
        self.history: torch.Tensor | None = None

    def reset(self, mask: Any = None) -> None:
        if self.history is None:
            return
        if mask is None:
            self.history.zero_()
        else:
            m = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask)
            self.history[m.to(self.device).bool()] = 0

    @torch.no_grad()
    def act(
        self,
        frames: Any,
        generator: torch.Generator | None = None,
        deterministic: bool = False,
        features: Any = None,
    ) -> torch.Tensor:
        """``features``: float32 ``[N, F]`` of the task's RAM features, for a policy that
        takes them (:meth:`gbxcule.tasks.runtime.TaskRuntime.features`)."""
        f = torch.as_tensor(frames).to(self.device)
        frame = px.OBS_FRAME_SHAPES["rgb" if self.obs_format == "rgb" else "u8"]
        if f.dtype != torch.uint8 or tuple(f.shape[1:]) != frame:
            want = ", ".join(map(str, frame))
            raise ValueError(f"frames must be uint8 [N, {want}], got {f.dtype} {tuple(f.shape)}")
        obs = px.pack_shades_torch(f) if self.obs_format == "packed2" else f
        if self.history is None or self.history.shape[0] != obs.shape[0]:
            self.history = torch.zeros(
                (obs.shape[0], self.stack, *obs.shape[1:]), dtype=torch.uint8, device=self.device
            )
        self.history = torch.cat([self.history[:, 1:], obs.unsqueeze(1)], dim=1)
        feats = None if features is None else torch.as_tensor(features).to(self.device)
        logits, _ = self.model(self.history, feats)
        return sample_actions(logits, generator, deterministic).to(torch.int64)


def policy_fit(cfg: Any, task: Any, task_sha256: str | None = None) -> dict[str, Any]:
    """What a checkpoint's policy must be to play ``task`` as the run's config ``cfg``
    trains it: the model's shape, and the task it learned (its sha256, where known)."""
    fit = {
        "num_actions": task.codec.num_actions,
        "stack": cfg.stack,
        "obs_format": cfg.obs_format,
        "channels": list(cfg.channels),
        "hidden": cfg.hidden,
        "num_features": len(task.features),
        "precision": cfg.precision,
    }
    return fit if task_sha256 is None else {**fit, "task_sha256": task_sha256}


def check_policy_fits(ckpt: dict[str, Any], fit: dict[str, Any], where: Any) -> None:
    """Refuse, naming both sides, a checkpoint whose policy does not fit (``policy_fit``).
    A checkpoint from before checkpoints recorded their task is checked on its shape."""
    have = {**ckpt["model_spec"], "task_sha256": ckpt.get("task_sha256")}
    have["channels"] = list(have.get("channels", []))
    have.setdefault("num_features", 0)
    have.setdefault("precision", "fp32")
    bad = [
        f"{key} {have.get(key)!r}, the run wants {want!r}"
        for key, want in fit.items()
        if have.get(key) != want and not (key == "task_sha256" and have[key] is None)
    ]
    if bad:
        raise CheckpointError(f"{where}: its policy does not fit this run: " + "; ".join(bad))


def load_policy(
    run_dir_or_checkpoint: str | Path, device: Any = "cpu", fit: dict[str, Any] | None = None
) -> Agent:
    """The policy of a run (its newest checkpoint that loads: an empty or cut ``latest.pt``
    falls back to the newest ``update_*.pt``, with a warning) or of one checkpoint file;
    ``fit`` (``policy_fit``) refuses one that does not fit the run it is played in."""
    source = Path(run_dir_or_checkpoint)
    if source.is_dir():
        source, ckpt, skipped = newest_valid_checkpoint(source, map_location=device)
        for problem in skipped:
            warnings.warn(f"{problem}; playing {source} instead", stacklevel=2)
    else:
        ckpt = load_checkpoint(source, map_location=device)
    if fit is not None:
        check_policy_fits(ckpt, fit, source)
    spec = ckpt["model_spec"]
    model = ConvPolicy(
        spec["num_actions"],
        spec["stack"],
        spec["obs_format"],
        tuple(spec["channels"]),
        spec["hidden"],
        spec.get("num_features", 0),
        spec.get("precision", "fp32"),
    )
    model.load_state_dict(ckpt["model"])
    return Agent(model.to(device), device)
