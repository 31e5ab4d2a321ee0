"""L1: the power-on state, unit by unit.

``kernels/step/reset.py``'s ``power_on`` composes each unit's ``<unit>_power_on``. Checked here:

* the whole env after ``power_on`` (every field, every byte) equals an absolute
  expectation written from PyBoy 2.8.1's constructors (``history/postboot.md``);
* the timer, serial port and LCD values equal the attributes of PyBoy's own ``Timer()``,
  ``Serial(False)`` and ``LCD(...)`` (its pure-Python sources, as in
  ``test_emu_timing_units.py``);
* each unit's power-on func writes exactly the columns and IO registers it owns, and
  the units together write what ``power_on`` writes.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.asm import build_rom
from gbxcule.asm.bootrom import boot_rom_bytes
from gbxcule.backends.machine_state import capture_env
from gbxcule.backends.warp_base import allocate_machine, cart_config
from gbxcule.core import memory_layout as ml
from gbxcule.core import pixels as px
from gbxcule.core.pyboy_state import (
    NoiseChannelState,
    SoundState,
    SweepChannelState,
    ToneChannelState,
    WaveChannelState,
)
from gbxcule.kernels import units
from gbxcule.kernels.apu.apu import apu_from_pyboy, apu_power_on_row
from gbxcule.kernels.board import ioregs as io
from gbxcule.kernels.state import I32_FIELDS, I64_FIELDS, Machine
from gbxcule.kernels.step.reset import power_on
from tests.test_emu_timing_units import load_pyboy_source

pytestmark = pytest.mark.l1

wp.set_module_options({"enable_backward": False})

# PyBoy 2.8.1's constructors (DMG): every other field and byte is 0.
NONZERO_FIELDS = {
    "boot_on": 1,  # Motherboard: bootrom_enabled
    "rom_bank": 1,  # BaseMBC: rombank_selected = 1
    "mbc_reg1": 1,  # MBC1: bank_select_register1 = 1
    "lcd_target": 70224,  # LCD: clock_target = FRAME_CYCLES
    "lcd_to_frame": 70224,  # LCD: _cycles_to_frame = FRAME_CYCLES - clock
    "lcd_next_mode": 2,  # LCD: next_stat_mode = 2
    "ser_target": 1 << 31,  # Serial: clock_target = MAX_CYCLES
    "joy_dir": 0xF,  # Interaction: directional = 0xF (all released)
    "joy_std": 0xF,  # Interaction: standard = 0xF
}
NONZERO_REGS = {0xFF01: 0xFF, 0xFF02: 0x7E, 0xFF41: 0x80, 0xFF47: 0xFC, 0xFF48: 0xFF, 0xFF49: 0xFF}

# What each unit's power-on func writes: its columns, and its IO registers.
UNIT_FIELDS = {
    "cpu": ({"pc", "ime_delay", "halt_ei", "int_queued"}, set()),
    "bus": ({"boot_on"}, set()),
    "mbc": ({"rom_bank", "rom_bank_low", "mbc_reg1"}, set()),
    "timer": ({"tim_counter", "tim_reload", "tim_reload_left", "tim_last", "tim_to_irq"}, set()),
    "serial": (
        {"ser_last", "ser_target", "ser_to_irq", "ser_active", "serial_len"},
        {0xFF01, 0xFF02},
    ),
    "lcd": (
        {"frame_done", "win_line", "win_active", "lcd_render", "line_latch"}
        | {f for f in (*I32_FIELDS, *I64_FIELDS) if f.startswith("lcd_")},
        {0xFF41, 0xFF47, 0xFF48, 0xFF49},
    ),
    "dma": ({"dma_active", "dma_index", "dma_start"}, set()),
    "joypad": ({"joy_dir", "joy_std", "joy_rel_mask", "joy_rel_wait"}, set()),
    "apu": ({"apu", "snd_frame_start", "snd_count_from"}, set()),
    "cgb": (set(), set()),  # a DMG machine: its power-on is the CGB variant's only
}
UNITS = tuple(unit.name for unit in units.UNITS)  # kernels/units.py, in its order
DIRTY = {"mem": 0xAB, "i32": -7, "i64": -9, "joy_rel_mask": 5, "joy_rel_wait": 6, "apu": -11}


def _pick(previous, fn, k: int):
    """A func running ``previous``, then ``fn`` when ``unit`` is ``k``."""

    @wp.func
    def pick(m: wp.ref[Machine], i: int, unit: int):
        wp.static(previous)(m, i, unit)
        if unit == wp.static(k):
            wp.static(fn)(m, i)

    return pick


@wp.func
def _no_unit(m: wp.ref[Machine], i: int, unit: int):
    pass


_ONE_UNIT = _no_unit
for _k, _unit in enumerate(units.UNITS):
    _ONE_UNIT = _pick(_ONE_UNIT, _unit.power_on, _k)


@wp.kernel
def one_unit_power_on(m: Machine, unit: int):
    i = wp.tid()
    wp.static(_ONE_UNIT)(m, i, unit)


def _machine(envs: int = 2, dirty: bool = False):
    rom = build_rom('SECTION "main", ROM0[$0150]\nMain:\n    jr Main\n')
    _, cart = cart_config(rom)
    m = allocate_machine(
        envs,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.frombuffer(boot_rom_bytes(), np.uint8),
        cart=cart,
        device="cpu",
    )
    if dirty:
        for name, value in DIRTY.items():
            getattr(m, name).fill_(value)
    return m


def _changed(before: dict, after: dict) -> tuple[set[str], set[int]]:
    """Fields whose values differ, and the IO registers (addresses) among ``mem``'s bytes."""
    fields = {k for k in before if not np.array_equal(before[k], after[k])}
    addrs = set()
    if "mem" in fields:
        fields.discard("mem")
        offsets = np.flatnonzero(before["mem"] != after["mem"])
        assert all(ml.IO_OFF <= k < ml.IO_OFF + 0x80 for k in offsets), offsets
        addrs = {0xFF00 + int(k) - ml.IO_OFF for k in offsets}
    return fields, addrs


