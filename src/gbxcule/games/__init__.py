"""The bundled games: each one's ROM and ``.sym`` file, built from our own source.

``gbxcule demo --game NAME`` plays one; a task names one as ``rom="bundled:NAME"`` (or
``rom=None`` for the demo); bench tools take the name as ``--rom NAME``.
:func:`bundled_rom_path` writes the ROM and its ``.sym`` beside it into a cache folder
keyed by the ROM's hash, so a task's symbol reads work from an installed wheel.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gbxcule.demo import game as demo
from gbxcule.files import GAMES_FOLDER, cached_rom, write_atomic
from gbxcule.games.blocks import layout as blocks
from gbxcule.games.climb import layout as climb
from gbxcule.games.quest import layout as quest
from gbxcule.games.tiles import layout as tiles

BUNDLED_PREFIX = "bundled:"


@dataclass(frozen=True)
class StartStates:
    """A game's named start states, made on first use."""

    names: Callable[[], tuple[str, ...]]
    make: Callable[[bytes, list[str]], dict[str, bytes]]  # (ROM, names) -> PyBoy savestates
    recipe: int  # bumped when ``make`` changes: cached states of another recipe are not used


@dataclass(frozen=True)
class BundledGame:
    name: str
    summary: str
    rom: Callable[[], bytes]
    sym: Callable[[], str]
    # what `gbxcule demo` prints per env: name -> (address, bytes, "u" little-endian | "bcd")
    status: dict[str, tuple[int, int, str]]
    starts: StartStates | None = None

    def read_status(self, read_memory: Callable[[int, int], bytes]) -> dict[str, int]:
        """The ``status`` values, given ``read_memory(lo, hi)`` of one env."""
        out = {}
        for name, (addr, size, kind) in self.status.items():
            raw = bytes(read_memory(addr, addr + size))
            if kind == "bcd":
                out[name] = int("".join(f"{b:02X}" for b in reversed(raw)))
            else:
                out[name] = int.from_bytes(raw, "little")
        return out


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported on the first call (building a ROM is not import-time work)."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    return call


def _small_game(name: str, summary: str, status: dict[str, tuple[int, int, str]]) -> BundledGame:
    """A game laid out as ``gbxcule.games.NAME.{rom,starts}`` with ``NAME_rom_bytes``,
    ``NAME_sym_text``, ``start_names`` and ``make_starts``."""
    rom, starts = f"gbxcule.games.{name}.rom", f"gbxcule.games.{name}.starts"
    return BundledGame(
        name,
        summary,
        _lazy(rom, f"{name}_rom_bytes"),
        _lazy(rom, f"{name}_sym_text"),
        status,
        StartStates(_lazy(starts, "start_names"), _lazy(starts, "make_starts"), recipe=1),
    )


