"""The CPU and mapper micro ROMs on the Warp CPU backend: lockstep with PyBoy, then self-check.

Every step compares registers (cycle count included), VRAM, cart RAM, WRAM, OAM,
the IO page, HRAM and IE with PyBoy 2.8.1; afterwards the ROM's own absolute
check (serial verdict / WRAM signature) must pass on our backend too.
"""

from __future__ import annotations

import pytest

from bench.roms.build import all_roms
from bench.roms.spec import check_spec, spec_actions, spec_config, spec_rom_file
from gbxcule.lockstep import run_lockstep

pytestmark = pytest.mark.l3

SPECS = [s for s in all_roms() if {"cpu", "mbc"} & set(s.tags)]


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_rom_lockstep_with_pyboy(spec) -> None:
    cfg = spec_config(spec, "pyboy", "warp-cpu", compare_frames=False, compare_cycles=True)
    result = run_lockstep(spec_rom_file(spec), spec_actions(spec), cfg, bundle_root=None)
    assert result.ok, f"{spec.name}: diverged at step {result.divergence_step}: {result.diffs[:5]}"
    check_spec(spec, "warp-cpu")


def test_suite_has_cpu_and_mapper_roms() -> None:
    names = {s.name for s in SPECS}
    assert {"alu_add", "daa", "flow", "interrupts", "hw_mbc1_rom", "hw_mbc3", "hw_mbc5"} <= names
