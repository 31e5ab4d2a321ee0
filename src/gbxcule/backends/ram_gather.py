"""The bytes at a list of CPU addresses, for every env, fetched together each step.

A backend's ``ram_gather(addrs)`` binds a list of ``(address, bank)`` pairs, one a byte
(``bank``: a cart-RAM bank, or ``None`` for what the CPU sees there), and returns an
object whose ``gather()`` gives ``int64 [N, len(addrs)]`` on the backend's Torch device.
Task reads (``tasks/memory.py``) are the caller; the addresses come checked against the
address map (``core/memory_layout.py``).

:class:`DeviceRamGather` (Warp backends) gathers from the zero-copy RAM row
(``backends/ram_views.py``) in one indexing op on the backend's device: no host copy, no
sync. Cartridge RAM of the bank the game has mapped is gathered per env from the mapper's
registers (0xFF while cart RAM is disabled, as the CPU would read it).
:class:`HostRamGather` (any backend, PyBoy's) reads the same bytes through
``read_memory`` per env.

IO registers: those that hold what the CPU last wrote (``STORED_IO``: SCX/SCY, WX/WY,
LCDC, ...) come from the row like RAM. The others (DIV, TIMA, LY, STAT, IF, P1, the sound
registers, IE) are computed when read, some with side effects (a STAT read ends PyBoy's
one-shot mode override; a sound register read syncs the sound unit): both gathers read
them one at a time, in address order, as ``pyboy.memory[addr]`` does (on Warp one
``peek_envs`` launch over every env), so ours and PyBoy see the same side effects.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gbxcule.backends.protocol import RamGatherError
from gbxcule.core import memory_layout as ml

HOST_SPAN = 0x2000  # host reads of all the RAM bytes in one call an env when they span this
# IO registers whose value is what the CPU last wrote, kept as is in the row's IO page:
# readable as task values (a scrolling game's camera: SCX/SCY). The others (DIV, TIMA, LY,
# STAT, IF, the joypad, sound) are computed when the CPU reads them, with side effects.
STORED_IO = {
    0xFF01: "SB", 0xFF06: "TMA", 0xFF40: "LCDC", 0xFF42: "SCY", 0xFF43: "SCX", 0xFF45: "LYC",
    0xFF47: "BGP", 0xFF48: "OBP0", 0xFF49: "OBP1", 0xFF4A: "WY", 0xFF4B: "WX",
}  # fmt: skip
MBC2_CELLS = 512  # MBC2's cart RAM: 512 half-byte cells, mirrored through 0xA000-0xBFFF


class DeviceRamGather:
    """The bytes from a Warp backend's RAM row, gathered on its device."""

    def __init__(self, backend: Any, addrs: list[tuple[int, int | None]]) -> None:
        from gbxcule.backends.warp_base import MBC_KIND

        self.mem = backend.mem_torch()  # [N, row_bytes] uint8, zero-copy
        self.device = self.mem.device
        cart_bytes = int(backend.cart.cart_ram_bytes)
        mbc2 = backend.cart.mbc_kind == MBC_KIND["mbc2"]
        cart = ml.SPAN["cartram"]
        fixed: list[int] = []  # row offset per byte (mapped-bank bytes: their offset in a bank)
        mapped: list[bool] = []
        computed: list[tuple[int, int]] = []  # (IO address, byte position) read by the bus
        wramx: list[tuple[int, int]] = []  # (byte position, offset in a bank): SVBK's bank
        width = self.mem.shape[1]
        colour = bool(getattr(backend, "cgb", False))
        for a, bank in addrs:
            if colour and _in_wramx(a):  # a Game Boy Color machine's D000-DFFF (and echo)
                off = (a - ml.SPAN["wram"].lo) % ml.CGB_WRAM_BANK_SIZE
                if bank is None:  # the bank SVBK maps now: chosen per env at each gather
                    wramx.append((len(fixed), off))
                    bank = 1
                fixed.append(ml.wramx_bank_offset(width, bank) + off)
                mapped.append(False)
                continue
            if cart.holds(a):
                if not cart_bytes:
                    raise RamGatherError(f"{a:#06x}: this cartridge has no RAM")
                rel = (a - cart.lo) % MBC2_CELLS if mbc2 else a - cart.lo
                if bank is None:
                    fixed.append(rel)
                    mapped.append(True)
                    continue
                off = rel if mbc2 else bank * cart.size + rel
                if off >= cart_bytes:
                    raise RamGatherError(
                        f"cart RAM bank {bank} at {a:#06x}: this cartridge has "
                        f"{cart_bytes // cart.size} bank(s) of RAM"
                    )
                fixed.append(cart.row_at(cart.lo) + off)
            elif a in STORED_IO:
                fixed.append(ml.IO_OFF + a - ml.SPAN["io"].lo)
            elif ml.is_io(a):
                computed.append((a, len(fixed)))
                fixed.append(0)  # a placeholder, overwritten by the peek
            else:
                off = ml.fixed_row_offset(a)
                if off is None:
                    raise RamGatherError(f"{a:#06x} is not RAM a gather reads")
                fixed.append(off)
            mapped.append(False)
        self.index = torch.tensor(fixed, dtype=torch.int64, device=self.device)
        self.mapped = torch.tensor(mapped, dtype=torch.bool, device=self.device)
        self.any_mapped = any(mapped)
        if self.any_mapped:
            self._mapper_views(backend, 1 if mbc2 else cart_bytes // cart.size)
        self._computed_io(backend, sorted(computed))
        self._banked_wram(backend, wramx)

    def _banked_wram(self, backend: Any, wramx: list[tuple[int, int]]) -> None:
        """A Game Boy Color machine's D000 as the CPU sees it: bank 1 at D000's offset,
        banks 2-7 past the cart RAM (``core/memory_layout.py``), by SVBK per env."""
        self.wramx_cols = None
        if not wramx:
            return
        d = self.device
        self.wramx_cols = torch.tensor([c for c, _ in wramx], device=d)
        offs = torch.tensor([o for _, o in wramx], dtype=torch.int64, device=d)
        self.wramx_bank1 = ml.wramx_bank_offset(self.mem.shape[1], 1) + offs
        self.wramx_extra = ml.wramx_bank_offset(self.mem.shape[1], 2) + offs
        from gbxcule.kernels.board.ioregs import SVBK

        self.svbk_col = ml.IO_OFF + int(SVBK)  # the register as stored

    def _wramx(self, raw: torch.Tensor) -> torch.Tensor:
        bank = self.mem[:, self.svbk_col].to(torch.int64) & 7
        base = torch.where(bank >= 2, (bank - 2) * ml.CGB_WRAM_BANK_SIZE, -1)[:, None]
        index = torch.where(base >= 0, self.wramx_extra[None, :] + base, self.wramx_bank1[None, :])
        raw[:, self.wramx_cols] = self.mem.gather(1, index).to(torch.int64)
        return raw

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
        from gbxcule.kernels.variant import machine_kernel

        out = self.io_out
        launch_consuming(
            machine_kernel(self.machine, peek_envs),
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

    def gather(self) -> torch.Tensor:
        """``int64 [N, len(addrs)]``, computed on the device."""
        n = self.mem.shape[0]
        if self.any_mapped:
            cart = ml.SPAN["cartram"]
            bank_base = (
                cart.row_at(cart.lo) + (self.ram_bank.to(torch.int64) % self.banks) * cart.size
            )
            idx = torch.where(self.mapped, self.index + bank_base[:, None], self.index)
            raw = self.mem.gather(1, idx).to(torch.int64)
            off = (self.ram_enabled == 0)[:, None] & self.mapped
            raw = raw.masked_fill(off, 0xFF)
        else:
            raw = self.mem[:, self.index].to(torch.int64) if n else self.mem[:, :0].long()
        if self.machine is not None and n:
            raw = self._peek_io(raw)
        if self.wramx_cols is not None and n:
            raw = self._wramx(raw)
        return raw


class HostRamGather:
    """The bytes through ``read_memory`` (PyBoy backends; any backend): CPU tensors."""

    def __init__(self, backend: Any, addrs: list[tuple[int, int | None]]) -> None:
        self.backend = backend
        self.device = torch.device("cpu")
        self.banked: list[tuple[int, int, int]] = []  # (position, WRAM bank, address)
        for k, (a, bank) in enumerate(addrs):
            if bank is not None and ml.SPAN["cartram"].holds(a):
                raise RamGatherError(
                    f"{a:#06x} in cart RAM bank {bank}: a named cart-RAM bank is read on "
                    f"Warp backends only; on {type(backend).__name__} read the bank the game "
                    "maps (bank=None)"
                )
            if bank is not None:  # a Game Boy Color machine's WRAM bank at D000
                self.banked.append((k, bank, a))
        banked = {k for k, _, _ in self.banked}
        self.addrs = [a for a, _ in addrs]
        self.ram = [k for k, a in enumerate(self.addrs) if not ml.is_io(a) and k not in banked]
        # the IO registers once each, in address order (their reads act: module doc)
        self.io = sorted({a for a in self.addrs if ml.is_io(a)})
        self.runs = _runs(sorted({self.addrs[k] for k in self.ram}))

    def gather(self) -> torch.Tensor:
        """One ``read_memory`` an env over the span of all RAM bytes when it is short and
        does not cross the IO page (a worker process answers each call: the calls, not the
        bytes, cost), else one a run of adjacent bytes; then the IO registers one byte at a
        time in address order."""
        n = self.backend.num_envs
        out = np.zeros((n, len(self.addrs)), dtype=np.int64)
        got: dict[int, np.ndarray] = {}  # address -> [N] bytes
        if self.runs:
            lo, hi = self.runs[0][0], self.runs[-1][1]
            io = ml.SPAN["io"]
            one_call = hi - lo <= HOST_SPAN and not (lo < io.hi and hi > io.lo)
            for run_lo, run_hi in [(lo, hi)] if one_call else self.runs:
                rows = np.stack([self.backend.read_memory(e, run_lo, run_hi) for e in range(n)])
                for a in range(run_lo, run_hi):
                    got[a] = rows[:, a - run_lo]
        for a in self.io:
            got[a] = np.array([self.backend.read_memory(e, a, a + 1)[0] for e in range(n)])
        for k in self.ram:
            out[:, k] = got[self.addrs[k]]
        for a in self.io:
            for k in (k for k, b in enumerate(self.addrs) if b == a):
                out[:, k] = got[a]
        for k, bank, a in self.banked:
            out[:, k] = [self.backend.read_wram_bank(e, bank, a, a + 1)[0] for e in range(n)]
        return torch.from_numpy(out)


def _in_wramx(addr: int) -> bool:
    """D000-DFFF or its echo F000-FDFF: the switchable WRAM bank on CGB hardware."""
    wram, echo = ml.SPAN["wram"], ml.SPAN["echo"]
    off = (addr - wram.lo) if wram.holds(addr) else (addr - echo.lo) if echo.holds(addr) else -1
    return off >= ml.CGB_WRAM_BANK_SIZE


def _runs(addrs: list[int]) -> list[tuple[int, int]]:
    """Sorted distinct addresses -> ``[lo, hi)`` runs of adjacent ones."""
    runs: list[tuple[int, int]] = []
    for a in addrs:
        if runs and runs[-1][1] == a:
            runs[-1] = (runs[-1][0], a + 1)
        else:
            runs.append((a, a + 1))
    return runs
