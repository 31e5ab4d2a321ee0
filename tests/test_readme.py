"""The README's Python example runs as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.api

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs():
    text = README.read_text()
    section = text.split("## Use from Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "no python block under 'Use from Python'"
    scope: dict = {}
    exec(compile(code.group(1), str(README), "exec"), scope)  # noqa: S102 - our own README
    env = scope["env"]
    assert scope["pixels"].shape == (64, 72, 80) and scope["wram"].shape == (64, 8192)
    assert scope["t"] == 49
    try:
        env.step([0] * 64)
    except RuntimeError as e:  # the example closes its backend
        assert "closed" in str(e)
    else:
        raise AssertionError("the example should close its backend")
