"""ARCHITECTURE.md's layer rules, held: what each part of the package may import.

``LAYERS`` is the rules column of ARCHITECTURE.md's table as imports: each top-level part
of ``src/gbxcule`` names the parts it may import (``API``: the backend API only,
``gbxcule.backends`` / ``.protocol`` / ``.registry``; ``*``: anything). The walk is
``test_import_graph``'s, so an import inside a function counts too.
"""

from __future__ import annotations

import re
from pathlib import Path

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
    *(
        (f"gbxcule.games.{g}.starts", "gbxcule.backends.pyboy_backend")
        for g in ("quest", "blocks", "tiles", "climb")
    ),  # fmt: skip
    # so does a user's, made by `gbxcule states` on the oracle
    ("gbxcule.tasks.state_maker", "gbxcule.backends.pyboy_backend"),
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
        "gbxcule.tasks.x": {"gbxcule.kernels.step.step"},
        "gbxcule.rl.y": {"gbxcule.backends.warp_vec"},
    }
    graph |= {"gbxcule.envs.z": {"gbxcule.backends.registry", "gbxcule.tasks.session"}}
    assert broken(graph) == [
        ("gbxcule.rl.y", "gbxcule.backends.warp_vec"),
        ("gbxcule.tasks.x", "gbxcule.kernels.step.step"),
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
# the library module it drives (rl/); each bundled game's own modules (rom.py, layout.py...),
# one folder a game.
SHARED_NAME_LAYERS = ({"core", "kernels", "backends"}, {"cli", "rl"})


def _a_game(part: str) -> bool:
    return part == "demo" or part.startswith("games/")


def test_no_two_modules_share_a_name_for_different_jobs() -> None:
    """One concept, one home: a module name repeats only as ``SHARED_NAME_LAYERS`` say."""
    seen: dict[str, list[str]] = {}
    for path in (SRC / "gbxcule").rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            parts = path.relative_to(SRC / "gbxcule").parts
            where = "/".join(parts[:2]) if parts[0] == "games" and len(parts) > 2 else parts[0]
            seen.setdefault(path.stem, []).append(where)
    bad = {
        name: parts
        for name, parts in seen.items()
        if len(parts) != len(set(parts))
        or (
            len(parts) > 1
            and not any(set(parts) <= group for group in SHARED_NAME_LAYERS)
            and not all(_a_game(part) for part in parts)
        )
    }
    assert bad == {}


# The bounds of the address map's spans: written as numbers only in core/memory_layout.py
# (the assembler, the games and the demo write addresses as data of their own).
SPAN_BOUNDS = {0x8000, 0xA000, 0xC000, 0xE000, 0xFE00, 0xFEA0, 0xFF80}
SPAN_BOUNDS_MAY_APPEAR = ("gbxcule/core/memory_layout.py", "gbxcule/asm/", "gbxcule/games/",
                          "gbxcule/demo/")  # fmt: skip


def span_bound_literals(root: Path) -> list[str]:
    """``path:line value`` of every integer literal in code that is a span's bound."""
    import ast

    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith(SPAN_BOUNDS_MAY_APPEAR):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
            if type(value) is int and value in SPAN_BOUNDS:
                out.append(f"{rel}:{node.lineno} {value:#06x}")
    return out


def test_one_address_map_the_kernels_and_tables_derive_from():
    """Kernels, backends, tasks and tools compare addresses with names derived from
    ``core/memory_layout.SPANS`` (``kernels/address_map.py`` for the kernels), never with
    the numbers again."""
    from gbxcule.core.memory_layout import SPAN
    from gbxcule.kernels import address_map as am

    assert span_bound_literals(SRC / "gbxcule") == []
    assert (am.ROM_END, am.CART_RAM_LO, am.WRAM_LO, am.OAM_LO, am.HRAM_LO, am.IE_ADDR) == (
        SPAN["vram"].lo, SPAN["cartram"].lo, SPAN["wram"].lo, SPAN["echo"].hi,
        SPAN["io"].hi, SPAN["hram"].hi,
    )  # fmt: skip


def test_the_literal_scan_finds_a_bound(tmp_path):
    pkg = tmp_path / "gbxcule" / "kernels"
    pkg.mkdir(parents=True)
    (pkg / "x.py").write_text("def f(a):\n    '''0xC000 in a docstring'''\n    return a < 0xFE00\n")
    assert span_bound_literals(tmp_path / "gbxcule") == ["gbxcule/kernels/x.py:3 0xfe00"]
