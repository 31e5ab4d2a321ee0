"""Climb's start states: PyBoy savestates made on first use, as a user makes theirs.

``play``: START pressed on frame 60 of the title, the state saved on the first frame of play.
``random-K`` (K = 0..31, training) and ``heldout-K`` (K = 0..3, evaluation): the same recipe
with START on other frames, so DIV and the frame counter seed other levels. A policy trained
on 8 levels learned them and not climbing (issue #45, ``bench.genre_learning``): 32.
"""

from __future__ import annotations

import io

from gbxcule.games.climb import layout as L

TITLE_FRAMES = 60
RANDOM_STARTS = 32
HELDOUT_STARTS = 4
FRAME_STRIDE = 7  # frames between the START frames of neighbouring training starts
HELDOUT_FIRST, HELDOUT_STRIDE = 123, 13  # not on a training start's frame


def start_names() -> tuple[str, ...]:
    return (
        "play",
        *(f"random-{k}" for k in range(RANDOM_STARTS)),
        *(f"heldout-{k}" for k in range(HELDOUT_STARTS)),
    )


def start_frame(name: str) -> int:
    """The title frame start ``name`` presses START on."""
    if name == "play":
        return TITLE_FRAMES
    kind, _, k = name.partition("-")
    if kind in ("random", "heldout") and k.isdigit():
        n = int(k)
        if kind == "random" and n < RANDOM_STARTS:
            return TITLE_FRAMES + FRAME_STRIDE * (n + 1)
        if kind == "heldout" and n < HELDOUT_STARTS:
            return HELDOUT_FIRST + HELDOUT_STRIDE * (n + 1)
    raise ValueError(f"climb has no start {name!r}; its starts: {', '.join(start_names())}")


def make_starts(rom: bytes, names: list[str]) -> dict[str, bytes]:
    """The PyBoy 2.8.1 savestates of starts ``names``, made on one PyBoy (each from its
    power-on state)."""
    from gbxcule.backends.pyboy_backend import make_pyboy

    frames = {name: start_frame(name) for name in names}
    pyboy = make_pyboy(rom)
    try:
        power_on = io.BytesIO()
        pyboy.save_state(power_on)
        return {name: _start(pyboy, power_on, frame) for name, frame in frames.items()}
    finally:
        pyboy.stop(save=False)


def _start(pyboy, power_on: io.BytesIO, frame: int) -> bytes:
    power_on.seek(0)
    pyboy.load_state(power_on)
    pyboy.tick(frame, False)
    pyboy.button("start", 4)
    for _ in range(30):
        pyboy.tick(1, False)
        if pyboy.memory[L.W_MODE] == L.MODE_PLAY:
            break
    else:
        raise RuntimeError("climb did not start play after START")
    out = io.BytesIO()
    pyboy.save_state(out)
    return out.getvalue()
