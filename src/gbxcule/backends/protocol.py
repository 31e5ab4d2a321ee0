"""The backend protocol every emulator backend implements (PyBoy oracles and Warp).

A backend runs ``num_envs`` Game Boys on one ROM. ``step(actions)`` advances
every env by ``frames_per_step`` frames: the action's buttons are pressed at
the start of the step and released after ``release_after_frames`` frames,
exactly as PyBoy's ``button(name, delay)`` does. Frame boundaries are PyBoy's
(one ``PyBoy.tick()``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

CPU_STATE_KEYS = ("pc", "sp", "a", "f", "b", "c", "d", "e", "h", "l", "ime", "halted", "cycles")


@runtime_checkable
class Backend(Protocol):
    """What the harness, the ROM self-checks and the trainer may rely on."""

    name: str
    num_envs: int
    frames_per_step: int
    release_after_frames: int

    def reset(self, seed: int | None = None) -> None:
        """Return every env to the post-boot state at frame 0 (PC=0x0100)."""

    def step(self, actions: Any) -> None:
        """Advance every env by ``frames_per_step`` frames under ``actions`` (int array [N])."""

    def get_cpu_state(self, env: int) -> dict[str, int]:
        """Registers of one env; keys are ``CPU_STATE_KEYS``; ``cycles`` counts T-cycles since reset."""
        ...

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        """uint8 bytes ``[lo, hi)`` as the CPU would read them (current banks, IO read masks)."""
        ...

    def write_memory(self, env: int, addr: int, data: bytes | np.ndarray | int) -> None:
        """Write bytes starting at ``addr`` as a debugger would (RAM regions; ROM writes hit the MBC)."""

    def serial_output(self, env: int) -> bytes:
        """Every byte the env sent over the serial port since reset."""
        ...

    def frame_shades(self, env: int) -> np.ndarray:
        """uint8 [144, 160] shade indices 0..3 (after BGP/OBP0/OBP1) of the last frame."""
        ...

    def close(self) -> None:
        """Release processes, devices and buffers."""


class EnvMaskError(ValueError):
    """An env mask or slot array that is not one value per env on the right device."""


class RamGatherError(ValueError):
    """An address a backend's ``ram_gather`` cannot read (the message says why)."""


class RamGather(Protocol):
    """Bytes at fixed CPU addresses for every env (``TrainingBackend.ram_gather``)."""

    device: Any  # torch.device of what ``gather`` returns

    def gather(self) -> Any:
        """``int64 [N, len(addrs)]`` Torch tensor on ``device``: each address as the CPU
        reads it now (cart RAM of a named bank: that bank's byte)."""
        ...


# 72x80 frames: a DMG's shades packed 4 to a byte or one a byte; a Game Boy Color
# machine's 8-bit luminance or RGB (core/pixels.py)
DMG_OBS_FORMATS = ("packed2", "u8")
CGB_OBS_FORMATS = ("luma", "rgb")
OBS_FORMATS = DMG_OBS_FORMATS + CGB_OBS_FORMATS


def check_obs_format(obs_format: str, colour: bool) -> None:
    """``ValueError`` unless ``obs_format`` is one a DMG (``colour`` False) or a Game Boy
    Color machine renders."""
    formats = CGB_OBS_FORMATS if colour else DMG_OBS_FORMATS
    if obs_format in formats:
        return
    if obs_format in CGB_OBS_FORMATS + DMG_OBS_FORMATS:
        which = "a Game Boy Color machine" if colour else "a DMG (Game Boy) machine"
        raise ValueError(
            f"obs_format {obs_format!r} is not drawn by {which}: its observations are "
            f"{' or '.join(map(repr, formats))}"
        )
    raise ValueError(f"obs_format must be one of {OBS_FORMATS}, got {obs_format!r}")


@runtime_checkable
class TrainingBackend(Backend, Protocol):
    """What a task, the trainer, eval, L4 and the envs drive: both families of backends
    (Warp: on its device, zero-copy; PyBoy: on the host) implement it, so no caller asks
    which it holds. Tensors in and out live on ``torch_device``."""

    torch_device: Any  # torch.device
    symbols: Any  # the ROM's .sym table (gbxcule.core.symbols.SymbolTable)

    def set_step_end(self, end: Any) -> None:
        """End each step early on a RAM byte (``core/step_end.py``); ``None``: never."""

    def step_frames_torch(self) -> Any:
        """Integer ``[N]``: the frames each env's last step ran (Warp: an int32 view that
        follows the steps; PyBoy: a new int64 tensor)."""
        ...

    def ram_gather(self, addrs: list[tuple[int, int | None]]) -> RamGather:
        """Bind ``(address, bank)`` pairs, one a byte (``bank`` None: the bank the CPU
        maps); raises ``RamGatherError`` for an address this backend cannot read."""
        ...

    @property
    def num_start_states(self) -> int: ...

    def add_start_state(self, source: Any) -> int:
        """A start slot from a ``.state`` / snapshot path or bytes (or a captured state)."""
        ...

    def capture_start_state(self, env: int) -> int:
        """A start slot holding ``env``'s current state."""
        ...

    def clear_start_states(self) -> None: ...

    def start_state(self, slot: int) -> Any:
        """Slot ``slot``'s state, as ``add_start_state`` takes it back (checkpoints)."""
        ...

    def reset_envs(self, mask: Any, *, slots: Any = None) -> None:
        """The envs in ``mask`` (bool ``[N]``) restart from their start slot (``slots``
        int ``[N]``; default slot 0)."""

    def copy_envs(self, src_env_per_dst: Any, mask: Any) -> None:
        """Env ``e`` in ``mask`` becomes a copy of env ``src_env_per_dst[e]``."""

    def screens(self, envs: Any) -> np.ndarray:
        """``uint8 [len(envs), 144, 160]``: those envs' last full frames (shades 0..3; on a
        Game Boy Color machine ``[len(envs), 144, 160, 3]`` RGB)."""
        ...

    def render_obs(self, out: Any, offset: int, obs_format: str) -> None:
        """Every env's last frame downsampled to 72x80 (``obs_format`` in
        ``OBS_FORMATS``), written into the caller's uint8 tensor ``out`` from element
        ``offset`` on, env after env."""
