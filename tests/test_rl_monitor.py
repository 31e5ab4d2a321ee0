"""Watching and trusting a run: TensorBoard files read back with TensorBoard's reader,
W&B offline files, progress lines, running episode means, resume that extends or
refuses, checkpoints that are cut short or carry code."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import time
import zipfile
from pathlib import Path

import pytest
import torch

from gbxcule.cli import main
from gbxcule.rl.experiment import CheckpointError, Run, load_checkpoint
from gbxcule.rl.monitor import RecentEpisodes, tag
from gbxcule.rl.train import print_progress, progress_line

pytestmark = pytest.mark.api

SMALL = ["--envs", "4", "--steps", "8", "--minibatch", "16", "--epochs", "1", "--no-report"]


def _run(out: Path) -> Path:
    (run,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run


@pytest.fixture(scope="module")
def watched(tmp_path_factory) -> tuple[Path, str]:
    """One run watched every way (TensorBoard, W&B offline, media every 2 updates); the
    tests read it and copy it, never change it. Returns (run, its stderr)."""
    out = tmp_path_factory.mktemp("watched")
    # 4 updates of 32 steps: the 100-step episodes finish in the last one
    argv = ["train", *SMALL, "--steps", "32", "--total-steps", "512", "--media-every", "2"]
    mp = pytest.MonkeyPatch()
    mp.setenv("WANDB_SILENT", "true")
    err = io.StringIO()
    mp.setattr("sys.stderr", err)
    try:
        assert main([*argv, "--wandb", "--out", str(out)]) == 0
    finally:
        mp.undo()
    return _run(out), err.getvalue()


def test_tensorboard_files_hold_every_metric_and_the_media(watched):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run, err = watched
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    scalars = set(acc.Tags()["scalars"])
    records = Run.open(run).metrics()
    for key in ("episode_return_recent", "policy_loss", "sps", "reward/coins", "actor_ms"):
        assert tag(key) in scalars, (key, sorted(scalars))
    sps = acc.Scalars("perf/sps")
    assert [e.step for e in sps] == [r["env_steps"] for r in records]
    # TensorBoard keeps float32: compare at its precision (rounding both sides flaked when a
    # value sat on a rounding boundary)
    assert [e.value for e in sps] == pytest.approx([r["sps"] for r in records], rel=1e-6)
    images = set(acc.Tags()["images"])
    assert {"media/screens", "media/env0"} <= images
    gif = acc.Images("media/env0")
    assert [e.step for e in gif] == [r["env_steps"] for r in records[1::2]]  # every 2nd
    assert gif[-1].encoded_image_string[:6] == b"GIF89a"
    assert "Module " not in err and "load on device" not in err  # Warp's messages: --verbose
    assert err.count("\n") >= len(records)  # not a TTY: a progress line per update


def test_wandb_offline_writes_a_run_with_the_metrics(watched):
    run, _ = watched
    (offline,) = (run / "wandb").glob("offline-run-*")
    (log,) = offline.glob("*.wandb")  # wandb's record log, for `wandb sync` later
    keys = (b"perf/sps", b"episode/episodes", b"losses/policy_loss", run.name.encode())
    # wandb's service process may still be flushing the log when finish() has returned
    # (seen once under a full -n 2 run: only its 7-byte header there yet)
    deadline = time.monotonic() + 20
    while not all(k in log.read_bytes() for k in keys) and time.monotonic() < deadline:
        time.sleep(0.2)
    data = log.read_bytes()
    for key in keys:
        assert key in data, key


def test_progress_is_a_line_per_update_in_a_log_and_a_live_line_on_a_terminal():
    record = {"update": 3, "env_steps": 1024, "sps": 512.0, "episode_return_recent": 1.5,
              "overlap_efficiency": 1.0, "elapsed_s": 65.0, "eta_s": 3725.0}  # fmt: skip
    assert progress_line(record).endswith("| 1:05 elapsed, ETA 1:02:05")

    class Log(io.StringIO):
        def __init__(self, tty: bool) -> None:
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    log, term = Log(False), Log(True)
    for _ in range(2):
        print_progress(record, log)
        print_progress(record, term)
    assert log.getvalue().count("\n") == 2 and "\r" not in log.getvalue()
    assert term.getvalue().count("\r") == 2 and "\n" not in term.getvalue()


def test_the_running_mean_counts_episodes_not_updates():
    """Early updates finish only short episodes: the update mean follows them; the
    running mean weighs every episode once, over the latest >= 100."""
    recent = RecentEpisodes(k=10)
    assert recent.add(0, None, None)["episode_return_recent"] is None
    recent.add(8, 1.0, 10.0)  # 8 short episodes, return 1
    out = recent.add(2, 10.0, 100.0)  # 2 long ones, return 10
    assert out["episodes_recent"] == 10 and out["episode_return_recent"] == pytest.approx(2.8)
    out = recent.add(10, 5.0, 50.0)  # 10 newer episodes alone reach k: the old drop out
    assert out["episodes_recent"] == 10 and out["episode_return_recent"] == 5.0


def test_resume_extends_refuses_says_when_done_and_survives_a_cut_checkpoint(tmp_path, capsys):
    argv = ["train", *SMALL, "--total-steps", "64", "--checkpoint-every", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    run = _run(tmp_path)
    capsys.readouterr()
    assert main(["train", "--resume", str(run)]) == 0
    assert "has trained its 64 env steps" in capsys.readouterr().err
    assert len(Run.open(run).metrics()) == 2
    assert main(["train", "--resume", str(run), "--total-steps", "128"]) == 0
    assert [r["update"] for r in Run.open(run).metrics()] == [0, 1, 2, 3]
    assert Run.open(run).config().total_steps == 128  # recorded in the run
    assert main(["train", "--resume", str(run), "--envs", "8", "--lr", "0.1"]) == 2
    assert "--envs, --lr cannot change on resume" in capsys.readouterr().err
    assert main(["train", "--resume", str(run), "--envs", "64"]) == 2  # the default's value
    assert "--envs cannot change on resume" in capsys.readouterr().err
    # a crash cut latest.pt short, and the newest numbered one is garbage too
    latest = run / "checkpoints" / "latest.pt"
    latest.write_bytes(latest.read_bytes()[:5000])
    with pytest.raises(CheckpointError, match=r"latest\.pt: not a complete checkpoint"):
        load_checkpoint(latest)
    (run / "checkpoints" / "update_000004.pt").write_bytes(b"\x00" * 100)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--total-steps", "160"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "resuming from" in err and "update_000003.pt" in err
    assert [r["update"] for r in Run.open(run).metrics()] == [0, 1, 2, 3, 4]


def test_one_writer_per_run_and_no_budget_below_what_was_trained(watched, tmp_path, capsys):
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    before = {p.name: p.read_bytes() for p in (run / "metrics.jsonl", run / "config.json")}
    lock = Run.open(run).hold_writer()  # another writer, alive
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--total-steps", "1024"]) == 2
    err = capsys.readouterr().err
    assert f"is being written by process {os.getpid()}" in err and "one writer per run" in err
    lock.close()
    assert main(["train", "--resume", str(run), "--total-steps", "256"]) == 2
    assert "has trained 512 env steps; --total-steps 256 is fewer" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in (run / "metrics.jsonl", run / "config.json")} == before
    assert main(["train", "--resume", str(run), "--total-steps", "640"]) == 0  # lock let go
    assert [r["update"] for r in Run.open(run).metrics()] == [0, 1, 2, 3, 4]
    Run.open(run).hold_writer().close()  # and this run let go of it when it ended


def test_a_run_opened_on_other_files_is_refused_naming_both(watched, tmp_path, capsys):
    """eval, record, l4 and resume check the ROM and start states by their sha256 in
    meta.json; a path edited into config.json is hashed, never parsed, so it reveals
    nothing of the file."""
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    meta = json.loads((run / "meta.json").read_text())
    assert meta["rom"]["sha256"] and meta["starts"] == []
    config = json.loads((run / "config.json").read_text())
    secret = tmp_path / "secret.state"
    secret.write_bytes(b"\x1dSECRET" * 100)
    (run / "config.json").write_text(json.dumps({**config, "state": str(secret)}))
    metrics = (run / "metrics.jsonl").read_bytes()
    commands = (
        ["eval", str(run), "--episodes", "1"],
        ["record", "--policy", str(run), "--out", str(tmp_path / "x.gif")],
        ["l4", str(run), "--episodes", "1"],
        ["train", "--resume", str(run), "--total-steps", "1024"],
    )
    capsys.readouterr()
    for argv in commands:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "trained from 0 start state(s)" in err and "SECRET" not in err, (argv, err)
    (run / "config.json").write_text(json.dumps(config))
    other = {**meta, "rom": {**meta["rom"], "sha256": "ab" * 32, "path": "elsewhere.gb"}}
    (run / "meta.json").write_text(json.dumps(other))
    for argv in commands:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is not the ROM" in err and "elsewhere.gb, sha256 abababab" in err, (argv, err)
    assert (run / "metrics.jsonl").read_bytes() == metrics
    (run / "meta.json").write_text(json.dumps(meta))
    assert main(commands[0]) == 0  # the run's own files: fine


def _foreign_task_run(watched, tmp_path, mark: Path) -> Path:
    """A copy of the watched run whose task file is someone else's: the built-in's code
    plus a line that leaves ``mark`` when it runs, recorded as a task file of its own."""
    import hashlib

    from gbxcule.tasks.load import BUILTIN_DIR

    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    code = (BUILTIN_DIR / "demo_coins.py").read_text()
    code += f"\nfrom pathlib import Path as _P\n_P({str(mark)!r}).write_text('ran')\n"
    (run / "task.py").write_text(code)
    sha = hashlib.sha256(code.encode()).hexdigest()
    record = json.loads((run / "task.json").read_text())
    (run / "task.json").write_text(json.dumps({**record, "ref": "their/task.py", "sha256": sha}))
    latest = run / "checkpoints" / "latest.pt"
    torch.save({**load_checkpoint(latest), "task_sha256": sha}, latest)
    return run


def test_a_run_trained_elsewhere_runs_no_code_until_its_task_is_trusted(watched, tmp_path, capsys):
    mark = tmp_path / "ran"
    run = _foreign_task_run(watched, tmp_path, mark)
    capsys.readouterr()
    for argv in (
        ["eval", str(run), "--episodes", "1"],
        ["record", "--policy", str(run), "--out", str(tmp_path / "x.gif")],
        ["l4", str(run), "--episodes", "1"],
        ["train", "--resume", str(run), "--total-steps", "1024"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "is Python code from a run not trained on this machine" in err, (argv, err)
        assert "--trust-task" in err and not mark.exists(), argv
    assert main(["eval", str(run), "--episodes", "1", "--trust-task"]) == 0
    assert mark.read_text() == "ran" and "trusting" in capsys.readouterr().err
    mark.unlink()
    assert main(["eval", str(run), "--episodes", "1"]) == 0  # trusted from now on
    assert mark.exists()


def test_a_built_in_task_loads_from_the_package_not_the_runs_copy(watched, tmp_path, capsys):
    mark = tmp_path / "ran"
    run = _foreign_task_run(watched, tmp_path, mark)
    record = json.loads((run / "task.json").read_text())
    (run / "task.json").write_text(json.dumps({**record, "ref": "demo-coins"}))
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "1", "--trust-task"]) == 2
    err = capsys.readouterr().err
    assert "the built-in task 'demo-coins' here" in err and "another gbxcule version" in err
    assert not mark.exists()
    assert main(["eval", str(watched[0]), "--episodes", "1"]) == 0  # the package's: fine


def test_a_run_records_where_its_files_are_not_the_shell_it_started_in(
    tmp_path, capsys, monkeypatch
):
    from gbxcule.backends.warp_vec import WarpVecCpuBackend
    from gbxcule.games import bundled_rom_path

    with WarpVecCpuBackend(str(bundled_rom_path("demo")), num_envs=1) as b:
        b.reset()
        b.step([0])
        (tmp_path / "start.state").write_bytes(b.export_pyboy_state(0))
    monkeypatch.chdir(tmp_path)
    argv = ["train", *SMALL, "--total-steps", "32", "--state", "start.state", "--out", "runs"]
    assert main(argv) == 0
    run = _run(tmp_path / "runs").resolve()
    state = json.loads((run / "config.json").read_text())["state"]
    assert state == str(tmp_path / "start.state")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["eval", str(run), "--episodes", "1"]) == 0


class Boom:
    def __reduce__(self):
        return (print, ("this ran",))


def test_a_checkpoint_that_carries_code_is_refused(watched, tmp_path, capsys):
    """``weights_only=True``: a shared checkpoint cannot run code when eval opens it."""
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    latest = run / "checkpoints" / "latest.pt"
    state = load_checkpoint(latest)
    state["extra"] = Boom()
    torch.save(state, latest)
    assert zipfile.is_zipfile(latest)
    capsys.readouterr()
    with pytest.raises(CheckpointError, match="refused: it holds Python objects"):
        load_checkpoint(latest)
    assert main(["eval", str(run), "--episodes", "1"]) == 2
    out = capsys.readouterr()
    assert "this ran" not in out.out + out.err and "refused" in out.err
    with pytest.raises(pickle.UnpicklingError):
        torch.load(latest, weights_only=True)


def _other_policy(run: Path, **changes) -> dict:
    """The run's latest checkpoint with another model (``changes`` to its spec) or task."""
    from gbxcule.rl.models import ConvPolicy

    state = load_checkpoint(run / "checkpoints" / "latest.pt")
    spec = {**state["model_spec"], **{k: v for k, v in changes.items() if k != "task_sha256"}}
    model = ConvPolicy(spec["num_actions"], spec["stack"], spec["obs_format"],
                       tuple(spec["channels"]), spec["hidden"], spec["num_features"])  # fmt: skip
    state["model_spec"], state["model"] = spec, model.state_dict()
    if "task_sha256" in changes:
        state["task_sha256"] = changes["task_sha256"]
    return state


