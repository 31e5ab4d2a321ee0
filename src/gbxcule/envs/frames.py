"""Observation frames shared by every adapter: spaces, frame stacks, RGB grids.

One frame is ``uint8 [72, 80]`` shades (``obs="u8"``) or ``[72, 20]`` packed2 (four
shades a byte, :mod:`gbxcule.core.pixels`). A stack of ``K`` frames is
``[K, 72, W]`` (``[72, W]`` when ``K`` is 1); the frames before an episode's first
are zeros, as :class:`gbxcule.rl.agent.Agent` and the rollout buffer read them.
"""

from __future__ import annotations

import numpy as np
import torch

from gbxcule.core import pixels as px

OBS_WIDTH = {"u8": px.DOWN_W, "packed2": px.PACKED_W}


def check_obs(obs: str, stack: int) -> int:
    """The frame width of ``obs``; refuses unknown formats and stacks below 1."""
    if obs not in OBS_WIDTH:
        raise ValueError(f"obs must be one of {tuple(OBS_WIDTH)}, got {obs!r}")
    if isinstance(stack, bool) or not isinstance(stack, int) or stack < 1:
        raise ValueError(f"stack must be an int >= 1, got {stack!r}")
    return OBS_WIDTH[obs]


def obs_shape(obs: str, stack: int) -> tuple[int, ...]:
    """One env's observation shape: ``(stack, 72, W)``, or ``(72, W)`` when stack is 1."""
    width = check_obs(obs, stack)
    return (px.DOWN_H, width) if stack == 1 else (stack, px.DOWN_H, width)


def single_observation_space(obs: str, stack: int, num_features: int = 0):
    """One env's screen Box, or ``Dict(screen, features)`` for a task with RAM features."""
    from gymnasium import spaces

    high = 255 if obs == "packed2" else px.NUM_SHADES - 1
    screen = spaces.Box(0, high, shape=obs_shape(obs, stack), dtype=np.uint8)
    if not num_features:
        return screen
    features = spaces.Box(-np.inf, np.inf, shape=(num_features,), dtype=np.float32)
    return spaces.Dict({"screen": screen, "features": features})


class FrameStack:
    """``[N, K, 72, W]`` frames on a Torch device, pushed one step at a time."""

    def __init__(self, num_envs: int, stack: int, width: int, device: torch.device) -> None:
        self.stack = stack
        self.frames = torch.zeros(
            (num_envs, stack, px.DOWN_H, width), dtype=torch.uint8, device=device
        )

    def push(self, frame: torch.Tensor, first: torch.Tensor | None = None) -> None:
        """Append ``frame [N, 72, W]``; envs in ``first`` (bool [N]) start a new episode:
        their older frames become zeros."""
        if self.stack > 1:
            self.frames[:, :-1] = self.frames[:, 1:].clone()
            if first is not None:
                self.frames[:, :-1] *= (~first).to(torch.uint8)[:, None, None, None]
        self.frames[:, -1] = frame

    def observation(self) -> torch.Tensor:
        """``[N, K, 72, W]`` (``[N, 72, W]`` when K is 1): a view, not a copy."""
        return self.frames[:, 0] if self.stack == 1 else self.frames


def rgb_grid(shades: np.ndarray, columns: int | None = None) -> np.ndarray:
    """``uint8 [M, H, W]`` shades -> one ``uint8 [rows*H, cols*W, 3]`` grey RGB image."""
    m, h, w = shades.shape
    cols = columns or int(np.ceil(np.sqrt(m)))
    rows = -(-m // cols)
    grid = np.zeros((rows * h, cols * w), dtype=np.uint8)
    for k in range(m):
        r, c = divmod(k, cols)
        grid[r * h : (r + 1) * h, c * w : (c + 1) * w] = px.GREY_LEVELS[shades[k]]
    return np.repeat(grid[:, :, None], 3, axis=2)


def restart_stacks(stack: FrameStack, mask: torch.Tensor | None) -> None:
    """New episodes for the envs in ``mask`` (all when None): every frame blank.

    An episode's first observation is blank: neither PyBoy nor we have drawn a frame
    of the start state yet (PyBoy's screen would still show the previous episode)."""
    if mask is None:
        stack.frames.zero_()
    else:
        stack.frames *= (~mask).to(torch.uint8)[:, None, None, None]
