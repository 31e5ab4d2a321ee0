"""Tiles' ROM image and ``.sym`` file, built by our assembler from :mod:`.source`."""

from __future__ import annotations

import functools
from pathlib import Path

from gbxcule.asm import assemble, program_rom
from gbxcule.core.symbols import format_sym
from gbxcule.files import cached_rom
from gbxcule.games.tiles import layout as L
from gbxcule.games.tiles.source import game_source


@functools.cache
def _built() -> tuple[bytes, str]:
    program = assemble(game_source())
    rom = program_rom(program, title=L.TITLE)  # 32 KiB, ROM only
    return rom, format_sym(program.symbols, program.label_banks)


def tiles_rom_bytes() -> bytes:
    """Tiles' 32 KiB ROM image (no mapper)."""
    return _built()[0]


def tiles_sym_text() -> str:
    """The ``.sym`` file of :func:`tiles_rom_bytes`: every label (code and WRAM)."""
    return _built()[1]


def tiles_rom_path() -> Path:
    """Tiles' ROM file with its ``.sym`` beside it, in a cache folder keyed by its hash."""
    return cached_rom(tiles_rom_bytes(), tiles_sym_text(), "tiles")
