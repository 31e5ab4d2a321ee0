"""Quest's tiles, font, maps, title screen and HUD, generated here (the same bytes on every
build): the maps by a fixed LCG, then carved so that every free cell is reachable."""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass

from gbxcule.asm.tiles import FONT_5X7, glyph_tile, tile_bytes
from gbxcule.games.quest import layout as L

# ---- tiles ($8000 + 16 * id; BG and sprites share them) ----
GRASS, TUFT, FLOWER, TREE, ROCK, WATER, SAND, CAVE, WALL, DOOR, ROOF, PATH = range(12)
PLAYER, SLIME_A, SLIME_B, GEM = 16, 17, 18, 19
FONT_FIRST = 0x20  # ASCII ' '..'_' are tiles $20..$5F
SOLID = frozenset({TREE, ROCK, WATER, WALL, ROOF})
ATTR_SOLID, ATTR_DOOR = 0x01, 0x02

_TILES = {
    GRASS: "00000000 00000000 00010000 00000000 00000000 00000010 00000000 00000000",
    TUFT: "00000000 00100100 01101010 00111100 00011000 00000000 00000000 00000000",
    FLOWER: "00000000 00020000 00232000 00020000 00010000 00111000 00000000 00000000",
    TREE: "00033000 00322300 03222230 32222223 33222233 03333330 00011000 00111100",
    ROCK: "00000000 00222200 02333320 23311332 23333332 02333320 00222200 00000000",
    WATER: "11111111 12211111 11122111 11111111 11111221 11112111 11111111 21111111",
    SAND: "10000000 00000100 00000000 00100000 00000001 00000000 01000000 00000000",
    CAVE: "11111111 11111121 11111111 12111111 11111111 11111211 11111111 11211111",
    WALL: "33333333 32223222 32223222 33333333 22322232 22322232 33333333 32223222",
    DOOR: "03333330 32222223 32222223 32222223 32222323 32222223 32222223 32222223",
    ROOF: "33333333 31313131 13131313 31313131 13131313 31313131 13131313 33333333",
    PATH: "11111111 11111111 11011111 11111111 11111111 11111011 11111111 11111111",
    PLAYER: "00333300 03111130 31311313 31111113 31211213 31122113 03111130 00333300",
    SLIME_A: "00000000 00033000 00311300 03111130 31311313 31111113 31111113 03333330",
    SLIME_B: "00000000 00000000 00033000 00311300 03131130 31111113 31111113 03333330",
    GEM: "00000000 00333300 03122130 31222213 03122130 00312300 00033000 00000000",
}


@functools.cache
def tile_data() -> bytes:
    """Tiles $00..$5F (16 bytes each): world, sprites, then the ASCII font."""
    data = bytearray(0x60 * 16)
    for number, rows in _TILES.items():
        data[16 * number : 16 * number + 16] = tile_bytes(rows.split())
    for ch in FONT_5X7:
        data[16 * ord(ch) : 16 * ord(ch) + 16] = glyph_tile(ch)
    return bytes(data)


def tile_attrs() -> bytes:
    """A byte per tile id $00..$1F: bit 0 solid, bit 1 door."""
    return bytes(
        (ATTR_SOLID if t in SOLID else 0) | (ATTR_DOOR if t == DOOR else 0) for t in range(32)
    )


def text(s: str, width: int = 32) -> bytes:
    """A row of font tiles (ASCII codes), padded with spaces."""
    unknown = set(s) - set(FONT_5X7) - {" "}
    if unknown:
        raise ValueError(f"quest's font has no {sorted(unknown)}")
    return s.ljust(width).encode("ascii")


# ---- the world ----
@dataclass(frozen=True)
class Theme:
    name: str
    ground: tuple[int, ...]  # drawn with equal odds
    obstacle: tuple[int, ...]
    border: int
    density: int  # obstacles per 256 cells


THEMES = (
    Theme("MEADOW", (GRASS, GRASS, GRASS, TUFT, FLOWER), (TREE, ROOF), TREE, 40),
    Theme("FOREST", (GRASS, TUFT, TUFT), (TREE,), TREE, 70),
    Theme("CAVE", (CAVE, CAVE, PATH), (ROCK,), WALL, 55),
    Theme("BEACH", (SAND, SAND, PATH), (WATER, ROCK), WATER, 45),
)
# Doors in pairs: (map, x, y) <-> (map, x, y); a door is a border cell.
CONNECTIONS = (
    ((0, 31, 15), (1, 0, 15)),
    ((0, 15, 31), (2, 15, 0)),
    ((1, 15, 31), (3, 15, 0)),
    ((2, 31, 15), (3, 0, 15)),
    ((0, 0, 8), (3, 31, 8)),
)
HUB = (15, 15)


def _lcg(seed: int):
    x = seed
    while True:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        yield (x >> 16) & 0xFF


def arrival(x: int, y: int) -> tuple[int, int]:
    """The cell inside the map next to the border door at (x, y)."""
    return (1 if x == 0 else 30 if x == 31 else x, 1 if y == 0 else 30 if y == 31 else y)


def doors(m: int) -> list[tuple[int, int, int, int, int]]:
    """Map ``m``'s warps: (x, y, dest map, dest x, dest y)."""
    out = []
    for a, b in CONNECTIONS:
        for here, there in ((a, b), (b, a)):
            if here[0] == m:
                out.append((here[1], here[2], there[0], *arrival(there[1], there[2])))
    return out


def _reachable(grid: list[list[int]], start: tuple[int, int]) -> set[tuple[int, int]]:
    seen, todo = {start}, deque([start])
    while todo:
        x, y = todo.popleft()
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if 0 <= nx < 32 and 0 <= ny < 32 and (nx, ny) not in seen:
                if grid[ny][nx] not in SOLID:
                    seen.add((nx, ny))
                    todo.append((nx, ny))
    return seen


