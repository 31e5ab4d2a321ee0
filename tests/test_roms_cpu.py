"""The CPU micro ROMs (bench/roms/suite/cpu_*.py) pass their own checks on PyBoy, and
those checks (Python side and the ROM's own comparison) fail when a result is wrong."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bench.roms.build import all_roms
from bench.roms.spec import RomSpec, make_spec_backend, run_spec
from bench.roms.suite import (
    cpu_alu,
    cpu_alu16,
    cpu_cb,
    cpu_daa,
    cpu_flow,
    cpu_interrupts,
    cpu_loads,
    cpu_model,
    cpu_timer,
)
from bench.roms.suite._lib import (
    FAILED,
    HRAM_VERDICT,
    VERDICT_FAILED,
    SelfCheckingRom,
    self_checking_rom,
)

pytestmark = pytest.mark.tooling

MODULES = (cpu_alu, cpu_alu16, cpu_cb, cpu_daa, cpu_flow, cpu_interrupts, cpu_loads, cpu_timer)
CPU_SPECS: dict[str, RomSpec] = {s.name: s for m in MODULES for s in m.ROMS}
EXPECTED_NAMES = {
    *(f"alu_{op}" for op in ("add", "adc", "sub", "sbc", "and", "xor", "or", "cp")),
    "alu_self",
    "alu_inc",
    "alu_dec",
    "alu16",
    "cb_shift",
    "cb_bitops",
    "daa",
    "flow",
    "interrupts",
    "loads",
    "timer",
}


@pytest.fixture(scope="module")
def finished():
    """name -> PyBoy backend that has run that ROM for its steps (built lazily, closed at the end)."""
    backends = {}

    def get(name: str):
        if name not in backends:
            spec = CPU_SPECS[name]
            backend = make_spec_backend(spec, "pyboy")
            run_spec(spec, backend)
            backends[name] = backend
        return backends[name]

    yield get
    for backend in backends.values():
        backend.close()


class Tampered:
    """A backend view with one byte of memory flipped and/or other serial output."""

    def __init__(self, backend, addr: int | None = None, serial: bytes | None = None) -> None:
        self.backend, self.addr, self.serial = backend, addr, serial

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        data = np.array(self.backend.read_memory(env, lo, hi), dtype=np.uint8)
        if self.addr is not None and lo <= self.addr < hi:
            data[self.addr - lo] ^= 0x01
        return data

    def serial_output(self, env: int) -> bytes:
        return self.serial if self.serial is not None else self.backend.serial_output(env)


def test_cpu_roms_are_in_the_suite():
    assert set(CPU_SPECS) == EXPECTED_NAMES
    suite = {s.name for s in all_roms()}
    assert EXPECTED_NAMES <= suite
    for spec in CPU_SPECS.values():
        assert "cpu" in spec.tags and 1 <= spec.steps <= 300


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_cpu_rom_passes_on_pyboy(name, finished):
    spec = CPU_SPECS[name]
    backend = finished(name)
    spec.check(backend, 0)
    assert backend.serial_output(0) == b"Passed\n"


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_check_names_a_corrupted_result_byte(name, finished):
    rom = self_checking_rom(name)
    backend = finished(name)
    for table in (rom.tables[0], rom.tables[-1]):
        addr = table.addr + len(table.expected) // 2
        with pytest.raises(AssertionError, match=f"table {table.label}: 1 of .* at \\${addr:04X}"):
            rom.check(Tampered(backend, addr=addr), 0)


def test_check_fails_on_wrong_serial_or_unfinished_rom(finished):
    rom = self_checking_rom("daa")
    backend = finished("daa")
    with pytest.raises(AssertionError, match="serial output"):
        rom.check(Tampered(backend, serial=FAILED), 0)
    with pytest.raises(AssertionError, match="did not finish"):
        rom.check(Tampered(backend, addr=HRAM_VERDICT), 0)  # 'P' ^ 1 is no verdict


def test_rom_reports_failure_when_its_expectation_is_wrong():
    """The ROM's own comparison: one expected byte off -> it prints Failed, check says so."""
    rom = self_checking_rom("flow")
    table = rom.tables[0]
    bad = bytearray(table.expected)
    bad[3] ^= 0x80
    wrong = dataclasses.replace(rom, tables=(dataclasses.replace(table, expected=bytes(bad)),))
    spec = dataclasses.replace(CPU_SPECS["flow"], build=wrong.build, check=wrong.check)
    backend = make_spec_backend(spec, "pyboy")
    try:
        run_spec(spec, backend)
        assert backend.serial_output(0) == FAILED
        assert backend.read_memory(0, HRAM_VERDICT, HRAM_VERDICT + 1)[0] == VERDICT_FAILED
        with pytest.raises(AssertionError, match=r"1 of \d+ records wrong; .* at \$C003"):
            wrong.check(backend, 0)
    finally:
        backend.close()


