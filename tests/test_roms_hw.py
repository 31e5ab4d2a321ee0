"""The hardware micro-ROMs (bench/roms/suite/hw_*.py) pass their own checks on PyBoy, and the checks can fail."""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.build import all_roms, rom_path
from bench.roms.spec import RomSpec
from bench.roms.suite import hw_joypad
from bench.roms.suite._hwlib import byte_probe, hw_spec, mem_read, probe_rom
from bench.roms.suite._lib import RESULTS_BASE
from gbxcule.backends.pyboy_backend import PyBoySingleBackend

pytestmark = pytest.mark.tooling

HW_ROMS = {spec.name: spec for spec in all_roms() if spec.name.startswith("hw_")}


def step_inputs(spec: RomSpec, shift: int = 0) -> list[int]:
    if spec.inputs is None:
        return [0] * spec.steps
    return [spec.inputs[(k + shift) % len(spec.inputs)] for k in range(spec.steps)]


def run_on_pyboy(spec: RomSpec, actions: list[list[int]] | None = None) -> PyBoySingleBackend:
    """Run ``spec`` for its ``steps`` (per-env action lists, default: its own inputs)."""
    actions = actions or [step_inputs(spec)]
    backend = PyBoySingleBackend(
        rom_path(spec.name),
        num_envs=len(actions),
        frames_per_step=spec.frames_per_step,
        release_after_frames=spec.release_after_frames,
        action_codec="buttons",
        render=False,
    )
    for k in range(spec.steps):
        backend.step(np.array([env_actions[k] for env_actions in actions]))
    return backend


class OneWrongByte:
    """A backend view that corrupts the byte at ``addr`` (or the serial output)."""

    def __init__(self, backend, addr: int | None = None, serial: bytes | None = None) -> None:
        self.backend, self.addr, self.serial = backend, addr, serial

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        data = np.array(self.backend.read_memory(env, lo, hi), dtype=np.uint8)
        if self.addr is not None and lo <= self.addr < hi:
            data[self.addr - lo] ^= 0x01
        return data

    def serial_output(self, env: int) -> bytes:
        return self.serial if self.serial is not None else self.backend.serial_output(env)


def test_suite_has_the_hw_roms():
    expected = {
        "hw_oam_dma",
        "hw_serial",
        "hw_joypad_p1",
        "hw_joypad_log",
        "hw_joypad_hold",
        "hw_joypad_irq",
        "hw_joypad_hash",
        "hw_mbc1_rom",
        "hw_mbc1_ram",
        "hw_mbc2",
        "hw_mbc3",
        "hw_mbc5",
        "hw_mbc5_rom9",
    }
    assert expected <= set(HW_ROMS)
    for spec in HW_ROMS.values():
        assert 30 <= spec.steps * spec.frames_per_step <= 200, spec.name


@pytest.mark.parametrize("name", sorted(HW_ROMS))
def test_rom_passes_on_pyboy(name):
    spec = HW_ROMS[name]
    backend = run_on_pyboy(spec)
    try:
        spec.check(backend, 0)
        assert backend.serial_output(0).endswith(b"Passed\n")
    finally:
        backend.close()


@pytest.mark.parametrize("name", ["hw_mbc1_rom", "hw_oam_dma", "hw_serial", "hw_joypad_irq"])
def test_check_fails_on_one_wrong_result_byte(name):
    spec = HW_ROMS[name]
    backend = run_on_pyboy(spec)
    try:
        spec.check(backend, 0)
        with pytest.raises(AssertionError, match="wrong"):
            spec.check(OneWrongByte(backend, addr=RESULTS_BASE + 1), 0)
        with pytest.raises(AssertionError, match="serial output"):
            spec.check(OneWrongByte(backend, serial=b"Failed\n"), 0)
    finally:
        backend.close()


def test_rom_reports_failed_when_an_expectation_is_wrong(tmp_path):
    # Bank 1 sits at $4000 after power-on; expecting bank 2 must make the ROM itself fail.
    wrong = hw_spec(
        "hw_selftest_wrong",
        "a probe with a wrong expectation",
        lambda: probe_rom(
            "hw_selftest_wrong",
            [byte_probe("bank at $4000", mem_read(0x7F00), 2)],
            data='SECTION "sig", ROMX[$7F00], BANK[1]\n    db 1\n',
        ),
        cart_type="MBC1",
        rom_banks=4,
    )
    path = tmp_path / "hw_selftest_wrong.gb"
    path.write_bytes(wrong.build())
    backend = PyBoySingleBackend(
        path, frames_per_step=1, release_after_frames=1, action_codec="buttons", render=False
    )
    try:
        for _ in range(wrong.steps):
            backend.step(np.array([0]))
        assert backend.serial_output(0) == b"Failed\n"
        with pytest.raises(AssertionError, match="bank at \\$4000"):
            wrong.check(backend, 0)
    finally:
        backend.close()


@pytest.mark.parametrize(
    "name,shift", [("hw_joypad_log", 1), ("hw_joypad_hold", 1), ("hw_joypad_irq", 1)]
)
def test_joypad_check_fails_when_inputs_arrive_a_step_late(name, shift):
    spec = HW_ROMS[name]
    backend = run_on_pyboy(spec, [step_inputs(spec, shift=-shift)])
    try:
        with pytest.raises(AssertionError):
            spec.check(backend, 0)
    finally:
        backend.close()


def test_hash_rom_diverges_per_env_input_history():
    spec = HW_ROMS["hw_joypad_hash"]
    own = step_inputs(spec)
    other = own[:10] + [own[10] ^ 0x01] + own[11:]
    backend = run_on_pyboy(spec, [own, other])
    try:
        spec.check(backend, 0)
        with pytest.raises(AssertionError):
            spec.check(backend, 1)
        window = hw_joypad.WINDOW_TABLE
        hash_addr = window + 2 * 100
        h0 = bytes(backend.read_memory(0, hash_addr, hash_addr + 2))
        h1 = bytes(backend.read_memory(1, hash_addr, hash_addr + 2))
        assert h0 != h1
    finally:
        backend.close()


def test_held_mask_follows_the_documented_rule():
    inputs = (0x10, 0x00, 0x81)
    # 4 frames per step, released after 2: held in frames 0-1 of each step.
    got = [hw_joypad.held_mask(inputs, 4, 2, f) for f in range(12)]
    assert got == [0x10, 0x10, 0, 0, 0, 0, 0, 0, 0x81, 0x81, 0, 0]
    assert hw_joypad.held_mask(inputs, 1, 1, 4) == 0x00  # wraps: step 4 uses inputs[1]
    assert hw_joypad.pad_nibbles(0x81) == bytes([0x0E, 0x07])  # Right; Start


def test_probe_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="out of range"):
        byte_probe("x", "", 0x100)
    with pytest.raises(ValueError, match="at least one probe"):
        probe_rom("empty", [])
