"""PyBoy .state files of every released layout (fixtures made by tools/make_state_fixtures.py).

Each fixture was written by the PyPI release named in index.json running our probe ROM;
the index holds what that release reported through its own API at the save (registers,
memory) and after 30 more frames. Parsing must agree with it, re-writing the file's own
layout must give the same bytes, and the v29 export must load in PyBoy 2.8.1 with the
same machine the release had.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from gbxcule.backends.pyboy_backend import make_pyboy
from gbxcule.core.pyboy_state import IO_HIGH_WRAM_SELECT, LAYOUTS, PyBoyState, stored_in
from gbxcule.core.savestate import (
    cart_layout_from_rom,
    load_pyboy_state,
    write_pyboy_state,
)
from tools.make_state_fixtures import observation

pytestmark = pytest.mark.l1

FIXTURES = Path(__file__).parent / "fixtures" / "states"
INDEX = json.loads((FIXTURES / "index.json").read_text())
ROM = gzip.decompress((FIXTURES / INDEX["rom"]).read_bytes())
ENTRIES = sorted(INDEX["fixtures"].values(), key=lambda e: (e["state_version"], e["file"]))
IDS = [f"{e['pyboy_version']}-v{e['state_version']}" for e in ENTRIES]
V29 = next(e for e in ENTRIES if e["state_version"] == 29)
V7 = next(e for e in ENTRIES if e["state_version"] == 7)


def fixture_bytes(entry: dict) -> bytes:
    return gzip.decompress((FIXTURES / entry["file"]).read_bytes())


def sha(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def pyboy_on(state_bytes: bytes):
    pb = make_pyboy(ROM)
    pb.load_state(io.BytesIO(state_bytes))
    return pb


def saved(pb) -> PyBoyState:
    buf = io.BytesIO()
    pb.save_state(buf)
    return load_pyboy_state(buf.getvalue(), ROM)


def observe(pb) -> dict:
    """What tools/make_state_fixtures.py records, read through PyBoy 2.8.1's API."""
    mem = pb.memory
    rf = pb.register_file
    return {
        "registers": {"a": rf.A, "f": rf.F, "b": rf.B, "c": rf.C, "d": rf.D, "e": rf.E}
        | {"hl": rf.HL, "sp": rf.SP, "pc": rf.PC},
        **observation(lambda lo, hi: bytes(mem[lo:hi])),
    }


def assert_states_equal(a, b, path="state"):
    """Field-by-field equality of two parsed states, naming the first difference."""
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.name not in ("defaulted", "version", "layout"):
                assert_states_equal(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b), f"{path} differs at {np.argwhere(a != b)[:4].tolist()}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_index_covers_every_released_layout():
    assert sorted({e["state_version"] for e in ENTRIES}) == [7, 8, 9, 10, 11, 12, 14, 15, 29]
    layouts = {load_pyboy_state(fixture_bytes(e), ROM).layout for e in ENTRIES}
    assert layouts == set(LAYOUTS)
    assert INDEX["rom_sha256"] == sha(ROM)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_fixture_matches_what_the_release_reported(entry):
    data = fixture_bytes(entry)
    assert sha(data) == entry["state_sha256"] and len(data) == entry["state_bytes"]
    state = load_pyboy_state(data, ROM)
    assert state.version == entry["state_version"]
    regs = entry["registers"]
    cpu = state.cpu
    got = {k: getattr(cpu, k) for k in ("a", "f", "b", "c", "d", "e", "hl", "sp", "pc")}
    assert got == regs
    seen = entry["at_save"]
    assert sha(state.memory.wram) == seen["wram_sha256"]
    assert bytes(state.memory.wram[:0x20]).hex() == seen["wram_counters"]
    assert sha(state.lcd.vram) == seen["vram_sha256"]
    assert bytes(state.lcd.oam).hex() == seen["oam"]
    assert bytes(state.memory.hram).hex() == seen["hram"]
    bank = state.cart.ram_bank
    assert (
        sha(state.cart.ram[bank * 0x2000 : (bank + 1) * 0x2000]) == seen["cart_ram_selected_sha256"]
    )
    assert cpu.ie == seen["ie"]


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_fixture_holds_the_probe_roms_patterns(entry):
    """Values the probe ROM wrote and never changes (tools/make_state_fixtures.py PROBE_SOURCE)."""
    s = load_pyboy_state(fixture_bytes(entry), ROM)
    i = np.arange(256)
    assert np.array_equal(s.memory.wram[0x200:0x300], i ^ 0x5A)
    assert np.array_equal(s.memory.hram[:16], 0x80 + np.arange(16))
    assert np.array_equal(s.lcd.oam, (3 + 7 * np.arange(160)) & 0xFF)
    assert np.array_equal(s.lcd.vram[:0x800], (np.arange(0x800) & 0xFF) ^ 0xA5)
    assert np.array_equal(s.lcd.vram[0x1800:0x1A00], np.arange(0x200) & 0x7F)
    for b in range(4):
        assert np.array_equal(s.cart.ram[b * 0x2000 : b * 0x2000 + 256], (b * 0x40 + i) & 0xFF)
    assert (s.cart.ram_bank, s.cart.ram_enabled, s.cart.memory_model) == (2, 1, 1)
    assert (s.cart.mbc1_bank_register1, s.cart.mbc1_bank_register2) == (3, 2)
    lcd = s.lcd
    assert (lcd.lcdc, lcd.bgp, lcd.obp0, lcd.obp1) == (0xF3, 0xE4, 0xD2, 0x1B)
    assert (lcd.scy, lcd.wy, lcd.wx) == (5, 100, 87)
    assert (s.timer.tma, s.timer.tac) == (0xF0, 0x05)
    assert s.wram_select == s.memory.io_high[IO_HIGH_WRAM_SELECT] or s.layout == "v29"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_own_layout_rewrite_is_byte_exact_with_and_without_rom(entry):
    data = fixture_bytes(entry)
    with_rom = load_pyboy_state(data, ROM)
    without = load_pyboy_state(data)
    assert without.cart_layout == with_rom.cart_layout == cart_layout_from_rom(ROM)
    assert write_pyboy_state(with_rom, with_rom.version) == data
    assert write_pyboy_state(without, without.version) == data


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_v29_export_gives_pyboy_281_the_releases_machine(entry):
    """Loaded in 2.8.1, our export shows what the writing release reported at the save."""
    export = write_pyboy_state(load_pyboy_state(fixture_bytes(entry), ROM))
    pb = pyboy_on(export)
    try:
        got = observe(pb)
    finally:
        pb.stop(save=False)
    want = {"registers": entry["registers"], **entry["at_save"]}
    assert got == want


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_v29_export_runs_on_in_pyboy_281_like_the_release(entry):
    """30 more frames in 2.8.1 from our export vs. 30 more frames in the writing release.

    VBlank and timer interrupts keep counting at the release's pace. From v15 on the
    releases' CPU/PPU timing equals 2.8.1's for this ROM, so every counter matches;
    older releases time LYC interrupts and instructions differently, so only the
    VBlank count is compared. A v7 file has no LCD clock: the LCD restarts its frame
    on load (2.8.1 does the same from the original file), costing one VBlank.
    """
    export = write_pyboy_state(load_pyboy_state(fixture_bytes(entry), ROM))
    pb = pyboy_on(export)
    try:
        pb.tick(entry["after_more_frames"], False)
        got = observe(pb)
    finally:
        pb.stop(save=False)
    before = bytes.fromhex(entry["at_save"]["wram_counters"])
    theirs = bytes.fromhex(entry["after_more"]["wram_counters"])
    ours = bytes.fromhex(got["wram_counters"])
    lost = 1 if entry["state_version"] == 7 else 0
    assert (ours[0] - before[0]) & 0xFF == (theirs[0] - before[0] - lost) & 0xFF
    assert ours[8:10] != before[8:10]  # the timer interrupt kept counting
    if entry["state_version"] >= 15:
        assert got["wram_counters"] == entry["after_more"]["wram_counters"]
        assert got["vram_sha256"] == entry["after_more"]["vram_sha256"]


