"""Tasks as a user writes them: a Python file (or a module) that ``train`` loads, that a
run keeps and ``eval`` / ``resume`` load again in a fresh shell, starting from PyBoy
savestates, on both backends; and the refusals a new user meets first."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gbxcule.backends.pyboy_backend import make_pyboy
from gbxcule.cli import main
from gbxcule.demo.rom import demo_rom_path
from gbxcule.tasks import (
    BUILTIN,
    U8,
    StepCost,
    Task,
    TaskError,
    load_run_task,
    load_task,
    save_run_task,
)
from gbxcule.tasks.load import check_overrides

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--envs", "4", "--steps", "8", "--minibatch", "16", "--epochs", "1", "--no-report"]
TASK_FILE = """
from dataclasses import replace

from gbxcule.tasks import Progress, StepCost, Task, U8, U16

# the demo game's RAM (gbxcule/demo/game.py): coins at 0xC102, the player's X at 0xC100
TASK = Task(
    name="coins-from-a-state",
    rom="game.gb",
    starts=["start.state"],
    actions=["left", "right", "up", "down", "noop"],
    reads={"coins": U16(0xC102), "x": U8(0xC100)},
    reward={"coins": Progress("coins"), "time": StepCost(-0.01)},
    max_steps=12,
)
SHORT = replace(TASK, name="short", max_steps=3)
SEES_X = replace(TASK, name="sees-x", features={"x": 1 / 255, "coins": 0.1})
"""


def pyboy_state(rom: Path, frames: int) -> bytes:
    """A savestate made the way users make theirs: PyBoy 2.8.1, ticked, ``save_state``."""
    pyboy = make_pyboy(rom.read_bytes())
    try:
        pyboy.tick(frames, False)
        buf = io.BytesIO()
        pyboy.save_state(buf)
        return buf.getvalue()
    finally:
        pyboy.stop(save=False)


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mygame")
    rom = Path(shutil.copyfile(demo_rom_path(), folder / "game.gb"))
    (folder / "start.state").write_bytes(pyboy_state(rom, 90))
    (folder / "task.py").write_text(TASK_FILE)
    return folder


def test_a_task_file_loads_with_paths_from_its_folder(task_dir):
    task = load_task(str(task_dir / "task.py"))
    assert task.name == "coins-from-a-state" and task.rom_path() == task_dir / "game.gb"
    assert task.start_paths() == [task_dir / "start.state"]
    assert task.codec.name == "buttons:left,right,up,down,noop"
    assert load_task(f"{task_dir / 'task.py'}:SHORT").max_steps == 3
    assert load_task("demo-coins").source.path.parent.name == "builtin"
    assert {load_task(name).name for name in BUILTIN} == set(BUILTIN)  # name -> file[:VAR]
    assert load_task("quest-explore").source.variable == "EXPLORE"


def test_a_module_task_loads_by_import_path(task_dir, monkeypatch):
    pkg = task_dir / "mytasks"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "coins.py").write_text(TASK_FILE.replace('"game.gb"', f'"{task_dir / "game.gb"}"'))
    monkeypatch.syspath_prepend(str(task_dir))
    assert load_task("mytasks.coins").name == "coins-from-a-state"
    assert load_task("mytasks.coins:SHORT").name == "short"
    (pkg / "shared.py").write_text("WEIGHT = 0.5\n")
    (pkg / "rel.py").write_text("from .shared import WEIGHT\n" + TASK_FILE)
    task = load_task("mytasks.rel")  # loads, but a run could not load its one-file copy
    with pytest.raises(TaskError, match=r"imports '\.shared' relatively"):
        save_run_task(task, task_dir)


@pytest.mark.parametrize(
    ("ref", "match"),
    [
        ("no-such-task", "not a built-in"),
        ("missing/file.py", "does not exist"),
        ("{dir}/task.py:NOPE", "no Task called NOPE; Tasks there: TASK, SHORT, SEES_X"),
        ("{dir}/broken.py", "failed to load: NameError"),
        ("{dir}/badread.py", "read 'x' must be a Read"),
        ("{dir}/nanweight.py", "failed to load: TermError: weight must be finite, got nan"),
    ],
)
def test_bad_task_references_say_what_is_wrong(task_dir, ref, match):
    (task_dir / "broken.py").write_text("TASK = undefined_name\n")
    (task_dir / "badread.py").write_text(
        "from gbxcule.tasks import Task\nTASK = Task(name='t', reads={'x': 5}, reward={'x': 'x'})\n"
    )
    (task_dir / "nanweight.py").write_text(
        "from gbxcule.tasks import StepCost, Task\nTASK = Task(name='t', reward={'t': StepCost(float('nan'))})\n"
    )
    with pytest.raises(TaskError, match=match):
        load_task(ref.format(dir=task_dir))


def test_a_run_keeps_its_task_and_refuses_an_edited_copy(task_dir, tmp_path):
    task = load_task(str(task_dir / "task.py"))
    record = save_run_task(task, tmp_path)
    assert (tmp_path / "task.py").read_text() == TASK_FILE and record["variable"] == "TASK"
    again = load_run_task(tmp_path)
    assert again.name == task.name and again.rom_path() == task.rom_path()  # paths: its folder
    (tmp_path / "task.py").write_text(TASK_FILE + "\n# edited\n")
    with pytest.raises(TaskError, match="changed since the run started"):
        load_run_task(tmp_path)
    made_here = Task(name="inline", reads={}, reward={"c": StepCost(-1.0)})
    with pytest.raises(TaskError, match="not loaded from a file"):
        save_run_task(made_here, tmp_path)


def test_the_demo_task_on_another_rom_is_refused_with_how_to_write_one(task_dir, tmp_path):
    demo = load_task("demo-coins")
    assert check_overrides(demo, demo_rom_path(), None) is demo
    with pytest.raises(TaskError, match="Write a task for your game"):
        check_overrides(demo, tmp_path / "other.gb", None)
    other = tmp_path / "other.gb"
    other.write_bytes(Path(demo_rom_path()).read_bytes())
    code = main(["train", *SMALL, "--total-steps", "32", "--rom", str(other),
                 "--out", str(tmp_path / "runs")])  # fmt: skip
    assert code == 2 and not (tmp_path / "runs").exists()


def test_train_a_savestate_task_then_eval_on_both_backends_in_fresh_shells(
    task_dir, tmp_path, capsys
):
    """The whole path a user takes: train on a task file that starts from a PyBoy state,
    then (another process, another folder) eval on ours and on PyBoy, which agree."""
    out = tmp_path / "runs"
    argv = ["train", *SMALL, "--task", str(task_dir / "task.py"), "--total-steps", "64"]
    assert main([*argv, "--out", str(out), "--seed", "3"]) == 0
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    meta = json.loads((run / "meta.json").read_text())
    assert meta["starts"][0]["path"] == str(task_dir / "start.state")
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert {"reward/coins", "reward/time"} <= set(metrics[-1])
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    cmd = [sys.executable, "-m", "gbxcule", "eval", str(run), "--episodes", "3",
           "--backend", "pyboy", "--seed", "1"]  # fmt: skip
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]  # PyBoy, in a fresh shell elsewhere
    on_pyboy = done.stdout.split("mean return")[1].split(" over")[0]
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "3", "--seed", "1"]) == 0
    assert capsys.readouterr().out.split("mean return")[1].split(" over")[0] == on_pyboy
    assert main(["train", "--resume", str(run), "--no-report"]) == 0  # resume loads it too
    held_out = tmp_path / "later.state"  # a start the run never saw
    held_out.write_bytes(pyboy_state(task_dir / "game.gb", 150))
    capsys.readouterr()
    argv = ["eval", str(run), "--episodes", "3", "--state", str(held_out), "--baseline"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "policy: mean return" in out and "random: mean return" in out and "95% CI" in out
    assert main(["eval", str(run), "--episodes", "2", "--deterministic"]) == 0
    assert "all 2 episodes are identical" in capsys.readouterr().out  # one start, argmax


def test_envs_take_a_task_file_and_start_from_its_states(task_dir):
    from gbxcule.envs import make_vector_env

    env = make_vector_env(None, 2, str(task_dir / "task.py"), threads=1)
    try:
        env.reset(seed=0)
        assert env.backend.num_start_states == 1
        _, reward, term, trunc, _ = env.step([4, 4])
        assert reward.tolist() == pytest.approx([-0.01, -0.01]) and not (term | trunc).any()
    finally:
        env.close()


def test_ram_features_reach_the_policy_and_the_envs_observe_a_dict(task_dir, tmp_path, capsys):
    """``features``: a float32 vector beside the screen, in training (the net's MLP branch,
    kept in the checkpoint's spec), in eval on both backends (same returns) and in the
    Gymnasium env (a Dict observation) and the Stable-Baselines3 adapter."""
    import gymnasium as gym

    from gbxcule.envs import make_sb3_env, make_vector_env
    from gbxcule.rl.experiment import load_checkpoint

    ref = f"{task_dir / 'task.py'}:SEES_X"
    task = load_task(ref)
    assert task.features == {"x": 1 / 255, "coins": 0.1}
    with pytest.raises(TaskError, match="feature 'y' is not one of the task's reads"):
        dataclasses.replace(task, features=["y"])
    out = tmp_path / "runs"
    assert main(["train", *SMALL, "--task", ref, "--total-steps", "32", "--out", str(out)]) == 0
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    assert load_checkpoint(run)["model_spec"]["num_features"] == 2
    returns = []
    for backend in ("warp", "pyboy"):
        capsys.readouterr()
        assert main(["eval", str(run), "--episodes", "2", "--backend", backend]) == 0
        returns.append(capsys.readouterr().out.split("mean return")[1].split(" over")[0])
    assert returns[0] == returns[1]
    env = make_vector_env(None, 2, ref, threads=1, autoreset_mode="same_step")
    try:
        assert isinstance(env.single_observation_space, gym.spaces.Dict)
        obs, _ = env.reset(seed=0)
        assert obs["screen"].shape == (2, 72, 80) and obs["features"].dtype == np.float32
        x = env.backend.read_memory(0, 0xC100, 0xC101)[0]
        assert obs["features"][0, 0] == pytest.approx(x / 255)
        for _ in range(12):  # max_steps 12: the last step ends every episode
            obs, _, _, trunc, info = env.step([1, 1])
        assert trunc.all() and set(info["final_obs"][0]) == {"screen", "features"}
        assert env.observation_space.contains(obs)
    finally:
        env.close()
    sb3 = make_sb3_env(None, 2, ref, threads=1)  # the task file's Dict, in SB3 too
    try:
        assert sb3.reset()["features"][0, 0] == pytest.approx(x / 255)
    finally:
        sb3.close()


VARIABLE_STEPS = """
from gbxcule.tasks import Action, Changed, Progress, StepEnd, Task, U8, U16

# a walk ends when X changes (at least 8 frames), a 'noop' waits 40 frames
TASK = Task(
    name="walk-until-moved",
    rom="game.gb",
    starts=["start.state"],
    actions=["left", "right hold=8 frames=90", Action("up", hold=4), Action("noop", frames=40)],
    reads={"coins": U16(0xC102), "x": U8(0xC100)},
    reward={"coins": Progress("coins"), "moved": Changed("x", weight=0.1)},
    step_end=StepEnd(0xC100, changes=True, min_frames=8),
    max_steps=6,
)
"""


def test_a_task_with_steps_of_their_own_length_runs_alike_on_both_backends(task_dir, tmp_path):
    """Timed actions and a step end in a task file: TaskSession on ours and on PyBoy (worker
    processes, as eval and L4 run it) give
    the same frames, rewards and ends; the Gymnasium env reports each env's frames and a
    run's metrics the episodes' frames."""
    from gbxcule.envs import make_vector_env
    from gbxcule.tasks.session import TaskSession, make_task_backend

    (task_dir / "walk.py").write_text(VARIABLE_STEPS)
    task = load_task(str(task_dir / "walk.py"))
    assert task.timed
    sessions = [
        TaskSession(task, make_task_backend(task, 3, kind=kind, **kw), seed=5)
        for kind, kw in (("warp", {"threads": 1}), ("pyboy-mp", {"num_workers": 2}))
    ]
    try:
        for s in sessions:
            s.start()
        rng = np.random.default_rng(3)
        lengths = set()
        for _ in range(10):
            acts = torch.as_tensor(rng.integers(0, 4, 3))
            (r0, t0, u0), (r1, t1, u1) = (
                (x.reward, x.terminated, x.truncated) for x in [s.step(acts) for s in sessions]
            )
            f0, f1 = (s.runtime.step_frames() for s in sessions)
            assert f0.tolist() == f1.tolist()
            assert r0.tolist() == pytest.approx(r1.tolist()) and t0.tolist() == t1.tolist()
            lengths.update(f0.tolist())
            for s in sessions:
                s.reset_envs(t0 | u0)
        assert 40 in lengths and any(8 <= n < 90 for n in lengths)
    finally:
        for s in sessions:
            s.close()
    env = make_vector_env(None, 2, str(task_dir / "walk.py"), threads=1)
    try:
        env.reset(seed=0)
        _, _, _, _, infos = env.step([3, 3])
        assert infos["frames"].tolist() == [40, 40]
    finally:
        env.close()
    out = tmp_path / "runs"
    argv = ["train", *SMALL, "--task", str(task_dir / "walk.py"), "--total-steps", "64"]
    assert main([*argv, "--out", str(out)]) == 0
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    frames = [m["episode_frames"] for m in metrics if m.get("episode_frames")]
    assert frames and all(6 * 8 <= f <= 6 * 90 for f in frames)


def test_bad_step_ends_in_a_task_are_refused():
    from gbxcule.core.step_end import StepEndError
    from gbxcule.tasks import StepEnd

    with pytest.raises(TaskError, match="min_frames >= 8"):
        Task(name="t", reads={"x": U8(0xC100)}, reward={"x": "x"},
             step_end=StepEnd(0xC100, changes=True, min_frames=2))  # fmt: skip
    with pytest.raises(TaskError, match="step_end must be a StepEnd"):
        Task(name="t", reads={"x": U8(0xC100)}, reward={"x": "x"}, step_end=0xC100)
    with pytest.raises(StepEndError, match="no bank switch"):
        StepEnd(0x4000, changes=True)


def test_a_predicate_that_raises_is_named_before_training_starts(task_dir, tmp_path, capsys):
    (task_dir / "badend.py").write_text(
        TASK_FILE
        + "\nBADEND = replace(TASK, name='bad-end', terminated=lambda r: r['lives'] == 0)\n"
    )
    argv = ["train", "--task", f"{task_dir / 'badend.py'}:BADEND", *SMALL, "--total-steps", "32"]
    assert main([*argv, "--out", str(tmp_path)]) == 2  # named before any update ran
    err = capsys.readouterr().err
    assert "task 'bad-end': its terminated raised KeyError" in err
    assert "no read 'lives'; reads: coins, x" in err and "failure bundle" not in err
    assert not any(tmp_path.iterdir())  # the run that could not start is not left behind
