"""Where tasks come from, and how a run keeps its own.

A task reference is one of:

* a built-in name (``demo-coins``; :data:`BUILTIN`): a task file shipped in
  ``gbxcule/tasks/builtin/``, loaded like any other;
* a task file, ``path/to/task.py`` or ``path/to/task.py:NAME`` (the module-level
  :class:`~gbxcule.tasks.task.Task` called ``NAME``; ``TASK`` by default);
* an importable module, ``package.module:NAME`` (or ``package.module`` for ``TASK``);
* a task file that runs no code, ``path/to/task.toml`` (or ``.json``; ``task_file.py``).

A run keeps a copy of its task's file as ``task.py`` and records the variable, the
file's sha256 and the folder its relative paths start from (``task.json``);
:func:`load_run_task` loads the task from there in a fresh shell, so ``eval``,
``resume`` and ``l4`` never depend on a launcher that patched something.

A ``.toml`` / ``.json`` task is kept as ``task.toml`` / ``task.json`` and read as data:
opening such a run runs nothing, whoever trained it.

A Python copy runs when it loads. So a run's Python task loads only when this
machine's user trusts it: a built-in task loads from the installed package (never from
the run's copy; a run of another version's built-in is refused), and a task file only if
its sha256 is in the user's list of trusted tasks (:func:`trusted_tasks_path`), where
training here puts it; a run someone else trained is refused, naming the file and its
hash, until its user reads it and trusts it (``--trust-task``, :func:`trust_run_task`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gbxcule.tasks.task import Task, TaskError
from gbxcule.tasks.task_file import TASK_FILE_SUFFIXES, read_task_file

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
BUILTIN = {  # name -> file[:variable]
    "demo-coins": "demo_coins.py",
    "demo-colour-coins": "demo_colour.py",
    "quest-score": "quest.py:SCORE",
    "quest-score-random": "quest.py:SCORE_RANDOM",
    "quest-explore": "quest.py:EXPLORE",
    "quest-explore-random": "quest.py:EXPLORE_RANDOM",
}
DEFAULT_VARIABLE = "TASK"
RUN_TASK_FILE = "task.py"
RUN_TASK_RECORD = "task.json"  # the record; a JSON task file is kept as task-file.json
RUN_DATA_TASK_FILES = {".toml": "task.toml", ".json": "task-file.json"}


@dataclass(frozen=True)
class TaskSource:
    """Where a loaded task came from."""

    ref: str  # as the user gave it
    path: Path  # the Python file that defines it
    variable: str
    sha256: str


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _split(ref: str) -> tuple[str, str]:
    head, sep, tail = ref.rpartition(":")
    if sep and tail.isidentifier() and not (len(head) == 1 and head.isalpha()):
        return head, tail  # "x.py:NAME" / "pkg.mod:NAME" (not a Windows drive letter)
    return ref, DEFAULT_VARIABLE


def _exec_file(path: Path) -> Any:
    digest = _sha256(path)[:12]
    name = f"gbxcule_task_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, TaskError):
            raise TaskError(f"task file {path}: {exc}") from exc
        raise TaskError(f"task file {path} failed to load: {type(exc).__name__}: {exc}") from exc
    return module


def _pick(module: Any, variable: str, where: str) -> Task:
    task = getattr(module, variable, None)
    if not isinstance(task, Task):
        found = [k for k, v in vars(module).items() if isinstance(v, Task)]
        hint = f"; Tasks there: {', '.join(found)}" if found else "; it defines no Task"
        raise TaskError(f"{where} has no Task called {variable}{hint}")
    return task


def load_task(ref: str | Task, *, base_dir: str | Path | None = None) -> Task:
    """The task ``ref`` names (module doc); a :class:`Task` passes through. Relative paths
    in a task file start at its folder (or ``base_dir``)."""
    if isinstance(ref, Task):
        return ref
    if not isinstance(ref, str) or not ref:
        raise TaskError(f"a task is a name, a task file or a module, got {ref!r}")
    target, variable = _split(ref)
    if target in BUILTIN:
        file, _, var = BUILTIN[target].partition(":")
        path, variable = BUILTIN_DIR / file, var or variable
    elif Path(target).suffix in TASK_FILE_SUFFIXES:
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise TaskError(f"task file {target} does not exist")
        if variable != DEFAULT_VARIABLE:
            raise TaskError(f"{ref}: a {path.suffix} task file holds one task; drop :{variable}")
        return _with_source(read_task_file(path), ref, path, "", base_dir)
    elif target.endswith(".py") or Path(target).is_file():
        path = Path(target).expanduser().resolve()
        if not path.is_file():
            raise TaskError(f"task file {target} does not exist")
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise TaskError(
                f"unknown task {ref!r}: not a built-in ({', '.join(BUILTIN)}), not a task file "
                f"(path/to/task.toml, path/to/task.py[:NAME]) and not an importable module ({exc})"
            ) from None
        path = Path(module.__file__ or "").resolve()
        return _with_source(_pick(module, variable, target), ref, path, variable, base_dir)
    return _with_source(_pick(_exec_file(path), variable, str(path)), ref, path, variable, base_dir)


def _with_source(task: Task, ref: str, path: Path, variable: str, base_dir: Any) -> Task:
    source = TaskSource(ref, path, variable, _sha256(path) if path.is_file() else "")
    base = Path(base_dir) if base_dir is not None else task.base_dir or path.parent
    return replace(task, base_dir=base, source=source)


TRUSTED_TASKS_ENV = "GBXCULE_TRUSTED_TASKS"


def trusted_tasks_path() -> Path:
    """The user's list of trusted task files (one sha256 a line): ``$GBXCULE_TRUSTED_TASKS``,
    else ``gbxcule/trusted-tasks.txt`` in ``$XDG_CONFIG_HOME`` (``~/.config``)."""
    if os.environ.get(TRUSTED_TASKS_ENV):
        return Path(os.environ[TRUSTED_TASKS_ENV])
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "gbxcule" / "trusted-tasks.txt"


def _is_trusted(sha256: str) -> bool:
    path = trusted_tasks_path()
    return path.is_file() and sha256 in path.read_text().split()


def trust_task_sha256(sha256: str) -> None:
    """Add a task file's sha256 to the user's trusted list."""
    if _is_trusted(sha256):
        return
    path = trusted_tasks_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:  # one short append: whole even with another writer
        f.write(sha256 + "\n")


def trust_run_task(run_dir: str | Path) -> str:
    """Trust the task file a run keeps (after reading it): its sha256, now in the list (a
    ``.toml`` / ``.json`` task runs no code and needs no trust)."""
    record, copy = _run_task_record(Path(run_dir))
    if copy.name == RUN_TASK_FILE:
        trust_task_sha256(record["sha256"])
    return str(record["sha256"])


def save_run_task(task: Task, run_dir: str | Path) -> dict[str, Any]:
    """Copy the task's file into ``run_dir`` as ``task.py`` and write ``task.json``; the
    record is returned (for meta.json). A task made in a launcher (no file) is refused:
    a run must be able to load its task again."""
    source = task.source
    if source is None or not source.path.is_file():
        raise TaskError(
            f"task {task.name!r} was not loaded from a file, so a run could not load it again; "
            "put it in a task file and pass --task path/to/task.toml (or task.py[:NAME])"
        )
    copy_name = RUN_DATA_TASK_FILES.get(source.path.suffix, RUN_TASK_FILE)
    if copy_name == RUN_TASK_FILE:
        _refuse_relative_imports(task, source.path)
    run_dir = Path(run_dir)
    from gbxcule.files import write_atomic

    write_atomic(run_dir / copy_name, source.path.read_bytes())
    record = {
        "file": copy_name,
        "ref": source.ref,
        "name": task.name,
        "variable": source.variable,
        "sha256": source.sha256,
        "source_path": str(source.path),
        "base_dir": str(task.base_dir) if task.base_dir is not None else None,
    }
    write_atomic(run_dir / RUN_TASK_RECORD, (json.dumps(record, indent=2) + "\n").encode())
    if copy_name == RUN_TASK_FILE:
        trust_task_sha256(source.sha256)  # trained here: this user ran it
    return record


def _refuse_relative_imports(task: Task, path: Path) -> None:
    """A run keeps one file: a task module that imports its package's other modules
    relatively (``from .rewards import ...``) could not load from the run's copy."""
    import ast

    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            what = "." * node.level + (node.module or "")
            raise TaskError(
                f"task {task.name!r}: {path}:{node.lineno} imports {what!r} relatively; a run "
                "keeps this one file (task.py), which could not import it again: import it "
                "by its absolute name from an installed package, or keep the task in one file"
            )


