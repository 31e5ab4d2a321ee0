"""Event hooks on the Warp backends: ``set_hooks``, ``hook_hits_torch``, ``hook_stopped_torch``.

A hook is a ROM address in a bank, given as an int (``0x0150``: bank 0 below 0x4000;
at 0x4000-0x7FFF only on a 32 KiB ROM, whose bank there is always 1), a ``"bank:addr"``
string in hex as ``.sym`` files write it (``"01:4A20"``), or a symbol name from the
backend's ``.sym`` file. What counts as a hit, and how a hit ends a step with
``stop_on_hit``, is PyBoy 2.8.1's ``hook_register`` (``kernels/step/hooks.py``).

* ``hook_hits_torch()``: int32 ``[N, len(hooks)]``, a zero-copy view; column ``k`` counts
  the hits of hook ``k`` *in the last step* (zeroed at the start of each step; sum them
  for PyBoy's cumulative callback count).
* ``hook_stopped_torch()``: int32 ``[N]``, 1 where the last step ended at a hit.

``stop_on_hit``: an env's step ends right after the hit is counted, before the hooked
instruction runs (the state a PyBoy callback sees). The rest of that step is not run:
the interrupted frame's end (the button release count-down) and the later frames are
skipped, and the screen is not latched (pixels of a stopped step are stale). The next
step goes on from there: its first frame is the rest of the interrupted frame (it
ends at that frame's end; the step's buttons are pressed at its start), then its other
``frames_per_step - 1`` frames. Without buttons the envs therefore follow the same
trajectory as with ``stop_on_hit=False``, just cut into different steps.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as wp

from gbxcule.core.memory_layout import SPAN, span_at
from gbxcule.kernels.step.hooks import (
    HOOK_COUNT,
    HOOK_HITS,
    HOOK_KEYS,
    HOOK_MAP,
    HOOK_MAP_WORDS,
    HOOK_MAX,
    HOOK_ROM_END,
    HOOK_ROW,
    HOOK_STOP,
    HOOK_STOPPED,
    HOOK_WORDS,
)

if TYPE_CHECKING:
    import torch

_BANK_ADDR = re.compile(r"^([0-9A-Fa-f]{1,4}):([0-9A-Fa-f]{1,4})$")
BANK_SIZE = 0x4000
PYBOY_HOOK_END = SPAN["echo"].lo  # PyBoy's hook_register refuses addresses from here on


class HookError(ValueError):
    """A hook address the backend cannot hook (bad address, bank, symbol or count)."""


def _where(addr: int) -> str:
    span = span_at(addr)
    if addr < PYBOY_HOOK_END:
        return (
            f"{span.name} hooks are not supported: PyBoy patches the RAM byte with 0xDB, "
            "which the game's own writes and reads see, so its counts depend on them"
        )
    return f"PyBoy refuses hooks at 0x{PYBOY_HOOK_END:04X}-0xFFFF ({span.name} here)"


def parse_hook(spec: Any, rom_banks: int, symbols: Any) -> tuple[int, int]:
    """``(bank, addr)`` of one hook spec; ``symbols`` is a callable giving the symbol table."""
    if isinstance(spec, bool) or not isinstance(spec, (int, np.integer, str)):
        raise HookError(f"a hook is an int address, a 'bank:addr' string or a symbol, got {spec!r}")
    if isinstance(spec, str):
        match = _BANK_ADDR.match(spec.strip())
        if match:
            bank, addr = int(match[1], 16), int(match[2], 16)
        else:
            sym = symbols()[spec]
            bank, addr = sym.bank, sym.address
    else:
        addr = int(spec)
        if not 0 <= addr <= 0xFFFF:
            raise HookError(f"hook address {addr:#x} is outside 0x0000-0xFFFF")
        if BANK_SIZE <= addr < HOOK_ROM_END and rom_banks > 2:
            raise HookError(
                f"hook {addr:#06x}: the ROM has {rom_banks} banks; give the bank as 'bank:addr' "
                f"(e.g. '01:{addr:04X}') or a symbol"
            )
        bank = 0 if addr < BANK_SIZE else 1
    return check_hook(bank, addr, rom_banks, spec)


def check_hook(bank: int, addr: int, rom_banks: int, spec: Any) -> tuple[int, int]:
    if not 0 <= addr <= 0xFFFF:
        raise HookError(f"hook {spec!r}: address {addr:#x} is outside 0x0000-0xFFFF")
    if addr >= HOOK_ROM_END:
        raise HookError(f"hook {spec!r} at {addr:#06x}: {_where(addr)}")
    if addr < BANK_SIZE and bank != 0:
        raise HookError(
            f"hook {spec!r}: 0x0000-0x3FFF is bank 0 (PyBoy looks hooks there up in bank 0), "
            f"got bank {bank}"
        )
    if addr >= BANK_SIZE and not 0 <= bank < rom_banks:
        raise HookError(f"hook {spec!r}: ROM bank {bank} does not exist (the ROM has {rom_banks})")
    return bank, addr


def hook_table(keys: list[tuple[int, int]], stop_on_hit: bool) -> np.ndarray:
    """An env's hook row for these ``(bank, addr)`` hooks: ``Machine.i32`` columns
    ``HOOK_ROW ..`` (kernels/step/hooks.py), the per-env ones (single-step flag, stop flag,
    hits) at 0."""
    row = np.zeros(HOOK_WORDS, np.int32)
    row[HOOK_COUNT - HOOK_ROW] = len(keys)
    row[HOOK_STOP - HOOK_ROW] = int(bool(stop_on_hit))
    bits = np.zeros(HOOK_MAP_WORDS, np.uint32)
    for k, (bank, addr) in enumerate(keys):
        row[HOOK_KEYS - HOOK_ROW + k] = (bank << 16) | addr
        bits[(addr >> 5) & 31] |= np.uint32(1 << (addr & 31))
    row[HOOK_MAP - HOOK_ROW :] = bits.view(np.int32)
    return row


class HooksMixin:
    """``set_hooks`` and the hook views of the Warp backends.

    While no hook is set the backend launches the plain step kernel; with hooks, the
    hooked variant (``kernels/step/step.py``'s ``step_kernel_variant(hooks=True)``, built and
    compiled on the first ``set_hooks`` that sets any)."""

    machine: Any
    num_envs: int
    cart: Any
    symbols: Any
    synchronize: Any
    _recorded_step: Any
    _hooks: tuple[tuple[int, int], ...] = ()

    def set_hooks(self, addresses: Any, stop_on_hit: bool = False) -> list[tuple[int, int]]:
        """Hook these addresses (at most ``HOOK_MAX``), replacing any earlier hooks; an empty
        list removes them all (the step is the plain kernel again). Returns the
        ``(bank, addr)`` list, in the order of the columns of ``hook_hits_torch()``."""
        if isinstance(addresses, (str, int, np.integer)):
            addresses = [addresses]
        specs = list(addresses)
        if len(specs) > HOOK_MAX:
            raise HookError(f"at most {HOOK_MAX} hooks per backend, got {len(specs)}")
        banks = int(self.cart.rom_banks)
        keys = [parse_hook(s, banks, lambda: self.symbols) for s in specs]
        seen: dict[tuple[int, int], Any] = {}
        for spec, key in zip(specs, keys, strict=True):
            if key in seen:
                raise HookError(
                    f"hooks {seen[key]!r} and {spec!r} are the same address "
                    f"{key[0]:02X}:{key[1]:04X} (PyBoy: hook already registered)"
                )
            seen[key] = spec
        self.synchronize()
        rows = np.tile(hook_table(keys, stop_on_hit), (self.num_envs, 1))
        self.machine.i32[:, HOOK_ROW : HOOK_ROW + HOOK_WORDS].assign(rows)
        self._hooks = tuple(keys)
        self._recorded_step = None  # step() records its launches again, with _step_kernel()
        return list(keys)

    @property
    def hooks(self) -> list[tuple[int, int]]:
        """The hooks set, as ``(bank, addr)``, in column order."""
        return list(self._hooks)

    def _step_kernel(self, hooks: bool | None = None) -> Any:
        """The step kernel ``step()`` launches: the hooked variant while hooks are set (or as
        ``hooks`` says), in the shape ``units_out_of_line`` picks (the GPU shape on CUDA,
        ``kernels/step/step_cuda.py``) and with ``opcode_dispatch`` (``kernels/step/step_cpu.py``)."""
        from gbxcule.kernels.step.step import step_kernel_variant

        return step_kernel_variant(
            hooks=bool(self._hooks) if hooks is None else hooks,
            units_out_of_line=self.units_out_of_line,
            opcode_dispatch=self.opcode_dispatch,
            cuda_max_registers=self.cuda_max_registers,
            hot_loop=self.hot_loop,
        )

    def hook_hits_torch(self) -> torch.Tensor:
        """int32 ``[N, len(hooks)]``, zero-copy: hits of each hook in the last step."""
        return wp.to_torch(self.machine.i32)[:, HOOK_HITS : HOOK_HITS + len(self._hooks)]

    def hook_stopped_torch(self) -> torch.Tensor:
        """int32 ``[N]``, zero-copy: 1 where the last step ended at a hook (``stop_on_hit``)."""
        return wp.to_torch(self.machine.i32)[:, HOOK_STOPPED]
