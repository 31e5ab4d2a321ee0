"""Task files that run no code (``tasks/task_file.py``, ``tasks/expressions.py``): the same
task as its Python twin, step for step; predicates that compute over the reads and
nothing else; a run that keeps one and opens without trusting anyone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gbxcule.core.step_end import StepEnd
from gbxcule.tasks import (
    U8,
    Expression,
    ExpressionError,
    Progress,
    ReadValues,
    StepCost,
    Swarm,
    Task,
    TaskError,
)
from gbxcule.tasks.load import load_run_task, load_task, save_run_task, trust_run_task
from gbxcule.tasks.session import TaskSession, make_task_backend

pytestmark = pytest.mark.api

FIXTURES = Path(__file__).resolve().parents[1] / "examples" / "tasks"  # the twins users copy
TWINS = [("quest-explore-random", "quest-explore-random.toml"), ("demo-coins", "demo-coins.json")]
FIELDS = ("name", "reads", "reward", "rom", "starts", "actions", "max_steps", "frames_per_step",
          "release_after_frames", "sticky_actions", "noop_max", "features", "swarm",
          "step_end", "description")  # fmt: skip


def values(**now: list[int]) -> ReadValues:
    t = {k: torch.tensor(v) for k, v in now.items()}
    n = len(next(iter(t.values())))
    prev = {k: v - 1 for k, v in t.items()}
    start = {k: torch.zeros(n, dtype=torch.int64) for k in t}
    return ReadValues(t, prev, start, torch.arange(n, dtype=torch.int32))


class _OneEnv:
    """What the predicate sees in one env, as plain Python (the reference)."""

    def __init__(self, r: ReadValues, k: int) -> None:
        self.now = {n: int(v[k]) for n, v in r.now.items()}
        self.prev = {n: int(v[k]) for n, v in r.prev.items()}
        self.start = {n: int(v[k]) for n, v in r.start.items()}
        self.steps = int(r.steps[k])

    def __getitem__(self, name: str) -> int:
        return self.now[name]


@pytest.mark.parametrize(
    "text",
    [
        "r['a'] != 0",
        "r['a'] >= 2 and r['b'] < 7",
        "r['a'] == 0 or not r['b']",
        "1 <= r['a'] < 3",
        "r['a'] > r.prev['a']",
        "r['a'] - r.start['a'] >= 3",
        "r.steps >= 2",
        "max(r['a'], r['b']) == 5",
        "min(r['a'], r['b'], 2) == 2",
        "abs(r['a'] - 2) == 1",
        "(r['a'] & 1) == 1 if r['b'] > 0 else True",
        "r['a'] // 2 + r['a'] % 2 * 10 == 11",
        "r['a'] / 2 > 0.6",
        "(r['b'] >> 1 | 1 << 3) ^ 8 == 3",
        "~r['a'] == -1",
        "-r['a'] < -1 and +r['b'] > 1",
        "r['b']",
        "r['a'] * 2 - 4",
        "True",
        "1 + 1 == 3",
    ],
)
def test_an_expression_computes_over_the_reads_as_python_would(text):
    r = values(a=[0, 1, 2, 3], b=[5, 6, 7, 0])
    out = Expression(text)(r)
    expected = [bool(eval(text, {"r": _OneEnv(r, k)})) for k in range(4)]  # noqa: S307
    assert out.dtype == torch.bool and out.shape == (4,) and out.tolist() == expected
    assert len(set(expected)) == 2 or text in ("True", "1 + 1 == 3", "r['a'] > r.prev['a']")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("__import__('os').system('true')", "a call of __import__"),
        ("r.__class__", "the attribute .__class__"),
        ("r['a'].sum() > 0", "a call of r['a'].sum"),
        ("open('/etc/passwd')", "a call of open"),
        ("(lambda: 1)()", "a call of lambda: 1"),
        ("lambda r: r['a']", "Lambda"),
        ("[x for x in r]", "ListComp"),
        ("os", "the name 'os'"),
        ("r[0] == 1", "not a read's name in quotes"),
        ("r.prev.x", "the attribute .x"),
        ("r.prev.__dict__['a']", "r.prev.__dict__[...] (reads:"),
        ("q['a'] == 1", "q[...]"),
        ("'text'", "the constant 'text'"),
        ("None", "the constant None"),
        ("2 ** 64", "powers are not allowed"),
        ("1 << 99", "a shift by 99"),
        ("1 / 0", "ZeroDivisionError"),
        ("9223372036854775808 > r['a']", "does not fit int64"),
        ("r['a'] in (1, 2)", "the comparison In"),
        ("r['a'] is 1", "the comparison Is"),
        ("(y := 3)", "NamedExpr"),
        ("min(*r)", "keyword or * arguments"),
        ("abs(r['a'], r['b'])", "abs() of 2 arguments"),
        ("max(r['a'])", "max() of 1 argument"),
        ("f'{r}'", "JoinedStr"),
        ("r['a'] ==", "is not an expression"),
        ("import os", "is not an expression"),
        ("", "is empty"),
        ("r['a'] == 1 " * 400, "characters (at most 2000)"),
        ("(" * 300 + "1" + ")" * 300, "nest"),
        ("-" * 1900 + "1", "nest"),
    ],
)
def test_an_expression_refuses_what_is_not_arithmetic_over_the_reads(text, says):
    with pytest.raises(ExpressionError) as info:
        Expression(text)
    assert says in str(info.value), str(info.value)


def test_a_task_checks_the_reads_its_expressions_name():
    with pytest.raises(TaskError, match=r"terminated 'r\[\"lifes\"\] == 0' reads 'lifes'"):
        Task(name="t", reads={"lives": U8(0xC000)}, reward={"lives": "lives"},
             terminated='r["lifes"] == 0')  # fmt: skip
    with pytest.raises(TaskError, match="swarm.reached"):
        Task(name="t", reads={"lives": U8(0xC000)}, reward={"lives": "lives"},
             swarm=Swarm(reached="r['badges'] > 0"))  # fmt: skip
    with pytest.raises(TaskError, match="truncated: 'r\\[' is not an expression"):
        Task(name="t", reads={"lives": U8(0xC000)}, reward={"lives": "lives"}, truncated="r[")


@pytest.mark.parametrize(("builtin", "file"), TWINS)
def test_a_task_file_is_its_python_twin(builtin, file):
    python, data = load_task(builtin), load_task(str(FIXTURES / file))
    for field in FIELDS:
        assert getattr(data, field) == getattr(python, field), field
    assert data.source.variable == "" and data.base_dir == FIXTURES


def _rollout(task: Task, steps: int, seed: int = 3) -> list[tuple]:
    backend = make_task_backend(task, 6)
    session = TaskSession(task, backend, seed=seed)
    session.start()
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        actions = torch.randint(0, task.codec.num_actions, (6,), generator=gen)
        res = session.step(actions, reset_done=True)
        out.append((res.reward.tolist(), res.terminated.tolist(), res.truncated.tolist()))
    session.close()
    return out


def test_the_toml_twin_pays_and_ends_as_the_python_task_step_for_step():
    python = load_task("quest-explore-random")
    data = load_task(str(FIXTURES / "quest-explore-random.toml"))
    a, b = _rollout(python, 60), _rollout(data, 60)
    assert a == b
    assert any(any(rew) for rew, _, _ in a)  # it paid something


def test_every_task_field_has_its_key():
    """Swarm, step_end, timed actions, truncated, clip, Lookup, Digits, Bit: as Python."""
    text = """
