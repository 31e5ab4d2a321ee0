"""Shared fixtures, and the rule that every test says where it stands.

Each test file carries exactly one level marker (``pytestmark``), registered in
pyproject.toml: ``l1`` one instruction or unit against PyBoy or an absolute
expectation, ``l2`` interactions (timing, banking, interrupts, DMA, mid-frame
writes), ``l3`` lockstep rollouts, ``l4`` learned policies across backends,
``api`` the public API and CLI contracts, ``tooling`` the assembler, ROM suite,
benchmarks and repository checks. A test without one fails collection.
Support code shared by several files lives in ``tests/support/``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from bench.goldens import load_goldens

from .support.backend_api_support import write_rom

LEVELS = ("l1", "l2", "l3", "l4", "api", "tooling")

# The tests' runs trust their own tasks in a list of their own, not in the user's
# (gbxcule.tasks.load.trusted_tasks_path); processes the tests start inherit it.
os.environ.setdefault(
    "GBXCULE_TRUSTED_TASKS",
    str(Path(tempfile.mkdtemp(prefix="gbxcule-trusted-")) / "trusted-tasks.txt"),
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = sorted(
        {
            f"{item.path.name}: {levels or 'none'}"
            for item in items
            for levels in [[m.name for m in item.iter_markers() if m.name in LEVELS]]
            if len(levels) != 1
        }
    )
    if wrong:
        raise pytest.UsageError(
            "every test file needs exactly one level marker "
            f"({', '.join(LEVELS)}; tests/conftest.py): " + "; ".join(wrong)
        )


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo game's ROM file, with its ``.sym`` file beside it."""
    from gbxcule.games import bundled_game

    folder = tmp_path_factory.mktemp("demo")
    game = bundled_game("demo")
    path = write_rom(folder, "demo.gb", game.rom())
    path.with_suffix(".sym").write_text(game.sym())
    return path


@pytest.fixture(scope="session")
def goldens() -> dict[str, dict[str, Any]]:
    """The committed golden state hashes (tests/goldens/goldens.json), by case name."""
    return load_goldens()
