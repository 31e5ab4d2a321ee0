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
  An entry may carry its own timing, ``a hold=2 frames=60``: its buttons held for
  ``hold`` frames and the step ``frames`` long (either left out: the backend's
  ``release_after_frames`` / ``frames_per_step``).

The step kernel reads one int32 word per env (``word_table``): the mask in bits 0-7,
the hold in bits 8-15 and the step's length in bits 16-30 (0: the backend's).
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


MAX_HOLD_FRAMES = 0xFF
MAX_STEP_FRAMES = 0x7FFF


@dataclass(frozen=True)
class ActionCodec:
    name: str
    masks: tuple[int, ...]  # action id -> button mask
    holds: tuple[int, ...] = ()  # action id -> frames held (0: the backend's), or ()
    lengths: tuple[int, ...] = ()  # action id -> frames in its step (0: the backend's), or ()

    @property
    def num_actions(self) -> int:
        return len(self.masks)

    @property
    def mask_table(self) -> np.ndarray:
        """uint8 [num_actions]: the mask of every action id (for vectorised lookup)."""
        return np.asarray(self.masks, dtype=np.uint8)

    @property
    def timed(self) -> bool:
        """Whether some action has a hold or length of its own."""
        return any(self.holds) or any(self.lengths)

    def hold(self, action: int, default: int) -> int:
        return (self.holds[int(action)] if self.holds else 0) or default

    def length(self, action: int, default: int) -> int:
        return (self.lengths[int(action)] if self.lengths else 0) or default

    @property
    def word_table(self) -> np.ndarray:
        """int32 [num_actions]: what the step kernel reads per env (module doc)."""
        words = np.asarray(self.masks, dtype=np.int32)
        if self.holds:
            words |= np.asarray(self.holds, dtype=np.int32) << 8
        if self.lengths:
            words |= np.asarray(self.lengths, dtype=np.int32) << 16
        return words

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

    def to_words(self, actions: np.ndarray) -> np.ndarray:
        """int32 step words (module doc) of already validated integer actions."""
        return self.word_table[np.asarray(actions)]


_POKEMONRED_PUFFER_V1 = ("down", "left", "right", "up", "a", "b", "start")

CODECS: dict[str, ActionCodec] = {
    "pokemonred_puffer_v1": ActionCodec(
        "pokemonred_puffer_v1", tuple(buttons_to_mask([b]) for b in _POKEMONRED_PUFFER_V1)
    ),
    "buttons": ActionCodec("buttons", tuple(range(256))),
}


NOOP = "noop"
LIST_PREFIX = "buttons:"


@dataclass(frozen=True)
class Action:
    """An action list entry with its own timing: ``Action("a", hold=2, frames=60)`` is
    the entry ``"a hold=2 frames=60"`` (None: the backend's)."""

    buttons: str
    hold: int | None = None
    frames: int | None = None

    def __str__(self) -> str:
        text = self.buttons
        if self.hold is not None:
            text += f" hold={self.hold}"
        if self.frames is not None:
            text += f" frames={self.frames}"
        return text


def _entry(entry: Any) -> tuple[int, int, int]:
    """``(mask, hold, length)`` of an entry such as ``"a+right"`` or ``"a hold=2 frames=60"``."""
    if isinstance(entry, Action):
        entry = str(entry)
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"an action must be a button name or combo like 'a+right', got {entry!r}")
    combo, *options = entry.split()
    timing = {"hold": 0, "frames": 0}
    for option in options:
        key, _, value = option.partition("=")
        if key not in timing or not value.isdigit():
            raise ValueError(
                f"action {entry!r}: {option!r} is not hold=N or frames=N (frames held, "
                "frames in the step)"
            )
        timing[key] = int(value)
    hold, length = timing["hold"], timing["frames"]
    if "hold=" in entry and not 1 <= hold <= MAX_HOLD_FRAMES:
        raise ValueError(f"action {entry!r}: hold must be in 1..{MAX_HOLD_FRAMES}")
    if "frames=" in entry and not 1 <= length <= MAX_STEP_FRAMES:
        raise ValueError(f"action {entry!r}: frames must be in 1..{MAX_STEP_FRAMES}")
    if hold and length and hold > length:
        raise ValueError(f"action {entry!r}: hold ({hold}) is longer than its step ({length})")
    names = [part.strip().lower() for part in combo.split("+")]
    if names == [NOOP]:
        return 0, hold, length
    if NOOP in names:
        raise ValueError(f"'noop' stands alone, got {entry!r}")
    return buttons_to_mask(names), hold, length


def _spelled(mask: int, hold: int, length: int) -> str:
    text = "+".join(mask_to_buttons(mask)) or NOOP
    if hold:
        text += f" hold={hold}"
    if length:
        text += f" frames={length}"
    return text


def codec_from_buttons(actions: Any) -> ActionCodec:
    """A codec for an action list such as ``["left", "right", "a+right", "noop"]``."""
    if isinstance(actions, str) or not hasattr(actions, "__iter__"):
        raise ValueError(f"an action list must be a list of button combos, got {actions!r}")
    entries = list(actions)
    if not entries:
        raise ValueError("an action list needs at least one action")
    parsed = [_entry(e) for e in entries]
    if len(set(parsed)) != len(parsed):
        raise ValueError(f"the action list {entries!r} has the same action twice")
    masks, holds, lengths = (tuple(col) for col in zip(*parsed, strict=True))
    name = LIST_PREFIX + ",".join(_spelled(*p) for p in parsed)
    if not any(holds) and not any(lengths):
        holds = lengths = ()
    return ActionCodec(name, masks, holds, lengths)


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


def check_step_timing(codec: Any, frames_per_step: int, release_after: int, end: Any) -> None:
    """Every action's buttons are released within its own step: each hold fits its step's
    frames and, with an early end (``core/step_end.py``), its ``min_frames``; else a
    ``ValueError`` naming the action. (A release left pending into later steps would
    hold the next steps' presses, and PyBoy's event queue and ours would part.)"""
    longest = (0, -1)  # (hold, action)
    for action in range(codec.num_actions):
        if not codec.masks[action]:
            continue  # presses nothing: nothing to release
        hold = codec.hold(action, release_after)
        length = codec.length(action, frames_per_step)
        if hold > length:
            raise ValueError(
                f"action {action} of codec {codec.name!r} holds its buttons {hold} frames in a "
                f"step of {length}: give it hold=N <= frames"
            )
        longest = max(longest, (hold, action))
    if end is not None and longest[0] > end.min_frames:
        hold, action = longest
        raise ValueError(
            f"StepEnd.min_frames={end.min_frames} is shorter than action {action}'s hold "
            f"({hold} frames, codec {codec.name!r}): a step could end with its button still "
            f"held; set min_frames >= {hold}"
        )