def run_task_sha256(run_dir: str | Path) -> str | None:
    """The sha256 of the task a run keeps (its ``task.json``), or None for a run from
    before runs kept their task."""
    record = Path(run_dir) / RUN_TASK_RECORD
    return json.loads(record.read_text())["sha256"] if record.is_file() else None


def _run_task_record(run_dir: Path) -> tuple[dict[str, Any], Path]:
    """A run's ``task.json`` and the task file it keeps (``task.py``, ``task.toml`` or
    ``task-file.json``), whose sha256 it must hold."""
    record_path = run_dir / RUN_TASK_RECORD
    if not record_path.is_file():
        raise TaskError(f"{run_dir} keeps no task ({RUN_TASK_RECORD} and its task file)")
    try:
        record = json.loads(record_path.read_text())
        name = record.get("file", RUN_TASK_FILE)
    except (ValueError, AttributeError):
        record, name = None, None
    keys = ("sha256", "ref", "name")
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in keys):
        raise TaskError(
            f"{record_path} is not a task record (JSON with the task's {', '.join(keys)})"
        )
    if name not in (RUN_TASK_FILE, *RUN_DATA_TASK_FILES.values()):
        raise TaskError(f"{record_path} names the task file {name!r}, not one a run keeps")
    copy = run_dir / name
    if not copy.is_file():
        raise TaskError(f"{run_dir} keeps no task file {name} (its {RUN_TASK_RECORD} names it)")
    if _sha256(copy) != record["sha256"]:
        raise TaskError(
            f"{copy} changed since the run started (sha256 differs from {RUN_TASK_RECORD}); "
            "restore it, or start a new run with the edited task"
        )
    return record, copy


