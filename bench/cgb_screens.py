"""Game Boy Color screens beside PyBoy's: the bundled demo-colour after a greedy walk to the
coins, and quest on a Game Boy Color machine (``quest-cgb``: DMG code, the CGB boot's
palettes) after START and a walk, each drawn by our CPU backend (left) and PyBoy
``cgb=True`` (right), at 2x.

Writes ``--out`` (default bench/results/cgb-screens): one PNG per ROM and ``summary.md``
(whether each pair is identical, the colours on screen).

Usage: python -m bench.cgb_screens [--steps 120] [--out DIR]
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
from PIL import Image

from gbxcule.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results" / "cgb-screens"


DOWN, LEFT, RIGHT, UP, START = 0, 1, 2, 3, 6  # pokemonred_puffer_v1


def greedy(mem: np.ndarray) -> int:
    """The demo's direction toward the nearest coin (``mem``: C000-C1FF; the world wraps)."""
    from gbxcule.demo import game

    px_, py_ = int(mem[game.W_PLAYER_X - 0xC000]), int(mem[game.W_PLAYER_Y - 0xC000])
    at = game.W_COINS - 0xC000
    coins = mem[at : at + 2 * game.NUM_COINS].reshape(-1, 2).astype(int)
    dx = (coins[:, 0] - px_ + 128) % 256 - 128
    dy = (coins[:, 1] - py_ + 128) % 256 - 128
    k = int(np.argmin(np.abs(dx) + np.abs(dy)))
    if abs(dx[k]) > abs(dy[k]):
        return RIGHT if dx[k] > 0 else LEFT
    return DOWN if dy[k] > 0 else UP


def walker():
    """START a few times (quest's title), then a fixed walk."""
    state = {"k": 0}

    def choose(_mem: np.ndarray) -> int:
        state["k"] += 1
        k = state["k"]
        return START if k < 12 and k % 3 == 0 else (RIGHT, DOWN, RIGHT, UP)[(k // 6) % 4]

    return choose


def pair(path: Path, steps: int, choose) -> tuple[np.ndarray, np.ndarray]:
    """(ours, PyBoy's) RGB screens after ``steps`` steps of ``choose(mem)`` actions."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    kw = dict(num_envs=1, frames_per_step=8, release_after_frames=8)
    ours, ref = WarpVecCpuBackend(path, threads=1, **kw), PyBoySingleBackend(path, **kw)
    try:
        ours.reset()
        ref.reset()
        for _ in range(steps):
            action = choose(ours.read_memory(0, 0xC000, 0xC200))
            ours.step([action])
            ref.step([action])
        return ours.screens([0])[0], ref.screens([0])[0]
    finally:
        ours.close()
        ref.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=120)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    from bench.rom_names import resolve_rom
    from gbxcule.games import bundled_rom_path

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, path, choose in (
        ("demo-colour", bundled_rom_path("demo-colour"), greedy),
        ("quest-cgb", Path(resolve_rom("quest-cgb")), walker()),
    ):
        ours, theirs = pair(path, args.steps, choose)
        image = Image.fromarray(np.concatenate([ours, np.zeros((144, 8, 3), np.uint8), theirs], 1))
        buf = io.BytesIO()
        image.resize((image.width * 2, image.height * 2), Image.NEAREST).save(buf, format="PNG")
        write_atomic(args.out / f"{name}.png", buf.getvalue())
        colours = len(np.unique(ours.reshape(-1, 3), axis=0))
        rows.append(f"| {name} | {args.steps} | {np.array_equal(ours, theirs)} | {colours} |")
    summary = [
        "# Game Boy Color screens: ours (left) beside PyBoy cgb=True (right)",
        "",
        f"`python -m bench.cgb_screens --steps {args.steps}`; 8 frames a step.",
        "",
        "| ROM | steps | identical | colours |",
        "|---|---:|---|---:|",
        *rows,
        "",
    ]
    write_atomic(args.out / "summary.md", "\n".join(summary).encode())
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
