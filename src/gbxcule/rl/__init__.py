"""The RL harness: tasks, rollout slots, PPO with an actor and a learner stream, run
directories, fail-fast bundles, and :func:`load_policy` for any backend.

Modules: ``schemas`` (config, schema versions), ``experiment`` (run directory,
checkpoints), ``failfast``, ``tasks``, ``rollout``, ``models``, ``ppo``, ``async_ppo``
(the engine), ``train`` (the loop), ``agent`` (``load_policy``), ``evaluate``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_policy"]


def __getattr__(name: str) -> Any:
    if name == "load_policy":
        from gbxcule.rl.agent import load_policy

        return load_policy
    raise AttributeError(f"module 'gbxcule.rl' has no attribute {name!r}")
