"""One env's full emulator state on the host: every per-env field of the ``Machine``.

A :data:`MachineState` is a plain dict, field name -> that env's values as a NumPy array
(the env axis removed: ``pc`` is a 0-d int32 array, ``mem`` a 1-D uint8 row,
``line_latch`` ``[144, 16]``). Fields come from ``warp_base.per_env_arrays``, so a field
added to ``Machine`` is captured with no change here.

:class:`MachineLayout` fixes how a state is laid out as flat bytes: the fields in
``Machine`` order, each as its little-endian values. The flat form is what the device
start-state cache holds (one row per state, see ``kernels/start_states.py``) and what
:meth:`MachineLayout.pack` / :meth:`~MachineLayout.unpack` produce. It is an in-process
format (host byte order, which is little-endian on every device Warp runs on): valid
only for the same build and cartridge (same ``signature``). Files that
must outlive a build are snapshots (``WarpVecBase.save_snapshot``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import warp as wp

from gbxcule.backends.warp_base import machine_envs, per_env_arrays
from gbxcule.kernels.state import MachineState

__all__ = [
    "FieldLayout",
    "MachineLayout",
    "MachineState",
    "MachineStateError",
    "capture_env",
    "copy_state",
    "restore_env",
]
WORD_BYTES = 4  # the start-state kernels copy 32-bit words


class MachineStateError(ValueError):
    """A state that does not fit this machine's layout (fields, dtypes, shapes, length)."""


@dataclass(frozen=True)
class FieldLayout:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]  # per env (the env axis removed)
    offset: int  # byte offset in the flat state
    nbytes: int


@dataclass(frozen=True)
class MachineLayout:
    fields: tuple[FieldLayout, ...]
    nbytes: int

    @classmethod
    def of(cls, m: Any) -> MachineLayout:
        """The layout of ``m``'s per-env fields (same for every env of one machine)."""
        out = []
        offset = 0
        for name, arr in per_env_arrays(m):
            dtype = np.dtype(wp.dtype_to_numpy(arr.dtype))
            shape = tuple(int(s) for s in arr.shape[1:])
            nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
            if nbytes % WORD_BYTES:
                raise MachineStateError(
                    f"Machine.{name} holds {nbytes} bytes per env; the start-state cache copies "
                    f"{WORD_BYTES}-byte words, so every field must be a multiple of {WORD_BYTES}"
                )
            out.append(FieldLayout(name, dtype, shape, offset, nbytes))
            offset += nbytes
        return cls(tuple(out), offset)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def signature(self) -> str:
        """sha256 of the field names, dtypes and shapes: equal layouts pack identically."""
        text = ";".join(f"{f.name}:{f.dtype.str}:{f.shape}" for f in self.fields)
        return hashlib.sha256(text.encode()).hexdigest()

    def check(self, state: MachineState) -> None:
        """Raise :class:`MachineStateError` unless ``state`` has exactly this layout's fields."""
        if not isinstance(state, dict):
            raise MachineStateError(f"a machine state is a dict, got {type(state).__name__}")
        missing = [n for n in self.names if n not in state]
        extra = [n for n in state if n not in self.names]
        if missing or extra:
            raise MachineStateError(
                f"machine state fields do not match: missing {missing}, unexpected {extra}"
            )
        for f in self.fields:
            value = np.asarray(state[f.name])
            if value.shape != f.shape or value.dtype != f.dtype:
                raise MachineStateError(
                    f"field {f.name}: want {f.dtype} {f.shape}, got {value.dtype} {value.shape}"
                )

    def pack(self, state: MachineState) -> bytes:
        """The flat bytes of ``state`` (checked against this layout)."""
        self.check(state)
        return b"".join(np.ascontiguousarray(state[f.name]).tobytes() for f in self.fields)

    def unpack(self, data: bytes | bytearray | memoryview | np.ndarray) -> MachineState:
        """The state whose flat bytes are ``data`` (a copy; ``len(data)`` must be ``nbytes``)."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8)
        if raw.size != self.nbytes:
            raise MachineStateError(
                f"a flat machine state of this layout is {self.nbytes} bytes, got {raw.size}"
            )
        out: MachineState = {}
        for f in self.fields:
            chunk = raw[f.offset : f.offset + f.nbytes]
            out[f.name] = chunk.view(f.dtype).reshape(f.shape).copy()
        return out


def capture_env(m: Any, env: int) -> MachineState:
    """A host copy of every per-env field of ``env`` (synchronises with the device)."""
    num_envs = _num_envs(m)
    if not 0 <= env < num_envs:
        raise IndexError(f"env {env} out of range for num_envs={num_envs}")
    return {name: arr[env : env + 1].numpy()[0].copy() for name, arr in per_env_arrays(m)}


def restore_env(m: Any, env: int, state: MachineState) -> None:
    """Write ``state`` (a :func:`capture_env` dict of the same layout) into ``env``."""
    num_envs = _num_envs(m)
    if not 0 <= env < num_envs:
        raise IndexError(f"env {env} out of range for num_envs={num_envs}")
    MachineLayout.of(m).check(state)
    for name, arr in per_env_arrays(m):
        arr[env : env + 1].assign(np.asarray(state[name])[None])


def copy_state(state: MachineState) -> MachineState:
    return {name: np.array(value, copy=True) for name, value in state.items()}


def _num_envs(m: Any) -> int:
    return machine_envs(m)
