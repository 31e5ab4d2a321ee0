"""Host side of the start-state cache: device rows of whole env states, restored in one launch.

``StartStateCache`` keeps ``uint32 [capacity, W]`` on the backend's device, one row per
start state in :class:`~gbxcule.backends.machine_state.MachineLayout` order, and the
per-field address table the kernels of ``kernels/start_states.py`` use. Adding a state
from an env (:meth:`store_env`) is one device launch; from host bytes one upload.
:meth:`restore` copies each masked env's chosen row into its fields in one launch whose
cost is the state size per restored env (plus a mask test per unmasked env).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from gbxcule.backends.machine_state import (
    WORD_BYTES,
    MachineLayout,
    MachineState,
    MachineStateError,
)
from gbxcule.backends.warp_base import machine_envs, per_env_arrays


class StartStateError(ValueError):
    """The start-state cache cannot do what was asked (empty, conflicting arguments)."""


def field_tables(m: Any, layout: MachineLayout, device: Any) -> dict[str, wp.array]:
    """The kernels' per-field address table (see ``kernels/start_states.py``) and word map.

    Each env's data of a field must be contiguous, or (the interleaved layout) its elements
    a fixed stride apart in row-major order; a state word read or written whole must be
    4-byte aligned."""
    ptrs, env_strides, items, elem_strides, first_words = [], [], [], [], []
    word_field = np.empty(layout.nbytes // WORD_BYTES, dtype=np.int32)
    for k, (f, (name, arr)) in enumerate(zip(layout.fields, per_env_arrays(m))):
        item = f.dtype.itemsize
        strides = tuple(int(s) for s in arr.strides)
        counts = [int(np.prod(f.shape[d + 1 :], dtype=np.int64)) for d in range(len(f.shape))]
        elem = strides[-1] if len(f.shape) else item
        if list(strides[1:]) != [elem * c for c in counts]:
            raise MachineStateError(
                f"Machine.{name} has strides {strides}; the start-state kernels need each env's "
                "elements a fixed stride apart in row-major order"
            )
        whole = elem == item or item >= WORD_BYTES
        aligned = (arr.ptr or 0) % WORD_BYTES == 0 and strides[0] % WORD_BYTES == 0
        if whole and not (aligned and (elem == item or elem % WORD_BYTES == 0)):
            raise MachineStateError(f"Machine.{name} is not {WORD_BYTES}-byte aligned")
        ptrs.append(arr.ptr)
        env_strides.append(strides[0])
        items.append(item)
        elem_strides.append(elem)
        first = f.offset // WORD_BYTES
        first_words.append(first)
        word_field[first : first + f.nbytes // WORD_BYTES] = k
    return {
        "word_field": wp.array(word_field, dtype=wp.int32, device=device),
        "field_ptr": wp.array(np.array(ptrs, dtype=np.uint64), dtype=wp.uint64, device=device),
        "field_env_stride": wp.array(
            np.array(env_strides, np.int64), dtype=wp.int64, device=device
        ),
        "field_item": wp.array(np.array(items, np.int32), dtype=wp.int32, device=device),
        "field_elem_stride": wp.array(
            np.array(elem_strides, np.int64), dtype=wp.int64, device=device
        ),
        "field_first_word": wp.array(
            np.array(first_words, np.int32), dtype=wp.int32, device=device
        ),
    }


def _table_key(m: Any) -> tuple:
    return tuple((arr.ptr, tuple(arr.strides)) for _, arr in per_env_arrays(m))


class StartStateCache:
    """Start states of one ``Machine`` on its device (see the module doc)."""

    def __init__(self, m: Any, device: Any) -> None:
        self.machine = m
        self.device = wp.get_device(device)
        self.layout = MachineLayout.of(m)
        self.num_envs = machine_envs(m)
        self.words = self.layout.nbytes // WORD_BYTES
        self.count = 0
        self._rows = wp.zeros((1, self.words), dtype=wp.uint32, device=self.device)
        self._tables: dict[str, wp.array] | None = None
        self._table_key: tuple | None = None
        self.chosen = wp.full(self.num_envs, -1, dtype=wp.int32, device=self.device)
        self.restores = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)

    # ---- adding states ------------------------------------------------------------

    def store_env(self, env: int) -> int:
        """A new slot holding the current state of ``env`` (one device launch)."""
        from gbxcule.kernels.start_states import LANES, store_to_cache

        if not 0 <= env < self.num_envs:
            raise IndexError(f"env {env} out of range for num_envs={self.num_envs}")
        slot = self._reserve()
        wp.launch(
            store_to_cache,
            dim=LANES,
            inputs=[self._rows, *self._field_inputs(), env, slot],
            device=self.device,
        )
        return slot

    def add_state(self, state: MachineState) -> int:
        """A new slot holding ``state`` (a dict of this machine's layout)."""
        return self.add_bytes(self.layout.pack(state))

    def add_bytes(self, flat: bytes) -> int:
        """A new slot holding the flat state ``flat`` (:meth:`MachineLayout.pack` bytes)."""
        if len(flat) != self.layout.nbytes:
            raise MachineStateError(
                f"a flat state of this machine is {self.layout.nbytes} bytes, got {len(flat)}"
            )
        words = np.frombuffer(bytes(flat), dtype=np.uint32)
        slot = self._reserve()
        wp.copy(self._rows, wp.array(words, dtype=wp.uint32, device=self.device), slot * self.words)
        return slot

    def state(self, slot: int) -> MachineState:
        """A host copy of the state in ``slot``."""
        self._check_slot(slot)
        return self.layout.unpack(self._rows[slot : slot + 1].numpy().tobytes())

    def clear(self) -> None:
        self.count = 0

    # ---- restoring -----------------------------------------------------------------

    def restore(
        self,
        mask: wp.array,
        *,
        slots: wp.array | None,
        seed: int | None,
        errors: wp.array,
        on_torch: bool,
    ) -> None:
        """Envs with ``mask[e] != 0`` take row ``slots[e]``, or a row drawn from ``seed``."""
        from gbxcule.backends.device_inputs import launch_consuming
        from gbxcule.kernels.start_states import LANES, restore_from_cache

        if self.count == 0:
            raise StartStateError("the start-state cache is empty")
        if (slots is None) == (seed is None):
            raise StartStateError("restore needs exactly one of slots and seed")
        use_seed = int(seed is not None)
        slot_arr = slots if slots is not None else self.chosen  # unread when seeded
        launch_consuming(
            restore_from_cache,
            (self.num_envs, LANES),
            [
                self._rows,
                *self._field_inputs(),
                mask,
                slot_arr,
                self.count,
                use_seed,
                int(seed or 0) & 0x7FFFFFFF,
                self.chosen,
                self.restores,
                errors,
            ],
            self.device,
            on_torch,
        )

    # ---- internals -------------------------------------------------------------------

    def _field_inputs(self) -> list[wp.array]:
        key = _table_key(self.machine)
        if key != self._table_key:
            self._tables = field_tables(self.machine, self.layout, self.device)
            self._table_key = key
        t = self._tables
        assert t is not None
        return [
            t["word_field"],
            t["field_ptr"],
            t["field_env_stride"],
            t["field_item"],
            t["field_elem_stride"],
            t["field_first_word"],
        ]

    def _reserve(self) -> int:
        if self.count == self._rows.shape[0]:
            grown = wp.zeros((2 * self.count, self.words), dtype=wp.uint32, device=self.device)
            wp.copy(grown, self._rows)
            self._rows = grown
        self.count += 1
        return self.count - 1

    def _check_slot(self, slot: int) -> None:
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)):
            raise TypeError(f"a slot is an int, got {type(slot).__name__}")
        if not 0 <= slot < self.count:
            raise IndexError(f"slot {slot} out of range: the cache holds {self.count} state(s)")
