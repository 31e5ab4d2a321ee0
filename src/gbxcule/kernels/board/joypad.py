"""Joypad as PyBoy 2.8.1 models it, and the step's press/release schedule.

PyBoy computes P1 only when it is written: the select bits pick the directional
(P14 low) or button (P15 low) nibble, and the result is stored with bits 4-5
reading 0 and bits 6-7 reading 1 (both groups deselected: $CF; both selected:
$CF with no buttons). Pressing a button does not change P1 until the next write.
A press raises the joypad interrupt when it takes any button from released to
pressed, whatever the select bits.

Inputs follow ``PyBoy.button(name, delay)``: at the start of a step's first
frame the step's buttons are pressed; the matching releases happen at the start
of the frame ``release_after`` frames later, before that frame's own presses.
Each step with buttons holds one pending-release slot until then, so up to
``ceil(release_after / frames_per_step)`` slots are in use (``joypad_slots``).

``joypad_power_on`` sets PyBoy's power-on values; ``joypad_from_pyboy`` /
``joypad_to_pyboy`` (host side, at the end) map PyBoy's joypad block of a save state.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.pyboy_state import JoypadState
from gbxcule.kernels.board.ioregs import INT_JOYPAD, P1, raise_interrupt, set_reg
from gbxcule.kernels.state import JOY_DIR, JOY_STD, Machine, MachineState, Unit, put_fields

wp.set_module_options({"enable_backward": False})

JOY_QUEUE = 8  # pending-release slots per env (columns of joy_rel_mask / joy_rel_wait)


def joypad_slots(frames_per_step: int, release_after_frames: int) -> int:
    """Pending-release slots a schedule needs; raises ValueError if it cannot be run."""
    if frames_per_step < 1:
        raise ValueError(f"frames_per_step must be >= 1, got {frames_per_step}")
    if release_after_frames < 0:
        raise ValueError(f"release_after_frames must be >= 0, got {release_after_frames}")
    slots = max(1, -(-release_after_frames // frames_per_step))
    if slots > JOY_QUEUE:
        raise ValueError(
            f"release_after_frames={release_after_frames} with frames_per_step={frames_per_step}"
            f" keeps {slots} releases pending; at most {JOY_QUEUE} are supported"
        )
    return slots


@wp.func
def p1_write(m: wp.ref[Machine], i: int, value: int):
    i32 = m.i32
    p14 = (value >> 4) & 1
    p15 = (value >> 5) & 1
    result = (value | 0xCF) & 0xFF
    if p14 == 1 and p15 == 1:
        result = 0x0F
    elif p14 == 0 and p15 == 1:
        result = result & i32[i, JOY_DIR]
    elif p14 == 1 and p15 == 0:
        result = result & i32[i, JOY_STD]
    set_reg(m, i, P1, result | 0xC0)


@wp.func
def press_buttons(m: wp.ref[Machine], i: int, mask: int):
    """Press the buttons of ``mask`` (bit order right, left, up, down, a, b, select, start)."""
    i32 = m.i32
    old_dir = i32[i, JOY_DIR]
    old_std = i32[i, JOY_STD]
    new_dir = old_dir & ~(mask & 0xF)
    new_std = old_std & ~((mask >> 4) & 0xF)
    i32[i, JOY_DIR] = new_dir
    i32[i, JOY_STD] = new_std
    if ((old_dir ^ new_dir) & old_dir) != 0 or ((old_std ^ new_std) & old_std) != 0:
        raise_interrupt(m, i, INT_JOYPAD)


@wp.func
def release_buttons(m: wp.ref[Machine], i: int, mask: int):
    i32 = m.i32
    i32[i, JOY_DIR] = i32[i, JOY_DIR] | (mask & 0xF)
    i32[i, JOY_STD] = i32[i, JOY_STD] | ((mask >> 4) & 0xF)


@wp.func
def joypad_frame_start(m: wp.ref[Machine], i: int, press: int, release_after: int):
    """Input events at the start of a frame: due releases, then ``press`` (a mask, 0 = none)."""
    slots = m.joy_rel_mask.shape[1]
    for k in range(slots):
        mask = m.joy_rel_mask[i, k]
        if mask != 0 and m.joy_rel_wait[i, k] == 0:
            release_buttons(m, i, mask)
            m.joy_rel_mask[i, k] = 0
    if press != 0:
        press_buttons(m, i, press)
        if release_after == 0:
            release_buttons(m, i, press)
        else:
            placed = wp.int32(0)
            for k in range(slots):
                if placed == 0 and m.joy_rel_mask[i, k] == 0:
                    m.joy_rel_mask[i, k] = press
                    m.joy_rel_wait[i, k] = release_after
                    placed = 1


@wp.func
def joypad_frame_end(m: wp.ref[Machine], i: int):
    slots = m.joy_rel_mask.shape[1]
    for k in range(slots):
        if m.joy_rel_mask[i, k] != 0:
            m.joy_rel_wait[i, k] = m.joy_rel_wait[i, k] - 1


@wp.func
def joypad_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``Interaction()``: every button released, no release pending."""
    i32 = m.i32
    i32[i, JOY_DIR] = 0xF
    i32[i, JOY_STD] = 0xF
    for k in range(m.joy_rel_mask.shape[1]):
        m.joy_rel_mask[i, k] = 0
        m.joy_rel_wait[i, k] = 0


# ---- PyBoy save state (host side) ------------------------------------------------------

JOYPAD_UNSAVED = frozenset({"joy_rel_mask", "joy_rel_wait"})  # the step's release schedule


def joypad_from_pyboy(joypad: JoypadState, st: MachineState) -> None:
    """Load PyBoy's button nibbles (0 = pressed). P1 is in the raw IO page (``bus.py``)."""
    put_fields(st, {"joy_dir": joypad.directional & 0xF, "joy_std": joypad.standard & 0xF})


def joypad_to_pyboy(st: MachineState) -> JoypadState:
    return JoypadState(directional=int(st["joy_dir"]), standard=int(st["joy_std"]))


JOYPAD = Unit(
    "joypad",
    joypad_power_on,
    load=lambda state, st, cart: joypad_from_pyboy(state.joypad, st),
    save=lambda st, cart, layout: {"joypad": joypad_to_pyboy(st)},
    unsaved=JOYPAD_UNSAVED,
    arrays={"joy_rel_mask": (JOY_QUEUE,), "joy_rel_wait": (JOY_QUEUE,)},
)
