"""The gbxcule command line: info verdicts, demo and record outputs checked against the
demo game's model, MP4 refusal/encoding, and the command list."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bench.roms.suite.demo import expected_frame
from gbxcule import images
from gbxcule.asm import build_rom
from gbxcule.cli import COMMANDS, main, playback, record
from gbxcule.cli import demo as demo_cli
from gbxcule.cli.playback import random_actions
from gbxcule.core.actions import get_codec
from gbxcule.core.cartridge import CART_TYPE_OFFSET, HEADER_CHECKSUM_OFFSET, header_checksum
from gbxcule.core.pixels import shades_to_grey
from gbxcule.demo import game as game
from gbxcule.demo import rom as demo_rom

pytestmark = pytest.mark.api

SETUP_FRAMES = 3  # frames the demo ROM runs before its first tick: W_FRAME = frames - 3
LOOP = 'SECTION "main", ROM0[$0150]\n.loop:\n    jr .loop\n'
# The CPU path the demo takes on this machine, and the oracle for the same pipeline.
BACKEND_ARGS = {"warp-cpu": ["--device", "cpu"], "pyboy": ["--backend", "pyboy"]}


def test_module_help_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "gbxcule", "--help"], capture_output=True, text=True, check=True
    ).stdout
    names = {"verify", "info", "demo", "bench", "record", "train", "eval", "l4", "task", "states"}
    assert set(COMMANDS) == names
    for name in names:
        assert name in out


# ---------------------------------------------------------------- info


def _patched(rom: bytes, offset: int, value: int) -> bytes:
    data = bytearray(rom)
    data[offset] = value
    data[HEADER_CHECKSUM_OFFSET] = header_checksum(data)
    return bytes(data)


def test_info_on_a_good_rom(tmp_path, capsys):
    rom = tmp_path / "good.gb"
    rom.write_bytes(build_rom(LOOP, title="GOODROM", cart_type="MBC1", rom_banks=4))
    assert main(["info", str(rom)]) == 0
    out = capsys.readouterr().out
    assert "GOODROM" in out and "MBC1" in out and "4 banks" in out
    assert "supported: yes" in out and "MISMATCH" not in out


@pytest.mark.parametrize(
    "make, verdict",
    [
        (lambda rom: rom[:0x100], "not a cartridge"),
        (lambda rom: _patched(rom, 0x0104, 0x00), "Nintendo logo"),
        (lambda rom: _patched(rom, CART_TYPE_OFFSET, 0x08), "unsupported cartridge type $08"),
        (lambda rom: _patched(rom, CART_TYPE_OFFSET, 0x0B), "unsupported cartridge type $0B"),
        (lambda rom: _patched(rom, CART_TYPE_OFFSET, 0x42), "unknown cartridge type $42"),
    ],
    ids=["truncated", "bad-logo", "rom+ram", "mmm01", "unknown-type"],
)
def test_info_refuses_bad_roms(tmp_path, capsys, make, verdict):
    rom = tmp_path / "bad.gb"
    rom.write_bytes(make(build_rom(LOOP)))
    assert main(["info", str(rom)]) == 1
    out = capsys.readouterr().out
    assert verdict in out
    if "not a cartridge" not in verdict:
        assert "supported: no:" in out


def test_info_on_a_missing_file(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope.gb")]) == 2
    assert "ROM file not found" in capsys.readouterr().err


# ---------------------------------------------------------------- demo


def _frame_inputs(actions: np.ndarray) -> list[int]:
    """Per-frame button masks of one env: pressed for the first 8 frames of each step."""
    codec = get_codec(demo_cli.CODEC)
    held, idle = (
        demo_cli.RELEASE_AFTER_FRAMES,
        demo_cli.FRAMES_PER_STEP - demo_cli.RELEASE_AFTER_FRAMES,
    )
    out: list[int] = []
    for action in actions:
        out += [codec.mask(int(action))] * held + [0] * idle
    return out


def _tile(grid: np.ndarray, k: int, cols: int) -> np.ndarray:
    r, c = divmod(k, cols)
    y, x = r * (144 + images.GAP), c * (160 + images.GAP)
    return grid[y : y + 144, x : x + 160]


def _parse_table(out: str) -> dict[int, tuple[int, int, int, int]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 5 and all(p.isdigit() for p in parts):
            env, score, x, y, ticks = map(int, parts)
            rows[env] = (score, x, y, ticks)
    return rows


@pytest.mark.parametrize("backend", list(BACKEND_ARGS))
def test_demo_writes_grid_and_gif_that_match_the_game_model(tmp_path, capsys, backend):
    envs, steps = 4, 3
    code = main(
        ["demo", "--envs", str(envs), "--steps", str(steps), "--out", str(tmp_path)]
        + BACKEND_ARGS[backend]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "steps/s" in out and "frames/s" in out and f"on {backend}" in out
    png, gif = tmp_path / "final_frames.png", tmp_path / "envs.gif"
    assert str(png) in out and str(gif) in out

    # Every env's WRAM (as printed) and final picture follow the game's rules from its actions:
    # the game ticks once a frame after its setup frames; the picture lags two ticks.
    grid = np.asarray(Image.open(png))
    cols = images.grid_cols(envs)
    assert grid.shape == (2 * 144 + images.GAP, 2 * 160 + images.GAP)
    actions = random_actions(steps, envs, demo_cli.CODEC, seed=0)
    table = _parse_table(out)
    assert sorted(table) == list(range(envs))
    for env, (score, x, y, ticks) in table.items():
        inputs = _frame_inputs(actions[:, env])
        assert ticks == len(inputs) - SETUP_FRAMES
        ran = inputs[len(inputs) - ticks :]
        want = game.simulate(ran)
        assert (score, x, y) == (want.score, want.x, want.y), f"env {env}"
        picture = shades_to_grey(expected_frame(game.simulate(ran[:-2])))
        assert np.array_equal(_tile(grid, env, cols), picture), f"env {env} frame"
    assert len({(x, y) for _, x, y, _ in table.values()}) > 1  # the random walks differ

    frames, ms = _gif_frames(gif)
    assert frames[0].shape == (2 * (2 * 144 + images.GAP), 2 * (2 * 160 + images.GAP))
    assert ms == _gif_ms(steps)


def test_demo_tile_grid_layout():
    frames = [np.full((144, 160), k, dtype=np.uint8) for k in range(3)]
    grid = images.tile_frames(frames, cols=2)
    assert grid.shape == (2 * 144 + images.GAP, 2 * 160 + images.GAP)
    for k in range(3):
        assert (_tile(grid, k, 2) == k).all()
    assert (_tile(grid, 3, 2) == images.GAP_SHADE).all()  # the empty slot
    assert (grid[144 : 144 + images.GAP] == images.GAP_SHADE).all()
    assert images.grid_cols(64) == 8 and demo_cli.grid_cols(1) == 1


def test_demo_refuses_cuda_without_a_device(capsys, monkeypatch):
    monkeypatch.setattr(playback, "cuda_available", lambda: False)
    assert main(["demo", "--device", "cuda", "--envs", "1", "--steps", "1"]) == 2
    assert "no CUDA device is visible to Warp" in capsys.readouterr().err


# -------------------------------------------------------------- record


def _gif_frames(path: Path) -> tuple[list[np.ndarray], int]:
    """The GIF's distinct frames (Pillow merges equal neighbours) and its total duration."""
    frames, ms = [], 0
    with Image.open(path) as im:
        for k in range(im.n_frames):
            im.seek(k)
            frames.append(np.asarray(im.convert("L")))
            ms += im.info["duration"]
    return frames, ms


