"""The training interface (``protocol.TrainingBackend``) over a host backend: PyBoy.

The PyBoy backends (``pyboy_backend.py``, ``pyboy_mp.py``) inherit it, so a task session,
the trainer, eval, L4 and the envs drive them as they drive the Warp backends:

* start slots are ``.state`` bytes on the host; ``reset_envs`` loads each masked env's
  slot (``load_state``), ``capture_start_state`` and ``copy_envs`` (swarm) go through
  PyBoy's own ``save_state``;
* ``ram_gather`` reads through ``read_memory`` (``backends/ram_gather.py``);
* ``render_obs`` downsamples (and packs) each env's ``frame_shades`` into the caller's
  tensor: PyBoy's screen to an observation, written once;
* tensors are CPU tensors, and ``step`` takes Torch actions as well as NumPy.

Torch is imported only when a tensor is asked for: PyBoy's worker processes never load it.

The backend provides ``num_envs``, ``load_state(source, envs)``, ``save_state(env)``,
``step_frames()``, ``frame_shades(env)`` and ``read_memory``, and calls
:meth:`_init_host_training` in its ``__init__``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gbxcule.backends.checks import check_copy_sources, check_env
from gbxcule.backends.protocol import EnvMaskError, check_obs_format
from gbxcule.core import pixels as px

if TYPE_CHECKING:
    import torch

    from gbxcule.backends.ram_gather import HostRamGather


def host_actions(actions: Any) -> Any:
    """Torch tensors (actions, masks, slots) as NumPy arrays on the host; anything else as
    given (no tensor exists before Torch is imported)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(actions, torch.Tensor):
        return actions.detach().cpu().numpy()
    return actions


def screens_to_obs(full: np.ndarray, obs_format: str) -> np.ndarray:
    """``uint8 [N, 144, 160]`` shades -> ``[N, 72, 80]`` (u8) or ``[N, 72, 20]`` (packed2);
    a Game Boy Color machine's ``[N, 144, 160, 3]`` RGB -> ``[N, 72, 80, 3]`` (rgb) or
    ``[N, 72, 80]`` (luma)."""
    colour = full.ndim == 4
    check_obs_format(obs_format, colour)
    if colour:
        rgb = px.downsample(full, rgb=True)
        return rgb if obs_format == "rgb" else px.luma(rgb)
    shades = px.downsample(full)
    return px.pack_shades(shades) if obs_format == "packed2" else shades


class HostTrainingMixin:
    num_envs: int
    load_state: Any
    save_state: Any
    step_frames: Any
    frame_shades: Any

    def _init_host_training(self) -> None:
        self._start_pool: list[bytes] = []

    @property
    def torch_device(self) -> torch.device:
        import torch

        return torch.device("cpu")

    # ---- start slots ------------------------------------------------------------------

    @property
    def num_start_states(self) -> int:
        return len(self._start_pool)

    def add_start_state(self, source: Any) -> int:
        """A slot from a ``.state`` / snapshot path or its bytes; returns its index."""
        data = Path(source).read_bytes() if isinstance(source, (str, Path)) else bytes(source)
        self._start_pool.append(data)
        return len(self._start_pool) - 1

    def capture_start_state(self, env: int) -> int:
        return self.add_start_state(self.save_state(check_env(env, self.num_envs)))

    def clear_start_states(self) -> None:
        self._start_pool.clear()

    def start_state(self, slot: int) -> bytes:
        return self._start_pool[slot]

    def _mask(self, mask: Any) -> np.ndarray:
        sel = np.asarray(host_actions(mask))
        if sel.dtype != np.bool_ or sel.shape != (self.num_envs,):
            raise EnvMaskError(
                f"an env mask is bool [{self.num_envs}], got {sel.dtype} {tuple(sel.shape)}"
            )
        return sel

    def reset_envs(self, mask: Any, *, slots: Any = None) -> None:
        """Load each env in ``mask`` from its slot (``slots``; default 0), one
        ``load_state`` per slot for the envs that share it."""
        envs = np.flatnonzero(self._mask(mask))
        if not len(envs):
            return
        if not self._start_pool:
            raise RuntimeError("reset_envs needs a start state (add_start_state)")
        picks = np.zeros(self.num_envs, dtype=np.int64)
        if slots is not None:
            picks = np.asarray(host_actions(slots), dtype=np.int64).reshape(-1)
        if picks.shape != (self.num_envs,):
            raise EnvMaskError(f"slots are int [{self.num_envs}], got shape {picks.shape}")
        for slot in np.unique(picks[envs]):
            if not 0 <= slot < len(self._start_pool):
                raise ValueError(f"start slot {slot} of {len(self._start_pool)}")
            chosen = [int(e) for e in envs if picks[e] == slot]
            self.load_state(self._start_pool[int(slot)], envs=chosen)

    def copy_envs(self, src_env_per_dst: Any, mask: Any) -> None:
        """Each env in ``mask`` loads the state of env ``src_env_per_dst[e]`` (none of
        them in the mask: ``checks.check_copy_sources``)."""
        sel = self._mask(mask)
        src = check_copy_sources(np.asarray(host_actions(src_env_per_dst)), sel, self.num_envs)
        envs = np.flatnonzero(sel)
        saved = {int(s): self.save_state(int(s)) for s in np.unique(src[envs])}
        for e in envs:
            self.load_state(saved[int(src[e])], envs=[int(e)])

    # ---- steps, RAM, screens --------------------------------------------------------------

    def step_frames_torch(self) -> torch.Tensor:
        import torch

        return torch.from_numpy(np.asarray(self.step_frames(), dtype=np.int64))

    def ram_gather(self, addrs: list[tuple[int, int | None]]) -> HostRamGather:
        from gbxcule.backends.ram_gather import HostRamGather

        return HostRamGather(self, addrs)

    def screens(self, envs: Any) -> np.ndarray:
        if getattr(self, "cgb", False):
            return np.stack([self.frame_rgb(int(e)) for e in envs])
        return np.stack([self.frame_shades(int(e)) for e in envs])

    def render_obs(self, out: torch.Tensor, offset: int, obs_format: str) -> None:
        import torch

        frames = screens_to_obs(self.screens(range(self.num_envs)), obs_format)
        flat = torch.from_numpy(np.ascontiguousarray(frames)).view(-1)
        if not out.is_contiguous() or out.dtype != torch.uint8:
            raise ValueError("out must be a contiguous uint8 tensor")
        if offset < 0 or offset + flat.numel() > out.numel():
            raise ValueError(
                f"{flat.numel()} bytes at offset {offset} do not fit in out ({out.numel()})"
            )
        out.view(-1)[offset : offset + flat.numel()].copy_(flat)
