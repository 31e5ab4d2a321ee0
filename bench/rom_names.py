"""The ROM names every bench tool takes (``--rom``), resolved to files built when needed."""

from __future__ import annotations

from pathlib import Path

from gbxcule.games import GAMES, bundled_rom_path


def default_rom() -> str:
    """The demo game's ROM file, assembled when needed."""
    return str(bundled_rom_path("demo"))


NAMED_ROMS = ("busy", "game", "game-music")  # the benchmark ROMs that never HALT
GAME_ROMS = tuple(GAMES)  # the bundled games (demo, quest): they HALT in VBlank as games do


def colour_variant(path: Path) -> Path:
    """``path``'s game with its header marked Colour-enhanced ($80 at 0x143), beside it as
    ``.gbc`` (its ``.sym`` too): the same code run by a Game Boy Color machine, for the
    bench tools' ``<game>-cgb`` names."""
    from gbxcule.core.cartridge import with_cgb_flag
    from gbxcule.files import write_atomic

    data = with_cgb_flag(path.read_bytes(), 0x80)
    out = path.with_suffix(".gbc")
    if not out.is_file() or out.read_bytes() != data:
        write_atomic(out, data)
    sym = path.with_suffix(".sym")
    if sym.is_file():
        write_atomic(out.with_suffix(".sym"), sym.read_bytes())
    return out


def resolve_rom(name: str) -> str:
    """A ROM name of the bench tools as its file, built when needed: a bundled game
    (``demo``, ``quest``: gbxcule.games, with its ``.sym`` beside it), ``busy``
    (bench/busy_rom.py), ``<game>-cgb`` (a bundled game marked Colour-enhanced, run on a
    Game Boy Color machine by every backend), ``game`` (bench/game_rom.py), ``game-music`` (the same with a
    music engine writing the sound registers every frame), a ``loop-*`` ROM of
    bench/loop_roms.py; anything else is taken as a path."""
    if name in GAMES:
        return str(bundled_rom_path(name))
    if name.endswith("-cgb") and name[: -len("-cgb")] in GAMES:
        return str(colour_variant(bundled_rom_path(name[: -len("-cgb")])))
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
