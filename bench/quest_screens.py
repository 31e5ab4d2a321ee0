"""Screenshots of quest on our emulator, checked against PyBoy's frame on the same inputs:
the title, the meadow (map 0) with its HUD just after START, the forest (map 1) and the
beach (map 3) reached through their doors by the shortest walk, and the game-over HUD.

Writes ``<name>.png`` (2x) and ``screens.png`` (all of them side by side) into ``--out``
(default bench/results/quest/screens). ``python -m bench.quest_screens``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from gbxcule.files import write_atomic
from gbxcule.games import bundled_rom_path
from gbxcule.games.quest import art
from gbxcule.games.quest import layout as L
from gbxcule.images import tile_frames, write_png

OUT = Path(__file__).resolve().parent / "results" / "quest" / "screens"
DIRS = (L.BUTTON_RIGHT, L.BUTTON_LEFT, L.BUTTON_UP, L.BUTTON_DOWN)


def script() -> list[tuple[str | None, int]]:
    """(screenshot name or None, "buttons" mask) per 16-frame step."""
    east = [DIRS[d] for d in art.route(0, (15, 15), (31, 15))]
    south = [DIRS[d] for d in art.route(1, (1, 15), (15, 31))]
    steps: list[tuple[str | None, int]] = [(None, 0)] * 5
    steps.append(("title", 0))
    steps += [(None, L.BUTTON_START), (None, 0), ("meadow", 0)]
    steps += [(None, m) for m in east] + [(None, 0), ("forest", 0)]
    steps += [(None, m) for m in south] + [(None, 0), ("beach", 0)]
    return steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    rom = bundled_rom_path("quest")
    kw: dict = {"num_envs": 1, "frames_per_step": 16, "release_after_frames": 8}
    kw["action_codec"] = "buttons"
    ours, ref = WarpVecCpuBackend(rom, threads=1, **kw), PyBoySingleBackend(rom, **kw)
    shots: dict[str, np.ndarray] = {}
    try:
        for b in (ours, ref):
            b.reset(0)
        for name, mask in script():
            for b in (ours, ref):
                b.step(np.array([mask]))
            if name is not None:
                frame = ours.frame_shades(0)
                if not np.array_equal(frame, ref.frame_shades(0)):
                    raise AssertionError(f"{name}: our frame differs from PyBoy's")
                shots[name] = frame
        rng = np.random.default_rng(0)  # a random walk until the slimes take every life
        for _ in range(5_000):
            if int(ours.read_memory(0, L.W_MODE, L.W_MODE + 1)[0]) == L.MODE_OVER:
                break
            mask = DIRS[int(rng.integers(4))]
            for b in (ours, ref):
                b.step(np.array([mask]))
        else:
            raise AssertionError("no game over in 5,000 random steps")
        for b in (ours, ref):
            b.step(np.array([0]))
        shots["game_over"] = ours.frame_shades(0)
        if not np.array_equal(shots["game_over"], ref.frame_shades(0)):
            raise AssertionError("game over: our frame differs from PyBoy's")
    finally:
        ours.close()
        ref.close()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame in shots.items():
        write_png(frame, args.out / f"{name}.png", scale=2)
    write_png(tile_frames(list(shots.values()), len(shots)), args.out / "screens.png", scale=2)
    write_atomic(
        args.out / "README.md",
        (
            "Quest on warp-cpu, each frame equal to PyBoy 2.8.1's: " + ", ".join(shots) + "\n"
        ).encode(),
    )
    print(f"{len(shots)} screens in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
