"""Save states on the Warp backend, proven against PyBoy 2.8.1 frame by frame.

Loading: a state goes into our backend (``load_state``) and into PyBoy 2.8.1 (the oracle
backend's ``load_state``); both then run the same random buttons one frame at a time and
must agree after every frame on registers, the T-cycle counter, all of 0x8000-0xFFFF and
the serial output, and on the whole machine as a PyBoy state (every cart RAM bank, the
timer, LCD, serial, DMA, MBC and clock fields) at intervals and at the end. States: the
committed fixtures of every released layout (v7-v29), states PyBoy 2.8.1 saves in the
middle of frames (hooks) of a ROM that keeps DMA, serial, timer reloads, mode 3, the
MBC3 clock and bank switching busy, and states it saves between frames of suite ROMs and
the demo game.

Exporting: our backend runs, ``export_pyboy_state`` hands the env to PyBoy 2.8.1, and
both continue in lockstep; PyBoy's own save right after loading equals the export.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from bench.roms.build import get_rom
from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.savestate_bridge import UNSAVED_FIELDS
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.savestate import SavestateError, load_pyboy_state
from gbxcule.core.snapshot import SNAPSHOT_FORMAT
from tools.make_state_fixtures import observation

from .support.backend_api_support import (
    KW,
    ZOO_SOURCE,
    lockstep,
    pyboy_full_state,
    pyboy_state_after,
    pyboy_states_at_hooks,
    state_diffs,
    write_rom,
    zoo_rom,
)

SCREEN_FIELDS = {"line_latch", "frame_video", "video_log"}  # the LCD unit's frame
pytestmark = pytest.mark.l3

FIXTURES = Path(__file__).parent / "fixtures" / "states"
INDEX = json.loads((FIXTURES / "index.json").read_text())["fixtures"]
RELEASES = sorted(INDEX, key=lambda r: tuple(int(x) for x in r.split(".")))


def fixture_bytes(release: str) -> bytes:
    return gzip.decompress((FIXTURES / INDEX[release]["file"]).read_bytes())


class Pair:
    """Our backend and the PyBoy oracle on one ROM, one env, one frame per step."""

    def __init__(self, rom: bytes, path: Path) -> None:
        self.rom = rom
        self.path = path
        self.warp = WarpVecCpuBackend(path, threads=1, **KW)
        self.pyboy = PyBoySingleBackend(path, render=False, **KW)

    def load(self, data) -> None:
        self.warp.load_state(data)
        self.pyboy.load_state(data)

    def close(self) -> None:
        self.warp.close()
        self.pyboy.close()


def make_pair(tmp_path_factory, name: str, rom: bytes) -> Pair:
    return Pair(rom, write_rom(tmp_path_factory.mktemp(name), f"{name}.gb", rom))


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    pair = make_pair(
        tmp_path_factory, "probe", gzip.decompress((FIXTURES / "probe.gb.gz").read_bytes())
    )
    yield pair
    pair.close()


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    pair = make_pair(tmp_path_factory, "zoo", zoo_rom())
    yield pair
    pair.close()


@pytest.fixture(scope="module")
def zoo_states():
    """States PyBoy 2.8.1 saved mid-frame: at the main loop's probe and in the timer handler."""
    from gbxcule.asm import assemble

    probe_addr = assemble(ZOO_SOURCE).symbols["Probe"]
    # Hits 307 and 462 land while TIMA is reloading (found once by scanning; PyBoy is pinned).
    hooks = {probe_addr: [1, 60, 150, 307, 462, 503, 640], 0x0050: [3, 90, 400]}
    return [load_pyboy_state(s, zoo_rom()) for s in pyboy_states_at_hooks(zoo_rom(), hooks)]


@pytest.mark.parametrize("release", RELEASES)
def test_fixture_runs_like_pyboy(probe, release):
    """Every released layout: 30 frames in lockstep with PyBoy 2.8.1 after loading."""
    probe.load(fixture_bytes(release))
    version = INDEX[release]["state_version"]
    lockstep(
        probe.pyboy,
        probe.warp,
        probe.rom,
        30,
        seed=len(release),
        stale_div_at_load=version < 29,
        full_every=10,
    )


