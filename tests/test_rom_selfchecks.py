"""Every micro ROM of the suite self-checks on PyBoy: the proof that each ROM and its
expectation are right before any of our backends is judged by it."""

from __future__ import annotations

import pytest

from bench.roms.build import all_roms
from bench.roms.spec import RomSpec, check_spec

pytestmark = pytest.mark.tooling


@pytest.mark.parametrize("spec", all_roms(), ids=lambda s: s.name)
def test_rom_self_checks_on_pyboy(spec: RomSpec) -> None:
    check_spec(spec, "pyboy")
