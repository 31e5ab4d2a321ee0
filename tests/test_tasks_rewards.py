"""Reward terms and episode ends on a ROM of ours that tears a 16-bit counter the way
games do (low byte one frame, high byte the next), every kind's behaviour on it, and the
task runtime's buffers (predicates, swarm copies, checkpoints, per-term sums)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from gbxcule.asm import build_rom
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.tasks import (
    U8,
    U16,
    Changed,
    Decrease,
    Delta,
    Increase,
    Progress,
    StepCost,
    Task,
    TaskError,
    TermError,
)
from gbxcule.tasks.session import TaskSession

from .support.backend_api_support import write_rom

pytestmark = pytest.mark.l2

STEP = 37  # the counter's gain a frame
# Each frame (VBlank): count += 37, written low byte first; on a carry the high byte is
# written one frame later, so a read at the frame boundary sees it torn (a drop).
TORN_SOURCE = f"""
SECTION "vblank", ROM0[$0040]
    reti
SECTION "main", ROM0[$0150]
Main:
    di
    xor a
    ld [$C000], a
    ld [$C001], a
    ld [$C002], a
    ld a, $01
    ldh [$FF], a
    ei
.loop:
    halt
    nop
    ld a, [$C002]
    inc a
    ld [$C002], a          ; frames run
    ld a, [$C000]
    add a, {STEP}
    ld [$C000], a
    jr nc, .loop
    halt                   ; the carry waits a frame: a torn read at the step boundary
    nop
    ld a, [$C002]
    inc a
    ld [$C002], a
    ld a, [$C000]
    add a, {STEP}
    ld [$C000], a
    ld a, [$C001]
    inc a
    ld [$C001], a
    jr .loop