def _observe(warp) -> dict:
    """What tools/make_state_fixtures.py records of a release, read from our backend."""
    return observation(lambda lo, hi: warp.read_memory(0, lo, hi).tobytes())


@pytest.mark.parametrize("release", RELEASES)
def test_fixture_runs_like_the_release_that_wrote_it_after_loading(probe, release):
    """Not our parser on both sides: the release itself loaded its file into a fresh PyBoy
    and ran on (recorded by tools/make_state_fixtures.py, ``after_load``); our backend
    loads the same file and runs the same frames. 2.8.1 (v29): everything matches. v15
    (2.6, 2.7): the counters, VRAM, OAM, HRAM, cart RAM and IE match, not the rest of
    WRAM, where the probe logs what those releases time their own way (ours runs as 2.8.1
    does from the same file: ``test_fixture_runs_like_pyboy``). Older ones count VBlanks
    alike but time LYC interrupts and instructions their own way (test_savestate.py)."""
    entry = INDEX[release]
    probe.warp.load_state(fixture_bytes(release))
    for _ in range(entry["after_more_frames"]):
        probe.warp.step(np.zeros(1, np.int64))
    ours, theirs = _observe(probe.warp), dict(entry["after_load"])
    if entry["state_version"] >= 29:
        assert ours == theirs
    elif entry["state_version"] >= 15:
        del ours["wram_sha256"], theirs["wram_sha256"]
        assert ours == theirs
    else:
        assert ours["wram_counters"][:2] == theirs["wram_counters"][:2]  # VBlanks
        assert ours["vram_sha256"] == theirs["vram_sha256"]


def test_v29_fixture_as_pyboy_reads_the_file_itself(probe):
    """No conversion on the PyBoy side: 2.8.1 loads the original v29 file."""
    import io

    data = fixture_bytes("2.8.1")
    probe.pyboy.reset()
    probe.pyboy.pyboy(0).load_state(io.BytesIO(data))
    probe.warp.load_state(data)
    lockstep(probe.pyboy, probe.warp, probe.rom, 20, seed=3)


def test_zoo_states_cover_units_in_flight(zoo_states):
    """The mid-frame states really catch the units mid-flight."""
    assert any(s.oam_dma.active and 0 < s.oam_dma.index < 160 for s in zoo_states)
    assert {s.lcd.stat & 3 for s in zoo_states} >= {0, 3}
    assert any(s.serial.transfer_enabled for s in zoo_states)
    assert any(s.timer.tima_reload_state for s in zoo_states)
    assert any(s.lcd.first_frame for s in zoo_states)
    assert any(s.cart.ram_bank != 0 for s in zoo_states)
    assert len({s.cpu.cycles for s in zoo_states}) == len(zoo_states)


def test_mid_frame_states_run_like_pyboy(zoo, zoo_states):
    for k, state in enumerate(zoo_states):
        zoo.load(state)
        lockstep(zoo.pyboy, zoo.warp, zoo.rom, 12, seed=k, full_every=4)


SUITE_STATES = [
    ("demo_game", 97),
    ("hw_mbc1_ram", 40),
    ("hw_mbc2", 40),
    ("hw_mbc3", 45),
    ("hw_mbc5", 40),
    ("timer", 30),
    ("hw_serial", 30),
]


@pytest.mark.parametrize("name,frames", SUITE_STATES)
def test_suite_state_runs_like_pyboy(tmp_path_factory, name, frames):
    """A state PyBoy 2.8.1 saves after ``frames`` frames of random buttons, run 24 frames on."""
    rom = get_rom(name).build()
    pair = make_pair(tmp_path_factory, name, rom)
    try:
        pair.load(pyboy_state_after(rom, frames, seed=frames))
        lockstep(pair.pyboy, pair.warp, rom, 24, seed=1, full_every=8)
    finally:
        pair.close()


def test_demo_game_state_is_saved_halted(tmp_path_factory):
    """The demo game waits for VBlank in HALT: its between-frames state covers HALT."""
    rom = get_rom("demo_game").build()
    assert load_pyboy_state(pyboy_state_after(rom, 97, seed=97), rom).cpu.halted


