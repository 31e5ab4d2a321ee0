"""Quest (gbxcule.games.quest) as a suite ROM: a scripted walk from power-on through two
doors, checked against what the walk must leave in RAM.

The script idles past the boot, presses START, then walks the shortest way (art.route)
from the start cell to the meadow's east door, and from the forest's arrival cell to its
south door, one cell a step (a direction held 8 of 16 frames: a step of 8 frames, then
standing). The check: in play on the beach (map 3) at the cell inside its north door;
``wSteps`` equal to the cells walked; the place flags exactly the 8x8-cell regions the
walk entered; the BCD score their count plus 10 a gem taken; the HUD's score digits
showing it; the battery RAM holding its magic word. Being a suite ROM, quest is also in
the lockstep of every suite ROM, the goldens (so the GPU parity run) and
``gbxcule verify --suite``.
"""

from __future__ import annotations

import functools

from bench.roms.spec import RomSpec
from gbxcule.backends.protocol import Backend
from gbxcule.games.quest import art
from gbxcule.games.quest import layout as L
from gbxcule.games.quest.rom import quest_rom_bytes

BOOT_STEPS = 6  # x 16 frames: the title is up
DIRS = (L.BUTTON_RIGHT, L.BUTTON_LEFT, L.BUTTON_UP, L.BUTTON_DOWN)
LEGS = ((0, (15, 15), (31, 15)), (1, (1, 15), (15, 31)))  # (map, from, door)


@functools.cache
def walk_script() -> tuple[int, ...]:
    moves = [DIRS[d] for m, start, door in LEGS for d in art.route(m, start, door)]
    return (0,) * BOOT_STEPS + (L.BUTTON_START,) + tuple(moves) + (0, 0)


def visited_places() -> set[int]:
    """The place flags the walk sets: every region entered, doors excluded."""
    flags = set()
    for m, (x, y), door in LEGS:
        for d in art.route(m, (x, y), door)[:-1]:
            x, y = x + (1, -1, 0, 0)[d], y + (0, 0, -1, 1)[d]
            flags.add(L.FLAG_PLACES + m * 16 + (y // 8) * 4 + x // 8)
    return flags


def check_quest(backend: Backend, env: int) -> None:
    def mem(addr: int, n: int = 1) -> bytes:
        return bytes(backend.read_memory(env, addr, addr + n))

    where = (mem(L.W_MODE)[0], mem(L.W_MAP)[0], mem(L.W_PLAYER_X)[0], mem(L.W_PLAYER_Y)[0])
    assert where == (L.MODE_PLAY, 3, 15, 1), f"mode, map, x, y {where}, expected (1, 3, 15, 1)"
    cells = sum(len(art.route(m, s, d)) for m, s, d in LEGS)
    steps = int.from_bytes(mem(L.W_STEPS, 2), "little")
    assert steps == cells, f"wSteps {steps}, expected {cells}"
    flags = mem(L.W_FLAGS, 16)
    places = {k for k in range(64) if flags[k // 8] >> (k % 8) & 1}
    assert places == visited_places(), f"place flags {sorted(places)}"
    lo, hi = mem(L.W_SCORE, 2)
    gems = int.from_bytes(mem(L.W_GEMS, 2), "little")
    score = L.bcd_value(lo, hi)
    assert score == len(places) + 10 * gems, f"score {score}: {len(places)} places, {gems} gems"
    digits = mem(0x9C00 + L.HUD_SCORE_COL, 4).decode("ascii")
    assert digits == f"{score:04d}", f"HUD shows {digits!r}, score {score}"


ROMS = [
    RomSpec(
        name="quest",
        description="quest: START, then through two doors to the beach; position, steps, "
        "place flags, BCD score and HUD digits vs the walk",
        build=quest_rom_bytes,
        check=check_quest,
        steps=len(walk_script()),
        frames_per_step=16,
        release_after_frames=8,
        inputs=walk_script(),
        tags=("game",),
    )
]
