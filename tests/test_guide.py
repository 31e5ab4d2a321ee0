"""docs/own-game.md runs as printed: every Python block and shell command, in order, in
a fresh folder with our demo game standing in for the user's ROM."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from gbxcule.cli import main
from gbxcule.tasks import load_task

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "own-game.md"
# The guide trains for 15 minutes; here the same command runs a few updates.
SHORTER = {"--minutes 15": "--total-steps 64 --steps 8 --minibatch 16 --epochs 1 --no-report",
           "--envs 64": "--envs 4", "--episodes 32": "--episodes 2"}  # fmt: skip


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```(python|sh|toml)\n(.*?)```", text, re.S)


def test_the_guide_runs_from_a_rom_to_a_checked_policy(tmp_path, monkeypatch, capsys):
    """In-process (``gbxcule`` commands through ``cli.main``): tests/test_tasks_load.py
    runs eval in fresh shells."""
    monkeypatch.chdir(tmp_path)

    def sh(line: str) -> str:
        for long, short in SHORTER.items():
            line = line.replace(long, short)
        words = shlex.split(line.split("#")[0])
        assert words[0] == "gbxcule", line
        if "runs/<run>" in line:
            (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
            words = [str(run) if w == "runs/<run>" else w for w in words]
        capsys.readouterr()
        code = main(words[1:])
        out = capsys.readouterr()
        assert code == 0, (line, out.out[-2000:], out.err[-2000:])
        return out.out

    assert "`gbxcule demo --save-rom game.gb`" in GUIDE.read_text()
    sh("gbxcule demo --save-rom game.gb")
    outputs = []
    for kind, code in blocks(GUIDE.read_text()):
        if code.startswith(("# task.py", "# task.toml")):
            (tmp_path / code.split()[1]).write_text(code)
        elif kind == "python":
            capsys.readouterr()
            exec(compile(code, str(GUIDE), "exec"), {})  # noqa: S102 - our own guide
            outputs.append(capsys.readouterr().out)
        else:
            for line in code.strip().splitlines():
                outputs.append(sh(line))
    assert (tmp_path / "start.state").is_file()
    toml, python = load_task(str(tmp_path / "task.toml")), load_task(str(tmp_path / "task.py"))
    assert toml.reads == python.reads and toml.reward == python.reward  # the two forms agree
    (run,) = (tmp_path / "runs").iterdir()
    assert (run / "task.toml").is_file() and not (run / "task.py").exists()
    grew = next(o for o in outputs if "bytes that grew" in o)
    assert "0xc100" in grew  # step 2 finds the X coordinate among the bytes that grew
    assert (tmp_path / "game-sheet.png").is_file() and (tmp_path / "start.state.json").is_file()
    returns = [o.split("mean return")[1].split(" over")[0] for o in outputs if "mean return" in o]
    assert len(returns) == 2 and returns[0] == returns[1]  # ours and PyBoy, the same episodes
    assert "PASS my-game from start.state: 100 steps" in outputs[-1]  # lockstep agreed
    checked = next(o for o in outputs if "task 'my-game' on warp" in o)
    assert "coins" in checked and (tmp_path / "my-game-check.gif").is_file()
