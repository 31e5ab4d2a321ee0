"""A Stable-Baselines3 ``VecEnv`` over :class:`~gbxcule.envs.vector.GbxVectorEnv`.

Stable-Baselines3 (2.x) steps a ``VecEnv``: ``reset()`` returns the observations alone,
``step_wait()`` returns ``(obs, rewards, dones, infos)`` with ``infos`` a list of one dict
per env, and an env that finishes is reset in the same call: its ``obs`` row is the new
episode's first observation and ``infos[i]["terminal_observation"]`` the last one, with
``infos[i]["TimeLimit.truncated"]`` True when the episode was cut by the task's
``max_steps`` rather than ended by it. This is the Gymnasium vector env in
``autoreset_mode="same_step"``, its ``final_obs`` moved into those dicts; rewards are
float32 and dones bool, as Stable-Baselines3's own ``DummyVecEnv`` returns them.

Observations are always ``uint8 [stack, 72, W]``, channel first, also for ``stack=1``,
so Stable-Baselines3 sees an image: ``CnnPolicy`` takes it with
``policy_kwargs={"normalize_images": False}`` (shades are 0-3, not 0-255; packed2 bytes
are bit fields, not intensities), and ``MlpPolicy`` with no option. A Game Boy Color
game's ``luma`` is ``[stack, 72, 80]`` and its ``rgb`` ``[3 * stack, 72, 80]`` (each
frame's R, G, B planes in turn): 0-255 intensities, for ``CnnPolicy`` as it is. Stable-Baselines3 is
a NumPy library: on CUDA the observations, rewards and dones are copied to the host
once per step (the emulator and the renders stay on the GPU).

A task with RAM features (``Task.features``) observes a ``Dict``: ``{"screen": the
image above, "features": float32 [F]}``, for Stable-Baselines3's ``MultiInputPolicy``
(``terminal_observation`` is the same dict).

The envs share one backend, so per-env attributes do not exist: ``get_attr`` returns the
vector env's attribute once per asked env, and ``set_attr`` / ``env_method`` are
refused. ``get_images()`` returns each env's full 144x160 screen as grey RGB.
Episode statistics for Stable-Baselines3's logger come from its ``VecMonitor`` wrapper.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv

from gbxcule.core import pixels as px
from gbxcule.envs.vector import GbxVectorEnv
from gbxcule.tasks.task import Task


class GbxSb3VecEnv(VecEnv):
    """``num_envs`` Game Boys on one Warp backend as a Stable-Baselines3 ``VecEnv``."""

    def __init__(
        self,
        rom: str | Path | None,
        num_envs: int,
        task: str | Task = "demo-coins",
        *,
        device: str = "cpu",
        obs: str = "u8",
        stack: int = 1,
        max_steps: int | None = None,
        **backend_kwargs: Any,
    ) -> None:
        for banned in ("autoreset_mode", "copy", "render_mode"):
            if banned in backend_kwargs:
                raise TypeError(f"make_sb3_env sets {banned} itself (Stable-Baselines3's rules)")
        self.venv = GbxVectorEnv(
            rom,
            num_envs,
            task,
            device=device,
            obs=obs,
            stack=stack,
            autoreset_mode="same_step",
            render_mode="rgb_array",
            max_steps=max_steps,
            **backend_kwargs,
        )
        single = self.venv.single_observation_space
        self.num_features = self.venv.num_features
        if self.num_features:
            single = single["screen"]
        assert isinstance(single, spaces.Box)
        self._rgb = obs == "rgb"  # frames [.., 72, 80, 3] -> planes first
        planes = (stack * 3, px.DOWN_H, px.DOWN_W) if self._rgb else None
        self._shape = planes or (single.shape if stack > 1 else (1, *single.shape))
        observation_space: spaces.Space = spaces.Box(
            low=0, high=int(single.high.flat[0]), shape=self._shape, dtype=np.uint8
        )
        if self.num_features:
            features = spaces.Box(-np.inf, np.inf, (self.num_features,), dtype=np.float32)
            observation_space = spaces.Dict({"screen": observation_space, "features": features})
        super().__init__(num_envs, observation_space, self.venv.single_action_space)
        self._actions: np.ndarray | None = None

    # ---- Stable-Baselines3's VecEnv API --------------------------------------------

    def reset(self) -> np.ndarray:
        """Every env to the task's start state (the seed given by ``seed()``, if any, seeds
        the vector env's ``np_random``; the emulator itself is deterministic)."""
        seed = self._seeds[0]
        obs, _ = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._host_obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async(actions) first")
        actions, self._actions = self._actions, None
        obs, reward, term, trunc, info = self.venv.step(actions)
        term, trunc = _host(term).astype(bool), _host(trunc).astype(bool)
        dones = term | trunc
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final = info["final_obs"]  # CPU: an object array of per-env arrays; CUDA: a tensor
            for e in np.flatnonzero(dones):
                one = {k: v[e] for k, v in final.items()} if isinstance(final, dict) else final[e]
                infos[e]["terminal_observation"] = self._one_obs(one)
                infos[e]["TimeLimit.truncated"] = bool(trunc[e] and not term[e])
        for key in ("hook_hits", "frames"):  # hooks' hits, steps' frames (per env)
            if key in info:
                values = _host(info[key])
                for e in range(self.num_envs):
                    infos[e][key] = values[e]
        return self._host_obs(obs), _host(reward).astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """The vector env's ``attr_name`` (``render_mode``, ``spec_task``, ``backend``, ...),
        once per env in ``indices``: the envs share it."""
        value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise NotImplementedError(
            f"set_attr({attr_name!r}): the envs share one backend and have no attributes of "
            "their own; set it on .venv (the GbxVectorEnv) for all of them"
        )

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        raise NotImplementedError(
            f"env_method({method_name!r}): the envs share one backend; call it on .venv "
            "(the GbxVectorEnv)"
        )

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """No env is a wrapped ``gymnasium.Env`` (there is none per env to wrap)."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Each env's last full 144x160 screen as ``uint8 [144, 160, 3]`` (grey RGB on a DMG)."""
        b = self.venv.backend
        screens = b.screens(np.arange(self.num_envs))
        if screens.ndim == 4:  # a Game Boy Color game: RGB already
            return list(screens)
        grey = px.GREY_LEVELS[screens]
        return [np.repeat(g[:, :, None], 3, axis=2) for g in grey]

    # ---- internals ------------------------------------------------------------------

    def _get_indices(self, indices: Any) -> Iterable[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return indices

    def _host_obs(self, obs: Any) -> Any:
        if self.num_features:
            feats = _host(obs["features"]).astype(np.float32, copy=False)
            return {"screen": self._host_screens(obs["screen"]), "features": feats}
        return self._host_screens(obs)

    def _host_screens(self, screens: Any) -> np.ndarray:
        arr = _host(screens)
        if self._rgb:
            arr = np.moveaxis(arr, -1, -3)
        return np.ascontiguousarray(arr.reshape(arr.shape[0], *self._shape))

    def _one_obs(self, obs: Any) -> Any:
        """One env's observation (a ``final_obs`` entry) as the observation space has it."""
        if self.num_features:
            feats = _host(obs["features"]).astype(np.float32, copy=False)
            return {"screen": self._host_screens(obs["screen"][None])[0], "features": feats}
        return self._host_screens(obs[None])[0]


def _host(x: Any) -> np.ndarray:
    """A NumPy copy of a NumPy array or a (CPU or CUDA) tensor."""
    if torch.is_tensor(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def make_sb3_env(
    rom: str | Path | None,
    num_envs: int,
    task: str | Task = "demo-coins",
    device: str = "cpu",
    obs: str = "u8",
    stack: int = 1,
    **backend_kwargs: Any,
) -> GbxSb3VecEnv:
    """A :class:`GbxSb3VecEnv` (``rom`` None: the task's ROM, e.g. the demo game)."""
    return GbxSb3VecEnv(rom, num_envs, task, device=device, obs=obs, stack=stack, **backend_kwargs)