def _gif_ms(steps: int, frames_per_step: int = 24) -> int:
    """GIF delays are whole centiseconds."""
    return steps * (playback.gif_frame_ms(frames_per_step) // 10 * 10)


def test_record_replays_a_demo_env(tmp_path, capsys):
    """record --env K with the demo's seed and env count shows the demo's env K."""
    envs, steps, env = 4, 3, 2
    assert main(["demo", "--envs", str(envs), "--steps", str(steps), "--out", str(tmp_path)]) == 0
    grid = np.asarray(Image.open(tmp_path / "final_frames.png"))
    out = tmp_path / "rec" / "env2.gif"
    args = ["record", str(demo_rom.demo_rom_path()), "--env", str(env), "--num-envs", str(envs)]
    assert main(args + ["--steps", str(steps), "--device", "cpu", "--out", str(out)]) == 0
    assert f"{steps} frames" in capsys.readouterr().out
    frames, ms = _gif_frames(out)
    assert ms == _gif_ms(steps) and frames[-1].shape == (288, 320)  # scale 2
    last = frames[-1][::2, ::2]
    assert np.array_equal(last, _tile(grid, env, images.grid_cols(envs)))


def test_record_from_an_actions_file(tmp_path, capsys):
    """Text actions: right for 2 steps then down (codec ids 2 and 0); the last frame is the
    model's picture."""
    actions = tmp_path / "acts.txt"
    actions.write_text("# walk\n2\n2   # right again\n\n0\n")
    out = tmp_path / "walk.gif"
    rom = str(demo_rom.demo_rom_path())
    assert (
        main(["record", rom, "--actions", str(actions), "--backend", "pyboy", "--out", str(out)])
        == 0
    )
    assert "3 frames" in capsys.readouterr().out
    # The same actions as column 1 of a 2-D .npy.
    table = np.array([[0, 2], [0, 2], [1, 0], [1, 1]], dtype=np.int64)
    np.save(tmp_path / "acts.npy", table)
    got = record.load_actions(tmp_path / "acts.npy", env=1, codec="pokemonred_puffer_v1")
    assert got.tolist() == [2, 2, 0, 1]
    assert record.load_actions(actions, env=0, codec="pokemonred_puffer_v1").tolist() == [2, 2, 0]
    frames, ms = _gif_frames(out)
    assert ms == _gif_ms(3)
    want = game.simulate(_frame_inputs(np.array([2, 2, 0]))[SETUP_FRAMES:-2])
    assert np.array_equal(frames[-1][::2, ::2], shades_to_grey(expected_frame(want)))


@pytest.mark.parametrize(
    "content, message",
    [
        ("1\nseven\n", "not an action id"),
        ("2\n0\n9\n", "action 9 at step 2 is out of range"),
        ("-1\n", "action -1 at step 0 is out of range"),
        ("", "holds no actions"),
    ],
)
def test_record_refuses_bad_actions_files(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        record.load_actions(path, env=0, codec="pokemonred_puffer_v1")


def test_record_refuses_mp4_without_an_encoder(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(record, "find_ffmpeg", lambda: None)
    out = tmp_path / "x.mp4"
    assert main(["record", str(demo_rom.demo_rom_path()), "--steps", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot write .mp4" in err and "imageio-ffmpeg is not installed" in err
    assert not out.exists()


FAKE_FFMPEG = """#!{python}
import sys
data = sys.stdin.buffer.read()
with open(sys.argv[-1], "w") as fh:
    fh.write(repr((sys.argv[1:], len(data), sorted(set(data)))))
"""


def test_record_pipes_raw_grey_frames_into_ffmpeg(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "bin" / "ffmpeg"
    fake.parent.mkdir()
    fake.write_text(FAKE_FFMPEG.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setattr(record, "find_ffmpeg", lambda: str(fake))
    out = tmp_path / "x.mp4"
    rom = str(demo_rom.demo_rom_path())
    assert main(["record", rom, "--steps", "2", "--backend", "pyboy", "--out", str(out)]) == 0
    argv, size, values = ast.literal_eval(out.read_text())
    assert argv[argv.index("-s") + 1] == "320x288" and argv[argv.index("-pix_fmt") + 1] == "gray"
    assert size == 2 * 320 * 288
    assert set(values) <= {0x00, 0x55, 0xAA, 0xFF}


def test_record_state_needs_a_backend_that_loads_states(tmp_path):
    class NoStates:
        pass

    with pytest.raises(playback.RolloutError, match="cannot load save states"):
        record._load_state(NoStates(), "old-backend", tmp_path / "s.state")


def test_record_refuses_a_garbage_state(tmp_path, capsys):
    state = tmp_path / "s.state"
    state.write_bytes(b"\0" * 64)
    rom = str(demo_rom.demo_rom_path())
    args = ["record", rom, "--state", str(state), "--device", "cpu", "--steps", "1"]
    assert main(args + ["--out", str(tmp_path / "x.gif")]) == 2
    err = capsys.readouterr().err
    assert "SavestateError: state version 0 is older than 7 and is not supported" in err
    assert not (tmp_path / "x.gif").exists()


def test_record_starts_from_a_pyboy_save_state(tmp_path, capsys):
    """A PyBoy state taken after walking right; then A only (ignored by the game): the
    recorded picture is the model's state after the walk, on the Warp backend."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend

    rom = demo_rom.demo_rom_path()
    walk = [2, 2]  # right, right
    oracle = PyBoySingleBackend(rom, frames_per_step=24, release_after_frames=8)
    try:
        for action in walk:
            oracle.step(np.array([action]))
        state = tmp_path / "walked.state"
        with state.open("wb") as fh:
            oracle.pyboy(0).save_state(fh)
    finally:
        oracle.close()
    idle = tmp_path / "a.txt"
    idle.write_text("4\n4\n")
    out = tmp_path / "from_state.gif"
    args = ["record", str(rom), "--state", str(state), "--actions", str(idle), "--device", "cpu"]
    assert main(args + ["--out", str(out)]) == 0
    frames, _ = _gif_frames(out)
    walked = game.simulate(_frame_inputs(np.array(walk))[SETUP_FRAMES:])
    assert walked.x == game.START_X + 2 * demo_cli.RELEASE_AFTER_FRAMES - SETUP_FRAMES
    assert np.array_equal(frames[-1][::2, ::2], shades_to_grey(expected_frame(walked)))


def test_record_refuses_bad_arguments(tmp_path, capsys):
    rom = str(demo_rom.demo_rom_path())
    assert main(["record", rom, "--out", str(tmp_path / "x.avi")]) == 2
    assert "must end in .gif or .mp4" in capsys.readouterr().err
    assert main(["record", str(tmp_path / "missing.gb")]) == 2
    assert "ROM file not found" in capsys.readouterr().err
    assert main(["record", rom, "--env", "64", "--out", str(tmp_path / "x.gif")]) == 2
    assert "--env 64" in capsys.readouterr().err


def test_commands_hide_warps_messages_unless_verbose(tmp_path):
    """Warp's module loads and its no-GPU-driver warning stay out of a command's output
    (--verbose shows them); the command's own output is all there."""
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
    }
    cmd = [sys.executable, "-m", "gbxcule", "demo", "--envs", "1", "--steps", "1", "--out",
           str(tmp_path)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "Warp" not in done.stdout + done.stderr and "load on device" not in done.stderr
    assert "demo game: 1 envs" in done.stdout


def test_demo_runs_every_bundled_game_and_saves_its_rom_with_symbols(tmp_path, capsys):
    from gbxcule.core.symbols import SymbolTable
    from gbxcule.games import GAMES, bundled_rom_path
    from gbxcule.games.quest import layout as quest

    assert (
        main(
            [
                "demo",
                "--game",
                "quest",
                "--envs",
                "2",
                "--steps",
                "40",
                "--device",
                "cpu",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("quest game: 2 envs") and "lives" in out.splitlines()[2]
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert len(rows) == 2 and all(int(r[-1]) > 100 for r in rows)  # ticks ran
    assert (tmp_path / "final_frames.png").is_file()
    for name in GAMES:
        rom = tmp_path / f"{name}.gb"
        assert main(["demo", "--game", name, "--save-rom", str(rom)]) == 0
        assert rom.read_bytes() == bundled_rom_path(name).read_bytes()
        assert len(SymbolTable.load(rom.with_suffix(".sym"))) > 20
    assert SymbolTable.load(tmp_path / "quest.sym").address("wScore") == quest.W_SCORE
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--game", "tetris"])
    assert exc.value.code == 2
    assert "invalid choice: 'tetris'" in capsys.readouterr().err
