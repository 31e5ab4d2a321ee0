"""Refusals of the save-state readers, and our own snapshot format."""

from __future__ import annotations

import dataclasses
import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from gbxcule.core.savestate import (
    SNAPSHOT_FORMAT,
    SavestateError,
    load_pyboy_state,
    load_snapshot,
    rom_sha256,
    save_snapshot,
    write_pyboy_state,
)

from .support.backend_api_support import pyboy_state_after

pytestmark = pytest.mark.l1

FIXTURES = Path(__file__).parent / "fixtures" / "states"
ROM = gzip.decompress((FIXTURES / "probe.gb.gz").read_bytes())
V29 = gzip.decompress((FIXTURES / "pyboy-2.8.1-v29.state.gz").read_bytes())
V12 = gzip.decompress((FIXTURES / "pyboy-2.4.1-v12.state.gz").read_bytes())


@pytest.mark.parametrize("cut", [0, 1, 7, 40, 5000, len(V29) // 2, len(V29) - 1])
def test_truncated_pyboy_state_is_refused(cut):
    with pytest.raises(SavestateError, match="truncated"):
        load_pyboy_state(V29[:cut], ROM)


@pytest.mark.parametrize("data", [V29, V12], ids=["v29", "v12"])
def test_trailing_garbage_is_refused(data):
    with pytest.raises(SavestateError, match="trailing"):
        load_pyboy_state(data + b"\x00\x01", ROM)


def test_cgb_state_is_refused():
    cgb = bytearray(V29)
    cgb[5] = 1  # header: version, bootrom, key0, key1, double_speed, cgb
    with pytest.raises(SavestateError, match="CGB"):
        load_pyboy_state(bytes(cgb), ROM)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (13, "never in a PyPI release"),
        (20, "never in a PyPI release"),
        (30, "newer"),
        (ord("g"), "or not a save state"),
        (6, "older"),
    ],
)
def test_unknown_versions_are_refused(version, message):
    with pytest.raises(SavestateError, match=message):
        load_pyboy_state(bytes([version]) + V29[1:], ROM)


def test_state_of_another_cartridge_shape_is_refused():
    other = bytearray(ROM)
    other[0x149] = 0x02  # one RAM bank instead of four: the cart block no longer fits
    with pytest.raises(SavestateError, match=r"trailing.*different cartridge \(MBC1, 4 RAM bank"):
        load_pyboy_state(V29, bytes(other))


def test_writing_an_unsupported_version_is_refused():
    state = load_pyboy_state(V12, ROM)
    with pytest.raises(SavestateError, match="not 14"):
        write_pyboy_state(state, 14)


def test_out_of_range_field_is_refused_on_write():
    state = load_pyboy_state(V29, ROM)
    state.cpu.pc = 0x10000
    with pytest.raises(SavestateError, match="pc=65536"):
        write_pyboy_state(state)


def test_snapshot_round_trip_keeps_every_field():
    state = load_pyboy_state(V12, ROM)
    snap = save_snapshot(state, rom_sha256(ROM))
    back = load_snapshot(snap, rom_sha256(ROM).hex())
    assert write_pyboy_state(back) == write_pyboy_state(state)
    assert back.cart_layout == state.cart_layout
    assert np.array_equal(back.memory.wram, state.memory.wram)
    assert dataclasses.asdict(back.cpu) == dataclasses.asdict(state.cpu)


def test_snapshot_on_another_rom_is_refused():
    snap = save_snapshot(load_pyboy_state(V29, ROM), rom_sha256(ROM))
    other = rom_sha256(ROM + b"\x00")
    with pytest.raises(SavestateError, match="belongs to the ROM with sha256"):
        load_snapshot(snap, other)


def test_snapshot_of_a_newer_format_is_refused():
    snap = bytearray(save_snapshot(load_pyboy_state(V29, ROM), rom_sha256(ROM)))
    struct.pack_into("<H", snap, 8, SNAPSHOT_FORMAT + 1)
    with pytest.raises(SavestateError, match="newer than this gbxcule reads"):
        load_snapshot(bytes(snap), rom_sha256(ROM))


@pytest.mark.parametrize("cut", [0, 20, 60, 1000, -5, -1])
def test_truncated_snapshot_is_refused(cut):
    snap = save_snapshot(load_pyboy_state(V29, ROM), rom_sha256(ROM))
    with pytest.raises(SavestateError, match="truncated"):
        load_snapshot(snap[:cut], rom_sha256(ROM))


