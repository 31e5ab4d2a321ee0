"""The hardware units, listed once: what the reset kernel, the save-state bridge, the
allocator and the per-unit tests are built from.

Each unit declares itself (``state.Unit``) at the end of its own file, beside the state
it owns, its power-on values and its PyBoy save-state mapping. Adding a unit: its file,
its per-env scalars in sections of its own in ``state.py``'s ``I32_SECTIONS`` /
``I64_SECTIONS`` (with the column constants the kernels index; ``Unit.scalars`` reads
them), and one line here.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.apu.apu import APU
from gbxcule.kernels.board.bus import BOARD
from gbxcule.kernels.board.cgb import CGB_UNIT
from gbxcule.kernels.board.dma import DMA_UNIT
from gbxcule.kernels.board.joypad import JOYPAD
from gbxcule.kernels.board.mbc import CART
from gbxcule.kernels.board.serial import SERIAL
from gbxcule.kernels.board.timer import TIMER
from gbxcule.kernels.cpu.cpu_state import CPU
from gbxcule.kernels.ppu.ppu import LCD
from gbxcule.kernels.state import Machine, Unit

wp.set_module_options({"enable_backward": False})

UNITS: tuple[Unit, ...] = (CPU, BOARD, CART, TIMER, SERIAL, LCD, DMA_UNIT, JOYPAD, APU, CGB_UNIT)


def _then(first, second, name: str):
    """A func running ``first`` then ``second`` on ``(m, i)``."""

    @wp.func(name=name)
    def both(m: wp.ref[Machine], i: int):
        wp.static(first)(m, i)
        wp.static(second)(m, i)

    return both


def compose_power_on(units: tuple[Unit, ...]):
    """One func powering on ``units`` in order (each touches only its own state)."""
    fn = units[0].power_on
    for k, unit in enumerate(units[1:], start=1):
        fn = _then(fn, unit.power_on, f"power_on_units_{k}")
    return fn


def per_env_arrays() -> dict[str, tuple[int, ...]]:
    """Every unit's per-env arrays and their trailing shapes (after the env axis)."""
    out: dict[str, tuple[int, ...]] = {}
    for unit in UNITS:
        for name, shape in unit.arrays.items():
            if name in out:
                raise ValueError(f"Machine.{name} is claimed by two units")
            out[name] = tuple(int(d) for d in shape)
    return out


POWER_ON_UNITS = compose_power_on(UNITS)
