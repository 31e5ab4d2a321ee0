"""Full env state and the start-state cache: capture, restore, reset_envs.

A restored env must be the captured env in every per-env field of the ``Machine``, and
must then run exactly as the captured env ran. ``reset_envs`` restores only masked envs,
each from its chosen slot (explicit, seeded, or the single state), in one launch;
bad masks and slots raise specific errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from gbxcule.backends.device_inputs import EnvMaskError
from gbxcule.backends.machine_state import MachineLayout, MachineStateError, capture_env, copy_state
from gbxcule.backends.start_states import StartStateError
from gbxcule.backends.warp_base import per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend

from .support.backend_api_support import write_rom, zoo_rom

pytestmark = pytest.mark.api

N = 4
PACE = {"frames_per_step": 4, "release_after_frames": 2, "action_codec": "buttons"}


def same(a: dict, b: dict) -> list[str]:
    """Names of the fields where two captured states differ."""
    return [k for k in a if not np.array_equal(a[k], b[k])]


@pytest.fixture(params=["env_major", "interleaved"])
def backend(request, demo):
    with WarpVecCpuBackend(demo, num_envs=N, threads=2, mem_layout=request.param, **PACE) as b:
        yield b


def run(b, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        b.step(rng.integers(0, 256, size=b.num_envs))


def test_layout_packs_every_field(backend):
    layout = MachineLayout.of(backend.machine)
    assert layout.names == tuple(name for name, _ in per_env_arrays(backend.machine))
    assert layout.nbytes == sum(f.nbytes for f in layout.fields)
    run(backend, 3, 1)
    state = backend.capture_state(2)
    flat = layout.pack(state)
    assert len(flat) == layout.nbytes
    assert not same(layout.unpack(flat), state)
    with pytest.raises(MachineStateError, match="bytes"):
        layout.unpack(flat[:-4])
    broken = copy_state(state)
    del broken["pc"]
    with pytest.raises(MachineStateError, match="missing"):
        layout.pack(broken)
    broken = copy_state(state)
    broken["cycles"] = broken["cycles"].astype(np.int32)
    with pytest.raises(MachineStateError, match="cycles"):
        layout.pack(broken)


def test_capture_restore_round_trip(backend):
    run(backend, 5, 2)
    saved = backend.capture_state(1)
    run(backend, 5, 3)
    assert same(backend.capture_state(1), saved)
    backend.restore_state(1, saved)
    assert not same(backend.capture_state(1), saved)


def test_reset_envs_restores_only_masked_envs_from_their_slots(backend):
    run(backend, 4, 4)
    s0 = backend.capture_start_state(2)
    at0 = backend.capture_state(2)
    run(backend, 4, 5)
    s1 = backend.capture_start_state(1)
    at1 = backend.capture_state(1)
    assert (s0, s1) == (0, 1) and backend.num_start_states == 2
    assert not same(backend.start_state(s0), at0) and not same(backend.start_state(s1), at1)
    run(backend, 3, 6)
    before = [backend.capture_state(e) for e in range(N)]
    backend.reset_envs(np.array([True, False, False, True]), slots=np.array([1, 0, 0, 0]))
    assert not same(backend.capture_state(0), at1)
    assert not same(backend.capture_state(3), at0)
    for e in (1, 2):
        assert not same(backend.capture_state(e), before[e])
    assert backend.last_reset_slots().numpy()[[0, 3]].tolist() == [1, 0]


def test_restored_env_runs_exactly_as_the_captured_one(backend):
    """Capture env 2, record its next 6 steps; later restore env 0 from the slot and replay."""
    run(backend, 3, 7)
    slot = backend.capture_start_state(2)
    rng = np.random.default_rng(8)
    plan = rng.integers(0, 256, size=(6, N))
    for row in plan:
        backend.step(row)
    want = backend.capture_state(2)
    run(backend, 2, 9)
    backend.reset_envs(np.array([1, 0, 0, 0]), slots=slot)
    for row in plan:
        backend.step(np.array([row[2], row[1], row[2], row[3]]))
    assert not same(backend.capture_state(0), want)


def test_seeded_and_default_slot_choice(demo):
    with WarpVecCpuBackend(demo, num_envs=16, threads=1, **PACE) as b:
        for seed in range(3):
            run(b, 1, seed)
            b.capture_start_state(seed)
        everyone = np.ones(16, dtype=bool)
        b.reset_envs(everyone, seed=42)
        first = b.last_reset_slots().numpy().copy()
        b.reset_envs(everyone, seed=42)
        assert np.array_equal(b.last_reset_slots().numpy(), first)
        assert set(first.tolist()) == {0, 1, 2}
        for e in range(16):
            assert not same(b.capture_state(e), b.start_state(int(first[e])))
        b.reset_envs(everyone, seed=43)
        assert not np.array_equal(b.last_reset_slots().numpy(), first)
        b.reset(5)
        b.reset_envs(everyone)  # no slots/seed: a sequence seeded by reset(5)
        a = b.last_reset_slots().numpy().copy()
        b.reset(5)
        b.reset_envs(everyone)
        assert np.array_equal(b.last_reset_slots().numpy(), a)
        b.clear_start_states()
        b.capture_start_state(7)
        b.reset_envs(everyone)
        assert set(b.last_reset_slots().numpy().tolist()) == {0}


def test_masks_from_torch_and_warp(backend):
    run(backend, 2, 10)
    slot = backend.capture_start_state(0)
    want = backend.capture_state(0)
    run(backend, 2, 11)
    backend.reset_envs(torch.tensor([False, True, False, False]), slots=slot)
    assert not same(backend.capture_state(1), want)
    mask = wp.array(np.array([0, 0, 1, 0], dtype=np.uint8), dtype=wp.uint8, device="cpu")
    slots = wp.array(np.zeros(N, dtype=np.int32), dtype=wp.int32, device="cpu")
    backend.reset_envs(mask, slots=slots)
    assert not same(backend.capture_state(2), want)
    backend.reset_envs(np.zeros(N, dtype=np.int64), slots=slot)  # nothing selected: no-op


def test_device_slot_out_of_range_restores_nothing_and_raises_later(backend):
    backend.capture_start_state(0)
    run(backend, 2, 12)
    before = backend.capture_state(1)
    slots = wp.array(np.array([0, 5, 0, 0], dtype=np.int32), dtype=wp.int32, device="cpu")
    mask = wp.array(np.array([0, 1, 0, 0], dtype=np.uint8), dtype=wp.uint8, device="cpu")
    backend.reset_envs(mask, slots=slots)  # device values: not read on the host
    assert not same(backend.capture_state(1), before)
    with pytest.raises(IndexError, match="out-of-range start-state slots: 1 found"):
        backend.reset_envs(np.array([1, 0, 0, 0]), slots=0)
    backend.check_errors()  # reported once


def test_reset_envs_bad_arguments(backend):
    with pytest.raises(StartStateError, match="empty"):
        backend.reset_envs(np.ones(N, dtype=bool))
    backend.capture_start_state(0)
    with pytest.raises(EnvMaskError, match="shape"):
        backend.reset_envs(np.ones(N + 1, dtype=bool))
    with pytest.raises(EnvMaskError, match="bool or integer"):
        backend.reset_envs(np.ones(N, dtype=np.float32))
    with pytest.raises(EnvMaskError, match="uint8"):
        backend.reset_envs(wp.ones(N, dtype=wp.int32, device="cpu"))
    with pytest.raises(EnvMaskError, match="on meta"):
        backend.reset_envs(torch.ones(N, dtype=torch.bool, device="meta"))
    with pytest.raises(IndexError, match="slot 1 for env 0"):
        backend.reset_envs(np.ones(N, dtype=bool), slots=1)
    with pytest.raises(EnvMaskError, match="integers"):
        backend.reset_envs(np.ones(N, dtype=bool), slots=np.zeros(N, dtype=np.float64))
    with pytest.raises(ValueError, match="not both"):
        backend.reset_envs(np.ones(N, dtype=bool), slots=0, seed=1)
    with pytest.raises(IndexError, match="out of range"):
        backend.capture_start_state(N)
    with pytest.raises(IndexError, match="out of range"):
        backend.start_state(1)
    with pytest.raises(MachineStateError):
        backend.add_start_state({"pc": np.int32(0)})


def test_add_start_state_from_a_snapshot_and_a_dict(backend):
    run(backend, 3, 13)
    snap = backend.save_snapshot(3)
    backend.load_state(snap, envs=[0])
    from_load = backend.capture_state(0)
    slot = backend.add_start_state(snap)
    dict_slot = backend.add_start_state(backend.capture_state(3))
    run(backend, 2, 14)
    backend.reset_envs(np.array([0, 1, 0, 0]), slots=np.array([0, slot, 0, 0]))
    assert not same(backend.capture_state(1), from_load)
    backend.reset_envs(np.array([0, 0, 1, 0]), slots=dict_slot)
    assert not same(backend.capture_state(2), backend.start_state(dict_slot))


def test_serial_output_restarts_with_the_restored_env(tmp_path):
    """The zoo ROM sends $55 every loop: after a reset_envs the env's output is the start
    state's (empty), then only what it sent since."""
    path = write_rom(tmp_path, "zoo.gb", zoo_rom())
    with WarpVecCpuBackend(path, num_envs=2, threads=1, **PACE) as b:
        slot = b.capture_start_state(0)  # post-boot: nothing sent yet
        run(b, 2, 15)
        sent = b.serial_output(0)
        assert sent and set(sent) == {0x55}
        b.reset_envs(np.array([True, False]), slots=slot)
        assert b.serial_output(0) == b""
        assert b.serial_output(1) == sent
        b.step(np.zeros(2, dtype=np.int64))
        assert 0 < len(b.serial_output(0)) < len(sent)


def test_copy_envs_carries_every_field_in_both_layouts(backend):
    """A swarm copy (``copy_envs``) gives the destination every per-env field of its
    source, whatever the layout (every block interleaved: elements N apart, issue #41)."""
    run(backend, 3, seed=5)
    src = np.array([0, 1, 1, 3], dtype=np.int32)[: backend.num_envs]
    mask = np.zeros(backend.num_envs, dtype=bool)
    mask[2] = True
    want = capture_env(backend.machine, 1)
    backend.copy_envs(src, mask)
    got = capture_env(backend.machine, 2)
    assert same(got, want) == []