@pytest.mark.parametrize(
    "change,named",
    [
        ({"num_actions": 3}, "num_actions 3, the run wants 7"),
        ({"stack": 4}, "stack 4, the run wants 2"),
        ({"task_sha256": "0" * 64}, "task_sha256 '" + "0" * 64),
    ],  # fmt: skip
    ids=["actions", "stack", "task"],
)
def test_a_checkpoint_of_another_policy_is_refused_naming_both(
    watched, tmp_path, capsys, change, named
):
    """eval, record, l4 and resume refuse a checkpoint whose policy does not fit the run
    (another action count, frame stack or task), before anything is trimmed or played."""
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    assert load_checkpoint(run / "checkpoints" / "latest.pt")["task_sha256"]
    torch.save(_other_policy(run, **change), run / "checkpoints" / "latest.pt")
    metrics = (run / "metrics.jsonl").read_bytes()
    capsys.readouterr()
    for argv in (
        ["eval", str(run), "--episodes", "1"],
        ["record", "--policy", str(run), "--out", str(tmp_path / "x.gif")],
        ["l4", str(run), "--episodes", "1"],
        ["train", "--resume", str(run), "--total-steps", "1024"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "does not fit this run" in err and named in err, (argv, err)
    assert (run / "metrics.jsonl").read_bytes() == metrics
    assert not (tmp_path / "x.gif").exists()


def test_a_checkpoint_with_nan_weights_is_refused_when_loaded(watched, tmp_path, capsys):
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    latest = run / "checkpoints" / "latest.pt"
    state = load_checkpoint(latest)
    name = next(iter(state["model"]))
    state["model"][name] = torch.full_like(state["model"][name], float("nan"))
    torch.save(state, latest)
    capsys.readouterr()
    for argv in (["eval", str(run), "--episodes", "1"],
                 ["train", "--resume", str(run), "--total-steps", "1024"]):  # fmt: skip
        assert main(argv) == 2
        assert f"the policy's {name} holds NaN or infinite values" in capsys.readouterr().err


def test_an_empty_latest_checkpoint_falls_back_to_the_newest_numbered_one(
    watched, tmp_path, capsys
):
    run = Path(shutil.copytree(watched[0], tmp_path / watched[0].name))
    folder = run / "checkpoints"
    shutil.copy(folder / "latest.pt", folder / "update_000004.pt")
    (folder / "latest.pt").write_bytes(b"")
    capsys.readouterr()
    with pytest.warns(UserWarning, match=r"latest\.pt: not a complete checkpoint.*update_000004"):
        assert main(["eval", str(run), "--episodes", "1"]) == 0
    (folder / "update_000004.pt").write_bytes(b"")
    assert main(["eval", str(run), "--episodes", "1"]) == 2
    assert "no checkpoint of" in capsys.readouterr().err


def test_eval_reports_baselines_a_grid_video_and_record_replays_a_policy(watched, tmp_path, capsys):
    import statistics

    from PIL import Image

    from gbxcule.cli.eval import summary_line
    from gbxcule.rl.evaluate import evaluate_episodes
    from gbxcule.tasks import load_run_task

    run = watched[0]
    capsys.readouterr()
    gif = tmp_path / "grid.gif"
    argv = ["eval", str(run), "--episodes", "4", "--baseline", "--gif", str(gif), "--video", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # the printed means are the library's, for the same episodes and seed
    common = dict(episodes=4, backend="warp", seed=0)
    played = {}
    for who, policy in (("policy", "trained"), ("random", "random")):
        rows = played[who] = evaluate_episodes(run, policy=policy, **common)
        assert summary_line(who, rows, "warp") in out, (who, out)
        coins = statistics.fmean(r["terms"]["coins"] for r in rows)
        assert f"{who}: per term coins {coins:+.3f}" in out
    # the paired difference: episode by episode, the same starts and seeds
    diffs = [p["return"] - r["return"] for p, r in zip(played["policy"], played["random"])]
    assert f"policy - random: {statistics.fmean(diffs):+.3f} per episode (95% CI" in out
    assert "paired over 4 episodes" in out
    constants = [
        (statistics.fmean(r["return"] for r in got), k, got)
        for k in range(load_run_task(run).codec.num_actions)
        for got in [evaluate_episodes(run, policy=f"constant:{k}", **common)]
    ]
    mean, k, got = max(constants, key=lambda c: (c[0], -c[1]))
    assert summary_line(f"best constant action ({k})", got, "warp") in out
    assert f"policy - best constant action ({k}): " in out
    assert Image.open(gif).size == (2 * 160 + 2, 2 * 144 + 2)  # 4 envs, 2 x 2, 2 px apart
    clip = tmp_path / "policy.gif"
    assert main(["record", "--policy", str(run), "--out", str(clip)]) == 0
    (row,) = evaluate_episodes(run, episodes=1, seed=0)  # record's episode: its return, length
    want = f"return {row['return']:.3f} over {row['length']} steps -> {clip}"
    assert want in capsys.readouterr().out
    image = Image.open(clip)
    assert image.size == (160, 144) and image.n_frames > 10  # (GIFs merge equal frames)
    assert main(["record", "--policy", str(run), "--out", str(tmp_path / "x.mp4")]) == 2


def test_the_paired_difference_says_when_it_is_not_significant():
    from gbxcule.cli.eval import paired_line

    def rows(returns):
        return [{"start": 0, "return": r} for r in returns]

    base = rows([1.0, 2.0, 3.0, 4.0])
    assert "the policy is better" in paired_line("random", rows([2.0, 3.1, 3.9, 5.0]), base)
    assert "the policy is worse" in paired_line("random", rows([0.0, 1.1, 1.9, 3.0]), base)
    noisy = paired_line("random", rows([2.0, 1.0, 4.0, 3.0]), base)
    assert "+0.000 per episode" in noisy and "not significant (the interval holds 0)" in noisy
    with pytest.raises(ValueError, match="share their starts"):
        paired_line("random", rows([1.0]), [{"start": 1, "return": 0.0}])


def test_checkpoints_kept_are_the_newest_few_and_the_best(tmp_path):
    argv = ["train", *SMALL, "--steps", "32", "--total-steps", "512", "--checkpoint-every", "1",
            "--keep-checkpoints", "2", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    folder = _run(tmp_path) / "checkpoints"
    assert sorted(p.name for p in folder.glob("update_*.pt")) == [
        "update_000003.pt",
        "update_000004.pt",
    ]
    best = json.loads((folder / "best.json").read_text())
    records = Run.open(folder.parent).metrics()
    scores = [r["episode_return_recent"] for r in records]  # None before an episode ends
    top = max(s for s in scores if s is not None)
    assert best["episode_return_recent"] == top
    assert best["update"] == 1 + scores.index(top)  # the first update that reached it
    assert load_checkpoint(folder / "best.pt")["update"] == best["update"]
