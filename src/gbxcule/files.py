"""Files written atomically, and cache files keyed by their content.

A reader never sees a partial file: data goes to a temporary file in the target's
folder, is flushed to disk, then renamed over the target (``os.replace`` is atomic
on one file system).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` (parents created) so that it appears whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def cached_file(data: bytes, folder: str, stem: str, suffix: str) -> Path:
    """A file holding ``data`` in ``<tmp>/<folder>/``, named by ``stem`` and a hash of ``data``.

    For tools that need a path (PyBoy's boot ROM, a ROM file): an up-to-date file is
    reused, a missing or different one is rewritten atomically.
    """
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / folder / f"{stem}_{digest}{suffix}"
    if path.is_file() and path.read_bytes() == data:
        return path
    return write_atomic(path, data)


GAMES_FOLDER = "gbxcule-games"  # the bundled games' ROMs, .sym files and start states


def cached_rom(rom: bytes, sym: str, stem: str) -> Path:
    """:func:`cached_file` for a ROM in :data:`GAMES_FOLDER`, with its ``.sym`` beside it."""
    path = cached_file(rom, GAMES_FOLDER, stem, ".gb")
    sym_path, text = path.with_suffix(".sym"), sym.encode()
    if not sym_path.is_file() or sym_path.read_bytes() != text:
        write_atomic(sym_path, text)
    return path


def checkout_root() -> Path | None:
    """The source checkout this package runs from (``src/gbxcule`` in it), or None when
    it runs from an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "src" / "gbxcule").is_dir():
        return root
    return None