name = "all"
rom = "bundled:quest"
actions = ["up hold=2 frames=30", "down", "a+right", "noop"]
truncated = "r.steps >= 50 or r['zone'] == 3"
terminated = "r['hp'] < r.prev['hp']"
frames_per_step = 20
release_after_frames = 6
sticky_actions = 0.25
features = ["hp"]
[reads]
hp = { type = "S8", at = 0xC010 }
zone = { type = "Lookup", source = { type = "U8", at = 0xC011 }, table = { "1" = 3, "0x2" = 4 }, default = 9 }
lives = { type = "Digits", at = 0xC012, size = 2, offset = 0x30, blank = [0x80] }
key = { type = "Bit", at = 0xC014, bit = 3 }
cart = { type = "U16", at = 0xA000, endian = "big", bank = 1 }
[reward]
hp = { type = "Delta", read = "hp", weight = 0.5, clip = [-1, 1] }
time = { type = "StepCost", weight = -0.01 }
key = "key"
[swarm]
reached = "r['key'] == 1"
every = 64
[step_end]
at = 0xC011
changes = true
min_frames = 8
"""
    from gbxcule.tasks import U16, Bit, Delta, Digits, Lookup
    from gbxcule.tasks.task_file import task_from_data, tomllib

    data = task_from_data(tomllib.loads(text))
    python = Task(
        name="all",
        rom="bundled:quest",
        actions=["up hold=2 frames=30", "down", "a+right", "noop"],
        truncated=lambda r: r.steps >= 50,
        frames_per_step=20,
        release_after_frames=6,
        sticky_actions=0.25,
        features=["hp"],
        reads={
            "hp": U8(0xC010).__class__(0xC010, 1, signed=True),
            "zone": Lookup(U8(0xC011), {1: 3, 2: 4}, default=9),
            "lives": Digits(0xC012, 2, offset=0x30, blank=(0x80,)),
            "key": Bit(0xC014, 3),
            "cart": U16(0xA000, "big", bank=1),
        },
        reward={"hp": Delta("hp", 0.5, (-1, 1)), "time": StepCost(-0.01), "key": "key"},
        swarm=Swarm(reached=lambda r: r["key"] == 1, every=64),
        step_end=StepEnd(0xC011, changes=True, min_frames=8),
    )
    for field in set(FIELDS) - {"swarm"}:
        assert getattr(data, field) == getattr(python, field), field
    assert data.swarm.every == 64 and data.swarm.reached == Expression("r['key'] == 1")
    assert data.timed and data.codec.name == python.codec.name


@pytest.fixture()
def nobody_trusted(tmp_path, monkeypatch):
    listing = tmp_path / "trusted.txt"
    monkeypatch.setenv("GBXCULE_TRUSTED_TASKS", str(listing))
    return listing


@pytest.mark.parametrize("file", ["quest-explore-random.toml", "demo-coins.json"])
def test_a_run_keeps_its_task_file_and_opens_with_no_trust(tmp_path, nobody_trusted, file):
    task = load_task(str(FIXTURES / file))
    run = tmp_path / "run"
    run.mkdir()
    record = save_run_task(task, run)
    kept = run / record["file"]
    assert record["file"] in ("task.toml", "task-file.json") and not (run / "task.py").exists()
    assert kept.read_bytes() == (FIXTURES / file).read_bytes()
    assert not nobody_trusted.exists()  # data: nothing to trust
    again = load_run_task(run)  # no trust list, no --trust-task: it runs nothing
    for field in FIELDS:
        assert getattr(again, field) == getattr(task, field), field
    assert trust_run_task(run) == record["sha256"] and not nobody_trusted.exists()
    kept.write_bytes(kept.read_bytes().replace(b"1000", b"999").replace(b"100", b"99"))
    with pytest.raises(TaskError, match="changed since the run started"):
        load_run_task(run)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"file": "../../outside.toml"}, "not one a run keeps"),
        ({"file": "task.py"}, "keeps no task file task.py"),
        ({"sha256": None}, "is not a task record"),
    ],
)
def test_a_run_task_record_names_only_its_own_file(tmp_path, nobody_trusted, change, says):
    run = tmp_path / "run"
    run.mkdir()
    save_run_task(load_task(str(FIXTURES / "demo-coins.json")), run)
    record = json.loads((run / "task.json").read_text())
    (run / "task.json").write_text(json.dumps({**record, **change}))
    with pytest.raises(TaskError, match=says):
        load_run_task(run)


def test_a_data_task_file_takes_no_variable():
    with pytest.raises(TaskError, match="holds one task; drop :TASK2"):
        load_task(f"{FIXTURES / 'demo-coins.json'}:TASK2")


def test_progress_shorthand_and_json_hex_addresses():
    from gbxcule.tasks.task_file import task_from_data

    task = task_from_data({"name": "t", "reads": {"a": {"type": "U8", "at": "0xc0a0"}},
                           "reward": {"a": "a"}})  # fmt: skip
    assert task.reads["a"] == U8(0xC0A0) and task.reward["a"] == Progress("a")


def test_export_writes_a_task_file_that_loads_back_to_the_same_task(tmp_path, capsys):
    from gbxcule.cli import main
    from gbxcule.tasks import U16, Bit, Delta, Digits, Lookup, Novelty, Unsigned
    from gbxcule.tasks.task_file import task_from_data, task_to_toml, tomllib

    python = Task(
        name="all",
        description='a "quoted" description',
        rom="bundled:quest",
        starts=["bundled:quest/play"],
        actions=["up hold=2 frames=30", "down", "a+right", "noop"],
        terminated="r['hp'] < r.prev['hp']",
        truncated="r.steps >= 50 or r['zone'] == 3",
        frames_per_step=20,
        release_after_frames=6,
        sticky_actions=0.25,
        noop_max=3,
        features={"hp": 0.5},
        reads={
            "hp": Unsigned(0xC010, 1, signed=True),
            "zone": Lookup(U8(0xC011), {1: 3, 2: 4}, default=9),
            "lives": Digits(0xC012, 2, offset=0x30, blank=(0x80,)),
            "key": Bit(0xC014, 3),
            "cart": U16(0xA000, "big", bank=1),
        },
        reward={
            "hp": Delta("hp", 0.5, (-1, 1)),
            "time": StepCost(-0.01),
            "key": "key",
            "cells": Novelty(keys=("zone", "key"), weight=0.1, bits=10),
        },  # fmt: skip
        swarm=Swarm(reached="r['key'] == 1", every=64),
        step_end=StepEnd(0xC011, equals=2, mask=0x0F, min_frames=8),
    )
    text = task_to_toml(python)
    again = task_from_data(tomllib.loads(text))
    for field in FIELDS:
        assert getattr(again, field) == getattr(python, field), field
    assert "at = 0xC010" in text
    with pytest.raises(TaskError, match=r"terminated is Python code \(<lambda>\)"):
        task_to_toml(Task(name="t", reads={"a": U8(0xC000)}, reward={"a": "a"},
                          terminated=lambda r: r["a"] > 0))  # fmt: skip
    with pytest.raises(TaskError, match="a 4-byte integer has no task-file type"):
        task_to_toml(Task(name="t", reads={"a": Unsigned(0xC000, 4)}, reward={"a": "a"}))
    out = tmp_path / "quest.toml"
    assert (
        main(["task", "export", str(FIXTURES / "quest-explore-random.toml"), "--out", str(out)])
        == 0
    )
    assert load_task(str(out)).reads == load_task("quest-explore-random").reads
    assert main(["task", "export", "quest-score"]) == 2
    assert "write it as an expression string" in capsys.readouterr().err
