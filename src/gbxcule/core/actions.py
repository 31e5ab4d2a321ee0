"""Action codecs: an action id per env -> the Game Boy buttons pressed for that step.

A button mask is 8 bits, bit i = ``JOYPAD_BUTTONS[i]`` (right, left, up, down,
a, b, select, start); 0 = nothing pressed. Every backend (PyBoy and Warp) turns
actions into masks through this module and nowhere else.

Codecs:

* ``pokemonred_puffer_v1``: 7 actions, ids 0..6 = down, left, right, up, a, b, start.
* ``buttons``: 256 actions, the id *is* the mask (any combination, 0 = no-op).
* ``buttons:LIST``: a task's own action list, e.g. ``buttons:left,right,a+right,noop``:
  action k presses the k-th entry's buttons (``+`` joins a combo, ``noop`` presses
  nothing). The name is the list, so the codec travels as data between processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Bit i of a button mask; the names are PyBoy's ``PyBoy.button`` names.
JOYPAD_BUTTONS = ("right", "left", "up", "down", "a", "b", "select", "start")
BUTTON_BIT = {name: bit for bit, name in enumerate(JOYPAD_BUTTONS)}


class ActionError(ValueError):
    """Actions the backend cannot run; the message names the problem."""


class ActionShapeError(ActionError):
    """Actions are not one id per env."""


class ActionDtypeError(ActionError, TypeError):
    """Actions are not integers."""


class ActionRangeError(ActionError):
    """An action id is outside ``[0, codec.num_actions)``."""


def buttons_to_mask(names: tuple[str, ...] | list[str]) -> int:
    """Mask of the named buttons; raises ValueError on an unknown name."""
    mask = 0
    for name in names:
        if name not in BUTTON_BIT:
            raise ValueError(f"unknown button {name!r}; known: {', '.join(JOYPAD_BUTTONS)}")
        mask |= 1 << BUTTON_BIT[name]
    return mask


def mask_to_buttons(mask: int) -> tuple[str, ...]:
    """Button names of ``mask`` in ``JOYPAD_BUTTONS`` order."""
    if not 0 <= mask <= 0xFF:
        raise ValueError(f"button mask must be in 0..255, got {mask}")
    return tuple(name for bit, name in enumerate(JOYPAD_BUTTONS) if mask >> bit & 1)


@dataclass(frozen=True)
class ActionCodec:
    name: str
    masks: tuple[int, ...]  # action id -> button mask

    @property
    def num_actions(self) -> int:
        return len(self.masks)

    @property
    def mask_table(self) -> np.ndarray:
        """uint8 [num_actions]: the mask of every action id (for vectorised lookup)."""
        return np.asarray(self.masks, dtype=np.uint8)

    def mask(self, action: int) -> int:
        if not 0 <= int(action) < self.num_actions:
            raise ActionRangeError(
                f"action {action} out of range for codec {self.name!r} "
                f"(valid: 0..{self.num_actions - 1})"
            )
        return self.masks[int(action)]

    def buttons(self, action: int) -> tuple[str, ...]:
        """PyBoy button names pressed by ``action``."""
        return mask_to_buttons(self.mask(action))

    def to_masks(self, actions: np.ndarray) -> np.ndarray:
        """uint8 masks of already validated integer actions (any shape)."""
        return self.mask_table[np.asarray(actions)]


_POKEMONRED_PUFFER_V1 = ("down", "left", "right", "up", "a", "b", "start")

CODECS: dict[str, ActionCodec] = {
    "pokemonred_puffer_v1": ActionCodec(
        "pokemonred_puffer_v1", tuple(buttons_to_mask([b]) for b in _POKEMONRED_PUFFER_V1)
    ),
    "buttons": ActionCodec("buttons", tuple(range(256))),
}


NOOP = "noop"
LIST_PREFIX = "buttons:"


def _entry_mask(entry: Any) -> int:
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"an action must be a button name or combo like 'a+right', got {entry!r}")
    names = [part.strip().lower() for part in entry.split("+")]
    if names == [NOOP]:
        return 0
    if NOOP in names:
        raise ValueError(f"'noop' stands alone, got {entry!r}")
    return buttons_to_mask(names)


def codec_from_buttons(actions: Any) -> ActionCodec:
    """A codec for an action list such as ``["left", "right", "a+right", "noop"]``."""
    if isinstance(actions, str) or not hasattr(actions, "__iter__"):
        raise ValueError(f"an action list must be a list of button combos, got {actions!r}")
    entries = list(actions)
    if not entries:
        raise ValueError("an action list needs at least one action")
    masks = tuple(_entry_mask(e) for e in entries)
    if len(set(masks)) != len(masks):
        raise ValueError(f"the action list {entries!r} presses the same buttons twice")
    spelled = ",".join("+".join(mask_to_buttons(m)) or NOOP for m in masks)
    return ActionCodec(LIST_PREFIX + spelled, masks)


def get_codec(name: str | ActionCodec) -> ActionCodec:
    """The codec called ``name`` (a codec passes through; ``buttons:LIST`` names a list);
    ValueError on an unknown name."""
    if isinstance(name, ActionCodec):
        return name
    if isinstance(name, str) and name.startswith(LIST_PREFIX):
        return codec_from_buttons(name[len(LIST_PREFIX) :].split(","))
    try:
        return CODECS[name]
    except (KeyError, TypeError):
        known = ", ".join([*CODECS, LIST_PREFIX + "LIST"])
        raise ValueError(f"unknown action codec {name!r}; known: {known}") from None


def validate_actions(actions: Any, num_envs: int, codec: str | ActionCodec) -> np.ndarray:
    """``actions`` as an int64 array [num_envs] of valid ids for ``codec``, or a specific error.

    Accepts anything NumPy can view as an array (lists, NumPy arrays, CPU tensors).
    """
    codec = get_codec(codec)
    try:
        arr = np.asarray(actions)
    except Exception as exc:  # noqa: BLE001 - e.g. a CUDA tensor; report what it was
        raise ActionDtypeError(
            f"actions must be an integer array, got {type(actions).__name__}: {exc}"
        ) from exc
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ActionDtypeError(f"actions must have an integer dtype, got {arr.dtype}")
    if arr.shape != (num_envs,):
        raise ActionShapeError(
            f"actions must have shape ({num_envs},) (one id per env), got {arr.shape}"
        )
    bad = first_bad_action(arr, codec)
    if bad is not None:
        raise ActionRangeError(
            f"action {int(arr[bad])} for env {bad} out of range for codec {codec.name!r} "
            f"(valid: 0..{codec.num_actions - 1})"
        )
    return arr.astype(np.int64, copy=False)


def first_bad_action(arr: np.ndarray, codec: ActionCodec) -> int | None:
    """Index of the first id in the integer array ``arr`` outside ``codec``'s range, or None."""
    if arr.size == 0 or (int(arr.min()) >= 0 and int(arr.max()) < codec.num_actions):
        return None
    return int(np.flatnonzero((arr < 0) | (arr >= codec.num_actions))[0])
