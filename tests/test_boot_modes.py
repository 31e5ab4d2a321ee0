"""Boot modes (``boot="fast"|"dmg"|"pyboy"``) and the stock-PyBoy reference.

* ``"pyboy"``: PyBoy's own boot ROM, read from the installed package, run by our emulator,
  equals a stock ``PyBoy(rom)`` at 0x0100 and in lockstep after it.
* ``"dmg"``: our boot ROM leaves a real DMG's DIV counter ($ABCC) and LCD phase (line 0 56
  T-cycles after 0x0100); our own Mooneye-style HALT-timing ROMs, whose expected values are
  computed from that hardware state, pass with it (and fail with the other boots).
* A ``.state`` loaded after reset gives the same machine whatever the boot mode.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest

from gbxcule.asm import build_rom
from gbxcule.asm.bootrom import (
    BootRomError,
    boot_image,
    boot_rom_bytes,
    check_boot,
    pyboy_boot_rom_path,
)
from gbxcule.asm.dmg_boot import HANDOVER_CYCLE, LINE0_AFTER_0100
from gbxcule.backends.machine_state import capture_env
from gbxcule.backends.pyboy_backend import (
    PyBoySingleBackend,
    cpu_block,
    make_pyboy,
    post_boot_state,
)
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.lockstep import LockstepConfig, run_lockstep
from tests.support.halt_timing_roms import (
    HALT_ROM_NAMES,
    SAMPLES_ADDR,
    VERDICT_ADDR,
    expected_div,
    halt_rom,
)

pytestmark = pytest.mark.l2

KW = {"frames_per_step": 4, "release_after_frames": 1, "action_codec": "buttons"}
NOOP = np.zeros(1, dtype=np.int64)
STATES = Path(__file__).parent / "fixtures" / "states"


@pytest.fixture(scope="module")
def spin_rom(tmp_path_factory) -> Path:
    """A ROM that keeps the CPU, timer and LCD visible: counts in WRAM and copies DIV/LY."""
    source = """
Main:
    ld hl, $C000
.loop:
    inc [hl]
    ldh a, [$04]
    ld [$C001], a
    ldh a, [$44]
    ld [$C002], a
    jr .loop