"""
KINDS = {
    "progress": Progress("count"),
    "increase": Increase("count"),
    "decrease": Decrease("count"),
    "delta": Delta("count"),
    "changed": Changed("count"),
    "cost": StepCost(-0.5),
}


@pytest.fixture(scope="module")
def torn_rom(tmp_path_factory):
    return write_rom(tmp_path_factory.mktemp("torn"), "torn.gb", build_rom(TORN_SOURCE))


def _task(**kw) -> Task:
    base = dict(
        name="torn",
        reads={"count": U16(0xC000), "frames": U8(0xC002)},
        reward=KINDS,
        frames_per_step=1,
        release_after_frames=1,
        actions=["noop", "a"],
        max_steps=10_000,
    )
    return Task(**{**base, **kw})


def _session(rom, task: Task, n: int = 2, seed: int = 0) -> TaskSession:
    b = WarpVecCpuBackend(
        str(rom), num_envs=n, threads=1, frames_per_step=1, release_after_frames=1,
        action_codec=task.action_codec,
    )  # fmt: skip
    return TaskSession(task, b, seed=seed)


def test_a_torn_16_bit_counter_and_every_reward_kind(torn_rom):
    """Each kind on the same torn counter: Progress pays exactly the true gain and never a
    jackpot; the old rule (the increase modulo 2^16) pays about 65,300 at every tear."""
    session = _session(torn_rom, _task())
    rt = session.runtime
    try:
        session.start()
        for _ in range(3):  # the game's first frames clear its RAM
            session.step(torch.zeros(2, dtype=torch.int64))
        session.runtime.begin()
        start = rt.read_all()["count"].clone()
        sums = {k: 0.0 for k in KINDS}
        old_rule = []  # what rl/tasks.py paid before: (now - last) % 65536
        tears, last = 0, start.clone()
        for _ in range(400):
            session.step(torch.zeros(2, dtype=torch.int64))
            parts = rt.last_terms[0].tolist()
            for k, v in zip(KINDS, parts):
                sums[k] += v
            now = rt.read_all()["count"]
            old_rule.append(int((now[0] - last[0]) % 65536))
            tears += int(now[0] < last[0])
            last = now.clone()
            assert 0 <= parts[0] <= 2 * STEP  # progress: never more than two frames' gain
        frames = int(rt.read_all()["frames"][0])
        true_gain = int(last[0] - start[0])
    finally:
        session.close()
    table = {k: round(v, 1) for k, v in sums.items()}
    print(f"\n400 steps of 1 frame, {tears} tears, true gain {true_gain}: {table}; "
          f"old rule: sum {sum(old_rule)}, largest step {max(old_rule)}")  # fmt: skip
    assert tears >= 10 and frames > 0
    assert sums["progress"] == true_gain
    drops = sums["decrease"]
    assert drops > 0 and sums["increase"] == true_gain + drops  # pays every dip back
    assert sums["delta"] == true_gain
    assert sums["changed"] == 400 and sums["cost"] == -200
    assert max(old_rule) > 65_000  # the jackpot this issue is about


def test_terms_clip_and_weight_and_refuse_bad_specs():
    bufs = {"best": torch.tensor([0, 10])}
    got = Progress("x", weight=2.0, clip=(0.0, 5.0)).reward(torch.tensor([1, 30]), bufs)
    assert got.tolist() == [2.0, 5.0] and bufs["best"].tolist() == [1, 30]
    with pytest.raises(TermError, match="name of a read"):
        Progress(3)  # type: ignore[arg-type]
    with pytest.raises(TermError, match="lo <= hi"):
        Delta("x", clip=(1, 0))
    with pytest.raises(TaskError, match="watches read 'nope'"):
        _task(reward={"a": Progress("nope")})
    with pytest.raises(TaskError, match="no reward terms"):
        _task(reward={})
    with pytest.raises(TaskError, match="must be a Read"):
        _task(reads={"count": 0xC000})
    with pytest.raises(TaskError, match="noop"):
        _task(actions=["a", "b"], noop_max=3)
    with pytest.raises(TaskError, match="sticky_actions"):
        _task(sticky_actions=1.0)
    with pytest.raises(TaskError, match="actions"):
        _ = _task(actions=["a", "jump"]).codec
    assert _task(reward={"count": "count"}).terms["count"] == Progress("count")


def test_predicates_see_this_step_the_last_and_the_start(torn_rom):
    """``terminated`` over the reads (this step, the step before, the episode's start);
    a predicate that returns no per-env tensor is refused by name."""
    task = _task(
        terminated=lambda r: r["count"] < r.prev["count"],  # a tear ends the episode
        truncated=lambda r: r["frames"] - r.start["frames"] >= 10,
    )
    session = _session(torn_rom, task)
    rt = session.runtime
    try:
        session.start()
        start = rt.read_all()["frames"].clone()
        last = rt.read_all()["count"].clone()
        seen = set()
        for _ in range(40):  # no resets: the predicates are checked against the RAM
            r = session.step(torch.zeros(2, dtype=torch.int64))
            term, trunc = r.terminated, r.truncated
            now = rt.read_all()
            want_term = now["count"] < last
            want_trunc = (now["frames"] - start >= 10) & ~want_term
            assert torch.equal(term, want_term) and torch.equal(trunc, want_trunc)
            seen.add((bool(term[0]), bool(trunc[0])))
            last = now["count"].clone()
        assert {(True, False), (False, True), (False, False)} <= seen  # terminated wins
        bad = _session(torn_rom, _task(terminated=lambda r: True))
        with pytest.raises(TaskError, match="terminated must return a tensor"):
            bad.start()  # checked once at the start, before any step
        bad.close()
    finally:
        session.close()


def test_swarm_copies_and_checkpoints_carry_every_buffer(torn_rom):
    session = _session(torn_rom, _task(), n=3)
    rt = session.runtime
    try:
        session.start()
        for t in range(30):
            session.step(torch.tensor([t % 2, 0, 1]))
        saved = session.state_dict()
        before = {k: v.clone() for k, v in rt.buffers.items()}
        mask = torch.tensor([False, True, True])
        session.copy_envs(torch.tensor([0, 0, 0]), mask)
        for k, v in rt.buffers.items():
            assert torch.equal(v[1], before[k][0]) and torch.equal(v[0], before[k][0]), k
        session.load_state_dict(saved)
        for k, v in rt.buffers.items():
            assert torch.equal(v, before[k]), k
        other = _session(torn_rom, _task(reward={"p": Progress("count")}), n=3)
        with pytest.raises(TaskError, match="does not match"):
            other.load_state_dict(saved)
        other.close()
    finally:
        session.close()


def test_per_term_episode_sums_are_counted_with_the_returns(torn_rom):
    session = _session(torn_rom, _task(max_steps=20))
    rt = session.runtime
    try:
        session.start()
        out = session.new_result()
        ended_returns, ended_lengths = [], []
        for _ in range(45):  # the session resets the finished envs and reports their episodes
            r = session.step(torch.zeros(2, dtype=torch.int64), out, reset_done=True)
            assert r is out and torch.equal(r.restarted, r.done)
            assert torch.equal(r.done, r.terminated | r.truncated)
            ended_returns += r.episode_return[r.done].tolist()
            ended_lengths += r.episode_length[r.done].tolist()
            assert torch.equal(r.episode_terms.sum(1), r.episode_return)
        stats = rt.take_stats().tolist()
        episodes, ret_sum, len_sum, frames_sum, *terms = stats
        assert episodes == 4 and len_sum == 80 and frames_sum == 80  # 1 frame a step
        assert ended_lengths == [20] * 4 and sum(ended_returns) == pytest.approx(ret_sum)
        assert sum(terms) == pytest.approx(ret_sum)
        assert terms[list(KINDS).index("cost")] == -0.5 * 80
        assert rt.take_stats().sum().item() == 0
    finally:
        session.close()


def test_sticky_actions_and_noop_prefixes_are_seeded_and_per_env(torn_rom):
    task = _task(sticky_actions=0.25, noop_max=4)
    runs = []
    for seed in (1, 1, 2):
        session = _session(torn_rom, task, n=64, seed=seed)
        try:
            session.start()
            rt = session.runtime
            prefix = rt.buffers["noop_left"].clone()
            ran = [rt.actions(torch.ones(64, dtype=torch.int64)).tolist() for _ in range(6)]
            flips = [rt.actions(torch.tensor([t % 2] * 64)).tolist() for t in range(40)]
        finally:
            session.close()
        runs.append((prefix.tolist(), ran, flips))
        assert set(prefix.tolist()) <= set(range(5)) and len(set(prefix.tolist())) > 1
        for e in range(64):  # no-op (action 0) for exactly the env's prefix, then its action
            assert [step[e] for step in ran[: prefix[e]]] == [0] * int(prefix[e])
        sticky = sum(f[e] != t % 2 for t, f in enumerate(flips) for e in range(64))
        assert 0.15 < sticky / (40 * 64) < 0.35  # the previous action repeated ~25 %
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_a_reset_of_no_env_changes_nothing_but_draws_as_any_reset(torn_rom):
    """A CPU skips the restore when no env finished, but still draws each env's start and
    no-op prefix, so its generator runs as a device's that always restores."""
    task = _task(noop_max=4)
    gens, states = [], []
    for first in (False, True):
        session = _session(torn_rom, task, n=4, seed=3)
        try:
            session.start()
            session.step(torch.ones(4, dtype=torch.int64))
            before = {k: v.clone() for k, v in session.runtime.buffers.items()}
            ram = [session.backend.read_memory(e, 0xC000, 0xC003).copy() for e in range(4)]
            mask = torch.tensor([first, False, False, False])
            session.reset_envs(mask)
            gens.append(session.runtime.gen.get_state())
            if not first:  # nothing restored, nothing started
                for e in range(4):
                    assert np.array_equal(session.backend.read_memory(e, 0xC000, 0xC003), ram[e])
                for k, v in session.runtime.buffers.items():
                    assert torch.equal(v, before[k]), k
            states.append(session.runtime.buffers["steps"].tolist())
        finally:
            session.close()
    assert torch.equal(gens[0], gens[1])
    assert states == [[1, 1, 1, 1], [0, 1, 1, 1]]


def test_task_dataclass_round_trips_through_replace():
    task = _task()
    again = dataclasses.replace(task, max_steps=5)
    assert again.max_steps == 5 and again.terms == task.terms
    assert np.array_equal(again.codec.mask_table, task.codec.mask_table)


def test_novelty_pays_each_new_key_once_an_episode_on_the_device(torn_rom):
    """Novelty over (frames mod 8): 8 keys, each paid once an episode, the start's key
    never; the visited set is one bitmap an env, cleared at an episode's start."""
    from gbxcule.tasks import Novelty

    task = _task(
        reads={"count": U16(0xC000), "frames": U8(0xC002)},
        reward={"explore": Novelty(keys=("frames",), bits=3)},
        max_steps=40,
    )
    session = _session(torn_rom, task, n=2)
    rt = session.runtime
    try:
        session.start()
        assert rt.buffers["term.explore.visited"].shape == (2, 1)  # 2**3 entries: one byte
        paid = []
        for _ in range(40):
            paid.append(session.step(torch.zeros(2, dtype=torch.int64)).reward[0].item())
        # keys hash into 8 entries: at most 7 new ones after the start's, then nothing
        assert 1 <= sum(paid) <= 7 and sum(paid[20:]) == 0
        assert rt.buffers["term.explore.count"][0].item() == sum(paid) + 1
        session.reset_envs(torch.tensor([True, False]))
        assert rt.buffers["term.explore.count"].tolist()[0] == 1
        assert int(rt.buffers["term.explore.visited"][0].item()).bit_count() == 1
    finally:
        session.close()
    with pytest.raises(TaskError, match="watches read 'map'"):
        _task(reward={"explore": Novelty(keys=("map", "frames"))})
    with pytest.raises(TermError, match="bits"):
        Novelty(keys=("frames",), bits=40)


def test_novelty_over_many_keys_counts_like_a_python_set():
    """The device hash against a set: distinct (x, y) pairs on a 16-bit map, 64 envs."""
    from gbxcule.tasks import Novelty

    term = Novelty(keys=("x", "y"), bits=16)
    rng = np.random.default_rng(0)
    bufs = term.make_buffers(64, torch.device("cpu"))
    walks = rng.integers(0, 40, size=(300, 64, 2))
    seen = [set() for _ in range(64)]
    got = torch.zeros(64)
    for step in walks:
        now = {"x": torch.from_numpy(step[:, 0]), "y": torch.from_numpy(step[:, 1])}
        got += term.gain(term.observe(now), bufs)
        for e in range(64):
            seen[e].add(tuple(step[e]))
    want = torch.tensor([len(s) for s in seen], dtype=torch.float32)
    assert (want - got).abs().max() <= 2  # 1,600 keys in 65,536 entries: a rare collision
    assert torch.equal(bufs["count"].float(), got)


def test_a_swarm_copies_the_best_env_that_reached_the_milestone(torn_rom):
    """Every ``every`` steps, the envs that have not reached the milestone become copies
    of the one that has with the best return: machine and task buffers; none move while
    none (or all) have reached it."""
    from gbxcule.tasks import Swarm

    task = _task(swarm=Swarm(reached=lambda r: r["count"] >= 0x4000, every=4))
    session = _session(torn_rom, task, n=3)
    b, rt = session.backend, session.runtime
    try:
        session.start()
        for _ in range(3):
            session.step(torch.zeros(3, dtype=torch.int64))
            assert session.swarm() is None  # steps 1..3: not a multiple of 4, no check
        assert not session.swarm().any()  # step 4: nobody reached it
        for e, count in ((0, 0x4000), (1, 0x5000)):
            b.write_memory(e, 0xC000, count.to_bytes(2, "little"))
        rt.buffers["ep_return"].copy_(torch.tensor([1.0, 5.0, 9.0]))  # env 2: best, not reached
        for _ in range(3):
            assert session.swarm() is None
        mask = session.swarm()  # step 8
        assert mask.tolist() == [False, False, True]
        assert torch.equal(b.mem_torch()[2], b.mem_torch()[1])  # env 1: the best that reached
        assert rt.buffers["ep_return"].tolist() == [1.0, 5.0, 5.0]
        for e in range(3):
            b.write_memory(e, 0xC000, (0x6000).to_bytes(2, "little"))
        for _ in range(3):
            session.swarm()
        assert not session.swarm().any()  # step 12: everyone reached it
    finally:
        session.close()
    with pytest.raises(TaskError, match="every must be"):
        Swarm(reached=lambda r: r["count"] > 0, every=0)


def test_the_gymnasium_env_runs_the_tasks_swarm(torn_rom):
    """``Task.swarm`` runs in the Gymnasium vector env as in the trainer: the env that
    has not reached the milestone becomes a copy of the best that has (machine, task
    buffers and frame stack), reported in ``infos["swarmed"]``."""
    from gbxcule.envs.vector import GbxVectorEnv
    from gbxcule.tasks import Swarm

    reached = Swarm(reached=lambda r: r["count"] >= 0x4000, every=2)
    task = _task(swarm=reached, reward={"cost": StepCost(-0.5)})  # returns: what is set here
    env = GbxVectorEnv(str(torn_rom), 3, task, threads=1, stack=2, autoreset_mode="same_step")
    try:
        env.reset(seed=0)
        _, _, _, _, infos = env.step(np.zeros(3, dtype=np.int64))
        assert "swarmed" not in infos  # step 1: not a multiple of 2
        b = env.backend
        b.write_memory(0, 0xC000, (0x5000).to_bytes(2, "little"))
        b.write_memory(2, 0xC000, (0x6000).to_bytes(2, "little"))
        env.task.buffers["ep_return"].copy_(torch.tensor([9.0, 1.0, 3.0], dtype=torch.float64))
        obs, *_, infos = env.step(np.zeros(3, dtype=np.int64))
        assert infos["swarmed"].tolist() == [False, True, False]
        assert torch.equal(b.mem_torch()[1], b.mem_torch()[0])  # env 0: the best that reached
        assert np.array_equal(obs[1], obs[0])  # the stack goes with the copy
        assert env.task.ep_return.tolist()[1] == env.task.ep_return.tolist()[0]
    finally:
        env.close()


def test_the_trainer_cuts_swarmed_envs_experience_at_the_swarm(torn_rom):
    from gbxcule.rl.rollout import RolloutBuffer, make_env
    from gbxcule.rl.schemas import TrainConfig
    from gbxcule.tasks import Swarm

    task = _task(rom=str(torn_rom), swarm=Swarm(reached=lambda r: r["count"] >= 0x4000, every=2))
    env = make_env(task, TrainConfig(num_envs=3, threads=1))
    buf = RolloutBuffer(4, 3, 2, "packed2", "cpu")
    try:
        env.start(buf)
        env.step(torch.zeros(3, dtype=torch.int64), buf, 0)
        env.backend.write_memory(0, 0xC000, (0x4000).to_bytes(2, "little"))
        env.step(torch.zeros(3, dtype=torch.int64), buf, 1)  # the 2nd step: a swarm check
        assert buf.dones[:2].tolist() == [[0, 0, 0], [0, 1, 1]]
        assert buf.first[buf.slot(2)].tolist() == [False, True, True]
        assert torch.equal(env.backend.mem_torch()[1], env.backend.mem_torch()[0])
    finally:
        env.backend.close()
