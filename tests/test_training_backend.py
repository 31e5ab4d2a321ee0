"""One training interface for both families of backends (``protocol.TrainingBackend``).

A task session drives Warp and PyBoy through the same calls (start slots, masked resets,
swarm copies, the RAM gather, observations into the caller's buffer); run side by side
with the same actions, the two agree on every read and every observation.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.backends.protocol import EnvMaskError, TrainingBackend
from gbxcule.tasks import load_task
from gbxcule.tasks.session import TaskSession, make_task_backend

pytestmark = pytest.mark.api

N = 3


def _sessions(demo, seed=3):
    task = load_task("demo-coins")
    out = []
    for kind in ("warp", "pyboy"):
        backend = make_task_backend(
            task, N, kind=kind, rom=demo, **({"threads": 1} if kind == "warp" else {})
        )
        out.append(TaskSession(task, backend, seed=seed))
    return out


def _agree(ours: TaskSession, ref: TaskSession, where: str) -> None:
    a, b = ours.runtime.read_all(), ref.runtime.read_all()
    for name in a:
        assert torch.equal(a[name].cpu(), b[name]), (where, name)
    for fmt in ("packed2", "u8"):
        assert torch.equal(ours.observe(fmt).cpu(), ref.observe(fmt)), (where, fmt)
    for e in range(N):
        assert ours.backend.get_cpu_state(e) == ref.backend.get_cpu_state(e), (where, e)


def test_both_families_run_one_session_alike(demo):
    """Starts from a pool of two captured states, masked resets, a swarm copy: Warp and
    PyBoy stay equal in RAM reads, observations and CPU state throughout."""
    ours, ref = _sessions(demo)
    try:
        assert isinstance(ours.backend, TrainingBackend)
        assert isinstance(ref.backend, TrainingBackend)
        rng = np.random.default_rng(1)
        for s in (ours, ref):
            s.start()
        for _ in range(6):  # make the envs differ
            acts = torch.from_numpy(rng.integers(0, 7, N))
            for s in (ours, ref):
                s.step(acts)
        _agree(ours, ref, "after steps")
        pools = []
        for s in (ours, ref):  # env 0 and env 2 now, as a pool of two
            b = s.backend
            b.clear_start_states()
            assert [b.capture_start_state(0), b.capture_start_state(2)] == [0, 1]
            pools.append(b.num_start_states)
        assert pools == [2, 2]
        slots = torch.tensor([1, 0, 1], dtype=torch.int32)
        mask = torch.tensor([True, True, False])
        for s in (ours, ref):
            s.backend.reset_envs(mask, slots=slots)
        _agree(ours, ref, "after reset_envs")
        for _ in range(4):
            acts = torch.from_numpy(rng.integers(0, 7, N))
            for s in (ours, ref):
                s.step(acts)
        for s in (ours, ref):
            s.copy_envs(torch.tensor([0, 2, 0]), torch.tensor([False, True, False]))
            s.copy_envs(torch.tensor([0, 0, 0]), torch.tensor([False, False, False]))
        _agree(ours, ref, "after copy_envs")
        assert ref.backend.read_memory(1, 0xC000, 0xE000).tolist() == (
            ref.backend.read_memory(2, 0xC000, 0xE000).tolist()
        )
        for s in (ours, ref):  # a source that is also overwritten: refused on both
            with pytest.raises(ValueError, match="itself overwritten"):
                s.backend.copy_envs(torch.tensor([0, 0, 1]), torch.tensor([False, True, True]))
        for _ in range(3):
            acts = torch.from_numpy(rng.integers(0, 7, N))
            for s in (ours, ref):
                s.step(acts)
        _agree(ours, ref, "after steps from the copies")
    finally:
        ours.close()
        ref.close()


def test_host_start_slots_refuse_what_they_cannot_do(demo):
    task = load_task("demo-coins")
    b = make_task_backend(task, 2, kind="pyboy", rom=demo)
    try:
        with pytest.raises(RuntimeError, match="needs a start state"):
            b.reset_envs(torch.tensor([True, False]))
        b.reset_envs(torch.tensor([False, False]))  # nothing to do: no pool needed
        with pytest.raises(EnvMaskError, match="bool"):
            b.reset_envs(torch.tensor([1, 0]))
        b.capture_start_state(1)
        with pytest.raises(ValueError, match="start slot 3 of 1"):
            b.reset_envs(np.array([True, True]), slots=np.array([0, 3]))
        out = torch.zeros(2 * 72 * 20, dtype=torch.uint8)
        with pytest.raises(ValueError, match="obs_format must be one of"):
            b.render_obs(out, 0, "colour")
        with pytest.raises(ValueError, match="'rgb' is not drawn by a DMG"):
            b.render_obs(out, 0, "rgb")
        with pytest.raises(ValueError, match="do not fit"):
            b.render_obs(out, 1, "packed2")
    finally:
        b.close()


def test_one_table_names_what_a_task_runs_on():
    from gbxcule.backends.registry import BACKENDS, TASK_BACKENDS, task_backend_name
    from gbxcule.cli.eval import configure as eval_options
    from gbxcule.rl.schemas import ENV_BACKENDS

    got = {
        (k, d, n): task_backend_name(k, d, n)
        for k in TASK_BACKENDS
        for d in ("cpu", "cuda:1")
        for n in (1, 4)
        if k == "warp" or d == "cpu"
    }
    assert got == {
        ("warp", "cpu", 1): "warp-cpu", ("warp", "cpu", 4): "warp-cpu",
        ("warp", "cuda:1", 1): "warp-cuda", ("warp", "cuda:1", 4): "warp-cuda",
        ("pyboy", "cpu", 1): "pyboy", ("pyboy", "cpu", 4): "pyboy-mp",
        ("pyboy-mp", "cpu", 1): "pyboy-mp", ("pyboy-mp", "cpu", 4): "pyboy-mp",
    }  # fmt: skip
    assert set(got.values()) <= set(BACKENDS) and ENV_BACKENDS == TASK_BACKENDS
    import argparse

    p = argparse.ArgumentParser()
    eval_options(p)
    assert next(a for a in p._actions if a.dest == "backend").choices == TASK_BACKENDS
    for bad, match in ((("gpu", "cpu"), "backend must be one of"), (("warp", "tpu"), "device")):
        with pytest.raises(ValueError, match=match):
            task_backend_name(*bad)
