"""Quest's start states: PyBoy savestates made on first use, as a user makes theirs.

``play``: START pressed on frame 60 of the title, the state on the first frame of play.
``random-K`` (K = 0..11, training) and ``heldout-K`` (K = 0..3, evaluation): START on
another frame (so DIV seeds another game), then a seeded random walk of up to 150 steps
of 24 frames (a direction held 8 frames), kept while the player still has every life: a
pool of starts at other places, maps, gems, slimes and generator states.
"""

from __future__ import annotations

import io

import numpy as np

from gbxcule.games.quest import layout as L

TITLE_FRAMES = 60
RANDOM_STARTS = 12
HELDOUT_STARTS = 4
MAX_WALK = 150
_DIRS = ("right", "left", "up", "down")


def start_names() -> tuple[str, ...]:
    return (
        "play",
        *(f"random-{k}" for k in range(RANDOM_STARTS)),
        *(f"heldout-{k}" for k in range(HELDOUT_STARTS)),
    )


def _recipe(name: str) -> tuple[int, int | None, int]:
    """(START frame, walk seed, walk steps) of start ``name``."""
    if name == "play":
        return TITLE_FRAMES, None, 0
    kind, _, k = name.partition("-")
    if kind in ("random", "heldout") and k.isdigit():
        n = int(k)
        if n < (RANDOM_STARTS if kind == "random" else HELDOUT_STARTS):
            seed = n if kind == "random" else 1_000 + n
            return TITLE_FRAMES + 7 * seed % 97, seed, 30 + (37 * seed) % (MAX_WALK - 29)
    raise ValueError(f"quest has no start {name!r}; its starts: {', '.join(start_names())}")


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


def _play(pyboy, power_on: io.BytesIO, start_frame: int, seed: int | None, steps: int) -> bytes:
    dirs = [_DIRS[int(k)] for k in np.random.default_rng(seed).integers(4, size=steps)]
    kept = _walk(pyboy, power_on, start_frame, dirs)
    if kept < steps:  # a slime hit the player: replay the walk up to the step before
        _walk(pyboy, power_on, start_frame, dirs[:kept])
    out = io.BytesIO()
    pyboy.save_state(out)  # a save costs ~40 ms: one a start
    return out.getvalue()


def _walk(pyboy, power_on: io.BytesIO, start_frame: int, dirs: list[str]) -> int:
    """From power-on: START on ``start_frame``, then ``dirs`` (24 frames a step, held 8);
    the steps taken before the first one that cost a life."""
    power_on.seek(0)
    pyboy.load_state(power_on)
    pyboy.tick(start_frame, False)
    pyboy.button("start", 4)
    for _ in range(30):
        pyboy.tick(1, False)
        if pyboy.memory[L.W_MODE] == L.MODE_PLAY:
            break
    else:
        raise RuntimeError("quest did not start play after START")
    pyboy.tick(2, False)  # the map is on screen
    for k, d in enumerate(dirs):
        pyboy.button(d, 8)
        pyboy.tick(24, False)
        if pyboy.memory[L.W_LIVES] < L.START_LIVES or pyboy.memory[L.W_INVULN]:
            return k
    return len(dirs)
