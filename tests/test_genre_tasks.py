"""The task files of the genre games (``examples/tasks``, measured by
``bench.genre_learning``): each reads what its game's layout documents, pays and ends as
its comment says under random play, and its held-out starts are none of its training
starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbxcule.tasks.check import check_task
from gbxcule.tasks.load import load_task

pytestmark = pytest.mark.api

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"


def _check(name: str, steps: int = 120):
    task = load_task(str(EXAMPLES / name))
    report = check_task(task, envs=4, steps=steps, seed=3)
    return task, {r.name: r for r in report.reads}, {t.name: t for t in report.terms}, report


def test_blocks_tasks_end_when_the_stack_tops_out():
    _, reads, terms, report = _check("blocks-survive.toml")
    assert terms["alive"].paid == 1.0 and terms["alive"].max == pytest.approx(0.01)
    assert report.episodes >= 4 and report.terminated == report.episodes  # random play tops out
    assert reads["height"].hi >= 12 and reads["kind"].lo < reads["kind"].hi
    assert not report.warnings
    _, reads, terms, report = _check("blocks-lines.toml")
    assert reads["mode"].lo == 1 and reads["mode"].hi == 2 and report.terminated >= 4


def test_climb_pays_for_height_and_a_fall_ends_it():
    _, reads, terms, report = _check("climb-height.toml", steps=300)
    assert terms["height"].paid > 0 and terms["height"].max == 1.0
    assert reads["x"].changed and reads["ground"].lo == 0 and reads["ground"].hi == 1
    assert report.terminated >= 1
    assert not [w for w in report.warnings if "'height'" in w or "terminated" in w]


def test_tiles_tasks_follow_the_tiles_in_place_and_the_solved_count():
    _, reads, terms, report = _check("tiles-in-place.toml")
    assert reads["in_place"].changed and terms["in_place"].paid > 0.05
    assert terms["in_place"].max == 1.0  # Delta: +1 a tile moved home, -1 one moved away
    assert reads["gap_x"].lo == 0 and reads["gap_x"].hi == 3
    _, reads, _, report = _check("tiles-solve-easy.toml", steps=100)
    assert report.truncated >= 1 or report.terminated >= 1


@pytest.mark.parametrize("game", ["blocks", "tiles", "climb"])
def test_the_benchmark_holds_out_starts_training_never_sees(game):
    from bench.genre_learning import TASKS

    for name, (_, heldout) in TASKS.items():
        task = load_task(str(EXAMPLES / name))
        if task.rom != f"bundled:{game}":
            continue
        assert heldout and not set(heldout) & {str(s) for s in task.starts}, name