GAMES = {
    "demo": BundledGame(
        "demo",
        "collect coins on one scrolling map (32 KiB)",
        _lazy("gbxcule.demo.rom", "demo_rom_bytes"),
        _lazy("gbxcule.demo.rom", "demo_sym_text"),
        {
            "score": (demo.W_SCORE, 2, "u"),
            "x": (demo.W_PLAYER_X, 1, "u"),
            "y": (demo.W_PLAYER_Y, 1, "u"),
            "ticks": (demo.W_FRAME, 2, "u"),
        },
    ),
    "demo-colour": BundledGame(
        "demo-colour",
        "the demo in colour on a Game Boy Color: palettes, map attributes by HDMA, a coin "
        "tally in WRAM bank 2 (32 KiB)",
        _lazy("gbxcule.demo.rom", "demo_colour_rom_bytes"),
        _lazy("gbxcule.demo.rom", "demo_colour_sym_text"),
        {
            "score": (demo.W_SCORE, 2, "u"),
            "x": (demo.W_PLAYER_X, 1, "u"),
            "y": (demo.W_PLAYER_Y, 1, "u"),
            "ticks": (demo.W_FRAME, 2, "u"),
        },
    ),
    "quest": BundledGame(
        "quest",
        "title, 4 maps with doors, slimes, gems, lives, music, battery save (MBC1, 128 KiB)",
        _lazy("gbxcule.games.quest.rom", "quest_rom_bytes"),
        _lazy("gbxcule.games.quest.rom", "quest_sym_text"),
        {
            "score": (quest.W_SCORE, 2, "bcd"),
            "map": (quest.W_MAP, 1, "u"),
            "x": (quest.W_PLAYER_X, 1, "u"),
            "y": (quest.W_PLAYER_Y, 1, "u"),
            "lives": (quest.W_LIVES, 1, "u"),
            "ticks": (quest.W_FRAME, 2, "u"),
        },
        StartStates(
            _lazy("gbxcule.games.quest.starts", "start_names"),
            _lazy("gbxcule.games.quest.starts", "make_starts"),
            recipe=1,
        ),
    ),
    # Three small games of other genres, written to measure learning on shapes a user brings.
    "blocks": _small_game(
        "blocks",
        "falling-block puzzle: 7 pieces, rows clear, levels speed up (32 KiB)",
        {
            "score": (blocks.W_SCORE, 2, "u"),
            "lines": (blocks.W_LINES, 2, "u"),
            "level": (blocks.W_LEVEL, 1, "u"),
            "pieces": (blocks.W_PIECES, 2, "u"),
            "height": (blocks.W_HEIGHT, 1, "u"),
            "ticks": (blocks.W_FRAME, 2, "u"),
        },
    ),
    "tiles": _small_game(
        "tiles",
        "4x4 sliding-tile puzzle: easy/medium/hard shuffles, a new one once solved (32 KiB)",
        {
            "solved": (tiles.W_SOLVED_COUNT, 2, "u"),
            "in_place": (tiles.W_IN_PLACE, 1, "u"),
            "moves": (tiles.W_MOVES, 2, "u"),
            "difficulty": (tiles.W_DIFFICULTY, 1, "u"),
            "ticks": (tiles.W_FRAME, 2, "u"),
        },
    ),
    "climb": _small_game(
        "climb",
        "vertical platformer: jump up random platforms, coins, fall off the view and lose (32 KiB)",
        {
            "score": (climb.W_SCORE, 2, "u"),
            "height": (climb.W_BEST_HEIGHT, 2, "u"),
            "coins": (climb.W_COINS, 2, "u"),
            "x": (climb.W_PLAYER_X, 1, "u"),
            "y": (climb.W_PLAYER_Y, 1, "u"),
            "ticks": (climb.W_FRAME, 2, "u"),
        },
    ),
}
DEFAULT_GAME = "demo"


def bundled_game(name: str) -> BundledGame:
    try:
        return GAMES[name]
    except KeyError:
        raise ValueError(f"no bundled game {name!r}; bundled games: {', '.join(GAMES)}") from None


def bundled_rom_path(name: str = DEFAULT_GAME) -> Path:
    """The game's ROM file, with its ``.sym`` file beside it (both written when missing)."""
    game = bundled_game(name)
    return cached_rom(game.rom(), game.sym(), name)


def bundled_start_path(ref: str) -> Path:
    """The start state ``"GAME/NAME"`` (a task's ``starts`` entry ``"bundled:quest/play"``
    without its prefix): a PyBoy savestate made on first use, cached beside the ROM under
    the ROM's hash."""
    game_name, _, start = ref.partition("/")
    game = bundled_game(game_name)
    starts = game.starts
    if starts is None:
        raise ValueError(f"bundled game {game_name!r} has no named start states")
    names = starts.names()
    if start not in names:
        raise ValueError(
            f"bundled game {game_name!r} has no start {start!r}; its starts: {', '.join(names)}"
        )
    rom = bundled_rom_path(game_name)

    def path_of(name: str) -> Path:
        return rom.with_name(f"{rom.stem}_{name}_r{starts.recipe}.state")

    if not path_of(start).is_file():  # make every missing one at once: one PyBoy start-up
        missing = [n for n in names if not path_of(n).is_file()]
        for name, data in starts.make(rom.read_bytes(), missing).items():
            write_atomic(path_of(name), data)
    return path_of(start)


def is_bundled_start(state: Path, rom: Path) -> bool:
    """Whether ``state`` is a bundled start made here for exactly ``rom`` (its name carries
    the ROM's hash): nothing about it is left to check."""
    state, rom = Path(state).resolve(), Path(rom).resolve()
    return (
        rom.parent.name == GAMES_FOLDER
        and state.parent == rom.parent
        and state.suffix == ".state"
        and state.name.startswith(rom.stem + "_")
    )


def bundled_name(rom: str | Path | None) -> str | None:
    """The game a task's ``rom`` names: ``None`` is the demo, ``"bundled:NAME"`` that game;
    None for a path."""
    if rom is None:
        return DEFAULT_GAME
    if isinstance(rom, str) and rom.startswith(BUNDLED_PREFIX):
        return rom[len(BUNDLED_PREFIX) :]
    return None
