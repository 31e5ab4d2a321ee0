"""A task's reads bound to a backend: every byte they need, fetched together each step.

``resolve`` turns a read into its address (symbols looked up) and checks it against the
address map (``core/memory_layout.py``); :class:`TaskMemory` hands every byte of the
task's reads to the backend's ``ram_gather`` once (``backends/ram_gather.py``: on a Warp
backend one indexing op on its device, on PyBoy ``read_memory`` calls) and splits each
gather into ``{read: int64 [N, size]}`` for ``Read.value``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from gbxcule.backends.protocol import RamGatherError
from gbxcule.core import memory_layout as ml
from gbxcule.tasks.reads import Read, ReadError

CART_RAM = ml.SPAN["cartram"]
WRAMX = ml.CGB_WRAMX


def source_reads(reads: Iterable[Read]) -> list[Read]:
    """The distinct reads whose bytes are fetched (a Lookup's source, not the Lookup)."""
    out: dict[Read, None] = {}
    for read in reads:
        for src in read.sources():
            out[src] = None
    return list(out)


def resolve(backend: Any, read: Read) -> tuple[int, int | None]:
    """``(address, bank)`` of a read on ``backend``: symbols looked up (a cart-RAM symbol
    reads its own bank unless the read names one), the span checked."""
    bank = read.bank
    if isinstance(read.where, str):
        symbols = backend.symbols
        if symbols is None:
            raise ReadError(
                f"{type(backend).__name__} has no .sym symbols; give {read.where!r} as an address"
            )
        sym = symbols[read.where]
        addr = sym.address
        if bank is None and CART_RAM.holds(addr):
            bank = sym.bank
        elif bank is None and _colour(backend) and _in_wramx(addr) and sym.bank:
            bank = sym.bank  # a WRAMX symbol of a Game Boy Color game names its bank
    else:
        addr = read.where
    end = addr + read.size
    if end > 0x10000:
        raise ReadError(f"{read.size} bytes at {addr:#06x} run past 0xFFFF")
    if CART_RAM.holds(addr, read.size):
        return addr, bank
    if bank is not None:
        if _colour(backend) and _in_wramx(addr, read.size) and 1 <= bank <= ml.CGB_WRAM_BANKS:
            return addr, bank
        raise ReadError(
            f"bank={bank} applies to cartridge RAM ({CART_RAM.lo:#06x}-{CART_RAM.hi - 1:#06x}), "
            f"or on a Game Boy Color machine to WRAM banks 1-{ml.CGB_WRAM_BANKS} at "
            f"{WRAMX[0]:#06x}-{WRAMX[1] - 1:#06x}; not {addr:#06x}"
        )
    if ml.fixed_row_offset(addr, read.size) is not None:
        return addr, None
    if all(ml.is_io(a) for a in range(addr, end)):
        return addr, None
    raise ReadError(_where_refused(addr, read.size))


def _colour(backend: Any) -> bool:
    return bool(getattr(backend, "cgb", False))


def _in_wramx(addr: int, size: int = 1) -> bool:
    return WRAMX[0] <= addr and addr + size <= WRAMX[1]


def _where_refused(addr: int, size: int) -> str:
    what = f"{size} byte(s) at {addr:#06x}"
    span = ml.span_at(addr)
    if span.row is None:
        return f"{what}: ROM does not change; a task reads RAM (VRAM, WRAM, OAM, HRAM, cart RAM)"
    if span.key == "unusable":
        return f"{what}: {span.lo:#06x}-{span.hi - 1:#06x} is not usable memory"
    return (
        f"{what} do not lie in one region (VRAM, WRAM, echo, OAM, the IO registers, HRAM or "
        "cart RAM)"
    )


class TaskMemory:
    """The task's reads on ``backend``: ``gather()`` gives ``{read: int64 [N, size]}`` on
    the backend's Torch device. ``bind`` replaces ``backend.ram_gather`` (e.g. a
    ``HostRamGather`` on a Warp backend, to compare the two)."""

    def __init__(self, backend: Any, reads: Iterable[Read], *, bind: Any = None) -> None:
        self.sources = source_reads(reads)
        addrs: list[tuple[int, int | None]] = []
        self.spans: list[tuple[Read, int, int]] = []
        for read in self.sources:
            addr, bank = resolve(backend, read)
            self.spans.append((read, len(addrs), len(addrs) + read.size))
            addrs.extend((addr + k, bank) for k in range(read.size))
        try:
            self.bound = (bind or backend.ram_gather)(addrs)
        except RamGatherError as exc:
            raise ReadError(str(exc)) from None
        self.device = self.bound.device

    def gather(self) -> dict[Read, torch.Tensor]:
        raw = self.bound.gather()
        return {read: raw[:, lo:hi] for read, lo, hi in self.spans}
