"""``gbxcule states``: a script of presses reaches play on quest (its title screen needs
START), the numbered sheet shows where, the states it saves carry their ROM's sha256, a
pool differs state to state, and a task refuses a state of another game by its sidecar
while a state with none warns once."""

from __future__ import annotations

import io
import json
import shutil
import warnings

import pytest
from PIL import Image

from gbxcule.cli import main
from gbxcule.core.input_script import Press, ScriptError, format_script, parse_script
from gbxcule.games import bundled_rom_path
from gbxcule.games.quest import layout as L
from gbxcule.tasks.provenance import read_sidecar, sha256_bytes, sidecar_path
from gbxcule.tasks.session import TaskSession, UnverifiedStartState, make_task_backend
from gbxcule.tasks.task import TaskError
from gbxcule.tasks.task_file import task_from_data

pytestmark = pytest.mark.api


def test_a_script_parses_to_presses_in_frame_order():
    presses = parse_script("a@200 start@120 # the title\n a+right@300:30, b@201:2")
    assert presses == [
        Press(120, ("start",)),
        Press(200, ("a",)),
        Press(201, ("b",), 2),
        Press(300, ("a", "right"), 30),
    ]
    assert parse_script(format_script(presses)) == presses


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("start", "is not BUTTONS@FRAME[:HOLD]"),
        ("@12", "is not BUTTONS@FRAME[:HOLD]"),
        ("jump@12", "unknown button 'jump'"),
        ("a@-3", "frame '-3' is not a whole number"),
        ("a@1.5", "frame '1.5' is not a whole number"),
        ("a@12:0", "held 1 frame or more"),
        ("a@99999999999", "is past"),
        ("a@10:20 a@15", "a pressed on frame 15 while still held from frame 10"),
    ],
)
def test_a_bad_script_token_is_named(text, says):
    with pytest.raises(ScriptError) as info:
        parse_script(text)
    assert says in str(info.value)


@pytest.fixture()
def quest(tmp_path):
    rom = tmp_path / "quest.gb"
    shutil.copy(bundled_rom_path("quest"), rom)
    return rom


def _mode(state: bytes) -> int:
    from gbxcule.backends.pyboy_backend import make_pyboy

    pyboy = make_pyboy(bundled_rom_path("quest"))
    try:
        pyboy.load_state(io.BytesIO(state))
        return int(pyboy.memory[L.W_MODE])
    finally:
        pyboy.stop(save=False)


def test_a_script_reaches_play_and_the_state_says_which_rom_it_belongs_to(quest, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["states", str(quest), "--script", "start@60:4", "--out", str(out)]
    assert main([*argv, "--until", "120", "--every", "20", "--save-at", "30,100"]) == 0
    printed = capsys.readouterr().out
    assert "sheet:" in printed and "6 screens, frames 20 to 120" in printed
    sheet = Image.open(out / "quest-sheet.png")
    assert sheet.size == (6 * 160 + 5 * 2, 144 + 12)  # one row of 6, each under its number
    title, play = (out / "quest-f30.state").read_bytes(), (out / "quest-f100.state").read_bytes()
    assert _mode(title) == L.MODE_TITLE and _mode(play) == L.MODE_PLAY
    record = json.loads(sidecar_path(out / "quest-f100.state").read_text())
    assert record["rom_sha256"] == sha256_bytes(quest.read_bytes()) and record["frame"] == 100
    assert record["state_sha256"] == sha256_bytes(play) and record["script"] == "start@60:4"


def test_a_pool_starts_the_script_on_other_frames(quest, tmp_path, capsys):
    argv = ["states", str(quest), "--script", "start@60:4", "--save-at", "140", "--no-sheet"]
    argv += ["--pool", "3", "--jitter", "40", "--seed", "5", "--out", str(tmp_path)]
    assert main(argv) == 0
    states = [(tmp_path / f"quest-pool{k}.state").read_bytes() for k in range(3)]
    assert len(set(states)) == 3 and all(_mode(s) == L.MODE_PLAY for s in states)
    offsets = [json.loads(sidecar_path(tmp_path / f"quest-pool{k}.state").read_text())["pool_offset"]
               for k in range(3)]  # fmt: skip
    assert offsets[0] == 0 and len(set(offsets)) == 3 and max(offsets) <= 40
    assert main([*argv[:-2], "--jitter", "1"]) == 2
    assert "needs --jitter >= 2" in capsys.readouterr().err


def test_a_task_refuses_a_state_of_another_game_and_warns_once_for_one_with_no_sidecar(
    quest, tmp_path
):
    assert main(["states", str(quest), "--script", "start@60:4", "--save-at", "100",
                 "--no-sheet", "--to", str(tmp_path / "quest.state")]) == 0  # fmt: skip
    demo = task_from_data({"name": "coins", "reads": {"c": {"type": "U16", "at": 0xC102}},
                           "reward": {"c": "c"}})  # fmt: skip
    backend = make_task_backend(demo, 1)
    try:
        with pytest.raises(
            TaskError, match=r"was made on quest.gb \(sha256 [0-9a-f]{16}\), not on"
        ):
            TaskSession(demo, backend, starts=[tmp_path / "quest.state"])
        bare = tmp_path / "bare.state"  # the same bytes, no sidecar: only the layout checks
        shutil.copy(tmp_path / "quest.state", bare)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            TaskSession(demo, backend, starts=[bare])
            TaskSession(demo, backend, starts=[bare])
        assert [w.category for w in seen] == [UnverifiedStartState]
        assert "gbxcule states" in str(seen[0].message)
    finally:
        backend.close()
    quest_task = task_from_data({"name": "q", "rom": str(quest), "reads": {"m": {"type": "U8",
                                 "at": L.W_MODE}}, "reward": {"m": "m"}})  # fmt: skip
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        session = TaskSession(quest_task, make_task_backend(quest_task, 1),
                              starts=[tmp_path / "quest.state"])  # fmt: skip
        session.close()
    assert seen == []  # its own game: proven, no warning
    data = (tmp_path / "quest.state").read_bytes()
    assert read_sidecar(tmp_path / "quest.state", data)["frame"] == 100
    assert read_sidecar(tmp_path / "quest.state", data + b"x") is None  # describes another file


def test_states_refuses_a_from_state_that_is_not_one_of_this_rom(quest, demo, tmp_path, capsys):
    assert main(["states", str(demo), "--from", str(quest), "--no-sheet"]) == 2
    assert "is older than 7 and is not supported" in capsys.readouterr().err  # a ROM, no state
    made = tmp_path / "q.state"
    assert main(["states", str(quest), "--script", "start@60:4", "--save-at", "90",
                 "--no-sheet", "--to", str(made)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["states", str(demo), "--from", str(made), "--no-sheet"]) == 2
    assert "fits a different cartridge" in capsys.readouterr().err
    assert main(["states", str(quest), "--from", str(made), "--until", "30", "--save-at", "30",
                 "--no-sheet", "--out", str(tmp_path)]) == 0  # fmt: skip
    assert (tmp_path / "quest-f30.state").is_file()  # from a state of its own game
