"""Schema versions and the one training configuration (every setting, no hidden defaults).

``TrainConfig`` is written whole to ``config.json``; a resumed run reads it back, so a
setting that is not a field here cannot influence a run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

META_SCHEMA = "gbxcule.rl.meta/1"
CONFIG_SCHEMA = "gbxcule.rl.config/1"
METRICS_SCHEMA = "gbxcule.rl.metrics/1"
CHECKPOINT_SCHEMA = "gbxcule.rl.checkpoint/1"
FAILURE_SCHEMA = "gbxcule.rl.failure/1"
ALGO = "ppo"
ALGO_VERSION = "1"
OBS_FORMATS = ("packed2", "u8")
MODES = ("sync", "async")
ENV_BACKENDS = ("warp", "pyboy-mp")


@dataclass
class TrainConfig:
    """Every setting of a training run (CleanRL's names where they exist)."""

    task: str = "demo-coins"
    rom: str | None = None  # None: the task's ROM (demo-coins: the demo game)
    state: str | None = None  # None: the task's start state (post-boot when it has none)
    num_envs: int = 64
    device: str = "cpu"
    env_backend: str = "warp"  # warp (CPU/CUDA by device) or pyboy-mp (PyBoyVecMpBackend, CPU)
    mode: str = "sync"  # sync: learn on the rollout just collected; async: on the previous one
    obs_format: str = "packed2"
    stack: int = 2  # frames per observation (the agent keeps its own stack)
    num_steps: int = 128  # rollout length T
    total_steps: int = 1_000_000  # env steps (all envs) to train for; 0 = until minutes
    minutes: float = 0.0  # wall-clock budget per invocation; 0 = until total_steps
    seed: int = 1
    lr: float = 2.5e-4
    anneal_lr: bool = False
    gamma: float = 0.99
    gae_lambda: float = 0.95
    update_epochs: int = 2
    minibatch_size: int = 2048
    clip_coef: float = 0.1
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    channels: tuple[int, int] = (16, 32)
    hidden: int = 256
    checkpoint_every: int = 10  # keep checkpoints/update_XXXXXX.pt every K updates
    torch_threads: int = 1  # Torch intra-op threads (0: Torch's default). 1 on a shared
    # CPU: OpenMP threads that wait on a busy core cost 30x (measured: conv forward at 64
    # envs 2.7 ms on 1 thread, 88 ms on 2 while another process held a core)
    threads: int = 0  # Warp CPU worker threads; 0: one per core
    sync_guard: bool = True  # CUDA: torch.cuda.set_sync_debug_mode("error") while enqueueing
    tag: str = "run"
    tensorboard: bool = True  # <run>/tensorboard/ (rl/monitor.py); needs tensorboard
    wandb: str = ""  # "", "offline" or "online": Weights & Biases (needs wandb)
    media_every: int = 25  # updates between screen grids and clips (0: none)
    world_size: int = 1  # processes (torchrun ranks); set by train(), checked on resume
    dist_timeout_s: float = 300.0  # torch.distributed collective timeout (a dead peer)
    debug_nan_at_update: int = -1  # fault injection for the fail-fast tests (-1: off)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["channels"] = list(self.channels)
        out["schema"] = CONFIG_SCHEMA
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainConfig:
        data = dict(data)
        schema = data.pop("schema", CONFIG_SCHEMA)
        if schema != CONFIG_SCHEMA:
            raise ValueError(f"config schema {schema!r}, this version reads {CONFIG_SCHEMA!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        if "channels" in data:
            data["channels"] = tuple(data["channels"])
        return cls(**data)

    def check(self) -> TrainConfig:
        """Refuse settings that cannot run; returns self."""
        if self.obs_format not in OBS_FORMATS:
            raise ValueError(f"obs_format must be one of {OBS_FORMATS}, got {self.obs_format!r}")
        if self.env_backend not in ENV_BACKENDS:
            raise ValueError(f"env_backend must be one of {ENV_BACKENDS}, got {self.env_backend!r}")
        if self.env_backend == "pyboy-mp" and self.device != "cpu":
            raise ValueError("env_backend pyboy-mp runs on the CPU (device cpu)")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("num_envs", "stack", "num_steps", "update_epochs", "minibatch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.total_steps <= 0 and self.minutes <= 0:
            raise ValueError("give total_steps > 0 or minutes > 0")
        if self.wandb not in ("", "offline", "online"):
            raise ValueError(f"wandb must be '', 'offline' or 'online', got {self.wandb!r}")
        if int(self.media_every) < 0:
            raise ValueError(f"media_every must be >= 0, got {self.media_every}")
        if not self.device.startswith(("cpu", "cuda")):
            raise ValueError(f"device must be cpu or cuda[:N], got {self.device!r}")
        return self

    @property
    def batch_size(self) -> int:
        """Env steps per update on one rank (``num_envs`` is per rank)."""
        return self.num_envs * self.num_steps
