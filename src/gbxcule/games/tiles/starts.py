"""Tiles' start states: PyBoy savestates made on first use, as a user makes theirs.

Each: from power-on, the title's menu driven to the difficulty (DOWN pressed on frames 20
and 40 as needed), START pressed on a fixed frame (so DIV seeds a fixed puzzle), then the
state saved DRAW_FRAMES frames into play (the play screen and the whole board drawn; no
button pressed since START).

``easy``, ``medium``, ``hard``: START on frame TITLE_FRAMES. ``easy-K``, ``medium-K`` (K =
0..7, training) and ``heldout-easy-K``, ``heldout-medium-K`` (K = 0..3, evaluation): START
on other frames (RANDOM_FRAMES, HELDOUT_FRAMES), so other shuffles.
"""

from __future__ import annotations

import io

from gbxcule.games.tiles import layout as L

TITLE_FRAMES = 60
DOWN_FRAMES = (20, 40)  # the k-th DOWN press (MEDIUM: the first; HARD: both)
DRAW_FRAMES = 4  # the board is redrawn a row a frame
RANDOM_STARTS = 8
HELDOUT_STARTS = 4
# (first START frame, frames between): picked so that all 27 starts' puzzles differ (EASY
# has only a couple of dozen boards; tests/test_game_tiles.py checks it)
RANDOM_FRAMES = (120, 6)
HELDOUT_FRAMES = (300, 4)
_DIFFICULTY = {"easy": 0, "medium": 1, "hard": 2}


def start_names() -> tuple[str, ...]:
    return (
        "easy",
        "medium",
        "hard",
        *(f"{d}-{k}" for d in ("easy", "medium") for k in range(RANDOM_STARTS)),
        *(f"heldout-{d}-{k}" for d in ("easy", "medium") for k in range(HELDOUT_STARTS)),
    )


def _recipe(name: str) -> tuple[int, int]:
    """(difficulty, START frame) of start ``name``."""
    if name in _DIFFICULTY:
        return _DIFFICULTY[name], TITLE_FRAMES
    heldout = name.startswith("heldout-")
    kind, _, k = name.removeprefix("heldout-").partition("-")
    count = HELDOUT_STARTS if heldout else RANDOM_STARTS
    if kind in ("easy", "medium") and k.isdigit() and int(k) < count:
        first, spacing = HELDOUT_FRAMES if heldout else RANDOM_FRAMES
        return _DIFFICULTY[kind], first + spacing * int(k)
    raise ValueError(f"tiles has no start {name!r}; its starts: {', '.join(start_names())}")


def make_starts(rom: bytes, names: list[str]) -> dict[str, bytes]:
    """The PyBoy 2.8.1 savestates of starts ``names``, made on one PyBoy (each from its
    power-on state)."""
    from gbxcule.backends.pyboy_backend import make_pyboy

    recipes = {name: _recipe(name) for name in names}
    pyboy = make_pyboy(rom)
    try:
        power_on = io.BytesIO()
        pyboy.save_state(power_on)
        return {name: _play(pyboy, power_on, *recipe) for name, recipe in recipes.items()}
    finally:
        pyboy.stop(save=False)


def _play(pyboy, power_on: io.BytesIO, difficulty: int, start_frame: int) -> bytes:
    power_on.seek(0)
    pyboy.load_state(power_on)
    frame = 0
    for down_frame in DOWN_FRAMES[:difficulty]:
        pyboy.tick(down_frame - frame, False)
        pyboy.button("down", 8)
        frame = down_frame
    pyboy.tick(start_frame - frame, False)
    pyboy.button("start", 8)
    for _ in range(30):
        pyboy.tick(1, False)
        if pyboy.memory[L.W_MODE] == L.MODE_PLAY:
            break
    else:
        raise RuntimeError("tiles did not start play after START")
    if pyboy.memory[L.W_DIFFICULTY] != difficulty:
        raise RuntimeError(f"tiles' menu is at {pyboy.memory[L.W_DIFFICULTY]}, not {difficulty}")
    pyboy.tick(DRAW_FRAMES, True)  # the last frame rendered: the screen a state shows
    out = io.BytesIO()
    pyboy.save_state(out)
    return out.getvalue()
