"""Schema versions and the one training configuration (every setting, no hidden defaults).

``TrainConfig`` is written whole to ``config.json``; a resumed run reads it back, so a
setting that is not a field here cannot influence a run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from gbxcule.backends.protocol import OBS_FORMATS
from gbxcule.backends.registry import TASK_BACKENDS

META_SCHEMA = "gbxcule.rl.meta/1"
CONFIG_SCHEMA = "gbxcule.rl.config/1"
METRICS_SCHEMA = "gbxcule.rl.metrics/1"
CHECKPOINT_SCHEMA = "gbxcule.rl.checkpoint/1"
FAILURE_SCHEMA = "gbxcule.rl.failure/1"
ALGO = "ppo"
ALGO_VERSION = "1"
MODES = ("sync", "async")
PRECISIONS = ("auto", "fp32", "bf16")  # the policy trunk's arithmetic (rl/models.py)
ENV_BACKENDS = TASK_BACKENDS  # backends/registry.py: what a task runs on


def channel_pair(text: str) -> tuple[int, int]:
    """``--channels 8,16``: two channel counts >= 1."""
    import argparse

    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not two counts >= 1, C1,C2 (e.g. 8,16)")
    return (int(parts[0]), int(parts[1]))


def flag(name: str, help: str = "", **argparse_kw: Any) -> dict[str, Any]:
    """A ``TrainConfig`` field's ``gbxcule train`` option (``cli/train.py`` builds the
    parser from these): its flag, help and any other ``add_argument`` keywords."""
    return {"flag": {"name": name, "help": help, **argparse_kw}}


def _f(default: Any, name: str | None = None, help: str = "", **kw: Any) -> Any:
    meta = flag(name, help, **kw) if name else {}
    return field(default=default, metadata=meta)


@dataclass
class TrainConfig:
    """Every setting of a training run (CleanRL's names where they exist); a field with a
    flag is a ``gbxcule train`` option, so each setting is declared here once."""

    task: str = _f(
        "demo-coins",
        "--task",
        "a built-in task, a task file path/to/task.toml (runs no code) or path/to/task.py[:NAME], "
        "or a module package.mod:NAME",
    )
    rom: str | None = _f(None, "--rom", "ROM file (default: the task's)")
    state: str | None = _f(None, "--state", "start state file (default: the task's)")
    num_envs: int = _f(64, "--envs", "parallel envs per rank")
    device: str = _f("cpu", "--device", "cpu or cuda[:N]")
    env_backend: str = _f(
        "warp",
        "--backend",
        "emulator to train on: warp (ours; CPU or CUDA by --device) or pyboy-mp (PyBoy 2.8.1 "
        "processes, CPU)",
        choices=ENV_BACKENDS,
    )
    # sync: learn on the rollout just collected; async: on the previous one
    mode: str = _f("async", "--mode", "default async: the learner trains on the last rollout "
                   "while the actor collects the next (CUDA streams; a thread on the CPU)",
                   choices=MODES,
                   cli_default=None)  # fmt: skip
    obs_format: str = _f(
        "packed2",
        "--obs-format",
        "packed2 or u8 (shades) on a DMG game, luma or rgb on a Game Boy Color one",
        choices=OBS_FORMATS,
    )
    stack: int = _f(2, "--stack", "frames per observation (the agent keeps its own stack)")
    num_steps: int = _f(128, "--steps", "rollout length per env")
    # env steps (all envs) to train for; 0 = until minutes
    total_steps: int = _f(1_000_000, "--total-steps", "env steps to train for",
                          group="budget", cli_default=None)  # fmt: skip
    # wall-clock budget per invocation; 0 = until total_steps
    minutes: float = _f(0.0, "--minutes", "wall minutes to train for", group="budget",
                        cli_default=None)  # fmt: skip
    seed: int = _f(1, "--seed")
    lr: float = _f(2.5e-4, "--lr")
    anneal_lr: bool = False
    gamma: float = 0.99
    gae_lambda: float = 0.95
    update_epochs: int = _f(2, "--epochs", "PPO epochs per update")
    minibatch_size: int = _f(2048, "--minibatch", "minibatch size")
    learner_chunk: int = _f(0, "--learner-chunk", "samples a forward/backward takes, gradients "
                            "summed over a minibatch's chunks (the same update); 0: 512 on a "
                            "CPU (cache-sized), the whole minibatch on CUDA")  # fmt: skip
    clip_coef: float = 0.1
    ent_coef: float = _f(0.01, "--ent-coef")
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    channels: tuple[int, int] = _f(
        (16, 32),
        "--channels",
        "the two conv layers' channels, C1,C2 (8,16 trains ~2x faster on a CPU)",
        type=channel_pair,
    )
    hidden: int = _f(256, "--hidden", "width of the policy's hidden layer")
    precision: str = _f("auto", "--precision", "the conv trunk's arithmetic; auto: bf16 on a "
                        "CPU with bf16 instructions (~2x the updates a minute), else fp32; "
                        "the run records which", choices=PRECISIONS)  # fmt: skip
    # keep checkpoints/update_XXXXXX.pt every K updates
    checkpoint_every: int = _f(10, "--checkpoint-every", "keep a checkpoint every K updates")
    keep_checkpoints: int = _f(
        5, "--keep-checkpoints", "numbered checkpoints kept, the newest (0: all); best.pt apart"
    )
    # Torch intra-op threads (0: Torch's default). 1 on a shared CPU: OpenMP threads that
    # wait on a busy core cost 30x (measured: conv forward at 64 envs 2.7 ms on 1 thread,
    # 88 ms on 2 while another process held a core)
    torch_threads: int = _f(1, "--torch-threads", "Torch threads (0: Torch's default)")
    threads: int = _f(0, "--threads", "Warp CPU worker threads (0: one per core)")
    sync_guard: bool = True  # CUDA: torch.cuda.set_sync_debug_mode("error") while enqueueing
    tag: str = _f("run", "--tag", "a name in the run directory's name")
    # <run>/tensorboard/ (rl/monitor.py); needs tensorboard
    tensorboard: bool = _f(True, "--no-tensorboard", "write no TensorBoard files (RUN/tensorboard)",
                           action="store_false")  # fmt: skip
    wandb: str = _f(  # "", "offline" or "online": Weights & Biases (needs wandb)
        "",
        "--wandb",
        "also log to Weights & Biases (offline when given alone: wandb sync later; needs wandb)",
        nargs="?",
        const="offline",
        choices=("offline", "online"),
    )
    media_every: int = _f(
        25, "--media-every", "updates between screen grids and episode clips (0: none)"
    )
    world_size: int = 1  # processes (torchrun ranks); set by train(), checked on resume
    # torch.distributed collective timeout (a dead peer)
    dist_timeout_s: float = _f(
        300.0, "--dist-timeout", "torchrun: seconds a collective waits for a dead or stuck rank"
    )
    # fault injection for the fail-fast tests (-1: off)
    debug_nan_at_update: int = _f(-1, "--debug-nan-at-update", hidden=True)

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
        data.setdefault("precision", "fp32")  # a run from before precision was a setting
        return cls(**data)

    def check(self) -> TrainConfig:
        """Refuse settings that cannot run; returns self."""
        if self.obs_format not in OBS_FORMATS:
            raise ValueError(f"obs_format must be one of {OBS_FORMATS}, got {self.obs_format!r}")
        if self.env_backend not in ENV_BACKENDS:
            raise ValueError(f"env_backend must be one of {ENV_BACKENDS}, got {self.env_backend!r}")
        if self.env_backend != "warp" and self.device != "cpu":
            raise ValueError(f"env_backend {self.env_backend} runs on the CPU (device cpu)")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        for name in ("num_envs", "stack", "num_steps", "update_epochs", "minibatch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("total_steps", "minutes", "checkpoint_every", "keep_checkpoints",
                     "torch_threads", "threads", "ent_coef", "vf_coef",
                     "learner_chunk"):  # fmt: skip
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        for name in ("lr", "clip_coef", "max_grad_norm", "hidden", "dist_timeout_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        for name in ("gamma", "gae_lambda"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if len(self.channels) != 2 or min(self.channels) < 1:
            raise ValueError(f"channels must be two counts >= 1, got {self.channels}")
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
