"""Observation frames shared by every adapter: spaces, frame stacks, RGB grids.

One frame is ``uint8 [72, 80]`` shades (``obs="u8"``), ``[72, 20]`` packed2 (four
shades a byte, :mod:`gbxcule.core.pixels`), or on a Game Boy Color game ``[72, 80]``
luminance (``"luma"``) or ``[72, 80, 3]`` RGB (``"rgb"``): ``core.pixels.OBS_FRAME_SHAPES``.
A stack of ``K`` frames is ``[K, *frame]`` (``frame`` when ``K`` is 1); the frames before
an episode's first are zeros, as :class:`gbxcule.rl.agent.Agent` and the rollout buffer
read them.
"""

from __future__ import annotations

import numpy as np
import torch

from gbxcule.core import pixels as px


def check_obs(obs: str, stack: int) -> tuple[int, ...]:
    """The frame shape of ``obs``; refuses unknown formats and stacks below 1."""
    if obs not in px.OBS_FRAME_SHAPES:
        raise ValueError(f"obs must be one of {tuple(px.OBS_FRAME_SHAPES)}, got {obs!r}")
    if isinstance(stack, bool) or not isinstance(stack, int) or stack < 1:
        raise ValueError(f"stack must be an int >= 1, got {stack!r}")
    return px.OBS_FRAME_SHAPES[obs]


def obs_shape(obs: str, stack: int) -> tuple[int, ...]:
    """One env's observation shape: ``(stack, *frame)``, or ``frame`` when stack is 1."""
    frame = check_obs(obs, stack)
    return frame if stack == 1 else (stack, *frame)


def single_observation_space(obs: str, stack: int, num_features: int = 0):
    """One env's screen Box, or ``Dict(screen, features)`` for a task with RAM features."""
    from gymnasium import spaces

    high = px.OBS_HIGH[obs]
    screen = spaces.Box(0, high, shape=obs_shape(obs, stack), dtype=np.uint8)
    if not num_features:
        return screen
    features = spaces.Box(-np.inf, np.inf, shape=(num_features,), dtype=np.float32)
    return spaces.Dict({"screen": screen, "features": features})


def env_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``mask`` (bool or uint8 ``[N]``) shaped to broadcast over ``like`` ``[N, ...]``."""
    return mask.view(-1, *([1] * (like.ndim - 1)))


class FrameStack:
    """``[N, K, *frame]`` frames on a Torch device, pushed one step at a time."""

    def __init__(
        self, num_envs: int, stack: int, frame: tuple[int, ...], device: torch.device
    ) -> None:
        self.stack = stack
        self.frames = torch.zeros((num_envs, stack, *frame), dtype=torch.uint8, device=device)

    def push(self, frame: torch.Tensor, first: torch.Tensor | None = None) -> None:
        """Append ``frame [N, *frame]``; envs in ``first`` (bool [N]) start a new episode:
        their older frames become zeros."""
        if self.stack > 1:
            self.frames[:, :-1] = self.frames[:, 1:].clone()
            if first is not None:
                self.frames[:, :-1] *= env_mask((~first).to(torch.uint8), self.frames)
        self.frames[:, -1] = frame

    def observation(self) -> torch.Tensor:
        """``[N, K, *frame]`` (``[N, *frame]`` when K is 1): a view, not a copy."""
        return self.frames[:, 0] if self.stack == 1 else self.frames


def rgb_grid(screens: np.ndarray, columns: int | None = None) -> np.ndarray:
    """``uint8 [M, H, W]`` shades (or ``[M, H, W, 3]`` RGB screens of a Game Boy Color
    game) -> one ``uint8 [rows*H, cols*W, 3]`` RGB image."""
    m, h, w = screens.shape[:3]
    if screens.ndim == 3:
        screens = np.repeat(px.GREY_LEVELS[screens][..., None], 3, axis=-1)
    cols = columns or int(np.ceil(np.sqrt(m)))
    rows = -(-m // cols)
    grid = np.zeros((rows * h, cols * w, 3), dtype=np.uint8)
    for k in range(m):
        r, c = divmod(k, cols)
        grid[r * h : (r + 1) * h, c * w : (c + 1) * w] = screens[k]
    return grid


def restart_stacks(stack: FrameStack, mask: torch.Tensor | None) -> None:
    """New episodes for the envs in ``mask`` (all when None): every frame blank.

    An episode's first observation is blank: neither PyBoy nor we have drawn a frame
    of the start state yet (PyBoy's screen would still show the previous episode)."""
    if mask is None:
        stack.frames.zero_()
    else:
        stack.frames *= env_mask((~mask).to(torch.uint8), stack.frames)