def load_run_task(run_dir: str | Path) -> Task:
    """The task a run was trained on, from its own copy (module doc)."""
    run_dir = Path(run_dir)
    if not (run_dir / RUN_TASK_RECORD).is_file() and (run_dir / "config.json").is_file():
        name = json.loads((run_dir / "config.json").read_text()).get("task")
        if name in BUILTIN:  # a run from before runs kept their task: a built-in's name
            return load_task(name)
    record, copy = _run_task_record(run_dir)
    if record["ref"] in BUILTIN:  # the installed package's, never the run's copy
        task = load_task(record["ref"])
        if task.source is not None and task.source.sha256 != record["sha256"]:
            raise TaskError(
                f"the built-in task {record['ref']!r} here (sha256 {task.source.sha256[:16]}) is "
                f"not the one {run_dir.name} trained (sha256 {record['sha256'][:16]}): a run of "
                "another gbxcule version"
            )
        return task
    if copy.name != RUN_TASK_FILE:  # data: nothing of it runs, whoever trained it
        base = record.get("base_dir")
        task = _with_source(read_task_file(copy), record["ref"], copy, "", base or run_dir)
        if task.name != record["name"]:
            raise TaskError(f"{copy} holds task {task.name!r}, the run trained {record['name']!r}")
        return task
    if not _is_trusted(record["sha256"]):
        raise TaskError(
            f"{copy} (sha256 {record['sha256'][:16]}) is Python code from a run not trained "
            f"on this machine, and opening the run would run it. Read it; to trust it, pass "
            f"--trust-task (or call gbxcule.tasks.trust_run_task); trusted tasks are listed "
            f"in {trusted_tasks_path()}"
        )
    task = load_task(f"{copy}:{record['variable']}", base_dir=record.get("base_dir"))
    if task.name != record["name"]:
        raise TaskError(f"{copy} defines task {task.name!r}, the run trained {record['name']!r}")
    return task


def check_overrides(task: Task, rom: str | Path | None, state: str | Path | None) -> Task:
    """Refuse a ROM that is not the built-in task's own: its reward reads that game's RAM,
    so on another game it would train on nothing, silently."""
    if rom is None or task.source is None or task.source.ref not in BUILTIN:
        return task
    if Path(rom).resolve() == task.rom_path().resolve():
        return task
    raise TaskError(
        f"--rom {rom}: the task {task.name!r} reads its reward from its own game's RAM, so "
        "on another ROM it would reward nothing. Write a task for your game (a task.toml: "
        "the ROM, start states, RAM reads and reward terms; see the guide docs/own-game.md) "
        "and pass --task path/to/task.toml"
    )