@dataclass(frozen=True)
class MapData:
    tiles: bytes  # 32 x 32
    warps: list[tuple[int, int, int, int, int]]
    enemies: list[tuple[int, int, int, int]]  # x, y, dir, speed mask
    gems: list[tuple[int, int]]
    name: str

    def bank_bytes(self) -> bytes:
        """The map's tables as they lie from $4000 in its bank."""
        out = bytearray(self.tiles)
        warps = b"".join(bytes(w) for w in self.warps) + b"\xff"
        out += warps.ljust(L.MAP_ENEMIES - L.MAP_WARPS, b"\xff")
        out += b"".join(bytes(e) for e in self.enemies).ljust(L.MAP_GEMS - L.MAP_ENEMIES, b"\0")
        out += b"".join(bytes(g) for g in self.gems).ljust(L.MAP_NAME - L.MAP_GEMS, b"\0")
        out += text(self.name, 8)
        return bytes(out)


@functools.cache
def world_map(m: int) -> MapData:
    theme, rng = THEMES[m], _lcg(0x5EED + 977 * m)
    grid = [[0] * 32 for _ in range(32)]
    for y in range(32):
        for x in range(32):
            r, pick = next(rng), next(rng)
            if x in (0, 31) or y in (0, 31):
                grid[y][x] = theme.border
            elif r < theme.density:
                grid[y][x] = theme.obstacle[pick % len(theme.obstacle)]
            else:
                grid[y][x] = theme.ground[pick % len(theme.ground)]
    warps = doors(m)
    keep_free = [HUB] + [(w[0], w[1]) for w in warps] + [arrival(w[0], w[1]) for w in warps]
    for x, y in keep_free:
        grid[y][x] = DOOR if (x, y) in {(w[0], w[1]) for w in warps} else theme.ground[0]
    while True:  # carve a straight path from each cut-off free cell to the hub
        reach = _reachable(grid, HUB)
        cut = [(x, y) for y in range(1, 31) for x in range(1, 31) if grid[y][x] not in SOLID]
        cut = [c for c in cut if c not in reach]
        if not cut:
            break
        x, y = cut[0]
        while (x, y) != HUB:
            if grid[y][x] in SOLID:
                grid[y][x] = theme.ground[0]
            x += (HUB[0] > x) - (HUB[0] < x)
            if x == HUB[0]:
                y += (HUB[1] > y) - (HUB[1] < y)
    reach = _reachable(grid, HUB)
    near = {(x + dx, y + dy) for x, y in keep_free for dx in range(-3, 4) for dy in range(-3, 4)}
    free = [
        (x, y)
        for y in range(1, 31)
        for x in range(1, 31)
        if (x, y) in reach and grid[y][x] != DOOR and (x, y) not in near
    ]
    picks, taken = [], set()
    while len(picks) < L.NUM_ENEMIES + L.NUM_GEMS:
        cell = free[(next(rng) << 8 | next(rng)) % len(free)]
        if cell not in taken:
            taken.add(cell)
            picks.append(cell)
    enemies = [(x, y, next(rng) & 3, (1, 3, 1, 0)[i % 4]) for i, (x, y) in enumerate(picks[:10])]
    gems = picks[L.NUM_ENEMIES :]
    tiles = bytes(v for row in grid for v in row)
    return MapData(tiles, warps, enemies, gems, theme.name)


@functools.cache
def title_map() -> bytes:
    """The title screen's 32 x 32 BG map (20 x 18 of it on screen)."""
    rows = [bytes([TREE] * 20).ljust(32, b" ")] + [text("")] * 17
    rows[3] = text("     GBX  QUEST")
    rows[5] = (b"     " + bytes([GEM, 32, SLIME_A, 32, PLAYER, 32, SLIME_B, 32, GEM])).ljust(32)
    rows[L.TITLE_HI_ROW] = text("   HI SCORE 0000")
    rows[14] = text("    PRESS START")
    rows[16] = text("   (C) GBXCULE")
    rows[17] = bytes([TREE] * 20).ljust(32, b" ")
    return b"".join(rows).ljust(1024, b" ")


@functools.cache
def hud_map() -> bytes:
    """Window rows 0 and 1 (the HUD); the digits and the map's name are drawn by code."""
    return text(" SC 0000    HI 0000") + text(" LIFE 3    ")


def route(m: int, start: tuple[int, int], goal: tuple[int, int]) -> list[int]:
    """The shortest walk on map ``m`` from ``start`` to ``goal`` as directions (0 right,
    1 left, 2 up, 3 down), doors entered only as the goal; for tests and scripted starts."""
    grid = world_map(m).tiles
    moves = ((1, 0), (-1, 0), (0, -1), (0, 1))
    back: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
    todo = deque([start])
    seen = {start}
    while todo:
        cell = todo.popleft()
        if cell == goal:
            dirs = []
            while cell != start:
                cell, d = back[cell]
                dirs.append(d)
            return dirs[::-1]
        for d, (dx, dy) in enumerate(moves):
            nxt = (cell[0] + dx, cell[1] + dy)
            if not (0 <= nxt[0] < 32 and 0 <= nxt[1] < 32) or nxt in seen:
                continue
            tile = grid[nxt[1] * 32 + nxt[0]]
            if tile in SOLID or (tile == DOOR and nxt != goal):
                continue
            seen.add(nxt)
            back[nxt] = (cell, d)
            todo.append(nxt)
    raise ValueError(f"no way on map {m} from {start} to {goal}")
