"""Quest's ROM image and ``.sym`` file, built by our assembler from :mod:`.source`."""

from __future__ import annotations

import functools

from gbxcule.asm import assemble, program_rom
from gbxcule.core.symbols import format_sym
from gbxcule.games.quest import layout as L
from gbxcule.games.quest.source import game_source


@functools.cache
def _built() -> tuple[bytes, str]:
    program = assemble(game_source())
    rom = program_rom(
        program,
        title=L.TITLE,
        cart_type=L.CART_TYPE,
        rom_banks=L.ROM_BANKS,
        ram_banks=L.RAM_BANKS,
    )
    return rom, format_sym(program.symbols, program.label_banks)


def quest_rom_bytes() -> bytes:
    """Quest's 128 KiB MBC1 + RAM + battery ROM image."""
    return _built()[0]


def quest_sym_text() -> str:
    """The ``.sym`` file of :func:`quest_rom_bytes`: every label (code, WRAM, SRAM, HRAM)."""
    return _built()[1]
