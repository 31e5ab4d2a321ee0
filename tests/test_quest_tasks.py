"""Quest's built-in tasks: their start states (made on first use), reads by symbol, and the
same rewards and ends on ours and on PyBoy from those starts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from gbxcule.games import bundled_rom_path, bundled_start_path
from gbxcule.games.quest import layout as L
from gbxcule.tasks.load import BUILTIN, load_task
from gbxcule.tasks.task import Task, TaskError

pytestmark = pytest.mark.api

QUEST_TASKS = sorted(name for name in BUILTIN if name.startswith("quest-"))


def _states_ram(paths) -> list[dict[str, int]]:
    """Mode, map, position, lives and generator of each state, as PyBoy loads it."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend

    fields = {"mode": L.W_MODE, "map": L.W_MAP, "x": L.W_PLAYER_X, "y": L.W_PLAYER_Y,
              "lives": L.W_LIVES, "rng": L.W_RNG}  # fmt: skip
    out = []
    with PyBoySingleBackend(bundled_rom_path("quest"), num_envs=1) as b:
        b.reset(0)
        for path in paths:
            b.load_state(str(path))
            mem = b.read_memory(0, L.W_MODE, L.W_FLAGS)
            out.append({k: int(mem[v - L.W_MODE]) for k, v in fields.items()})
    return out


def test_every_quest_task_loads_with_its_starts_and_symbols():
    assert QUEST_TASKS == [
        "quest-explore",
        "quest-explore-random",
        "quest-score",
        "quest-score-random",
    ]
    for name in QUEST_TASKS:
        task = load_task(name)
        assert task.rom_path() == bundled_rom_path("quest")
        assert all(p.is_file() for p in task.start_paths())
        assert task.max_steps == 1000
    play, *starts = _states_ram(
        [bundled_start_path("quest/play")]
        + [bundled_start_path(f"quest/random-{k}") for k in range(12)]
    )
    assert play == {**play, "mode": L.MODE_PLAY, "map": 0, "x": 15, "y": 15, "lives": 3}
    assert all(s["mode"] == L.MODE_PLAY and s["lives"] == 3 for s in starts)
    assert len({(s["map"], s["x"], s["y"]) for s in starts}) >= 8
    assert len({s["rng"] for s in starts}) >= 8  # START on other frames: other games


def test_bad_bundled_names_are_refused_by_name():
    reads = load_task("quest-score").reads
    games = "demo, demo-colour, quest, blocks, tiles, climb"
    with pytest.raises(TaskError, match=f"no bundled game 'zelda'; bundled games: {games}"):
        Task(name="t", rom="bundled:zelda", reads=reads, reward={"s": "score"})
    bad = Task(name="t", rom="bundled:quest", starts=["bundled:quest/castle"], reads=reads,
               reward={"s": "score"})  # fmt: skip
    with pytest.raises(TaskError, match="no start 'castle'; its starts: play, random-0"):
        bad.start_paths()


def test_a_quest_task_rewards_and_ends_alike_on_ours_and_pyboy():
    """quest-explore-random (random starts, reads by symbol, Novelty, BitCount, game over)
    in TaskSession on ours and on PyBoy worker processes: the same rewards and ends over
    120 random steps of 3 envs, and no start-state warning (the starts are the game's)."""
    from gbxcule.tasks.session import TaskSession, make_task_backend

    task = load_task("quest-explore-random")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sessions = [
            TaskSession(task, make_task_backend(task, 3, kind=kind, **kw), seed=9)
            for kind, kw in (("warp", {"threads": 1}), ("pyboy-mp", {"num_workers": 2}))
        ]
    try:
        for s in sessions:
            s.start()
        rng = np.random.default_rng(4)
        outs = [s.new_result() for s in sessions]
        total, ended = torch.zeros(3), []
        for _ in range(120):  # each session resets its finished envs itself (and swarms)
            acts = torch.as_tensor(rng.integers(0, 5, 3))
            r0, r1 = (s.step(acts, out, reset_done=True) for s, out in zip(sessions, outs))
            assert r0.reward.tolist() == pytest.approx(r1.reward.tolist())
            assert torch.equal(r0.terminated, r1.terminated)
            assert torch.equal(r0.truncated, r1.truncated)
            assert torch.equal(r0.swarmed, r1.swarmed)
            total += r0.reward
            for e in torch.nonzero(r0.terminated).flatten().tolist():
                ended.append((e, r0.episode_length[e].item(), r0.episode_return[e].item()))
                assert r1.episode_length[e].item() == ended[-1][1]
                assert r1.episode_return[e].item() == pytest.approx(ended[-1][2])
        assert float(total.sum()) > 0
        # game over ends an episode on every env (random play loses its lives in 59-98 steps)
        assert {e for e, _, _ in ended} == {0, 1, 2}, ended
    finally:
        for s in sessions:
            s.close()
