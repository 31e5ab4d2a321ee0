"""Gymnasium and PufferLib adapters over the tasks of :mod:`gbxcule.rl.tasks`.

* :func:`make_vector_env` -> :class:`~gbxcule.envs.vector.GbxVectorEnv`, a Gymnasium 1.x
  ``VectorEnv`` (needs ``pip install gbxcule[envs]``);
* :class:`~gbxcule.envs.reference.PyBoyTaskEnv`: one PyBoy as a ``gymnasium.Env`` with the
  same task (the reference the vector env is tested against);
* :func:`make_puffer_env` -> :class:`~gbxcule.envs.puffer.GbxPufferEnv` (PufferLib 3.0);
* :func:`make_sb3_env` -> :class:`~gbxcule.envs.sb3.GbxSb3VecEnv`, a Stable-Baselines3 2.x
  ``VecEnv`` (needs ``pip install gbxcule[sb3]``).

Loaded on first use, so ``import gbxcule.envs`` works without Gymnasium installed.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "GbxPufferEnv",
    "GbxSb3VecEnv",
    "GbxVectorEnv",
    "PyBoyTaskEnv",
    "make_puffer_env",
    "make_sb3_env",
    "make_vector_env",
]

_WHERE = {
    "GbxVectorEnv": "gbxcule.envs.vector",
    "make_vector_env": "gbxcule.envs.vector",
    "PyBoyTaskEnv": "gbxcule.envs.reference",
    "GbxPufferEnv": "gbxcule.envs.puffer",
    "make_puffer_env": "gbxcule.envs.puffer",
    "GbxSb3VecEnv": "gbxcule.envs.sb3",
    "make_sb3_env": "gbxcule.envs.sb3",
}
_EXTRA = {"gymnasium": "envs", "pufferlib": "envs", "stable_baselines3": "sb3"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gbxcule.envs' has no attribute {name!r}")
    import importlib

    try:
        module = importlib.import_module(_WHERE[name])
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in _EXTRA:
            raise ModuleNotFoundError(
                f"gbxcule.envs.{name} needs {missing}: pip install 'gbxcule[{_EXTRA[missing]}]'"
            ) from exc
        raise
    return getattr(module, name)
