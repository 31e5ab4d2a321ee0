"""Committed golden state hashes (tests/goldens/goldens.json) against PyBoy and the Warp CPU backend.

PyBoy reproducing every golden proves the file is the oracle's (and that the digest is
deterministic); the Warp CPU backend reproducing every golden proves our emulator
matches PyBoy on registers (cycles included), every CPU-visible memory region, serial
output and the picture at every step of every suite ROM and of the demo game under
random actions. The digest itself must see every byte it claims to cover, and a
rollout that goes wrong must be located at the step where it went wrong.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from bench.goldens import (
    DEMO_CASE,
    GOLDENS_PATH,
    HASH_REGIONS,
    IO_HASH_MASK,
    GoldenError,
    StateView,
    check_record,
    describe_difference,
    first_divergence,
    golden_cases,
    load_goldens,
    mismatch_message,
    run_rollout,
    state_digest,
)
from bench.roms.build import all_roms
from gbxcule.backends.protocol import CPU_STATE_KEYS

pytestmark = pytest.mark.l3

CASES = golden_cases()
BY_NAME = {c.name: c for c in CASES}


def test_goldens_cover_every_suite_rom_and_the_demo(goldens) -> None:
    suite = {spec.name for spec in all_roms()}
    assert set(goldens) == suite | {DEMO_CASE}, "regenerate with tools/make_goldens.py"
    raw = json.loads(GOLDENS_PATH.read_text())
    assert raw["generator"]["backend"] == "pyboy" and raw["generator"]["pyboy"] == "2.8.1"
    assert raw["hash"]["io_mask"] == IO_HASH_MASK.tobytes().hex()
    for case in CASES:
        record = goldens[case.name]
        check_record(case, record)
        assert len(record["step_digests"]) == case.steps + 1
    demo = BY_NAME[DEMO_CASE]
    assert (demo.frames_per_step, demo.release_after_frames, demo.actions) == (24, 8, "random")


@pytest.mark.parametrize("backend", ["pyboy", "warp-cpu"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_backend_reproduces_golden(case, backend: str, goldens) -> None:
    record = goldens[case.name]
    check_record(case, record)
    b = case.make_backend(backend)
    try:
        rollout = run_rollout(b, case.action_array())[0]
    finally:
        b.close()
    assert not mismatch_message(case, backend, record, rollout), mismatch_message(
        case, backend, record, rollout
    )


# ---------------------------------------------------------------- the digest can fail


def random_view(seed: int = 0) -> StateView:
    rng = np.random.default_rng(seed)
    cpu = {k: int(rng.integers(0, 256)) for k in CPU_STATE_KEYS}
    cpu["cycles"] = 70224 * 1000 + 328
    memory = {n: rng.integers(0, 256, hi - lo, dtype=np.uint8) for n, lo, hi in HASH_REGIONS}
    frame = rng.integers(0, 4, (144, 160), dtype=np.uint8)
    return StateView(cpu=cpu, memory=memory, serial=b"Passed\n", frame=frame)


def copy_view(v: StateView) -> StateView:
    return StateView(
        cpu=dict(v.cpu),
        memory={k: a.copy() for k, a in v.memory.items()},
        serial=v.serial,
        frame=None if v.frame is None else v.frame.copy(),
    )


def test_every_covered_byte_changes_the_digest() -> None:
    base = random_view()
    want = state_digest(base)
    assert state_digest(copy_view(base)) == want
    seen = {want}
    variants: list[StateView] = []
    for key in CPU_STATE_KEYS:
        v = copy_view(base)
        v.cpu[key] += 1
        variants.append(v)
    v = copy_view(base)
    v.cpu["cycles"] += 1 << 40  # beyond 32 bits
    variants.append(v)
    for name, lo, hi in HASH_REGIONS:
        positions = (
            range(hi - lo) if name in ("io", "hram", "ie") else (0, (hi - lo) // 2, hi - lo - 1)
        )
        for pos in positions:
            mask = int(IO_HASH_MASK[pos]) if name == "io" else 0xFF
            for bit in (b for b in (0x01, 0x80) if mask & b):
                v = copy_view(base)
                v.memory[name][pos] ^= bit
                variants.append(v)
    for y, x in ((0, 0), (71, 80), (143, 159)):
        v = copy_view(base)
        v.frame[y, x] ^= 1
        variants.append(v)
    for serial in (b"Passed", b"Passed\n\0", b"Failed\n"):
        v = copy_view(base)
        v.serial = serial
        variants.append(v)
    v = copy_view(base)
    v.frame = None
    variants.append(v)
    for v in variants:
        digest = state_digest(v)
        assert digest not in seen, "a changed state produced a digest seen before"
        seen.add(digest)


def test_describe_difference_names_what_differs() -> None:
    base = random_view()
    assert describe_difference(base, copy_view(base)) == []
    v = copy_view(base)
    v.cpu["cycles"] += 4
    v.memory["wram"][0x123] ^= 0xFF
    v.frame[10, 20] ^= 3
    v.serial = b"Failed\n"
    lines = describe_difference(base, v)
    assert lines[0].startswith("register cycles:")
    assert any(line.startswith("wram: 1 bytes differ, first $C123") for line in lines)
    assert any("serial" in line for line in lines)
    assert lines[-1] == "frame: 1 pixels differ, first (y=10, x=20)"


def test_digest_refuses_incomplete_state() -> None:
    v = random_view()
    del v.cpu["cycles"]
    with pytest.raises(KeyError, match="cycles"):
        state_digest(v)
    v = random_view()
    v.memory["oam"] = v.memory["oam"][:-1]
    with pytest.raises(ValueError, match="oam"):
        state_digest(v)
    v = random_view()
    v.frame = v.frame[:, :80]
    with pytest.raises(ValueError, match="144, 160"):
        state_digest(v)


class PokeAfterStep:
    """A backend that writes one byte after a chosen step: a one-byte emulator bug."""

    def __init__(self, inner, step: int, addr: int) -> None:
        self._inner, self._at, self._addr, self._steps = inner, step, addr, 0

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def reset(self, seed=None) -> None:
        self._steps = 0
        self._inner.reset(seed)

    def step(self, actions) -> None:
        self._inner.step(actions)
        self._steps += 1
        if self._steps == self._at:
            old = int(self._inner.read_memory(0, self._addr, self._addr + 1)[0])
            self._inner.write_memory(0, self._addr, old ^ 0x01)


def test_one_byte_change_in_a_rollout_is_caught_at_its_step(goldens) -> None:
    case = BY_NAME["flow"]
    record = goldens[case.name]
    inner = case.make_backend("warp-cpu")
    try:
        rollout = run_rollout(PokeAfterStep(inner, 7, 0xDFF0), case.action_array())[0]
    finally:
        inner.close()
    assert rollout.digest != record["digest"]
    assert first_divergence(record["step_digests"], rollout.step_hex()) == 7
    assert rollout.step_hex()[:7] == record["step_digests"][:7]
    assert "first differing state at step 7" in mismatch_message(case, "x", record, rollout)


def test_first_divergence() -> None:
    assert first_divergence(["aa", "bb"], ["aa", "bb"]) is None
    assert first_divergence(["aa", "bb", "cc"], ["aa", "bx", "cc"]) == 1
    assert first_divergence(["aabb", "cc"], ["aa", "cc"]) is None  # truncated digests
    assert first_divergence(["aa", "bb"], ["aa"]) == 1


def test_stale_golden_config_or_file_is_refused(goldens, tmp_path) -> None:
    case = BY_NAME["flow"]
    with pytest.raises(GoldenError, match="recorded config"):
        check_record(dataclasses.replace(case, steps=case.steps + 1), goldens[case.name])
    with pytest.raises(GoldenError, match="ROM alu_add changed"):
        check_record(
            dataclasses.replace(case, rom="alu_add"), {**goldens[case.name], "rom": "alu_add"}
        )
    bad = tmp_path / "g.json"
    bad.write_text(json.dumps({"format": "gbxcule-goldens-v1", "hash_version": "old", "cases": {}}))
    with pytest.raises(GoldenError, match="regenerate"):
        load_goldens(bad)
    with pytest.raises(GoldenError, match="not found"):
        load_goldens(tmp_path / "missing.json")