"""
    path = tmp_path_factory.mktemp("boot") / "spin.gb"
    path.write_bytes(build_rom(source, title="BOOTSPIN"))
    return path


def test_boot_images_and_refusals(monkeypatch) -> None:
    assert boot_image("fast") == boot_rom_bytes()
    installed = Path(importlib.util.find_spec("pyboy").origin).parent / "core" / "bootrom_dmg.bin"
    assert boot_image("pyboy") == installed.read_bytes()
    dmg = boot_image("dmg")
    assert len(dmg) == 0x100 and dmg[0xFE:] == bytes([0xE0, 0x50])  # ldh [$50], a last
    with pytest.raises(ValueError, match="boot must be one of"):
        check_boot("cgb")
    with pytest.raises(ValueError, match="boot must be one of"):
        WarpVecCpuBackend(STATES / "none.gb", boot="slow")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BootRomError, match="pyboy is not installed"):
        pyboy_boot_rom_path()
    with pytest.raises(ValueError, match="stock PyBoy runs its own boot ROM"):
        make_pyboy(build_rom("Main:\n    jr Main\n"), boot="fast", stock=True)


def test_dmg_boot_leaves_the_hardware_phase(spin_rom: Path) -> None:
    rom = spin_rom.read_bytes()
    pyboy = make_pyboy(rom, boot="dmg")
    try:
        pyboy.load_state(io.BytesIO(post_boot_state(rom, "dmg")))
        cpu = cpu_block(pyboy)
        assert cpu["cycles"] == HANDOVER_CYCLE and HANDOVER_CYCLE & 0xFFFF == 0xABCC
        assert {k: cpu[k] for k in "afbcdehl"} == {
            "a": 0x01, "f": 0xB0, "b": 0x00, "c": 0x13, "d": 0x00, "e": 0xD8, "h": 0x01, "l": 0x4D
        }  # fmt: skip
        io_regs = pyboy.memory[0xFF00:0xFF50]
        # DIV $AB, IF $E1, LCDC $91; STAT $81 / LY $99: PyBoy keeps LY=153 for all of line 153
        # (hardware: LY $00, STAT $85; history/pyboy-deviations.md).
        assert [io_regs[i] for i in (0x00, 0x04, 0x0F, 0x40, 0x41, 0x44)] == [
            0xCF, 0xAB, 0xE1, 0x91, 0x81, 0x99
        ]  # fmt: skip
        pyboy.tick(1, False)  # the frame ends at line 153 -> 0: 56 T-cycles after 0x0100
        assert 0 <= cpu_block(pyboy)["cycles"] - HANDOVER_CYCLE - LINE0_AFTER_0100 < 24
        assert pyboy.memory[0xFF44] == 0
    finally:
        pyboy.stop(save=False)
    with WarpVecCpuBackend(spin_rom, threads=1, boot="dmg", **KW) as warp:
        assert warp.get_cpu_state(0) == cpu_block_of(rom, "dmg")


def cpu_block_of(rom: bytes, boot: str) -> dict[str, int]:
    pyboy = make_pyboy(rom, boot=boot)
    try:
        pyboy.load_state(io.BytesIO(post_boot_state(rom, boot)))
        return cpu_block(pyboy)
    finally:
        pyboy.stop(save=False)


@pytest.mark.parametrize("name", HALT_ROM_NAMES)
def test_halt_timing_roms_pass_with_dmg_boot_only(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.gb"
    path.write_bytes(halt_rom(name))
    for boot in ("dmg", "fast", "pyboy"):
        runs = [
            WarpVecCpuBackend(path, threads=1, boot=boot, **KW),
            PyBoySingleBackend(path, render=False, boot=boot, **KW),
        ]
        results = []
        for backend in runs:
            with backend:
                backend.step(NOOP)
                samples = backend.read_memory(0, SAMPLES_ADDR, SAMPLES_ADDR + 16).tolist()
                verdict = int(backend.read_memory(0, VERDICT_ADDR, VERDICT_ADDR + 1)[0])
                results.append((samples, verdict, backend.serial_output(0)))
        assert results[0] == results[1], f"{name}, boot={boot}: ours != PyBoy"
        samples, verdict, serial = results[0]
        if boot == "dmg":
            assert (samples, verdict, serial) == (expected_div(name), 0x01, b"P")
        else:  # the ROMs see the boot's phase: they fail after the other boot ROMs
            assert (verdict, serial) == (0xFF, b"F") and samples != expected_div(name)


def test_pyboy_boot_equals_stock_pyboy_in_lockstep(spin_rom: Path, tmp_path: Path) -> None:
    cfg = LockstepConfig(
        ref="pyboy-stock", dut="warp-cpu", steps=12, codec="buttons", boot="pyboy",
        compare_cycles=True, frames_per_step=4, release_after_frames=2,
    )  # fmt: skip
    actions = np.random.default_rng(3).integers(0, 9, size=(12, 1))
    result = run_lockstep(spin_rom, actions, cfg, bundle_root=tmp_path)
    assert result.ok, result.diffs
    # Sound emulated: stock PyBoy's sound registers read back (NR52 $F0 after its boot
    # ROM's chime) and ours do too, so nothing is masked; with sound off PyBoy reads $00
    # there, which ours cannot match, and only those addresses are masked.
    with PyBoySingleBackend(spin_rom, stock=True, **KW) as stock:
        assert stock.lockstep_ignore == ()
        assert stock.read_memory(0, 0xFF26, 0xFF27)[0] == 0xF0
    with PyBoySingleBackend(spin_rom, stock=True, sound_emulated=False, **KW) as nosound:
        assert nosound.lockstep_ignore == ((0xFF10, 0xFF40),)
        assert nosound.read_memory(0, 0xFF10, 0xFF40).tolist() == [0] * 0x30


def test_stock_frames_map_the_default_palette(spin_rom: Path) -> None:
    with (
        PyBoySingleBackend(spin_rom, stock=True, **KW) as stock,
        WarpVecCpuBackend(spin_rom, threads=1, boot="pyboy", render_pixels=True, **KW) as warp,
    ):
        stock.step(NOOP)
        warp.step(NOOP)
        frame = stock.frame_shades(0)
        assert set(np.unique(frame).tolist()) >= {0, 3}  # PyBoy's logo is still on screen
        assert np.array_equal(frame, warp.frame_shades(0))


def test_state_file_load_is_boot_independent(tmp_path: Path) -> None:
    index = json.loads((STATES / "index.json").read_text())["fixtures"]
    release = max(index, key=lambda r: tuple(int(x) for x in r.split(".")))
    data = gzip.decompress((STATES / index[release]["file"]).read_bytes())
    rom = tmp_path / "probe.gb"
    rom.write_bytes(gzip.decompress((STATES / "probe.gb.gz").read_bytes()))
    loaded, stepped = [], []
    for boot in ("fast", "dmg", "pyboy"):
        with WarpVecCpuBackend(rom, threads=1, boot=boot, **KW) as warp:
            warp.load_state(data)
            loaded.append(capture_env(warp.machine, 0))
            warp.step(NOOP)
            stepped.append(capture_env(warp.machine, 0))
    # Every field right after the load, except the renderer's line latches (what the boot's
    # last frame latched; no emulated state, rewritten by the next rendered frame); all of
    # them one step later.
    for states, skip in ((loaded, {"line_latch"}), (stepped, set())):
        for other in states[1:]:
            assert other.keys() == states[0].keys()
            for key in states[0].keys() - skip:
                assert np.array_equal(other[key], states[0][key]), key


def test_verify_reference_alias_picks_pyboy_boot(spin_rom: Path, capsys) -> None:
    from gbxcule.cli import verify

    parser = argparse.ArgumentParser()
    verify.configure(parser)
    args = parser.parse_args(
        ["--rom", str(spin_rom), "--reference", "pyboy-stock", "--steps", "3",
         "--codec", "buttons", "--actions", "none", "--cycles", "--no-bundle"]
    )  # fmt: skip
    assert args.ref == "pyboy-stock" and args.boot is None
    assert verify.run(args) == 0
    assert "PASS" in capsys.readouterr().out
