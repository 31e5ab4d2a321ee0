"""``gbxcule task check``: a good task reports its reads, pay and ends with no warnings
about them and agrees with PyBoy step for step; a broken one gets a warning a user can
act on for each mistake; a predicate that raises is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from gbxcule.cli import main
from gbxcule.tasks.check import check_task, first_difference
from gbxcule.tasks.load import load_task
from gbxcule.tasks.task_file import task_from_data

pytestmark = pytest.mark.api

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"
BROKEN = {
    "name": "broken",
    "actions": ["left", "right", "noop"],
    "max_steps": 30,
    "terminated": "r['lives'] > 200",  # never: the byte stays 0
    "features": {"x": 1.0},  # x reaches ~100: far past 0..1
    "reads": {
        "x": {"type": "U8", "at": 0xC100},
        "lives": {"type": "U8", "at": 0xC7F0},  # nothing writes there
        "div": {"type": "U8", "at": 0xFF04},  # the DIV timer: moves by itself
    },
    "reward": {
        "lives": {"type": "Progress", "read": "lives"},
        "clock": {"type": "Changed", "read": "div"},
        "x": {"type": "Increase", "read": "x", "weight": 0.1},
    },
}


def test_a_good_task_reports_what_it_reads_and_pays_and_agrees_with_pyboy():
    task = load_task(str(EXAMPLES / "quest-explore-random.toml"))
    ours = check_task(task, envs=4, steps=120, seed=1)
    reads = {r.name: r for r in ours.reads}
    assert reads["x"].changed and reads["y"].changed and reads["x"].lo < reads["x"].hi
    cells = {t.name: t for t in ours.terms}["cells"]
    assert 0 < cells.paid < 1 and cells.max == pytest.approx(0.05)
    assert ours.episodes >= 1 and ours.terminated == ours.episodes  # game over ends them
    assert ours.frames == (24.0, 24, 24)
    assert not [w for w in ours.warnings if "'cells'" in w or "'x'" in w or "ended" in w]
    assert len(ours.sheet) == 40 and ours.sheet[0].shape == (4, 72, 80)
    theirs = check_task(task, kind="pyboy", envs=4, steps=120, seed=1)
    assert first_difference(ours, theirs) is None
    theirs.trace["reward"][7, 2] += 1.0
    assert first_difference(ours, theirs).startswith("step 7, env 2: reward")


def test_each_mistake_of_a_broken_task_gets_a_warning_that_names_it():
    report = check_task(task_from_data(BROKEN), envs=4, steps=40)
    text = "\n".join(report.warnings)
    assert "reward term 'lives' paid nothing" in text
    assert "read 'lives' never changed within an episode (always 0)" in text
    assert "reward term 'clock' paid on 100% of steps" in text
    assert "feature 'x' reaches" in text and "smaller scale" in text
    assert "terminated never fired in" in text and "max_steps (30)" in text
    assert "'x' paid" not in text and "read 'x'" not in text  # x is fine


def test_the_command_writes_its_sheet_and_json_and_names_a_predicate_that_raises(tmp_path, capsys):
    task = tmp_path / "broken.toml"
    from tests.test_bad_task_files import to_toml

    task.write_text(to_toml(BROKEN))
    gif, report = tmp_path / "sheet.gif", tmp_path / "report.json"
    argv = ["task", "check", str(task), "--envs", "2", "--steps", "30"]
    assert main([*argv, "--gif", str(gif), "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "task 'broken' on warp: 30 steps x 2 envs" in out and "warning: reward term" in out
    assert 1 < Image.open(gif).n_frames <= 30  # (PIL merges frames that did not change)
    data = json.loads(report.read_text())
    assert [r["name"] for r in data["reads"]] == ["x", "lives", "div"] and data["warnings"]
    task.write_text(to_toml({**BROKEN, "terminated": "r['x'] // (r['x'] - r['x']) == 0"}))
    assert main([*argv, "--no-gif"]) == 2
    err = capsys.readouterr().err
    assert "its terminated raised" in err and "Traceback" not in err


STEPPED = """
name = "quest-stepped"
rom = "bundled:quest"
starts = ["bundled:quest/play", "bundled:quest/random-3"]
actions = ["up", "down", "left", "right hold=2 frames=40", "noop"]
[reads]
x = { type = "U8", at = "wPlayerX" }
[reward]
x = { type = "Delta", read = "x" }
[step_end]
at = "wPlayerX"
changes = true
min_frames = 8
"""


def test_verify_runs_a_task_from_each_start_with_its_timing_and_step_end(
    tmp_path, capsys, monkeypatch
):
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.games.quest import layout

    task = tmp_path / "stepped.toml"
    task.write_text(STEPPED)
    ends = []
    original = PyBoySingleBackend.set_step_end
    monkeypatch.setattr(
        PyBoySingleBackend, "set_step_end", lambda b, end: ends.append(end) or original(b, end)
    )
    assert main(["verify", "--task", str(task), "--steps", "25", "--no-bundle"]) == 0
    assert [(e.where, e.changes, e.min_frames) for e in ends] == [(layout.W_PLAYER_X, True, 8)] * 2
    out = capsys.readouterr().out
    assert out.count("PASS quest-stepped from ") == 2 and "2 passed, 0 diverged" in out
    assert main(["verify", "--task", str(task), "--codec", "buttons"]) == 2
    assert "--task sets --codec itself" in capsys.readouterr().err


def test_a_step_end_travels_as_verify_text():
    from gbxcule.core.step_end import StepEnd, StepEndError, format_step_end, parse_step_end

    for end in (StepEnd(0xC011, changes=True, min_frames=8),
                StepEnd(0xFF85, equals=3, mask=0x0F), StepEnd(0xC000, not_equals=0)):  # fmt: skip
        assert parse_step_end(format_step_end(end)) == end
    assert format_step_end(StepEnd(0xC011, changes=True, min_frames=8)) == (
        "0xc011,changes,min_frames=8"
    )
    with pytest.raises(StepEndError, match="'often' is not changes"):
        parse_step_end("0xC011,often")
    with pytest.raises(StepEndError, match="invalid literal"):
        parse_step_end("C0x1,changes")


def test_a_reward_random_play_rarely_finds_is_named_before_training():
    from gbxcule.tasks.check import CheckReport, TermStats, _warnings

    task = task_from_data(
        {
            "name": "rare",
            "reads": {"lines": {"type": "U8", "at": 0xC103}},
            "reward": {
                "lines": {"type": "Progress", "read": "lines"},
                "alive": {"type": "StepCost", "weight": 0.01},
            },
        }
    )

    def report(rewarded: int, episodes: int = 285, paid: float = 5e-5) -> CheckReport:
        terms = [TermStats("lines", paid, 1.0, paid), TermStats("alive", 0.01, 0.01, 1.0)]
        return CheckReport("rare", "warp", 32, 600, 0, [], terms, episodes, episodes, 0,
                           (64.0, 26, 124), (0.6, 0.2, 1.2), (24.0, 24, 24), rewarded)  # fmt: skip

    (rare,) = [w for w in _warnings(task, report(1)) if "episodes of random play" in w]
    assert "only 1 of 285 episodes" in rare and "(0.35%; step costs not counted)" in rare
    assert not [w for w in _warnings(task, report(5)) if "episodes of random play" in w]
    assert not [w for w in _warnings(task, report(0, episodes=50)) if "random play" in w]
    # nothing paid: the term's own warning says so, not this one
    assert not [w for w in _warnings(task, report(0, paid=0.0)) if "episodes of random" in w]