@pytest.mark.parametrize("entry", [V29, V7], ids=["v29", "v7"])
def test_pyboy_281_continues_identically_from_original_and_export(entry):
    """Where 2.8.1 reads the original itself (v7, v29), both runs stay identical."""
    data = fixture_bytes(entry)
    export = write_pyboy_state(load_pyboy_state(data, ROM))
    if entry is V29:
        assert export == data
    runs = []
    for blob in (data, export):
        pb = pyboy_on(blob)
        try:
            pb.tick(30, False)
            runs.append(saved(pb))
        finally:
            pb.stop(save=False)
    assert_states_equal(runs[0], runs[1])


MIDDLE = [e for e in ENTRIES if 8 <= e["state_version"] <= 15]


@pytest.mark.parametrize("entry", MIDDLE, ids=[f"{e['pyboy_version']}" for e in MIDDLE])
def test_pyboy_281_cannot_read_releases_1_5_to_2_7_itself(entry):
    """Why the export matters: 2.8.1's loader expects bytes these releases never wrote.

    It reads a stat_transition byte from every v8+ LCD block, so it runs out of data
    (v8-v12) or reads the sound block's sample count from the wrong place (v14, v15).
    """
    pb = make_pyboy(ROM)
    try:
        with pytest.raises(Exception, match="No data|Samples per frame"):
            pb.load_state(io.BytesIO(fixture_bytes(entry)))
    finally:
        pb.stop(save=False)


def test_fresh_pyboy_281_matches_the_defaults_for_fields_older_layouts_lack():
    pb = make_pyboy(ROM)
    try:
        fresh = saved(pb)
    finally:
        pb.stop(save=False)
    default = PyBoyState()

    def walk(a, b, path):
        for f in dataclasses.fields(a):
            va, vb = getattr(a, f.name), getattr(b, f.name)
            if dataclasses.is_dataclass(va):
                walk(va, vb, f"{path}.{f.name}")
            elif "fmt" in f.metadata and not stored_in(f, "v7"):
                if isinstance(va, np.ndarray):
                    assert np.array_equal(va, vb), f"{path}.{f.name}"
                elif f.name != "object_priority_mode":  # older files carry it in io_high
                    assert va == vb, f"{path}.{f.name}: fresh {va!r}, default {vb!r}"

    walk(fresh, default, "state")


def test_defaulted_names_the_fields_an_old_file_lacks():
    v7 = load_pyboy_state(fixture_bytes(V7), ROM)
    assert "cpu.if_" in v7.defaulted and "lcd.clock" in v7.defaulted
    assert "sound.nr50" in v7.defaulted and "serial.sb" in v7.defaulted
    v29 = load_pyboy_state(fixture_bytes(V29), ROM)
    assert v29.defaulted == ("memory.io_high",)  # v29 keeps FF4C-FF7F elsewhere