@pytest.mark.parametrize("name,frames", [("demo_game", 90), ("hw_mbc3", 40), ("hw_mbc1_ram", 35)])
def test_export_continues_in_pyboy(tmp_path_factory, name, frames):
    """Ours runs ``frames`` frames, exports; PyBoy 2.8.1 loads it and both go on in lockstep."""
    rom = get_rom(name).build()
    pair = make_pair(tmp_path_factory, name, rom)
    try:
        rng = np.random.default_rng(frames)
        for _ in range(frames):
            pair.warp.step(rng.integers(0, 256, size=1))
        # A PyBoy state has no pending button releases: export after a step without buttons.
        pair.warp.step(np.zeros(1, dtype=np.int64))
        pair.pyboy.load_state(pair.warp.export_pyboy_state(0))
        sent = len(pair.warp.serial_output(0))  # PyBoy's output starts at the load
        lockstep(pair.pyboy, pair.warp, rom, 24, seed=2, full_every=6, dut_serial_from=sent)
    finally:
        pair.close()


def test_export_of_mid_frame_states_continues_in_pyboy(zoo, zoo_states):
    """Mid-frame states loaded into ours, exported at once, loaded by PyBoy: lockstep."""
    for k, state in enumerate(zoo_states[::2]):
        zoo.warp.load_state(state)
        exported = zoo.warp.export_pyboy_state(0)
        zoo.pyboy.load_state(exported)
        assert not state_diffs(
            pyboy_full_state(zoo.pyboy, zoo.rom), load_pyboy_state(exported, zoo.rom)
        )
        lockstep(zoo.pyboy, zoo.warp, zoo.rom, 8, seed=k)


def test_pyboy_saves_our_export_back_unchanged(probe):
    """PyBoy's own v29 save right after loading our export equals it field for field
    (``state_diffs``: sound, screen and wall-clock fields aside)."""
    import io

    probe.warp.load_state(fixture_bytes("2.8.1"))
    exported = probe.warp.export_pyboy_state(0)
    probe.pyboy.load_state(exported)
    buf = io.BytesIO()
    probe.pyboy.pyboy(0).save_state(buf)
    assert not state_diffs(
        load_pyboy_state(buf.getvalue(), probe.rom), load_pyboy_state(exported, probe.rom)
    )


def test_import_export_round_trip_of_pyboy_files(probe):
    """Every fixture -> ours -> v29 export: the machine fields survive (sound, screen aside)."""
    for release in RELEASES:
        if INDEX[release]["state_version"] < 29:
            continue
        data = fixture_bytes(release)
        probe.warp.load_state(data)
        back = load_pyboy_state(probe.warp.export_pyboy_state(0), probe.rom)
        assert not state_diffs(load_pyboy_state(data, probe.rom), back)


def test_snapshot_reloads_the_same_machine(tmp_path):
    rom = get_rom("demo_game").build()
    path = write_rom(tmp_path, "demo.gb", rom)
    kw = {**KW, "num_envs": 2, "frames_per_step": 4, "release_after_frames": 2}
    with WarpVecCpuBackend(path, threads=1, **kw) as w:
        rng = np.random.default_rng(5)
        for _ in range(20):
            w.step(rng.integers(0, 256, size=2))
        snap = w.save_snapshot(0)
        at_save = w.capture_state(0)
        w.load_state(snap, envs=[1])
        loaded = w.capture_state(1)
        for name, value in at_save.items():
            if name not in UNSAVED_FIELDS | SCREEN_FIELDS:
                assert np.array_equal(loaded[name], value), name
        # the frame is drawn again from the saved screen: the same picture, other bytes
        assert np.array_equal(w.screens([1])[0], w.screens([0])[0])
        actions = rng.integers(0, 256, size=10)
        for a in actions:
            w.step(np.array([a, a]))
        a0, a1 = w.capture_state(0), w.capture_state(1)
        for name in ("mem", "pc", "cycles", "tim_counter", "lcd_clock", "rtc"):
            assert np.array_equal(a0[name], a1[name]), name


