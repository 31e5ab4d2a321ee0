"""RGBDS-style ``.sym`` files: ``BB:AAAA name`` per line (bank and address in hex).

``;`` starts a comment; ``[labels]``-style section headers (wla-dx) are skipped. A
name defined twice with different values is an error; the same definition repeated
is accepted. :func:`format_sym` writes such a file from our assembler's labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^([0-9A-Fa-f]{1,4}):([0-9A-Fa-f]{1,4})\s+(\S+)$")


class SymbolError(ValueError):
    """A malformed symbol file."""


class UnknownSymbolError(SymbolError, KeyError):
    """A name the symbol file does not define."""

    def __str__(self) -> str:  # KeyError would print the message with quotes
        return str(self.args[0])


@dataclass(frozen=True)
class Symbol:
    name: str
    bank: int
    address: int  # CPU address 0x0000-0xFFFF


class SymbolTable(Mapping[str, Symbol]):
    """Symbols by name, from one ``.sym`` file."""

    def __init__(self, symbols: Mapping[str, Symbol], source: str = "<symbols>") -> None:
        self._symbols = dict(symbols)
        self.source = source

    @classmethod
    def parse(cls, text: str, source: str = "<string>") -> SymbolTable:
        symbols: dict[str, Symbol] = {}
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.split(";", 1)[0].strip()
            if not line or (line.startswith("[") and line.endswith("]")):
                continue
            match = _LINE.match(line)
            if match is None:
                raise SymbolError(
                    f"{source}:{lineno}: expected 'BB:AAAA name' (hex bank and address), "
                    f"got {raw.strip()!r}"
                )
            bank, addr, name = int(match[1], 16), int(match[2], 16), match[3]
            sym = Symbol(name, bank, addr)
            old = symbols.get(name)
            if old is not None and old != sym:
                raise SymbolError(
                    f"{source}:{lineno}: {name} defined twice "
                    f"({old.bank:02X}:{old.address:04X} and {bank:02X}:{addr:04X})"
                )
            symbols[name] = sym
        return cls(symbols, source)

    @classmethod
    def load(cls, path: str | Path) -> SymbolTable:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"symbol file not found: {path}")
        return cls.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))

    def __getitem__(self, name: str) -> Symbol:
        try:
            return self._symbols[name]
        except KeyError:
            raise UnknownSymbolError(
                f"symbol {name!r} is not in {self.source} ({len(self._symbols)} symbols)"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._symbols)

    def __len__(self) -> int:
        return len(self._symbols)

    def address(self, name: str) -> int:
        return self[name].address


def format_sym(addresses: Mapping[str, int], banks: Mapping[str, int]) -> str:
    """A ``.sym`` file of the labels in ``banks`` (e.g. ``Program.label_banks``), sorted."""
    rows = sorted((banks[name], addresses[name], name) for name in banks)
    return "".join(f"{bank:02X}:{addr:04X} {name}\n" for bank, addr, name in rows)


def symbols_beside(rom_path: str | Path, sym_path: str | Path | None = None) -> SymbolTable:
    """The ``.sym`` file of a ROM: ``sym_path``, else the ROM's path with ``.sym``."""
    path = Path(sym_path) if sym_path is not None else Path(rom_path).with_suffix(".sym")
    if not path.is_file():
        raise FileNotFoundError(
            f"no symbol file at {path}; pass sym_path= to the backend"
            if sym_path is not None
            else f"no symbol file next to the ROM ({path}); pass sym_path= to the backend"
        )
    return SymbolTable.load(path)
