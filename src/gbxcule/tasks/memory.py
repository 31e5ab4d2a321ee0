"""A task's reads bound to a backend: every byte they need, fetched together each step.

:class:`DeviceMemory` (Warp backends) gathers the bytes of all the task's reads from the
zero-copy RAM row (``backends/ram_views.py``) in one indexing op on the backend's device:
no host copy, no sync. Cartridge RAM of the bank the game has mapped is gathered per env
from the mapper's registers (0xFF while cart RAM is disabled, as the CPU would read it).
:class:`HostMemory` (PyBoy backends) reads the same bytes through ``read_memory`` per env
and gives CPU tensors; both return ``{read: int64 [N, size]}`` for ``Read.value``.

IO registers: those that hold what the CPU last wrote (``STORED_IO``: SCX/SCY, WX/WY,
LCDC, ...) come from the row like RAM. The others (DIV, TIMA, LY, STAT, IF, P1, the sound
registers, IE) are computed when read, some with side effects (a STAT read ends PyBoy's
one-shot mode override; a sound register read syncs the sound unit): both backends read
them one at a time, in address order, as ``pyboy.memory[addr]`` does (on Warp one
``peek_envs`` launch over every env), so ours and PyBoy see the same side effects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from gbxcule.core import memory_layout as ml
from gbxcule.tasks.reads import Read, ReadError

CART_RAM_SPAN = (0xA000, 0xC000)
HOST_SPAN = 0x2000  # host reads of all a task's values in one call when they span this
# IO registers whose value is what the CPU last wrote, kept as is in the row's IO page:
# readable as task values (a scrolling game's camera: SCX/SCY). The others (DIV, TIMA, LY,
# STAT, IF, the joypad, sound) are computed when the CPU reads them, with side effects.
STORED_IO = {
    0xFF01: "SB", 0xFF06: "TMA", 0xFF40: "LCDC", 0xFF42: "SCY", 0xFF43: "SCX", 0xFF45: "LYC",
    0xFF47: "BGP", 0xFF48: "OBP0", 0xFF49: "OBP1", 0xFF4A: "WY", 0xFF4B: "WX",
}  # fmt: skip
DEVICE_SPANS = (  # CPU address span -> offset of its first byte in the RAM row
    (0x8000, 0xA000, ml.VRAM_OFF, "VRAM"),
    (0xC000, 0xE000, ml.WRAM_OFF, "WRAM"),
    (0xE000, 0xFE00, ml.WRAM_OFF, "echo RAM"),
    (0xFE00, 0xFEA0, ml.OAM_OFF, "OAM"),
    (0xFF80, 0xFFFF, ml.HRAM_OFF, "HRAM"),
)


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
        symbols = getattr(backend, "symbols", None)
        if symbols is None:
            raise ReadError(
                f"{type(backend).__name__} has no .sym symbols; give {read.where!r} as an address"
            )
        sym = symbols[read.where]
        addr = sym.address
        if bank is None and CART_RAM_SPAN[0] <= addr < CART_RAM_SPAN[1]:
            bank = sym.bank
    else:
        addr = read.where
    end = addr + read.size
    if end > 0x10000:
        raise ReadError(f"{read.size} bytes at {addr:#06x} run past 0xFFFF")
    if CART_RAM_SPAN[0] <= addr and end <= CART_RAM_SPAN[1]:
        return addr, bank
    if bank is not None:
        raise ReadError(f"bank={bank} applies to cartridge RAM (0xA000-0xBFFF), not {addr:#06x}")
    if any(lo <= addr and end <= hi for lo, hi, _, _ in DEVICE_SPANS):
        return addr, None
    if all(is_io(a) for a in range(addr, end)):
        return addr, None
    raise ReadError(_where_refused(addr, read.size))


def is_io(addr: int) -> bool:
    """An IO register (0xFF00-0xFF7F) or IE (0xFFFF)."""
    return 0xFF00 <= addr < 0xFF80 or addr == 0xFFFF


def _where_refused(addr: int, size: int) -> str:
    what = f"{size} byte(s) at {addr:#06x}"
    if addr < 0x8000:
        return f"{what}: ROM does not change; a task reads RAM (VRAM, WRAM, OAM, HRAM, cart RAM)"
    if 0xFEA0 <= addr < 0xFF00:
        return f"{what}: 0xFEA0-0xFEFF is not usable memory"
    return (
        f"{what} do not lie in one region (VRAM, WRAM, echo, OAM, the IO registers, HRAM or "
        "cart RAM)"
    )


class DeviceMemory:
    """The reads' bytes from a Warp backend's RAM row, gathered on its device."""

    def __init__(self, backend: Any, reads: Iterable[Read]) -> None:
        self.sources = source_reads(reads)
        self.mem = backend.mem_torch()  # [N, row_bytes] uint8, zero-copy
        self.device = self.mem.device
        cart_bytes = int(backend.cart.cart_ram_bytes)
        mbc2 = bool(getattr(backend.cart, "mbc_kind", None) == _mbc2_kind())
        fixed: list[int] = []  # row offset per byte (mapped-bank bytes: their offset in a bank)
        mapped: list[bool] = []
        computed: list[tuple[int, int]] = []  # (IO address, byte position) read by the bus
        self.spans: list[tuple[Read, int, int]] = []
        for read in self.sources:
            addr, bank = resolve(backend, read)
            start = len(fixed)
            for k in range(read.size):
                a = addr + k
                if CART_RAM_SPAN[0] <= a < CART_RAM_SPAN[1]:
                    if not cart_bytes:
                        raise ReadError(f"{a:#06x}: this cartridge has no RAM")
                    rel = (a - 0xA000) % 512 if mbc2 else a - 0xA000  # MBC2: 512 cells
                    if bank is None:
                        fixed.append(rel)
                        mapped.append(True)
                        continue
                    off = rel if mbc2 else bank * 0x2000 + rel
                    if off >= cart_bytes:
                        raise ReadError(
                            f"cart RAM bank {bank} at {a:#06x}: this cartridge has "
                            f"{cart_bytes // 0x2000} bank(s) of RAM"
                        )
                    fixed.append(ml.CART_RAM_OFF + off)
                elif a in STORED_IO:
                    fixed.append(ml.IO_OFF + a - 0xFF00)
                elif is_io(a):
                    computed.append((a, len(fixed)))
                    fixed.append(0)  # a placeholder, overwritten by the peek
                else:
                    lo, off = next((lo, off) for lo, hi, off, _ in DEVICE_SPANS if lo <= a < hi)
                    fixed.append(off + a - lo)
                mapped.append(False)
            self.spans.append((read, start, len(fixed)))
        self.index = torch.tensor(fixed, dtype=torch.int64, device=self.device)
        self.mapped = torch.tensor(mapped, dtype=torch.bool, device=self.device)
        self.any_mapped = any(mapped)
        if self.any_mapped:
            self._mapper_views(backend, 1 if mbc2 else cart_bytes // 0x2000)
        self._computed_io(backend, sorted(computed))

    def _computed_io(self, backend: Any, computed: list[tuple[int, int]]) -> None:
        """The peek of the computed IO registers (module doc), one launch a gather."""
        self.machine = backend.machine if computed else None
        if not computed:
            return
        import warp as wp

        self.io_cols = torch.tensor([c for _, c in computed], device=self.device)
        self.io_addrs = wp.array(
            [a for a, _ in computed], dtype=wp.int32, device=backend.machine.mem.device
        )
        self.io_out = torch.zeros(
            (self.mem.shape[0], len(computed)), dtype=torch.uint8, device=self.device
        )

    def _peek_io(self, raw: torch.Tensor) -> torch.Tensor:
        import warp as wp

        from gbxcule.backends.device_inputs import launch_consuming
        from gbxcule.kernels.debug_access import peek_envs

        out = self.io_out
        launch_consuming(
            peek_envs,
            out.shape[0],
            [self.machine, self.io_addrs, wp.from_torch(out)],
            self.io_addrs.device,
            True,
        )
        raw[:, self.io_cols] = out.to(torch.int64)
        return raw

    def _mapper_views(self, backend: Any, banks: int) -> None:
        import warp as wp

        from gbxcule.backends.warp_base import field_view

        self.ram_bank = wp.to_torch(field_view(backend.machine, "ram_bank"))
        self.ram_enabled = wp.to_torch(field_view(backend.machine, "ram_enabled"))
        self.banks = max(1, banks)

    def gather(self) -> dict[Read, torch.Tensor]:
        """``{read: int64 [N, size]}``, computed on the device."""
        n = self.mem.shape[0]
        if self.any_mapped:
            bank_base = ml.CART_RAM_OFF + (self.ram_bank.to(torch.int64) % self.banks) * 0x2000
            idx = torch.where(self.mapped, self.index + bank_base[:, None], self.index)
            raw = self.mem.gather(1, idx).to(torch.int64)
            off = (self.ram_enabled == 0)[:, None] & self.mapped
            raw = raw.masked_fill(off, 0xFF)
        else:
            raw = self.mem[:, self.index].to(torch.int64) if n else self.mem[:, :0].long()
        if self.machine is not None and n:
            raw = self._peek_io(raw)
        return {read: raw[:, lo:hi] for read, lo, hi in self.spans}


def _mbc2_kind() -> Any:
    from gbxcule.backends.warp_base import MBC_KIND

    return MBC_KIND["mbc2"]


class HostMemory:
    """The reads' bytes through ``read_memory`` (PyBoy backends): CPU tensors."""

    def __init__(self, backend: Any, reads: Iterable[Read]) -> None:
        self.backend = backend
        self.sources = source_reads(reads)
        self.device = torch.device("cpu")
        self.addrs: list[tuple[Read, int]] = []
        for read in self.sources:
            addr, bank = resolve(backend, read)
            if bank is not None:
                raise ReadError(
                    f"{read}: a named cart-RAM bank is read on Warp backends only; on "
                    f"{type(backend).__name__} read the bank the game maps (bank=None)"
                )
            self.addrs.append((read, addr))

    def gather(self) -> dict[Read, torch.Tensor]:
        """One ``read_memory`` an env over the span of all RAM reads when it is short and
        does not cross the IO page (whose reads act: module doc) (a worker process answers
        each call: the calls, not the bytes, cost), else one a read; the IO registers one
        byte at a time in address order."""
        n = self.backend.num_envs
        ram = [(r, a) for r, a in self.addrs if not is_io(a)]
        out: dict[Read, torch.Tensor] = {}
        if ram:
            lo = min(a for _, a in ram)
            hi = max(a + r.size for r, a in ram)
            if hi - lo <= HOST_SPAN and not (lo < 0xFF80 and hi > 0xFF00):
                rows = np.stack([self.backend.read_memory(e, lo, hi) for e in range(n)])
                block = torch.from_numpy(rows.astype(np.int64))
                out = {r: block[:, a - lo : a - lo + r.size] for r, a in ram}
            else:
                for read, addr in ram:
                    rows = np.stack(
                        [self.backend.read_memory(e, addr, addr + read.size) for e in range(n)]
                    )
                    out[read] = torch.from_numpy(rows.astype(np.int64))
        io = sorted({a + k for r, a in self.addrs if is_io(a) for k in range(r.size)})
        if io:
            values = {
                a: np.array([self.backend.read_memory(e, a, a + 1)[0] for e in range(n)])
                for a in io
            }
            for read, addr in self.addrs:
                if is_io(addr):
                    cols = [values[addr + k] for k in range(read.size)]
                    out[read] = torch.from_numpy(np.stack(cols, axis=1).astype(np.int64))
        return out


def bind_memory(backend: Any, reads: Iterable[Read]) -> DeviceMemory | HostMemory:
    """Device gathers where the backend has RAM views, host reads otherwise."""
    if hasattr(backend, "mem_torch"):
        return DeviceMemory(backend, reads)
    return HostMemory(backend, reads)