def test_snapshot_refuses_another_rom_and_a_newer_format(tmp_path):
    demo = write_rom(tmp_path, "demo.gb", get_rom("demo_game").build())
    other = write_rom(tmp_path, "timer.gb", get_rom("timer").build())
    with (
        WarpVecCpuBackend(demo, threads=1, **KW) as w,
        WarpVecCpuBackend(other, threads=1, **KW) as o,
    ):
        snap = w.save_snapshot(0)
        with pytest.raises(SavestateError, match="belongs to the ROM"):
            o.load_state(snap)
        newer = bytearray(snap)
        struct.pack_into("<H", newer, 8, SNAPSHOT_FORMAT + 1)
        newer[-4:] = struct.pack("<I", zlib.crc32(bytes(newer[:-4])))
        with pytest.raises(SavestateError, match="newer"):
            w.load_state(bytes(newer))
        w.load_state(snap)  # the untouched one loads


def test_state_path_loads_at_every_reset(probe, tmp_path):
    path = tmp_path / "v29.state"
    path.write_bytes(fixture_bytes("2.8.1"))
    with WarpVecCpuBackend(probe.path, threads=1, state_path=path, **KW) as w:
        probe.warp.load_state(path)
        want = probe.warp.capture_state(0)
        got = w.capture_state(0)
        assert all(np.array_equal(got[k], want[k]) for k in want)
        w.step(np.array([3]))
        w.reset()
        again = w.capture_state(0)
        assert all(np.array_equal(again[k], want[k]) for k in want)
    pyboy = PyBoySingleBackend(probe.path, render=False, state_path=path, **KW)
    try:
        lockstep(pyboy, probe.warp, probe.rom, 5, seed=9)
    finally:
        pyboy.close()
    with pytest.raises(FileNotFoundError, match="save state not found"):
        WarpVecCpuBackend(probe.path, threads=1, state_path=tmp_path / "missing.state", **KW)


def test_gzip_path_and_envs_subset(probe, tmp_path):
    with WarpVecCpuBackend(probe.path, threads=1, **{**KW, "num_envs": 3}) as w:
        w.step(np.array([1, 2, 3]))
        before = [w.capture_state(e) for e in range(3)]
        w.load_state(FIXTURES / INDEX["2.8.1"]["file"], envs=[1])
        probe.warp.load_state(fixture_bytes("2.8.1"))
        want = probe.warp.capture_state(0)
        after = [w.capture_state(e) for e in range(3)]
        for e in (0, 2):
            assert all(np.array_equal(after[e][k], before[e][k]) for k in want)
        assert all(np.array_equal(after[1][k], want[k]) for k in want)
        assert w.serial_output(1) == b""


def test_load_state_bad_input(probe):
    with pytest.raises(SavestateError):
        probe.warp.load_state(b"\x1d" + bytes(100))
    with pytest.raises(SavestateError, match="version 30"):
        probe.warp.load_state(bytes([30, 0]) + bytes(100))
    with pytest.raises(TypeError, match="bytes, a path or a PyBoyState"):
        probe.warp.load_state(1234)
    with pytest.raises(IndexError, match="out of range"):
        probe.warp.load_state(fixture_bytes("2.8.1"), envs=[1])
    with pytest.raises(FileNotFoundError):
        probe.warp.load_state(Path("/nonexistent/x.state"))


def test_loading_a_state_never_keeps_the_base_sprite_line_cache(tmp_path):
    """The sprite-line cache (kernels/ppu/ppu.py) summarises OAM; a loaded state brings its own
    OAM, so the cache taken over from the base machine must come back marked stale."""
    from gbxcule.backends.savestate_bridge import env_state_from_pyboy

    rom = get_rom("demo_game").build()
    with WarpVecCpuBackend(write_rom(tmp_path, "demo.gb", rom), threads=1, **KW) as w:
        w.step(np.array([0]))
        state = load_pyboy_state(w.export_pyboy_state(0), rom)
        base = w.capture_state(0)
        base["oam_lines_ok"] = np.int32(1)  # a base whose cache describes its own OAM
        assert int(env_state_from_pyboy(state, base, w.cart)["oam_lines_ok"]) == 0
