"""ARCHITECTURE.md's layer rules, held: what each part of the package may import.

``LAYERS`` is the rules column of ARCHITECTURE.md's table as imports: each top-level part
of ``src/gbxcule`` names the parts it may import (``API``: the backend API only,
``gbxcule.backends`` / ``.protocol`` / ``.registry``; ``*``: anything). The walk is
``test_import_graph``'s, so an import inside a function counts too.
"""

from __future__ import annotations

import re

import pytest

from tests.test_import_graph import SRC, import_graph

pytestmark = pytest.mark.tooling

ROOT = SRC.parent
BACKEND_API = frozenset(
    {"gbxcule.backends", "gbxcule.backends.protocol", "gbxcule.backends.registry"}
)
LAYERS: dict[str, frozenset[str]] = {
    "files": frozenset(),
    "core": frozenset(),
    "kernels": frozenset({"core"}),
    "asm": frozenset({"core", "files"}),
    "images": frozenset({"core", "files"}),
    "backends": frozenset({"core", "kernels", "asm", "files"}),
    "lockstep": frozenset({"core", "asm", "files", "API"}),
    "demo": frozenset({"asm", "core", "files"}),
    "games": frozenset({"asm", "core", "files", "demo", "API"}),
    "tasks": frozenset({"core", "files", "games", "demo", "API"}),
    "rl": frozenset({"tasks", "core", "files", "images", "lockstep", "API"}),
    "envs": frozenset({"tasks", "core", "images", "API"}),
    "cli": frozenset({"*"}),
    "gbxcule": frozenset({"*"}),  # the package's exports (loaded on first use)
    "__main__": frozenset({"cli"}),
}
# edges the rules allow by name, each with its reason
ALLOWED = {
    # a bundled game makes its start states by playing a raw PyBoy (button, tick, save)
    ("gbxcule.games.quest.starts", "gbxcule.backends.pyboy_backend"),
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gbxcule"


def broken(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The edges of ``graph`` that ``LAYERS`` (and ``ALLOWED``) do not permit."""
    out = []
    for module, targets in sorted(graph.items()):
        rules = LAYERS[layer_of(module)]
        for target in sorted(targets):
            lt = layer_of(target)
            if lt == layer_of(module) or "*" in rules or lt in rules:
                continue
            if "API" in rules and target in BACKEND_API or (module, target) in ALLOWED:
                continue
            out.append((module, target))
    return out


def test_every_import_keeps_the_layer_rules() -> None:
    graph = import_graph()
    assert {layer_of(m) for m in graph} == set(LAYERS), "a part of the package without a rule"
    assert broken(graph) == []


def test_the_rules_catch_a_broken_edge() -> None:
    graph = {
        "gbxcule.tasks.x": {"gbxcule.kernels.step"},
        "gbxcule.rl.y": {"gbxcule.backends.warp_vec"},
    }
    graph |= {"gbxcule.envs.z": {"gbxcule.backends.registry", "gbxcule.tasks.session"}}
    assert broken(graph) == [
        ("gbxcule.rl.y", "gbxcule.backends.warp_vec"),
        ("gbxcule.tasks.x", "gbxcule.kernels.step"),
    ]


def test_architecture_table_names_every_part_with_a_rule() -> None:
    """Each ``src/gbxcule/<part>/`` row of ARCHITECTURE.md's table has a rule here, and
    each package part here a row there."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    rows = set(re.findall(r"^\| `src/gbxcule/(\w+)/`", text, flags=re.M))
    rows |= set(re.findall(r"^\| `src/gbxcule/\w+/`, `src/gbxcule/(\w+)/`", text, flags=re.M))
    packages = {p.name for p in (SRC / "gbxcule").iterdir() if (p / "__init__.py").is_file()}
    assert rows == packages
    assert packages <= set(LAYERS)


# A name may repeat only as one concept across layers: a unit's or feature's definition
# (core/), its kernel side (kernels/) and its shell (backends/); a subcommand (cli/) over
# the library module it drives (rl/); each bundled game's own rom.py.
SHARED_NAME_LAYERS = ({"core", "kernels", "backends"}, {"cli", "rl"}, {"demo", "games"})


def test_no_two_modules_share_a_name_for_different_jobs() -> None:
    """One concept, one home: a module name repeats only as ``SHARED_NAME_LAYERS`` say."""
    seen: dict[str, list[str]] = {}
    for path in (SRC / "gbxcule").rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.stem, []).append(path.relative_to(SRC / "gbxcule").parts[0])
    bad = {
        name: parts
        for name, parts in seen.items()
        if len(parts) != len(set(parts))
        or (len(parts) > 1 and not any(set(parts) <= group for group in SHARED_NAME_LAYERS))
    }
    assert bad == {}
