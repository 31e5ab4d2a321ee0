"""L1: the import graph of ``src/gbxcule``, module- and function-level imports alike.

The kernels and the pure core never import the imperative shell (``backends``), and no
import cycle runs through them or through the save-state bridge that composes the units.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gbxcule

SRC = Path(gbxcule.__file__).parent
LAYERED = ("gbxcule.kernels", "gbxcule.core")
BRIDGE = {"gbxcule.backends.savestate_bridge", "gbxcule.backends.machine_state"}


def _module_names() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = ("gbxcule", *path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the gbxcule modules it imports anywhere in its source."""
    modules = _module_names()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _layered(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in LAYERED)


def test_kernels_and_core_never_import_backends():
    graph = import_graph()
    bad = {
        (name, target)
        for name, targets in graph.items()
        if _layered(name)
        for target in targets
        if target.startswith("gbxcule.backends")
    }
    assert not bad


def test_no_import_cycle_through_the_units_or_the_bridge():
    bad = [c for c in cycles(import_graph()) if any(_layered(n) or n in BRIDGE for n in c)]
    assert not bad


def test_the_walk_sees_function_level_imports():
    graph = import_graph()
    # savestate_bridge._derive_lcd imports kernels.pyboy_load inside the function
    assert "gbxcule.kernels.pyboy_load" in graph["gbxcule.backends.savestate_bridge"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]
