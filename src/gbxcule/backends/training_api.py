"""The training-facing methods of the Warp backends (``WarpVecBase`` inherits them).

* Start states: :meth:`~TrainingApiMixin.capture_start_state`,
  :meth:`~TrainingApiMixin.add_start_state` and :meth:`~TrainingApiMixin.reset_envs`
  keep whole env states in a device cache and restore masked envs in one launch
  (``backends/start_states.py``). ``reset(seed)`` still boots every env.
* Save states: :meth:`~TrainingApiMixin.load_state` (PyBoy ``.state`` v7-v29 or our
  snapshot), :meth:`~TrainingApiMixin.save_snapshot`,
  :meth:`~TrainingApiMixin.export_pyboy_state` (``backends/savestate_bridge.py``).
* Full state: :meth:`~TrainingApiMixin.capture_state` /
  :meth:`~TrainingApiMixin.restore_state` (``backends/machine_state.py``).
* RAM on the device: :meth:`~TrainingApiMixin.wram_torch` and friends
  (``backends/ram_views.py``), :meth:`~TrainingApiMixin.ram_gather` (task reads,
  ``backends/ram_gather.py``); symbols from a ``.sym`` file (``core/symbols.py``).
* Swarm resets: :meth:`~TrainingApiMixin.copy_envs` copies whole env states between
  envs in one launch (``backends/swarm.py``).
* Locked envs: :meth:`~TrainingApiMixin.locked_torch` / :meth:`~TrainingApiMixin.locked_envs`
  report the envs an illegal opcode locked.
* Device inputs: ``step()`` takes NumPy or Torch actions (``backends/device_inputs.py``);
  :meth:`~TrainingApiMixin.check_errors` reports bad device-side values.

The backend provides ``machine``, ``num_envs``, ``device``, ``codec``, ``cart``,
``_rom``, ``rom_path``, ``_buttons``, ``_serial``, ``_serial_seen``, ``pixels``,
calls :meth:`_init_training_api` before its first ``reset()``, :meth:`_after_reset` at
the end of ``reset()``, :meth:`_load_actions` in ``step()`` and
:meth:`_refresh_serial_after_restores` at the top of ``serial_output()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import warp as wp

from gbxcule.backends.checks import check_env, check_positive_int, check_seed
from gbxcule.backends.device_inputs import ActionInput, DeviceErrorLog, env_mask, env_slots
from gbxcule.backends.machine_state import MachineState, capture_env, restore_env
from gbxcule.backends.ram_gather import DeviceRamGather
from gbxcule.backends.ram_views import RamViews, mem_offset
from gbxcule.backends.savestate_bridge import (
    FRESH_PYBOY_FIELDS,
    env_state_from_pyboy,
    pyboy_state_from_env,
)
from gbxcule.backends.start_states import StartStateCache, StartStateError
from gbxcule.backends.warp_base import MBC_KIND, field_view
from gbxcule.core.memory_layout import SPAN
from gbxcule.core.savestate import rom_sha256, save_snapshot, write_pyboy_state
from gbxcule.core.state_source import read_state_source
from gbxcule.core.symbols import SymbolTable, symbols_beside
from gbxcule.kernels.board.serial import serial_bytes

ROMX = SPAN["romx"]  # the switchable ROM bank: symbols there read their own bank


class TrainingApiMixin:
    machine: Any
    num_envs: int
    device: str
    codec: Any
    cart: Any
    rom_path: Path
    pixels: Any
    _rom: bytes
    _buttons: wp.array
    _serial: list[bytearray]
    _serial_seen: np.ndarray
    read_memory: Any

    # ---- wiring (called by the backend) ---------------------------------------------

    def _init_training_api(
        self, *, state_path: str | Path | None = None, sym_path: str | Path | None = None
    ) -> None:
        if state_path is not None and not Path(state_path).is_file():
            raise FileNotFoundError(f"state_path: save state not found: {state_path}")
        self.state_path = None if state_path is None else Path(state_path)
        self.sym_path = None if sym_path is None else Path(sym_path)
        self._start_states = StartStateCache(self.machine, self.device)
        self._load_rows: StartStateCache | None = None
        self._actions = ActionInput(self.codec, self.num_envs, self.device)
        self._slot_log = DeviceErrorLog(
            self.device,
            "out-of-range start-state slots",
            "those envs were not restored",
            IndexError,
        )
        self._copy_log = DeviceErrorLog(
            self.device,
            "copy_envs sources out of range or themselves copied to",
            "those envs were not copied",
            ValueError,
        )
        self._ram_views: RamViews | None = None
        self._symbols: SymbolTable | None = None
        self._post_boot: MachineState | None = None
        self._restores_seen = np.zeros(self.num_envs, dtype=np.int32)
        self._reset_draws = 0
        self._reset_seed = 0

    def _after_reset(self, seed: int | None = None) -> None:
        """End of ``reset()``: match the oracle's post-boot state (PyBoy resets by loading a
        snapshot, which leaves the LCD's unsaved one-shot flags clear; our boot run sets
        one), remember it for ``load_state``, then load ``state_path``."""
        for name in FRESH_PYBOY_FIELDS:  # as after the oracle's reset (savestate_bridge.py)
            field_view(self.machine, name).zero_()
        if self._post_boot is None:
            self._post_boot = capture_env(self.machine, 0)
        self._restores_seen = self._start_states.restores.numpy().copy()
        self._reset_draws = 0
        self._reset_seed = 0 if seed is None else int(seed)
        if self.state_path is not None:
            self.load_state(self.state_path)

    def _load_actions(self, actions: Any) -> None:
        """``step()``'s actions -> ``self._buttons`` (host-checked, or on the device)."""
        self._actions.fill(actions, self._buttons)

    def _refresh_serial_after_restores(self) -> None:
        """Restart the host copy of the serial output of envs restored on the device."""
        restores = self._start_states.restores.numpy()
        changed = np.flatnonzero(restores != self._restores_seen)
        if changed.size == 0:
            return
        ring, lengths = (
            self.machine.serial_buf.numpy(),
            field_view(self.machine, "serial_len").numpy(),
        )
        for e in changed:
            self._restart_serial(int(e), ring[e], int(lengths[e]))
        self._restores_seen = restores.copy()

    def _restart_serial(self, env: int, ring: np.ndarray, length: int) -> None:
        self._serial[env] = bytearray(serial_bytes(ring, length))
        self._serial_seen[env] = length

    # ---- start states ----------------------------------------------------------------

    @property
    def num_start_states(self) -> int:
        return self._start_states.count

    def capture_start_state(self, env: int) -> int:
        """Add ``env``'s current full state to the start-state cache; returns its slot."""
        return self._start_states.store_env(check_env(env, self.num_envs))

    def add_start_state(self, source: Any) -> int:
        """Add a start state: a :meth:`capture_state` dict, or a save state (snapshot or
        PyBoy ``.state``, bytes or path) as :meth:`load_state` reads it. Returns its slot."""
        if isinstance(source, dict):
            return self._start_states.add_state(source)
        return self._start_states.add_state(self._state_from_source(source))

    def start_state(self, slot: int) -> MachineState:
        """A host copy of the start state in ``slot``."""
        return self._start_states.state(slot)

    def clear_start_states(self) -> None:
        self._start_states.clear()

    def reset_envs(self, mask: Any, *, slots: Any = None, seed: int | None = None) -> None:
        """Restore the envs selected by ``mask`` from the start-state cache, in one launch.

        ``mask``: bool/int [N] (nonzero = reset), NumPy, a CPU tensor, or a tensor /
        Warp array (uint8) on the backend's device. Each selected env takes
        ``slots[e]`` (an int for all, or [N] ints, host or device), or a slot drawn
        from ``seed`` (per env: ``wp.randi(wp.rand_init(seed, env), 0, S)``); with
        neither, slot 0 if the cache holds one state, else a draw from an internal
        sequence seeded by ``reset(seed)``. Host slots out of range raise
        ``IndexError`` at once; device ones restore nothing and raise later (see
        :meth:`check_errors`). :meth:`last_reset_slots` tells which slot each env got.
        """
        self._slot_log.raise_new(wait=False)
        cache = self._start_states
        seed = check_seed(seed)
        if slots is not None and seed is not None:
            raise ValueError("reset_envs takes slots or seed, not both")
        if cache.count == 0:
            raise StartStateError(
                "the start-state cache is empty: add states with capture_start_state(env) "
                "or add_start_state(...) first"
            )
        sel, mask_torch = env_mask(mask, self.num_envs, self.device)
        if slots is None and seed is None:
            if cache.count == 1:
                slots = 0
            else:
                seed = hash((self._reset_seed, self._reset_draws)) & 0x7FFFFFFF
                self._reset_draws += 1
        slot_arr, slots_torch = (None, False)
        if slots is not None:
            slot_arr, slots_torch = env_slots(slots, self.num_envs, cache.count, self.device)
        if sel is None:
            return
        cache.restore(
            sel,
            slots=slot_arr,
            seed=seed,
            errors=self._slot_log.errors,
            on_torch=mask_torch or slots_torch,
        )
        self._slot_log.after_launch()
        self.render_pixels_after_step()

    def copy_envs(self, src_env_per_dst: Any, mask: Any) -> None:
        """Swarm reset: each env in ``mask`` becomes a copy of env ``src_env_per_dst[e]``.

        One launch copies every per-env field of the ``Machine`` (``backends/swarm.py``),
        so the target continues exactly as its source would. ``mask`` as for
        :meth:`reset_envs`; ``src_env_per_dst`` int [N] (host or device). A source must
        not itself be in the mask (host inputs: ``ValueError``/``IndexError`` at once;
        device inputs: that env is left alone and :meth:`check_errors` raises later).
        """
        from gbxcule.backends.swarm import copy_envs

        self._copy_log.raise_new(wait=False)
        copy_envs(self, src_env_per_dst, mask, self._copy_log.errors)
        self._copy_log.after_launch()
        self.pixels.render_step(self.machine.frame_video, self.machine.line_latch)

    def last_reset_slots(self) -> wp.array:
        """int32 [N] on the device: the slot each env was last restored from (-1: never)."""
        return self._start_states.chosen

    # ---- full state --------------------------------------------------------------------

    def capture_state(self, env: int) -> MachineState:
        """A host copy of every per-env field of ``env`` (``backends/machine_state.py``)."""
        return capture_env(self.machine, check_env(env, self.num_envs))

    def restore_state(self, env: int, state: MachineState) -> None:
        """Write a :meth:`capture_state` dict back into ``env``."""
        env = check_env(env, self.num_envs)
        restore_env(self.machine, env, state)
        self._restart_serial(env, state["serial_buf"], int(state["serial_len"]))

    # ---- save states -------------------------------------------------------------------

    def load_state(self, source: Any, envs: Any = None) -> None:
        """Load a save state into ``envs`` (default: all), as PyBoy 2.8.1 loads it.

        ``source``: a PyBoy ``.state`` of any released layout (v7-v29), or a snapshot
        from :meth:`save_snapshot` (refused if it belongs to another ROM or is of a newer
        format); bytes or a path, gzip accepted. ``backends/savestate_bridge.py`` says
        which fields come from the file and which keep post-boot values.
        """
        state = self._state_from_source(source)
        env_ids = self._env_list(envs)
        if self._load_rows is None:
            self._load_rows = StartStateCache(self.machine, self.device)
        rows = self._load_rows
        rows.clear()
        rows.add_state(state)
        sel = np.zeros(self.num_envs, dtype=np.uint8)
        sel[env_ids] = 1
        mask = wp.array(sel, dtype=wp.uint8, device=self.device)
        first = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)
        rows.restore(mask, slots=first, seed=None, errors=self._slot_log.errors, on_torch=False)
        for env in env_ids:
            self._restart_serial(int(env), state["serial_buf"], int(state["serial_len"]))
        self.render_pixels_after_step()

    def save_snapshot(self, env: int) -> bytes:
        """Our snapshot of ``env`` (a v29 PyBoy state bound to this ROM's sha256)."""
        return save_snapshot(self._pyboy_state(env), rom_sha256(self._rom))

    def export_pyboy_state(self, env: int) -> bytes:
        """A PyBoy 2.8.1 (v29) ``.state`` of ``env``; PyBoy continues from it as we do."""
        return write_pyboy_state(self._pyboy_state(env), rom=self._rom)

    def _pyboy_state(self, env: int):
        return pyboy_state_from_env(self.capture_state(env), self.cart, self._rom)

    def _state_from_source(self, source: Any) -> MachineState:
        if self._post_boot is None:
            raise RuntimeError("reset() must run before save states can be loaded")
        state = read_state_source(source, self._rom, cgb=getattr(self, "cgb", False))
        return env_state_from_pyboy(state, self._post_boot, self.cart)

    def _env_list(self, envs: Any) -> np.ndarray:
        if envs is None:
            return np.arange(self.num_envs)
        items = [envs] if isinstance(envs, (int, np.integer)) else list(envs)
        return np.array([check_env(e, self.num_envs) for e in items], dtype=np.int64)

    # ---- RAM views -----------------------------------------------------------------------

    def _views(self) -> RamViews:
        if self._ram_views is None:
            self._ram_views = RamViews(self.machine.mem, self.cart.cart_ram_bytes)
        return self._ram_views

    def mem_torch(self) -> torch.Tensor:
        """uint8 [N, row_bytes]: every env's whole RAM row (``backends/ram_views.py``)."""
        return self._views().mem

    @property
    def torch_device(self) -> torch.device:
        """The Torch device of every tensor this backend takes and gives."""
        return self.pixels.torch_device

    def ram_gather(self, addrs: list[tuple[int, int | None]]) -> DeviceRamGather:
        """``(address, bank)`` bytes gathered from the RAM row on the device
        (``backends/ram_gather.py``)."""
        return DeviceRamGather(self, addrs)

    def wram_torch(self) -> torch.Tensor:
        """uint8 [N, 8192] view of WRAM (0xC000-0xDFFF), zero-copy."""
        return self._views()["wram"]

    def hram_torch(self) -> torch.Tensor:
        """uint8 [N, 127] view of HRAM (0xFF80-0xFFFE), zero-copy."""
        return self._views()["hram"]

    def cart_ram_torch(self) -> torch.Tensor:
        """uint8 [N, cart RAM bytes] view of every cart RAM bank, zero-copy."""
        return self._views()["cart_ram"]

    # ---- symbols ---------------------------------------------------------------------------

    @property
    def symbols(self) -> SymbolTable:
        """The ``.sym`` file: ``sym_path=``, else the ROM's path with ``.sym``."""
        if self._symbols is None:
            self._symbols = symbols_beside(self.rom_path, self.sym_path)
        return self._symbols

    def symbol(self, name: str) -> int:
        """CPU address of ``name`` (``UnknownSymbolError`` if the file lacks it)."""
        return self.symbols.address(name)

    def symbol_torch(self, name: str, size: int = 1) -> torch.Tensor:
        """uint8 [N, size] zero-copy view of the RAM at symbol ``name`` (RAM symbols only)."""
        sym = self.symbols[name]
        off = self._ram_offset(sym, size)
        if off is None:
            raise ValueError(
                f"{name} is at {sym.bank:02X}:{sym.address:04X}, not in VRAM/WRAM/OAM/HRAM/cart "
                "RAM: no device view; use read_symbol"
            )
        return self._views().at(off, size)

    def read_symbol(self, name: str, env: int | None = None, size: int = 1) -> np.ndarray:
        """uint8 [size] at symbol ``name`` of ``env``, or [N, size] of every env.

        RAM symbols are read in their own bank (cart RAM of the symbol's bank, not the
        selected one), ROM symbols from the ROM image; IO addresses through the bus.
        """
        size = check_positive_int("size", size)
        sym = self.symbols[name]
        if sym.address + size > 0x10000:
            raise ValueError(f"{name} + {size} bytes runs past 0xFFFF")
        envs = range(self.num_envs) if env is None else [check_env(env, self.num_envs)]
        off = self._ram_offset(sym, size)
        if off is not None:
            out = self._views().at(off, size)[list(envs)].cpu().numpy()
        elif sym.address + size <= ROMX.hi:
            addr = sym.address
            base = addr if addr < ROMX.lo else sym.bank * ROMX.size + addr - ROMX.lo
            row = np.frombuffer(self._rom[base : base + size], dtype=np.uint8)
            out = np.tile(row, (len(envs), 1))
        else:
            out = np.stack([self.read_memory(e, sym.address, sym.address + size) for e in envs])
        return out if env is None else out[0]

    def _ram_offset(self, sym: Any, size: int) -> int | None:
        mbc2 = self.cart.mbc_kind == MBC_KIND["mbc2"]
        return mem_offset(sym.address, sym.bank, size, self.cart.cart_ram_bytes, mbc2)

    # ---- locked envs -----------------------------------------------------------------------

    def locked_torch(self) -> torch.Tensor:
        """int32 [N] zero-copy view: 0 while an env runs, ``0x100 | opcode`` once an illegal
        opcode (D3 DB DD E3 E4 EB EC ED F4 FC FD) has locked it, as hardware locks up.

        A locked env is frozen (``step()`` leaves its state alone) until ``reset()``,
        ``reset_envs()``, ``restore_state()`` or ``load_state()`` gives it a running state;
        ``reset_envs(backend.locked_torch() != 0)`` restarts exactly those envs.
        """
        return wp.to_torch(field_view(self.machine, "locked"))

    def locked_envs(self) -> list[int]:
        """Indices of the envs an illegal opcode has locked (waits for the device)."""
        return [int(e) for e in np.flatnonzero(field_view(self.machine, "locked").numpy())]

    # ---- errors --------------------------------------------------------------------------

    def check_errors(self) -> None:
        """Wait for the device, then raise for bad device-side actions or slots.

        ``ActionRangeError`` for out-of-range action ids, ``IndexError`` for slots; each
        is reported once. ``step()``/``reset_envs()`` raise them too, without waiting,
        as soon as the device has finished the call that saw them.
        """
        self._actions.log.raise_new(wait=True)
        self._slot_log.raise_new(wait=True)
        self._copy_log.raise_new(wait=True)
