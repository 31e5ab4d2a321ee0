"""L1: each unit's share of a PyBoy save state (``<unit>_from_pyboy`` / ``<unit>_to_pyboy``).

``backends/savestate_bridge.py`` composes the units; the end-to-end proof against PyBoy
is ``test_backend_api_savestates.py``. Checked here, on the committed v29 fixture and on a
state of an MBC3+clock cart:

* the units load disjoint fields, and every per-env field is loaded by one unit, listed
  as unsaved by one (``<UNIT>_UNSAVED``, which make ``UNSAVED_FIELDS``), or derived
  after loading (``kernels/pyboy_load.py``): nothing is forgotten, nothing claimed twice;
* each unit's export gives back the block it loaded.
"""

from __future__ import annotations

import dataclasses
import gzip
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from gbxcule.backends.machine_state import capture_env, copy_state
from gbxcule.backends.savestate_bridge import FRESH_PYBOY_FIELDS, UNSAVED_FIELDS
from gbxcule.backends.warp_base import allocate_machine, cart_config
from gbxcule.core.pyboy_state import (
    CART_RAM_BANK_BYTES,
    CartState,
    PyBoyState,
    RtcState,
    SoundState,
)
from gbxcule.core.savestate import cart_layout_from_rom, load_pyboy_state, write_pyboy_state
from gbxcule.kernels.apu import apu
from gbxcule.kernels.board import bus, dma, joypad, mbc, serial, timer
from gbxcule.kernels.cpu import cpu_state
from gbxcule.kernels.ppu import ppu
from gbxcule.kernels.units import UNITS

from .support.backend_api_support import zoo_rom

pytestmark = pytest.mark.l1

FIXTURES = Path(__file__).parent / "fixtures" / "states"
DERIVED = {"lcd_to_irq", "lcd_to_frame", "lcd_irq_line"}  # kernels/pyboy_load.py
SENTINEL = 0x3C5A


def _fixture() -> tuple[bytes, PyBoyState]:
    rom = gzip.decompress((FIXTURES / "probe.gb.gz").read_bytes())
    data = gzip.decompress((FIXTURES / "pyboy-2.8.1-v29.state.gz").read_bytes())
    return rom, load_pyboy_state(data, rom)


def _mbc3_clock_state() -> tuple[bytes, PyBoyState]:
    """A v29 state of an MBC3+clock cart with every clock field nonzero."""
    rom = zoo_rom()
    layout = cart_layout_from_rom(rom)
    rtc = RtcState(
        seconds=7, minutes=8, hours=9, day_low=10, day_high=1,
        halt=1, day_carry=1, halt_again=1, day_carry_again=1, rtc_cycles=12345,
    )  # fmt: skip
    ram = np.arange(layout.ram_banks * CART_RAM_BANK_BYTES, dtype=np.uint32).astype(np.uint8)
    cart = CartState(rom_bank=3, ram_bank=2, ram_enabled=1, ram=ram, rtc=rtc)
    state = PyBoyState(cart_layout=layout, cart=cart)
    return rom, load_pyboy_state(write_pyboy_state(state), rom)  # as a file gives it


def _loaders(state: PyBoyState, cart):
    """Each unit's load (``kernels/units.py``), by unit name."""
    return {unit.name: partial(unit.load, state, cart=cart) for unit in UNITS}


def _sentinel_state(rom: bytes):
    _, cart = cart_config(rom)
    m = allocate_machine(
        1,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.zeros(0x100, np.uint8),
        cart=cart,
        device="cpu",
    )
    base = {name: np.full_like(v, SENTINEL & 0xFF if v.dtype == np.uint8 else SENTINEL)
            for name, v in capture_env(m, 0).items()}  # fmt: skip
    return base, cart


