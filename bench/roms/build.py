"""`make roms`: build every suite ROM and every bundled game (its ``.sym`` beside it) into
bench/roms/out/ with a manifest.

Usage: python -m bench.roms.build [--out DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import pkgutil
import sys
from pathlib import Path

from bench.roms.spec import SPEC_ROM_DIR, RomSpec
from gbxcule.files import write_atomic

OUT_DIR = SPEC_ROM_DIR


def all_roms() -> list[RomSpec]:
    """Every RomSpec of every suite module, in a stable order; names must be unique."""
    from bench.roms import suite

    specs: list[RomSpec] = []
    for mod in sorted(pkgutil.iter_modules(suite.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"bench.roms.suite.{mod.name}")
        specs.extend(getattr(module, "ROMS", []))
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ValueError(f"duplicate ROM name in suite: {spec.name}")
        seen.add(spec.name)
    return specs


def get_rom(name: str) -> RomSpec:
    for spec in all_roms():
        if spec.name == name:
            return spec
    raise KeyError(f"no ROM named {name!r} in the suite")


def rom_path(name: str, out_dir: Path = OUT_DIR) -> Path:
    """Path of a built ROM, building it (and only it) if it is missing or stale."""
    spec = get_rom(name)
    data = spec.build()
    path = out_dir / f"{name}.gb"
    if not path.exists() or path.read_bytes() != data:
        write_atomic(path, data)
    return path


def build_all(out_dir: Path = OUT_DIR, only: list[str] | None = None) -> list[dict]:
    entries = []
    for spec in all_roms():
        if only and spec.name not in only:
            continue
        data = spec.build()
        path = out_dir / f"{spec.name}.gb"
        if not path.exists() or path.read_bytes() != data:
            write_atomic(path, data)
        entries.append(
            {
                "name": spec.name,
                "file": path.name,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "description": spec.description,
                "tags": list(spec.tags),
                "steps": spec.steps,
                "frames_per_step": spec.frames_per_step,
            }
        )
    if not only:
        games = build_games(out_dir)
        manifest = json.dumps({"roms": entries, "games": games}, indent=2) + "\n"
        write_atomic(out_dir / "manifest.json", manifest.encode())
    return entries


def build_games(out_dir: Path = OUT_DIR) -> list[dict]:
    """Every bundled game (gbxcule.games) as ``<name>.gb`` and ``<name>.sym``."""
    from gbxcule.games import GAMES

    entries = []
    for game in GAMES.values():
        data, sym = game.rom(), game.sym().encode()
        for path, content in (
            (out_dir / f"{game.name}.gb", data),
            (out_dir / f"{game.name}.sym", sym),
        ):
            if not path.exists() or path.read_bytes() != content:
                write_atomic(path, content)
        entries.append(
            {
                "name": game.name,
                "file": f"{game.name}.gb",
                "symbols": f"{game.name}.sym",
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "description": game.summary,
            }
        )
    return entries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args(argv)
    entries = build_all(args.out, args.only)
    from gbxcule.games import GAMES

    games = "" if args.only else f" and {len(GAMES)} bundled games"
    print(f"built {len(entries)} ROMs{games} into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