def test_power_on_state_is_pyboys_constructor_state():
    m = _machine()
    wp.launch(power_on, dim=2, inputs=[m], device="cpu")
    for env in range(2):
        st = capture_env(m, env)
        for name, value in st.items():
            if name == "apu":  # the sound unit's row: Sound() with sound emulated, below
                assert np.array_equal(value, apu_power_on_row()), f"env {env} apu: {value}"
            elif name == "line_latch":  # PyBoy's new screen buffer: zero words, black
                assert np.all(value[:, px.LATCH_FLAGS] == px.LATCH_FLAG_BLANK)
                assert np.all(value[:, px.LATCH_BGP] == 0xFF)
                assert np.count_nonzero(value) == 2 * px.SCREEN_H
            elif name == "mem":
                want = np.zeros_like(value)
                for addr, reg in NONZERO_REGS.items():
                    want[ml.IO_OFF + addr - 0xFF00] = reg
                bad = np.flatnonzero(value != want)
                assert bad.size == 0, f"env {env} mem offsets {bad[:8]} differ"
            else:
                want = NONZERO_FIELDS.get(name, 0)
                assert np.all(value == want), f"env {env} {name}: {value} != {want}"


def test_power_on_units_match_pyboy_sources():
    timer = load_pyboy_source("timer").Timer()
    serial = load_pyboy_source("serial").Serial(False)
    pal = (0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000)
    lcd = load_pyboy_source("lcd").LCD(False, False, pal, (pal, pal, pal))
    m = _machine(envs=1)
    wp.launch(power_on, dim=1, inputs=[m], device="cpu")
    st = capture_env(m, 0)

    def reg(r: int) -> int:
        return int(st["mem"][ml.IO_OFF + r])

    ours_theirs = {
        # timer
        "tim_counter": timer.DIV_counter,
        "tim_reload": timer.tima_reload_state,
        "tim_reload_left": timer.TIMA_counter,
        "tim_last": timer.last_cycles,
        "tim_to_irq": timer._cycles_to_interrupt,
        reg(io.TIMA): timer.TIMA,
        reg(io.TMA): timer.TMA,
        reg(io.TAC): timer.TAC,
        # serial
        reg(io.SB): serial.SB,
        reg(io.SC): serial.SC,
        "ser_active": serial.transfer_enabled,
        "ser_last": serial.last_cycles,
        "ser_to_irq": serial._cycles_to_interrupt,
        "ser_target": serial.clock_target,
        # LCD and renderer
        reg(io.LCDC): lcd._LCDC.value,
        reg(io.STAT): lcd._STAT.value,
        reg(io.LY): lcd.LY,
        reg(io.LYC): lcd.LYC,
        reg(io.SCY): lcd.SCY,
        reg(io.SCX): lcd.SCX,
        reg(io.WY): lcd.WY,
        reg(io.WX): lcd.WX,
        reg(io.BGP): lcd.BGP.value,
        reg(io.OBP0): lcd.OBP0.value,
        reg(io.OBP1): lcd.OBP1.value,
        "lcd_clock": lcd.clock,
        "lcd_target": lcd.clock_target,
        "lcd_last": lcd.last_cycles,
        "lcd_to_irq": lcd._cycles_to_interrupt,
        "lcd_to_frame": lcd._cycles_to_frame,
        "lcd_next_mode": lcd.next_stat_mode,
        "lcd_transition": lcd.stat_transition,
        "lcd_first_frame": lcd.first_frame,
        "lcd_reset": lcd.reset,
        "frame_done": lcd.frame_done,
        "lcd_stat_override": lcd.stat_mode_override,
        "lcd_lyc_dirty": lcd.lyc_changed_while_disabled,
        "lcd_m3_adjust": lcd.mode3_adjustment,
        "lcd_irq_line": lcd._STAT._irq_line,
        "win_active": lcd.renderer.wy_activated_frame,
    }
    for ours, theirs in ours_theirs.items():
        value = int(st[ours]) if isinstance(ours, str) else ours
        assert value == int(theirs), (ours, value, theirs)


