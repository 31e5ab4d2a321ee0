"""Bad task files, in both forms that run no code (TOML and JSON), through ``gbxcule train``:
each a one-line error naming the key and the value (exit code 2), never a traceback, and
no run folder left behind. Every mistake runs as TOML in ``make test`` and as JSON in
``make test-slow``."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from gbxcule.cli import main

pytestmark = pytest.mark.api

TRAIN = ["train", "--envs", "2", "--steps", "4", "--minibatch", "8", "--total-steps", "8"]
GOOD: dict[str, Any] = {
    "name": "coins",
    "reads": {"coins": {"type": "U16", "at": 0xC102}},
    "reward": {"coins": {"type": "Progress", "read": "coins", "weight": 1.0}},
    "actions": ["left", "right", "a", "noop"],
    "max_steps": 50,
}
NAN = float("nan")

# (where in GOOD, value; None deletes), what the error must say
MISTAKES: list[tuple[tuple[tuple[tuple[str, ...], Any], ...], str]] = [
    (((("reword",), {}),), "unknown key 'reword' (did you mean 'reward'?) at the top"),
    (((("name",), None),), "it needs name"),
    (((("name",), 5),), "name must be a string, got 5"),
    (((("reads",), ["coins"]),), "reads must be a table"),
    (((("reads", "coins"), "U16 0xC102"),), "reads.coins must be a table with a type"),
    (((("reads", "coins", "type"), "u16"),), "reads.coins.type 'u16' is not a read type"),
    (((("reads", "coins", "at"), None),), "reads.coins needs at"),
    (((("reads", "coins", "at"), 0x10000),), "outside the CPU's 16-bit address space"),
    (((("reads", "coins", "at"), "0xZZ"),), "reads.coins.at: '0xZZ' is not a hex address"),
    (((("reads", "coins", "at"), True),), "reads.coins.at must be an integer or a string"),
    (
        ((("reads", "coins", "at"), 0x4000),),
        "read 'coins': 2 byte(s) at 0x4000: ROM does not change",
    ),
    (((("reads", "coins", "at"), "wNoSuch"),), "read 'coins': "),
    (((("reads", "coins", "at"), "wNoSuch"), (("rom",), "bundled:quest")), "wNoSuch"),
    (((("reads", "coins", "endian"), "middle"),), "endian must be one of"),
    (((("reads", "coins", "bank"), -1),), "bank must be None or an int >= 0"),
    (((("reads", "coins", "size"), 2),), "unknown key 'size' in reads.coins"),
    (((("reads", "coins"), {"type": "BCD", "at": 0xC102, "size": 10}),), "does not fit int64"),
    (((("reads", "coins"), {"type": "Bit", "at": 0xC102, "bit": 8}),), "bit must be 0..7"),
    (
        ((("reads", "coins"), {"type": "Digits", "at": 0xC102, "size": 2, "blank": [300]}),),
        "blank must hold byte values",
    ),
    (((("reads", "coins"), {"type": "Lookup", "table": {"1": 2}}),), "needs source"),
    (
        (
            (
                ("reads", "coins"),
                {"type": "Lookup", "source": {"type": "U8", "at": 0xC102}, "table": {"one": 2}},
            ),
        ),
        "table: key 'one' is not an integer",
    ),
    (
        (
            (
                ("reads", "coins"),
                {"type": "Lookup", "source": {"type": "U8", "at": 0xC102}, "table": {}},
            ),
        ),
        "Lookup's table is empty",
    ),
    (((("reward",), {}),), "has no reward terms"),
    (((("reward", "coins", "type"), "Progres"),), "'Progres' is not a term type"),
    (((("reward", "coins", "read"), "coin"),), "watches read 'coin'"),
    (((("reward", "coins", "weight"), "1"),), "reward.coins.weight must be a number"),
    (((("reward", "coins", "weight"), NAN),), "weight must be finite"),
    (((("reward", "coins", "weight"), math.inf),), "weight must be finite"),
    (((("reward", "coins", "clip"), [1]),), "clip must be [lo, hi]"),
    (((("reward", "coins", "clip"), [2, 1]),), "clip must be (lo, hi) with lo <= hi"),
    (((("reward", "coins", "keys"), ["coins"]),), "unknown key 'keys' in reward.coins"),
    (((("reward", "cells"), {"type": "Novelty", "keys": []}),), "Novelty needs keys"),
    (
        ((("reward", "cells"), {"type": "Novelty", "keys": ["coins"], "bits": 40}),),
        "bits must be an int in 3..26",
    ),
    (
        ((("reward", "time"), {"type": "StepCost", "read": "coins"}),),
        "unknown key 'read' in reward.time",
    ),
    (((("terminated",), "r['coin'] > 3"),), "reads 'coin', which the task does not define"),
    (((("terminated",), "__import__('os').system('id')"),), "a call of __import__"),
    (((("terminated",), "r.__class__"),), "the attribute .__class__"),
    (((("terminated",), 5),), "terminated must be a string"),
    (((("truncated",), "r["),), "truncated: 'r[' is not an expression"),
    (((("max_steps",), 0),), "max_steps must be an int in 1..2147483647"),
    (((("max_steps",), 1e3),), "max_steps must be an integer"),
    (((("max_steps",), 2**40),), "max_steps must be an int in 1..2147483647"),
    (((("frames_per_step",), 100_000),), "frames_per_step must be an int in 1..32767"),
    (((("release_after_frames",), 30),), "release_after_frames must be an int in 1..frames"),
    (((("sticky_actions",), 1.0),), "sticky_actions must be in [0, 1)"),
    (((("sticky_actions",), NAN),), "sticky_actions must be in [0, 1)"),
    (((("noop_max",), -1),), "noop_max must be an int >= 0"),
    (((("noop_max",), 4), (("actions",), ["left", "right"])), "noop_max needs an action"),
    (((("actions",), ["jump"]),), "jump"),
    (((("actions",), [1, 2]),), "actions must list strings"),
    (((("actions",), "no_such_codec"),), "no_such_codec"),
    (((("actions",), ["a hold=30 frames=20"]),), "hold (30) is longer than its step (20)"),
    (((("features",), {"hp": 1}),), "feature 'hp' is not one of the task's reads"),
    (((("features",), {"coins": NAN}),), "its scale must be a finite number"),
    (((("features",), [3]),), "features must list strings"),
    (((("swarm",), {"every": 4}),), "swarm needs reached"),
    (((("swarm",), {"reached": "r['x'] > 0"}),), "reads 'x', which the task does not define"),
    (((("swarm",), {"reached": "r['coins'] > 0", "every": 0}),), "Swarm.every must be"),
    (
        ((("swarm",), {"reached": "r['coins'] > 0", "cadence": 4}),),
        "unknown key 'cadence' in swarm",
    ),
    (((("step_end",), {"at": 0xC102}),), "exactly one condition"),
    (((("step_end",), {"at": 0x4000, "changes": True}),), "step_end"),
    (((("step_end",), {"at": 0xC102, "equals": 300}),), "StepEnd.equals must be a byte"),
    (((("step_end",), {"changes": True}),), "step_end needs at"),
    (((("step_end",), {"at": 0xC102, "when": "changes"}),), "unknown key 'when' in step_end"),
    (((("rom",), "bundled:nothing"),), "no bundled game 'nothing'"),
    (((("starts",), "x.state"),), "starts must be a list"),
    (((("starts",), ["no-such.state"]),), "no-such.state does not exist"),
    (((("rom",), "no-such.gb"),), "no-such.gb"),
]


def _mistaken(edits: tuple[tuple[tuple[str, ...], Any], ...]) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    for path, value in edits:
        table = data
        for key in path[:-1]:
            table = table[key]
        if value is None:
            table.pop(path[-1], None)
        else:
            table[path[-1]] = value
    return data


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float, str)):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"


def to_toml(data: dict[str, Any]) -> str:
    return "".join(f"{k} = {_toml_value(v)}\n" for k, v in data.items())


def _train(tmp_path: Path, capsys, task: Path) -> str:
    out = tmp_path / "runs"
    code = main([*TRAIN, "--task", str(task), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, (code, err[-3000:])
    assert not out.exists() or not any(out.iterdir())
    return err


def test_the_good_task_trains_in_both_forms(tmp_path, capsys):
    for form, text in (("toml", to_toml(GOOD)), ("json", json.dumps(GOOD))):
        task = tmp_path / f"good.{form}"
        task.write_text(text)
        out = tmp_path / f"runs-{form}"
        code = main([*TRAIN, "--task", str(task), "--out", str(out), "--no-report"])
        assert code == 0, capsys.readouterr().err[-2000:]
        (run,) = out.iterdir()
        assert (run / ("task.toml" if form == "toml" else "task-file.json")).is_file()


FORMS = [pytest.param("toml", id="toml"), pytest.param("json", id="json", marks=pytest.mark.slow)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("edits", "said"), MISTAKES, ids=[m[1][:40] for m in MISTAKES])
def test_a_task_file_mistake_is_named(tmp_path, capsys, form, edits, said):
    data = _mistaken(edits)
    task = tmp_path / f"task.{form}"
    task.write_text(to_toml(data) if form == "toml" else json.dumps(data))
    err = _train(tmp_path, capsys, task)
    assert said in err, err
    assert len(err.strip().splitlines()) <= 3, err


RAW = [
    ("toml", b'name = "x"\nname = "y"\n', "is not valid TOML"),
    ("toml", b"name = \n", "is not valid TOML"),
    ("toml", b"", "it needs name, reads, reward"),
    ("toml", b'name = "\xff\xfe"\n', "is not UTF-8 text"),
    ("toml", b"# " + b"x" * (1 << 20) + b"\n", "a task file is at most 1 MiB"),
    ("json", b'{"name": "x",}', "is not valid JSON"),
    ("json", b'["name"]', "must hold a table of keys"),
    ("json", b"[" * 100_000 + b"]" * 100_000, "is not valid JSON"),
    ("json", b"null", "must hold a table of keys"),
]


@pytest.mark.parametrize(("form", "content", "said"), RAW, ids=[r[2] for r in RAW])
def test_a_task_file_that_does_not_parse_is_named(tmp_path, capsys, form, content, said):
    task = tmp_path / f"task.{form}"
    task.write_bytes(content)
    err = _train(tmp_path, capsys, task)
    assert said in err and str(task) in err, err


def test_a_missing_task_file_and_a_variable_on_one_are_named(tmp_path, capsys):
    assert "does not exist" in _train(tmp_path, capsys, tmp_path / "none.toml")
    (tmp_path / "t.toml").write_text(to_toml(GOOD))
    assert "holds one task; drop :SCORE" in _train(
        tmp_path, capsys, Path(f"{tmp_path}/t.toml:SCORE")
    )