@pytest.mark.parametrize("which", ["v29 fixture", "mbc3 clock"])
def test_every_field_is_loaded_unsaved_or_derived_once(which):
    rom, state = _fixture() if which == "v29 fixture" else _mbc3_clock_state()
    base, cart = _sentinel_state(rom)
    owner: dict[str, str] = {}
    byte_owner = np.full(base["mem"].shape, "", dtype=object)
    for unit, load in _loaders(state, cart).items():
        st = copy_state(base)
        load(st)
        for name in st:
            if name != "mem" and not np.array_equal(st[name], base[name]):
                assert name not in owner, f"{name} loaded by {owner[name]} and {unit}"
                owner[name] = unit
        written = np.flatnonzero(st["mem"] != base["mem"])
        assert not any(byte_owner[written]), f"{unit} loads mem bytes another unit loads"
        byte_owner[written] = unit
    fields = set(base) - {"mem"}
    if not cart.has_rtc:
        fields.discard("rtc")  # loaded only for carts with a clock
    if cart.mbc_kind != mbc.MBC1:
        fields -= {"mbc_reg1", "mbc_reg2"}  # only MBC1 blocks hold (and MBC1 uses) them
    loaded = set(owner) - set(FRESH_PYBOY_FIELDS)  # unsaved, set as a fresh PyBoy has them
    assert loaded | UNSAVED_FIELDS | DERIVED == fields
    assert not loaded & (UNSAVED_FIELDS | DERIVED)
    assert not UNSAVED_FIELDS & DERIVED
    assert {owner[name] for name in FRESH_PYBOY_FIELDS} == {"lcd"}
    # each unit loads only what it owns (kernels/state.py's sections, Unit.arrays), and
    # what it leaves unsaved is its own too
    owns = {unit.name: {*unit.scalars, *unit.arrays} for unit in UNITS}
    assert {name: unit for name, unit in owner.items() if name not in owns[unit]} == {}
    assert {
        u.name: sorted(u.unsaved - owns[u.name]) for u in UNITS if u.unsaved - owns[u.name]
    } == {}


def test_every_scalar_and_array_has_one_owner_among_the_units():
    from gbxcule.kernels.state import I32_FIELDS, I32_SECTIONS, I64_FIELDS, I64_SECTIONS

    names = [unit.name for unit in UNITS]
    sections = {owner for owner, _ in (*I32_SECTIONS, *I64_SECTIONS)}
    assert sections <= set(names)
    # a unit with no scalars owns arrays (the CGB unit: its registers are IO bytes)
    assert all(unit.arrays for unit in UNITS if unit.name not in sections)
    owned = [name for unit in UNITS for name in (*unit.scalars, *unit.arrays)]
    assert len(owned) == len(set(owned))  # no field owned twice
    assert set(owned) >= {*I32_FIELDS, *I64_FIELDS}


@pytest.mark.parametrize("which", ["v29 fixture", "mbc3 clock"])
def test_each_unit_exports_what_it_loaded(which):
    rom, state = _fixture() if which == "v29 fixture" else _mbc3_clock_state()
    base, cart = _sentinel_state(rom)
    st = copy_state(base)
    for load in _loaders(state, cart).values():
        load(st)
    assert cpu_state.cpu_to_pyboy(st) == dataclasses.replace(state.cpu, stopped=0)
    memory, boot = bus.board_to_pyboy(st)
    assert boot == state.bootrom_enabled
    for name in ("wram", "unusable", "hram"):
        assert np.array_equal(getattr(memory, name), getattr(state.memory, name)), name
    assert timer.timer_to_pyboy(st) == dataclasses.replace(
        state.timer, div=state.timer.div_counter >> 8
    )
    assert serial.serial_to_pyboy(st).sb == state.serial.sb
    lcd, renderer = ppu.lcd_to_pyboy(st)
    assert renderer.wy_activated_frame == state.renderer.wy_activated_frame
    for f in ("vram", "oam", *ppu.LCD_REGS, "clock", "clock_target", "last_cycles"):
        assert np.array_equal(getattr(lcd, f), getattr(state.lcd, f)), f
    assert dma.dma_to_pyboy(st) == state.oam_dma
    assert joypad.joypad_to_pyboy(st) == state.joypad
    sound = SoundState()  # the sound block as exported: every field the unit keeps
    apu.apu_to_pyboy(st["apu"], sound)
    for block in ("", "sweep", "tone", "wave", "noise"):
        got = getattr(sound, block) if block else sound
        want = getattr(state.sound, block) if block else state.sound
        for f in dataclasses.fields(got):
            if f.name in ("audiobuffer", "samples_per_frame", "cycles_per_sample", *apu.CHANNELS):
                continue
            a, b = getattr(got, f.name), getattr(want, f.name)
            assert np.array_equal(a, b), f"sound.{block}.{f.name}: {a} != {b}"
    out = mbc.cart_to_pyboy(
        st,
        ram_bytes=cart.cart_ram_bytes,
        pyboy_banks=state.cart_layout.ram_banks,
        has_rtc=bool(cart.has_rtc),
    )
    assert np.array_equal(out.ram, state.cart.ram)
    assert (out.rom_bank, out.ram_bank, out.ram_enabled) == (
        state.cart.rom_bank,
        state.cart.ram_bank,
        state.cart.ram_enabled,
    )
    if cart.has_rtc:
        want = dataclasses.replace(state.cart.rtc, timezero=0.0, saved_at=out.rtc.saved_at)
        assert out.rtc == want
