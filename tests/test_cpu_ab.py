"""bench.cpu_ab: trees from git revisions and directories, each child on its own tree."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import bench.cpu_ab as cpu_ab
from bench.cpu_ab import REPO, child, main, materialize, run_child

pytestmark = pytest.mark.tooling


def test_trees_from_a_revision_a_source_directory_and_a_checkout(tmp_path):
    head = materialize("HEAD", tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", head.source)
    assert (head.path / "gbxcule" / "kernels" / "state.py").is_file()
    assert head.path.is_relative_to(tmp_path)
    src = materialize(str(REPO / "src"), tmp_path)
    assert src.path == (REPO / "src").resolve() == materialize(str(REPO), tmp_path).path


def test_a_tree_that_is_neither_gives_a_specific_error(tmp_path):
    with pytest.raises(ValueError, match="neither a directory nor a git revision"):
        materialize("no-such-revision-of-gbxcule", tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="without a gbxcule package"):
        materialize(str(tmp_path / "empty"), tmp_path)


def test_a_child_refuses_a_tree_it_did_not_import_gbxcule_from(tmp_path):
    with pytest.raises(RuntimeError, match="imported gbxcule from"):
        run_child("unused.gb", 0, tmp_path)


def test_trees_are_timed_in_rotating_order_and_summarised(tmp_path, monkeypatch):
    """The round-robin and the summary, with children that report without running; the
    real children are the slow test below and the one-child test after this."""
    calls: list[tuple[str, int]] = []

    def fake_child(tree, rom, steps):
        calls.append((tree.path.name, steps))
        return {"imported": str(tree.path / "gbxcule" / "__init__.py"), "us_per_step": 100.0}

    monkeypatch.setattr(cpu_ab, "child", fake_child)
    copy = tmp_path / "copy"
    (copy / "gbxcule").mkdir(parents=True)
    (copy / "gbxcule" / "__init__.py").write_text("")
    out = tmp_path / "out"
    args = ["--trees", f"{REPO / 'src'},{copy}", "--rom", "busy", "--rounds", "2", "--steps", "3"]
    assert main([*args, "--out", str(out), "--label", "same source twice"]) == 0
    assert calls == [("src", 0), ("copy", 0), ("src", 3), ("copy", 3), ("copy", 3), ("src", 3)]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["round"], Path(r["source"]).name) for r in rows] == [
        (0, "src"),
        (0, "copy"),
        (1, "copy"),
        (1, "src"),
    ]
    table = [x for x in (out / "summary.md").read_text().splitlines() if "same source" in x]
    assert len(table) == 2 and table[0].endswith("| 1.000 |")
    assert (out / "ab.png").is_file()


def test_a_child_process_imports_gbxcule_from_the_tree_it_is_given(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "src", copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    tree = materialize(str(copy), tmp_path)
    report = child(tree, cpu_ab.resolve_rom("busy"), 0)
    assert copy.resolve() in Path(report["imported"]).parents


@pytest.mark.slow
def test_each_child_times_its_own_tree_in_rotating_order(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "src", copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path / "out"
    trees = f"{REPO / 'src'},{copy}"
    args = ["--trees", trees, "--rom", "busy", "--rounds", "2", "--steps", "1", "--out", str(out)]
    assert main([*args, "--label", "same source twice"]) == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["round"], Path(r["source"]).name) for r in rows] == [
        (0, "src"),
        (0, "copy"),
        (1, "copy"),
        (1, "src"),
    ]
    for r in rows:  # each child imported gbxcule from the tree it timed
        assert Path(r["source"]) in Path(r["imported"]).parents
        assert r["us_per_step"] > 0 and r["rom"] == "busy"
    table = [x for x in (out / "summary.md").read_text().splitlines() if "same source" in x]
    assert len(table) == 2 and table[0].endswith("| 1.000 |")
    assert (out / "ab.png").is_file()
