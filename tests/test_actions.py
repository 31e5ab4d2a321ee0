"""Action codecs: ids -> button masks and PyBoy names, and validation of action arrays."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.core.actions import (
    JOYPAD_BUTTONS,
    ActionDtypeError,
    ActionError,
    ActionRangeError,
    ActionShapeError,
    buttons_to_mask,
    get_codec,
    mask_to_buttons,
    validate_actions,
)

pytestmark = pytest.mark.l1


def test_button_bit_order() -> None:
    assert JOYPAD_BUTTONS == ("right", "left", "up", "down", "a", "b", "select", "start")
    assert buttons_to_mask(["right"]) == 0x01
    assert buttons_to_mask(["down", "a"]) == 0x18
    assert buttons_to_mask(["start"]) == 0x80
    assert mask_to_buttons(0x81) == ("right", "start")
    assert mask_to_buttons(0) == ()


def test_pokemonred_puffer_v1() -> None:
    codec = get_codec("pokemonred_puffer_v1")
    assert codec.num_actions == 7
    names = [codec.buttons(a) for a in range(7)]
    assert names == [("down",), ("left",), ("right",), ("up",), ("a",), ("b",), ("start",)]
    assert codec.masks == (0x08, 0x02, 0x01, 0x04, 0x10, 0x20, 0x80)
    assert codec.to_masks(np.array([[0, 6], [2, 4]])).tolist() == [[0x08, 0x80], [0x01, 0x10]]


def test_buttons_codec_is_identity_on_masks() -> None:
    codec = get_codec("buttons")
    assert codec.num_actions == 256
    assert codec.mask(0) == 0 and codec.buttons(0) == ()
    assert codec.buttons(0b1100_0011) == ("right", "left", "select", "start")
    assert np.array_equal(codec.mask_table, np.arange(256, dtype=np.uint8))


def test_unknown_names_refused() -> None:
    with pytest.raises(ValueError, match="unknown action codec 'nope'"):
        get_codec("nope")
    with pytest.raises(ValueError, match="unknown button 'turbo'"):
        buttons_to_mask(["turbo"])
    with pytest.raises(ValueError, match="0..255"):
        mask_to_buttons(256)
    with pytest.raises(ActionRangeError):
        get_codec("pokemonred_puffer_v1").mask(7)


def test_validate_accepts_lists_and_int_arrays() -> None:
    out = validate_actions([0, 6, 3], 3, "pokemonred_puffer_v1")
    assert out.dtype == np.int64 and out.tolist() == [0, 6, 3]
    out = validate_actions(np.array([255, 0], dtype=np.uint8), 2, "buttons")
    assert out.tolist() == [255, 0]


@pytest.mark.parametrize(
    ("actions", "num_envs", "error", "message"),
    [
        (np.zeros((2, 1), dtype=np.int64), 2, ActionShapeError, r"shape \(2,\)"),
        (np.zeros(3, dtype=np.int64), 2, ActionShapeError, r"got \(3,\)"),
        (5, 1, ActionShapeError, r"got \(\)"),
        (np.zeros(2, dtype=np.float32), 2, ActionDtypeError, "integer dtype"),
        (np.array([True, False]), 2, ActionDtypeError, "integer dtype"),
        (["a", "b"], 2, ActionDtypeError, "integer dtype"),
        (np.array([0, 7]), 2, ActionRangeError, "action 7 for env 1"),
        (np.array([-1, 0]), 2, ActionRangeError, "action -1 for env 0"),
    ],
)
def test_validate_refuses(actions, num_envs, error, message) -> None:
    with pytest.raises(error, match=message):
        validate_actions(actions, num_envs, "pokemonred_puffer_v1")
    assert issubclass(error, ActionError) and issubclass(error, ValueError)


def test_validate_range_depends_on_codec() -> None:
    validate_actions(np.array([200]), 1, "buttons")
    with pytest.raises(ActionRangeError, match="valid: 0..6"):
        validate_actions(np.array([200]), 1, "pokemonred_puffer_v1")