def _as_state(obj, cls):
    """A PyBoy object's attributes as the state dataclass ``cls`` (its save fields)."""
    import dataclasses

    out = cls()
    for f in dataclasses.fields(cls):
        name = {"cycles_target_512hz": "cycles_target_512Hz", "nr50": "NR50"}.get(f.name, f.name)
        name = {"cycles_to_interrupt": "_cycles_to_interrupt"}.get(name, name)
        if hasattr(obj, name):
            setattr(out, f.name, getattr(obj, name))
    return out


def test_power_on_sound_unit_matches_pyboys_sound_source():
    """The row ``apu_power_on`` writes is PyBoy's own ``Sound(..., emulate=True)``."""
    module = load_pyboy_source("sound")
    module.double_to_uint64_ceil = __import__("math").ceil
    sound = module.Sound(100, True, None, False)
    state = _as_state(sound, SoundState)
    state.sweep = _as_state(sound.sweepchannel, SweepChannelState)
    state.tone = _as_state(sound.tonechannel, ToneChannelState)
    state.wave = _as_state(sound.wavechannel, WaveChannelState)
    state.noise = _as_state(sound.noisechannel, NoiseChannelState)
    state.wave.wavetable = np.asarray(sound.wavechannel.wavetable, dtype=np.uint8)
    row = np.zeros_like(apu_power_on_row())
    zero = np.zeros((), np.int64)
    apu_from_pyboy(state, 29, {"apu": row, "snd_frame_start": zero, "snd_count_from": zero})
    m = _machine(envs=1)
    wp.launch(power_on, dim=1, inputs=[m], device="cpu")
    assert np.array_equal(capture_env(m, 0)["apu"], row)


@pytest.mark.parametrize("unit", UNITS)
def test_each_unit_powers_on_exactly_its_own_state(unit):
    m = _machine(dirty=True)
    before = capture_env(m, 0)
    wp.launch(one_unit_power_on, dim=2, inputs=[m, UNITS.index(unit)], device="cpu")
    for env in range(2):
        assert _changed(before, capture_env(m, env)) == UNIT_FIELDS[unit]
    own = next(u for u in units.UNITS if u.name == unit)  # and only what it owns
    assert UNIT_FIELDS[unit][0] <= {*own.scalars, *own.arrays}


def test_power_on_is_the_units_together():
    assert set(UNIT_FIELDS) == set(UNITS)  # the expectation names every listed unit
    m = _machine(dirty=True)
    before = capture_env(m, 0)
    wp.launch(power_on, dim=2, inputs=[m], device="cpu")
    fields, addrs = _changed(before, capture_env(m, 0))
    assert fields == set().union(*(f for f, _ in UNIT_FIELDS.values()))
    assert addrs == set().union(*(a for _, a in UNIT_FIELDS.values()))