def test_corrupted_or_foreign_snapshot_is_refused():
    snap = bytearray(save_snapshot(load_pyboy_state(V29, ROM), rom_sha256(ROM)))
    snap[200] ^= 0xFF
    with pytest.raises(SavestateError, match="checksum"):
        load_snapshot(bytes(snap), rom_sha256(ROM))
    with pytest.raises(SavestateError, match="not a gbxcule snapshot"):
        load_snapshot(V29, rom_sha256(ROM))
    with pytest.raises(SavestateError, match="trailing"):
        load_snapshot(bytes(snap) + b"x", rom_sha256(ROM))


@pytest.mark.parametrize(
    ("cart_type", "ram_banks", "mbc", "has_rtc"),
    [
        ("ROM_ONLY", 0, "none", False),
        ("MBC2", 0, "mbc2", False),
        ("MBC3+TIMER+RAM+BATTERY", 4, "mbc3", True),
        ("MBC5+RAM", 16, "mbc5", False),
    ],
)
def test_other_cartridge_blocks_round_trip(cart_type, ram_banks, mbc, has_rtc):
    """PyBoy 2.8.1 states of other cartridges: byte-exact rewrite; shape from ROM or length."""
    import io

    from gbxcule.asm import build_rom
    from gbxcule.backends.pyboy_backend import make_pyboy

    rom = build_rom(
        'SECTION "m", ROM0[$0150]\n    ld a, $0A\n    ld [$0000], a\n.l:\n    jr .l\n',
        cart_type=cart_type,
        rom_banks=2,
        ram_banks=ram_banks,
    )
    pb = make_pyboy(rom)
    try:
        pb.tick(3, False)
        buf = io.BytesIO()
        pb.save_state(buf)
    finally:
        pb.stop(save=False)
    data = buf.getvalue()
    state = load_pyboy_state(data, rom)
    assert (state.cart_layout.mbc, state.cart_layout.has_rtc) == (mbc, has_rtc)
    assert (state.cart.rtc is not None) == has_rtc
    assert write_pyboy_state(state) == data
    inferred = load_pyboy_state(data)
    assert inferred.cart_layout.ram_banks == state.cart_layout.ram_banks
    assert inferred.cart_layout.has_rtc == has_rtc
    assert write_pyboy_state(inferred) == data


def test_a_state_of_another_game_is_refused_naming_both_cartridges():
    """A PyBoy state saved on another game (another mapper or RAM size) is refused with
    what each cartridge is, not loaded into an env that then spins on garbage."""
    from gbxcule.demo.rom import demo_rom_path

    demo = Path(demo_rom_path()).read_bytes()  # no mapper, no RAM
    with pytest.raises(SavestateError) as err:
        load_pyboy_state(V29, demo)
    assert "different cartridge (MBC1, 4 RAM bank(s)) than this ROM's (no mapper" in str(err.value)
    assert "saved on another game" in str(err.value)


def test_a_state_with_a_rom_bank_past_this_rom_is_refused():
    """PyBoy keeps the mapped bank below its ROM's bank count, so a state mapping bank 5
    was saved on a larger game, even when the cartridge layouts agree."""
    from gbxcule.demo.rom import demo_rom_path

    demo = Path(demo_rom_path()).read_bytes()  # 2 banks, no mapper
    state = load_pyboy_state(pyboy_state_after(demo, 3, seed=0), demo)
    state.cart.rom_bank = 5
    with pytest.raises(SavestateError, match="ROM bank 5 mapped, and this ROM has 2 banks"):
        load_pyboy_state(write_pyboy_state(state), demo)


def test_a_task_notes_once_what_a_pyboy_state_cannot_prove(tmp_path):
    """A PyBoy state does not record its ROM: a task session says so once per file."""
    import warnings

    from gbxcule.demo.rom import demo_rom_path
    from gbxcule.tasks import load_task
    from gbxcule.tasks.session import TaskSession, UnverifiedStartState, make_task_backend

    start = tmp_path / "start.state"
    start.write_bytes(pyboy_state_after(Path(demo_rom_path()).read_bytes(), 3, seed=0))
    task = load_task("demo-coins")
    with pytest.warns(UnverifiedStartState, match="does not record which ROM"):
        TaskSession(task, make_task_backend(task, 1, threads=1), starts=[start]).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedStartState)  # once per file: not again
        TaskSession(task, make_task_backend(task, 1, threads=1), starts=[start]).close()
