"""The demo game's ROM image, built by our assembler from :mod:`gbxcule.demo.asm`."""

from __future__ import annotations

import functools
from pathlib import Path

from gbxcule.asm import build_rom
from gbxcule.demo.asm import game_source
from gbxcule.files import cached_file

TITLE = "GBXCULE DEMO"


@functools.cache
def demo_rom_bytes() -> bytes:
    """The demo game's 32 KiB ROM image."""
    return build_rom(game_source(), title=TITLE)


def demo_rom_path() -> Path:
    """A file holding :func:`demo_rom_bytes`, in a cache dir keyed by its hash (written atomically)."""
    return cached_file(demo_rom_bytes(), "gbxcule-demo", "demo_game", ".gb")
