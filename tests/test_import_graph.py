"""The package's import graph has no circle (module-level and function-level imports).

Every ``import``/``from ... import`` anywhere in a module of ``src/gbxcule``, also inside
functions, is an edge to the ``gbxcule`` module it names (``from pkg import name`` is
an edge to ``pkg.name`` when that is a module). A submodule's edge to one of its own
parent packages is not counted: Python imports the parent first anyway.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

pytestmark = pytest.mark.tooling


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([base] if base else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` for every module under ``src``."""
    files = {_module_name(p, src): p for p in sorted(src.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(name, is_package, node):
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle_in_the_package() -> None:
    graph = import_graph()
    assert len(graph) > 50, "the walk found too few modules; is SRC right?"
    assert circles(graph) == []


def test_the_walk_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "gbxcule"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from gbxcule.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    (pkg / "c.py").write_text("import gbxcule.a\n")
    graph = import_graph(tmp_path)
    assert graph["gbxcule.a"] == {"gbxcule.sub", "gbxcule.sub.b"}
    assert graph["gbxcule.sub.b"] == {"gbxcule.a"}
    assert circles(graph) == [["gbxcule.a", "gbxcule.sub.b"]]


def test_kernels_and_core_never_import_the_shell() -> None:
    """The functional core (``core/``, ``kernels/``) imports no backend, CLI or RL module."""
    shell = ("gbxcule.backends", "gbxcule.cli", "gbxcule.rl", "gbxcule.envs", "gbxcule.lockstep")
    bad = sorted(
        (name, target)
        for name, targets in import_graph().items()
        if name.startswith(("gbxcule.core", "gbxcule.kernels"))
        for target in targets
        if target.startswith(shell)
    )
    assert bad == []
