"""The ROM names every bench tool takes (``--rom``), resolved to files built when needed."""

from __future__ import annotations

from gbxcule.games import GAMES, bundled_rom_path


def default_rom() -> str:
    """The demo game's ROM file, assembled when needed."""
    return str(bundled_rom_path("demo"))


NAMED_ROMS = ("busy", "game", "game-music")  # the benchmark ROMs that never HALT
GAME_ROMS = tuple(GAMES)  # the bundled games (demo, quest): they HALT in VBlank as games do


def resolve_rom(name: str) -> str:
    """A ROM name of the bench tools as its file, built when needed: a bundled game
    (``demo``, ``quest``: gbxcule.games, with its ``.sym`` beside it), ``busy``
    (bench/busy_rom.py), ``game`` (bench/game_rom.py), ``game-music`` (the same with a
    music engine writing the sound registers every frame), a ``loop-*`` ROM of
    bench/loop_roms.py; anything else is taken as a path."""
    if name in GAMES:
        return str(bundled_rom_path(name))
    if name == "busy":
        from bench.busy_rom import busy_rom_path

        return str(busy_rom_path())
    if name in ("game", "game-music"):
        from bench.game_rom import game_rom_path

        return str(game_rom_path(music=name == "game-music"))
    if name.startswith("loop-"):
        from bench.loop_roms import LOOP_VARIANTS, loop_rom_path

        if name in LOOP_VARIANTS:
            return loop_rom_path(name)
    return name
