"""A small conv policy/value net that takes packed2 (or u8, luma, rgb) frame stacks.

Input ``uint8 [B, K, 72, 20]`` packed2 becomes shades ``[B, K, 72, 80]`` scaled to 0..1
by one table lookup on the device (``input_table``); ``u8`` shades are scaled the same way,
a Game Boy Color game's ``luma`` ``[B, K, 72, 80]`` and ``rgb`` ``[B, K, 72, 80, 3]``
(three input planes a frame) by 1/255.
Two strided convs, a hidden layer, a policy head and a value head (orthogonal init,
as CleanRL's Atari agent). A task with RAM features (``Task.features``) adds a small MLP
branch whose output is concatenated to the conv trunk's before the heads.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gbxcule.core import pixels as px
from gbxcule.rl.schemas import PRECISIONS


def _layer(layer: nn.Module, std: float = math.sqrt(2), bias: float = 0.0) -> nn.Module:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


def unpack_packed2(obs: torch.Tensor, shifts: torch.Tensor | None = None) -> torch.Tensor:
    """``uint8 [..., 72, 20]`` -> ``uint8 [..., 72, 80]`` shades, on the input's device.
    ``shifts`` (uint8 ``[0, 2, 4, 6]`` on that device) avoids a host-to-device copy."""
    if shifts is None:
        shifts = torch.tensor([0, 2, 4, 6], dtype=torch.uint8, device=obs.device)
    quads = (obs.unsqueeze(-1) >> shifts) & 3
    return quads.reshape(*obs.shape[:-1], px.DOWN_W)


def input_table(obs_format: str, precision: str = "fp32") -> torch.Tensor:
    """``[256, 4]`` (packed2: a byte's four shades) or ``[256, 1]`` (u8: a shade; luma and
    rgb: a byte), each scaled to 0..1 exactly as ``shade.float() * (1/3)`` (luma, rgb:
    ``* (1/255)``), in the trunk's dtype (bf16:
    as autocast would round it). One lookup replaces unpacking, converting, scaling and
    autocast's cast: they were half of a small net's training time on a CPU, each a pass
    over the whole input."""
    codes = torch.arange(256)
    if obs_format == "packed2":
        codes = (codes.unsqueeze(-1) >> torch.tensor([0, 2, 4, 6])) & 3
    else:
        codes = codes.unsqueeze(-1)
    top = 3.0 if obs_format in ("packed2", "u8") else 255.0
    table = codes.to(torch.float32) * (1.0 / top)
    return table.to(torch.bfloat16) if precision == "bf16" else table


EXTRA_WIDTH = 64  # the RAM-features branch's width


MODEL_PRECISIONS = tuple(p for p in PRECISIONS if p != "auto")


def resolve_precision(precision: str, device: str) -> str:
    """``"auto"``: bf16 on a CPU with bf16 instructions (there, 3-minute quest-explore runs
    reached higher returns than fp32 on every seed tried: ``history/own-game.md``), else
    fp32 (CUDA: not measured yet); another value as it is."""
    if precision != "auto":
        return precision
    if not str(device).startswith("cpu"):
        return "fp32"
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        native = False
    return "bf16" if native else "fp32"


class ConvPolicy(nn.Module):
    def __init__(
        self,
        num_actions: int,
        stack: int,
        obs_format: str = "packed2",
        channels: tuple[int, int] = (16, 32),
        hidden: int = 256,
        num_features: int = 0,
        precision: str = "fp32",
    ) -> None:
        super().__init__()
        if precision not in MODEL_PRECISIONS:
            raise ValueError(f"precision must be one of {MODEL_PRECISIONS}, got {precision!r}")
        self.precision = precision
        self.num_actions, self.stack, self.obs_format = num_actions, stack, obs_format
        self.num_features = num_features
        c1, c2 = channels
        self.planes = 3 if obs_format == "rgb" else 1  # input planes a frame
        self.body = nn.Sequential(
            _layer(nn.Conv2d(stack * self.planes, c1, 8, stride=4)),  # 72x80 -> 17x19
            nn.ReLU(),
            _layer(nn.Conv2d(c1, c2, 4, stride=2)),  # -> 7x8
            nn.ReLU(),
            nn.Flatten(),
            _layer(nn.Linear(c2 * 7 * 8, hidden)),
            nn.ReLU(),
        )
        # Kept on the model's device: no host copy in the hot loop (CUDA sync guard).
        self.register_buffer("shade_table", input_table(obs_format, precision), persistent=False)
        head_in = hidden
        if num_features:
            self.extra = nn.Sequential(_layer(nn.Linear(num_features, EXTRA_WIDTH)), nn.ReLU())
            head_in += EXTRA_WIDTH
        self.actor = _layer(nn.Linear(head_in, num_actions), std=0.01)
        self.critic = _layer(nn.Linear(head_in, 1), std=1.0)

    def trunk(self, obs: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        x = nn.functional.embedding(obs.long(), self.shade_table)
        if self.planes == 1:
            x = x.reshape(*obs.shape[:-1], px.DOWN_W)
        else:  # [B, K, 72, 80, 3] -> [B, K * 3, 72, 80]
            x = x.reshape(obs.shape).movedim(-1, -3).flatten(-4, -3)
        bf16 = self.precision == "bf16"  # the trunk in bfloat16, the heads in float32
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=bf16):
            h = self.body(x)
        h = h.to(torch.float32)
        if self.num_features:
            if features is None or features.shape[-1] != self.num_features:
                got = None if features is None else tuple(features.shape)
                raise ValueError(f"this policy takes {self.num_features} RAM features, got {got}")
            h = torch.cat([h, self.extra(features.to(torch.float32))], dim=-1)
        return h

    def forward(
        self, obs: torch.Tensor, features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits [B, A], value [B])``; ``features`` float32 ``[B, F]`` when F > 0."""
        h = self.trunk(obs, features)
        return self.actor(h), self.critic(h).squeeze(-1)

    def spec(self) -> dict:
        """What :func:`gbxcule.rl.agent.load_policy` needs to rebuild the net."""
        c1 = self.body[0].out_channels
        c2 = self.body[2].out_channels
        return {
            "num_actions": self.num_actions,
            "stack": self.stack,
            "obs_format": self.obs_format,
            "channels": [c1, c2],
            "hidden": self.body[5].out_features,
            "num_features": self.num_features,
            "precision": self.precision,
        }


def sample_actions(
    logits: torch.Tensor, generator: torch.Generator | None = None, deterministic: bool = False
) -> torch.Tensor:
    """int64 [B]: Gumbel-max sampling (no host sync, unlike ``multinomial``), or argmax."""
    if deterministic:
        return logits.argmax(dim=-1)
    u = torch.rand(logits.shape, device=logits.device, generator=generator).clamp_(min=1e-20)
    gumbel = -torch.log((-torch.log(u)).clamp_(min=1e-20))
    return (logits + gumbel).argmax(dim=-1)
