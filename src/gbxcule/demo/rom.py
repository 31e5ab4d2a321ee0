"""The demo game's ROM image and ``.sym`` file, built by our assembler from
:mod:`gbxcule.demo.asm`."""

from __future__ import annotations

import functools
from pathlib import Path

from gbxcule.asm import assemble, program_rom
from gbxcule.core.symbols import format_sym
from gbxcule.demo.asm import game_source
from gbxcule.files import cached_rom

TITLE = "GBXCULE DEMO"
COLOUR_TITLE = "GBXCULE DEMOC"  # the Game Boy Color edition (gbxcule.demo.colour)


@functools.cache
def _built(colour: bool = False) -> tuple[bytes, str]:
    program = assemble(game_source(colour))
    title, flag = (COLOUR_TITLE, 0x80) if colour else (TITLE, 0)
    rom = program_rom(program, title=title, cgb_flag=flag)
    return rom, format_sym(program.symbols, program.label_banks)


def demo_rom_bytes() -> bytes:
    """The demo game's 32 KiB ROM image."""
    return _built()[0]


def demo_sym_text() -> str:
    """The ``.sym`` file of :func:`demo_rom_bytes` (its code and WRAM labels)."""
    return _built()[1]


def demo_rom_path() -> Path:
    """The demo's ROM file with its ``.sym`` beside it, in a cache dir keyed by its hash."""
    return cached_rom(demo_rom_bytes(), demo_sym_text(), "demo")


def demo_colour_rom_bytes() -> bytes:
    """The demo's Game Boy Color edition (header $80: Colour-enhanced), 32 KiB."""
    return _built(True)[0]


def demo_colour_sym_text() -> str:
    return _built(True)[1]
