"""The ROM names every bench tool takes (``--rom``), resolved to files built when needed."""

from __future__ import annotations


def default_rom() -> str:
    """The demo game's ROM file, assembled when needed."""
    from gbxcule.demo.rom import demo_rom_path

    return str(demo_rom_path())


NAMED_ROMS = ("busy", "game", "game-music")  # the benchmark ROMs that never HALT


def resolve_rom(name: str) -> str:
    """A ROM name of the bench tools as its file, built when needed: ``demo`` (the demo
    game), ``busy`` (bench/busy_rom.py), ``game`` (bench/game_rom.py), ``game-music`` (the
    same with a music engine writing the sound registers every frame), a ``loop-*`` ROM of
    bench/cpu_profile.py; anything else is taken as a path."""
    if name == "demo":
        return default_rom()
    if name == "busy":
        from bench.busy_rom import busy_rom_path

        return str(busy_rom_path())
    if name in ("game", "game-music"):
        from bench.game_rom import game_rom_path

        return str(game_rom_path(music=name == "game-music"))
    if name.startswith("loop-"):
        from bench.cpu_profile import LOOP_VARIANTS, loop_rom_path

        if name in LOOP_VARIANTS:
            return loop_rom_path(name)
    return name