def test_alu_table_covers_every_a_and_carry():
    rom: SelfCheckingRom = self_checking_rom("alu_adc")
    (table,) = rom.tables
    assert len(table.expected) == 8 * 2 * 256 * 2  # samples x carry-in x A x (A, F)
    assert table.describe(0).startswith("adc a, ")


@pytest.mark.parametrize(
    ("a", "f", "want"),
    [
        (0x3C, 0x00, (0x42, 0x00)),  # $15 + $27 = $3C -> 42
        (0x9A, 0x00, (0x00, 0x90)),  # $99 + $01 = $9A -> 00, carry
        (0x00, 0x30, (0x66, 0x10)),  # $99 + $67 = $00 with H and C -> 66, carry
        (0x0C, 0x40, (0x0C, 0x40)),  # a subtraction without borrows: unchanged
        (0x2D, 0x60, (0x27, 0x40)),  # $42 - $15 = $2D with H -> 27
        (0xDE, 0x70, (0x78, 0x50)),  # $12 - $34 = $DE with H and C -> 78, borrow
    ],
)
def test_daa_model_examples(a, f, want):
    assert cpu_model.daa(a, f) == want


def test_alu_model_examples():
    assert cpu_model.alu8("add", 0x0F, 0x01, 0x00) == (0x10, 0x20)
    assert cpu_model.alu8("adc", 0xFF, 0x00, 0x10) == (0x00, 0xB0)
    assert cpu_model.alu8("sbc", 0x10, 0x0F, 0x10) == (0x00, 0xE0)
    assert cpu_model.alu8("cp", 0x10, 0x20, 0x00) == (0x10, 0x50)
    assert cpu_model.alu8("and", 0xF0, 0x0F, 0x10) == (0x00, 0xA0)
    assert cpu_model.add_hl(0x0FFF, 0x0001, 0x80) == (0x1000, 0xA0)
    assert cpu_model.add_sp_e(0xFFF8, 0x08) == (0x0000, 0x30)
    assert cpu_model.add_sp_e(0x0005, 0xFF) == (0x0004, 0x30)
    assert cpu_model.cb(0x11, 0x80, 0x00) == (0x00, 0x90)  # rl c
    assert cpu_model.cb(0x7E, 0x7F, 0x10) == (0x7F, 0xB0)  # bit 7, [hl]
    assert cpu_model.cb(0xFE, 0x00, 0xA0) == (0x80, 0xA0)  # set 7, [hl] keeps F


def test_timer_model_refuses_edge_dependent_results():
    tl = cpu_timer.Timeline("Edge")
    cpu_timer._prologue(tl)
    tl.write("tac", cpu_timer.ENABLE | 1, at=136)
    tl.read("tima", "TIMA right on a tick", at=136 + 16 * 3 - 8)
    with pytest.raises(ValueError, match="within 8 T of an edge"):
        tl.expected()


def test_timer_expectations_follow_the_counter():
    rates = {sel: cpu_timer._rate_sequence(sel).expected() for sel in cpu_timer.PERIODS}
    for sel, got in rates.items():
        assert got[:3] == bytes([1, 3, 37]), sel
    assert cpu_timer._div_sequence().expected() == bytes([0, 0, 1, 5, 40, 255, 1])
