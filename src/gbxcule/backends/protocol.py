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
