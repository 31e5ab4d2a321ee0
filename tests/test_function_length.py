"""No function in src/gbxcule is longer than 150 lines (issue #10, "Structure").

A function is measured from its ``def`` line to its last line (docstring and
comments included, decorators not). Data-only sources are exempt by name: the
module's file name (any of the paths it has lived at) and the qualified name of the
function. An exemption whose function has gone, or no longer needs it, fails too, so
the list stays true.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gbxcule

pytestmark = pytest.mark.tooling

MAX_LINES = 150
SRC = Path(gbxcule.__file__).resolve().parent

# (path endings the module may have, qualified name): why it is exempt
EXEMPT = {
    (("demo_game_asm.py", "demo/asm.py"), "game_source"): "the demo game's assembly text",
}


def function_lengths(root: Path = SRC) -> dict[tuple[str, str], int]:
    """(path relative to ``root``, qualified name) -> lines, for every def under ``root``."""
    out: dict[tuple[str, str], int] = {}

    def walk(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out[(path, name)] = child.end_lineno - child.lineno + 1
                walk(child, path, name + ".")
            else:
                walk(child, path, prefix)

    for file in sorted(root.rglob("*.py")):
        walk(ast.parse(file.read_text(), str(file)), file.relative_to(root).as_posix(), "")
    return out


def exemption_for(path: str, name: str) -> tuple[tuple[str, ...], str] | None:
    for key in EXEMPT:
        endings, qualname = key
        if qualname == name and any(path.endswith(end) for end in endings):
            return key
    return None


def test_no_function_longer_than_the_limit():
    too_long = [
        f"{path}:{name} ({n} lines)"
        for (path, name), n in sorted(function_lengths().items())
        if n > MAX_LINES and exemption_for(path, name) is None
    ]
    assert not too_long, f"functions over {MAX_LINES} lines: {too_long}"


def test_every_exemption_names_a_function_that_needs_it():
    lengths = function_lengths()
    for key in EXEMPT:
        found = [n for (path, name), n in lengths.items() if exemption_for(path, name) == key]
        assert found, f"exempted function {key} not found under {SRC}"
        assert max(found) > MAX_LINES, f"{key} is within {MAX_LINES} lines: drop its exemption"


def test_the_measure_counts_def_to_last_line(tmp_path):
    (tmp_path / "m.py").write_text(
        "@decorator\n"
        "def f():\n"
        '    """doc"""\n'
        "    return 1\n"
        "\n"
        "class C:\n"
        "    def g(self):\n"
        "        def h():\n"
        "            pass\n"
        "        return h\n"
    )
    assert function_lengths(tmp_path) == {
        ("m.py", "f"): 3,
        ("m.py", "C.g"): 4,
        ("m.py", "C.g.h"): 2,
    }
