"""What a task reads from RAM, and how bytes become numbers: a :class:`Read` per value.

A read names where its bytes are (a CPU address or a ``.sym`` symbol), how many, and
how they decode into one int64 per env. ``memory.py`` gathers the bytes of every read
of a task at once, on the backend's device; ``decode`` turns a read's ``[N, size]``
bytes into ``[N]`` values with Torch ops, so the same code runs on the CPU and CUDA.

    U8(0xC0A0)                     one byte
    U16(0xC0A0)                    two bytes, little-endian; U16(a, "big") big-endian
    U24(a), S8(a), S16(a)          three bytes; signed (two's complement)
    BCD(0xC0A0, 3)                 packed BCD, 2 digits a byte, most significant first
    Digits(0xC0A0, 6, offset=0x30, blank=(0x80,))
                                   a digit a byte (tile ids): value - offset, blank = 0
    BitCount(0xD747, 40)           set bits over 40 bytes (event flags)
    Bit(0xD747, 3)                 bit 3 of one byte, 0 or 1
    Lookup(U8(0xD35E), {1: 10})    a table over another read's value (default 0)

Addresses: VRAM, WRAM and its echo, OAM, HRAM, and cartridge RAM: ``bank=None`` (the
default) reads the bank the game has mapped, as the CPU would (0xFF while the game has
cart RAM disabled), ``bank=k`` the stored bytes of bank ``k`` whatever is mapped (Warp
backends); on a Game Boy Color machine ``bank=1..7`` at 0xD000-0xDFFF reads that WRAM bank
whatever SVBK maps (both families; a WRAMX symbol of the game's ``.sym`` names its bank). The IO registers and IE are readable too: a scrolling game's camera (SCX/SCY),
DIV, LY, STAT, the sound registers; those computed on a read are read as
``pyboy.memory[addr]`` reads them, side effects included (``memory.py``). ROM is refused:
it does not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

ENDIANS = ("little", "big")


class ReadError(ValueError):
    """A read that cannot be made (address, size, type); the message says which."""


_CONSTANTS: dict[tuple, torch.Tensor] = {}


def constant(values: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """int64 tensor of ``values`` on ``device``, made once (no host copy per step)."""
    key = (values, str(device))
    out = _CONSTANTS.get(key)
    if out is None:
        out = _CONSTANTS[key] = torch.tensor(values, dtype=torch.int64, device=device)
    return out


def _check_where(where: Any) -> int | str:
    if isinstance(where, bool) or not isinstance(where, (int, str)):
        raise ReadError(f"a read's address must be an int or a symbol name, got {where!r}")
    if isinstance(where, int) and not 0 <= where <= 0xFFFF:
        raise ReadError(f"address {where:#x} is outside the CPU's 16-bit address space")
    if isinstance(where, str) and not where:
        raise ReadError("a read's symbol name is empty")
    return where


def _check_size(size: Any, what: str = "size") -> int:
    if isinstance(size, bool) or not isinstance(size, int):
        raise ReadError(f"a read's {what} must be an int, got {size!r}")
    if size < 1:
        raise ReadError(f"a read's {what} must be >= 1, got {size}")
    return size


@dataclass(frozen=True)
class Read:
    """``size`` bytes at ``where``; subclasses say how they decode (module doc)."""

    where: int | str
    size: int = 1
    bank: int | None = field(default=None, kw_only=True)  # cart RAM / CGB WRAM bank (None: mapped)

    def __post_init__(self) -> None:
        _check_where(self.where)
        _check_size(self.size)
        bank = self.bank
        if bank is not None and (isinstance(bank, bool) or not isinstance(bank, int) or bank < 0):
            raise ReadError(f"bank must be None or an int >= 0, got {self.bank!r}")

    def sources(self) -> tuple[Read, ...]:
        """The reads whose bytes this one needs (itself, or what it looks up)."""
        return (self,)

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        """``raw`` int64 ``[N, size]`` (this read's bytes) -> int64 ``[N]``."""
        raise NotImplementedError

    def value(self, raws: Mapping[Read, torch.Tensor]) -> torch.Tensor:
        """The decoded value from the bytes of every source read."""
        return self.decode(raws[self])


@dataclass(frozen=True)
class Unsigned(Read):
    """An integer of ``size`` bytes; ``signed`` two's complement."""

    endian: str = "little"
    signed: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.endian not in ENDIANS:
            raise ReadError(f"endian must be one of {ENDIANS}, got {self.endian!r}")
        if self.size > 7:
            raise ReadError(f"integers of more than 7 bytes do not fit int64, got {self.size}")

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        order = range(self.size) if self.endian == "little" else range(self.size - 1, -1, -1)
        shifts = constant(tuple(8 * k for k in order), raw.device)
        value = (raw << shifts).sum(dim=1)
        if self.signed:
            top = 1 << (8 * self.size - 1)
            value = torch.where(value >= top, value - 2 * top, value)
        return value


def U8(where: int | str, bank: int | None = None) -> Unsigned:
    return Unsigned(where, 1, bank=bank)


def U16(where: int | str, endian: str = "little", bank: int | None = None) -> Unsigned:
    return Unsigned(where, 2, endian, bank=bank)


def U24(where: int | str, endian: str = "little", bank: int | None = None) -> Unsigned:
    return Unsigned(where, 3, endian, bank=bank)


def S8(where: int | str, bank: int | None = None) -> Unsigned:
    return Unsigned(where, 1, signed=True, bank=bank)


def S16(where: int | str, endian: str = "little", bank: int | None = None) -> Unsigned:
    return Unsigned(where, 2, endian, signed=True, bank=bank)


@dataclass(frozen=True)
class BCD(Read):
    """Packed BCD, two digits a byte (high nibble first); ``endian="big"``: the first byte
    holds the most significant digits. A nibble above 9 counts as 9 (a torn or blank
    digit never makes a larger number than the digits allow)."""

    endian: str = "big"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.endian not in ENDIANS:
            raise ReadError(f"endian must be one of {ENDIANS}, got {self.endian!r}")
        if self.size > 9:
            raise ReadError(f"BCD over 9 bytes (18 digits) does not fit int64, got {self.size}")

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        nibbles = torch.stack([raw >> 4, raw & 0xF], dim=2).clamp(max=9)  # [N, size, 2]
        if self.endian == "little":
            nibbles = nibbles.flip(1)
        digits = nibbles.reshape(raw.shape[0], -1)
        return _digits_value(digits)


def _digits_value(digits: torch.Tensor) -> torch.Tensor:
    n = digits.shape[1]
    powers = constant(tuple(10 ** (n - 1 - k) for k in range(n)), digits.device)
    return (digits * powers).sum(dim=1)


@dataclass(frozen=True)
class Digits(Read):
    """One decimal digit a byte, most significant first: ``byte - offset`` (tile ids often
    start at a font's '0'), a byte in ``blank`` counts as 0 (a leading blank), and a
    value outside 0-9 after that counts as 0 too."""

    offset: int = 0
    blank: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size > 18:
            raise ReadError(f"more than 18 digits do not fit int64, got {self.size}")
        if not all(isinstance(b, int) and 0 <= b <= 0xFF for b in self.blank):
            raise ReadError(f"blank must hold byte values 0..255, got {self.blank!r}")
        object.__setattr__(self, "blank", tuple(self.blank))

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        digit = raw - self.offset
        bad = (digit < 0) | (digit > 9)
        for b in self.blank:
            bad |= raw == b
        return _digits_value(torch.where(bad, torch.zeros_like(digit), digit))


_POPCOUNT = tuple(bin(v).count("1") for v in range(256))


@dataclass(frozen=True)
class BitCount(Read):
    """How many bits are set over ``size`` bytes (event flags, badges, a visited mask)."""

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        return constant(_POPCOUNT, raw.device)[raw].sum(dim=1)


@dataclass(frozen=True)
class BitRead(Read):
    """Bit ``bit`` (0 = least significant) of the byte at ``where``: 0 or 1 (:func:`Bit`)."""

    bit: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size != 1:
            raise ReadError(f"Bit reads one byte, got size {self.size}")
        if isinstance(self.bit, bool) or not isinstance(self.bit, int) or not 0 <= self.bit <= 7:
            raise ReadError(f"bit must be 0..7, got {self.bit!r}")

    def decode(self, raw: torch.Tensor) -> torch.Tensor:
        return (raw[:, 0] >> self.bit) & 1


def Bit(where: int | str, bit: int, bank: int | None = None) -> BitRead:
    return BitRead(where, 1, bit, bank=bank)


@dataclass(frozen=True, init=False)
class Lookup(Read):
    """``table[value of source]`` (``default`` where the table has no entry): a map id to
    a region number, a species to its level cap."""

    source: Read
    table: tuple[tuple[int, int], ...]
    default: int

    def __init__(self, source: Read, table: Mapping[int, int], default: int = 0) -> None:
        if not isinstance(source, Read):
            raise ReadError(f"Lookup needs a Read as its source, got {type(source).__name__}")
        items = tuple(sorted((int(k), int(v)) for k, v in dict(table).items()))
        if not items:
            raise ReadError("Lookup's table is empty")
        object.__setattr__(self, "where", source.where)
        object.__setattr__(self, "size", source.size)
        object.__setattr__(self, "bank", source.bank)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "table", items)
        object.__setattr__(self, "default", int(default))

    def sources(self) -> tuple[Read, ...]:
        return self.source.sources()

    def value(self, raws: Mapping[Read, torch.Tensor]) -> torch.Tensor:
        key = self.source.value(raws)
        out = torch.full_like(key, self.default)
        for k, v in self.table:
            out = torch.where(key == k, torch.full_like(key, v), out)
        return out
