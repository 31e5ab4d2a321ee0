"""RL training: run directory artifacts, PPO math, the engine's ordering, fail-fast bundles."""

from __future__ import annotations

import json
import threading

import pytest
import torch

from gbxcule.rl import async_ppo
from gbxcule.rl.experiment import Run, append_jsonl, load_checkpoint
from gbxcule.rl.models import resolve_precision, sample_actions
from gbxcule.rl.ppo import compute_gae
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.train import TrainingFailed, train
from gbxcule.tasks import load_task

pytestmark = pytest.mark.api


def tiny(**kw) -> TrainConfig:
    base = dict(
        num_envs=4,
        num_steps=8,
        total_steps=4 * 8 * 2,
        minibatch_size=16,
        update_epochs=1,
        threads=1,
        checkpoint_every=2,
        channels=(4, 8),
        hidden=16,
        tag="t",
    )
    base.update(kw)
    return TrainConfig(**base)


META_KEYS = {
    "run_id", "schemas", "rom", "starts", "num_envs", "frames_per_step", "release_after_frames",
    "stack", "obs_format", "action_codec", "algo", "algo_version", "git", "platform", "python",
    "torch", "warp", "cuda_available", "gpu", "world_size",
}  # fmt: skip


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_writes_every_artifact(tmp_path, mode):
    run = train(tiny(mode=mode), out=tmp_path)
    parts = run.path.name.split("__")
    assert len(parts) == 4 and parts[1] == "ppo" and parts[3] == "t"
    meta = json.loads((run.path / "meta.json").read_text())
    assert META_KEYS <= set(meta) and len(meta["rom"]["sha256"]) == 64
    resolved = resolve_precision("auto", "cpu")  # the run records what "auto" chose here
    assert run.config() == tiny(mode=mode, precision=resolved)
    records = run.metrics()
    assert [r["update"] for r in records] == [0, 1]
    assert records[-1]["env_steps"] == 64 and records[0]["run_id"] == run.run_id
    for key in ("sps", "actor_ms", "learner_ms", "overlap_efficiency", "episodes", "render_ms"):
        assert key in records[0]
    assert "reward/coins" in records[0]  # each reward term's mean part of an episode
    assert (run.path / "task.py").read_bytes() == load_task("demo-coins").source.path.read_bytes()
    assert meta["task_file"]["name"] == "demo-coins" and meta["task_name"] == "demo-coins"
    assert ("policy_loss" in records[0]) == (mode == "sync")  # async learns one update behind
    assert "policy_loss" in records[1]
    assert sorted(p.name for p in (run.path / "checkpoints").iterdir()) == [
        "latest.pt",
        "update_000002.pt",
    ]
    ckpt = load_checkpoint(run.path)
    assert ckpt["update"] == 2 and ckpt["env_steps"] == 64 and len(ckpt["start_states"]) == 1
    assert not list(run.path.rglob(".*"))  # no temp files left behind


def test_a_nan_loss_writes_a_bundle_and_fails(tmp_path):
    with pytest.raises(TrainingFailed) as info:
        train(tiny(debug_nan_at_update=1), out=tmp_path)
    bundle = info.value.bundle
    assert bundle.parent.name == "failures"
    names = {p.name for p in bundle.iterdir()}
    assert {"traceback.txt", "error.json", "config.json", "tensors.pt", "repro.sh"} <= names
    assert "NonFiniteError" in (bundle / "traceback.txt").read_text()
    tensors = torch.load(bundle / "tensors.pt")
    assert tensors["obs"].shape == (2, 72, 20) and tensors["actions"].shape == (2, 8)
    assert "--resume" in (bundle / "repro.sh").read_text()


def test_gae_matches_the_recursion():
    rewards = torch.tensor([[1.0], [0.0], [2.0]])
    values = torch.tensor([[0.5], [0.25], [1.0], [4.0]])
    dones = torch.tensor([[0.0], [1.0], [0.0]])
    g, lam = 0.9, 0.8
    adv, ret = compute_gae(rewards, values, dones, g, lam)
    d2 = 2.0 + g * 4.0 - 1.0
    d1 = 0.0 - 0.25  # the episode ended at step 1: no bootstrap
    d0 = 1.0 + g * 0.25 - 0.5
    want = [d0 + g * lam * d1, d1, d2]
    assert adv.flatten().tolist() == pytest.approx(want)
    assert ret.flatten().tolist() == pytest.approx([w + v for w, v in zip(want, [0.5, 0.25, 1.0])])


def test_actor_uses_the_weights_the_learner_just_copied(tmp_path, monkeypatch):
    """A forced weight change in every learner step shows up in the actor's next rollout,
    and the learner's buffer is never rewritten while it reads it."""
    real = async_ppo.ppo_update
    seen = []

    def forced(model, *a, **k):
        stats = real(model, *a, **k)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)  # far from anything PPO would do
        return stats

    monkeypatch.setattr(async_ppo, "ppo_update", forced)
    import gbxcule.rl.train as train_mod

    real_finish = async_ppo.Engine.finish

    def spy(self, p):
        out = real_finish(self, p)
        seen.append((p.actor_checksum.item(), p.learner_checksum.item(), p.read_versions))
        return out

    monkeypatch.setattr(async_ppo.Engine, "finish", spy)
    train_mod.train(tiny(mode="async", total_steps=4 * 8 * 3), out=tmp_path)
    for (_, learner_after, _), (actor_next, _, _) in zip(seen, seen[1:]):
        assert actor_next == pytest.approx(learner_after, rel=1e-12)
    for _, _, versions in seen[1:]:
        assert versions[0].item() == versions[1].item()


def test_sampling_follows_the_softmax():
    logits = torch.log(torch.tensor([[1.0, 3.0, 0.0 + 1e-9, 4.0]])).expand(40_000, 4)
    gen = torch.Generator().manual_seed(0)
    counts = torch.bincount(sample_actions(logits, gen), minlength=4).double() / 40_000
    assert counts.tolist() == pytest.approx([0.125, 0.375, 0.0, 0.5], abs=0.01)
    assert sample_actions(logits, deterministic=True).eq(3).all()


def test_metrics_drop_a_torn_line_and_updates_past_the_checkpoint(tmp_path):
    run = Run(tmp_path)
    for u in range(3):
        append_jsonl(run.metrics_path, {"update": u})
    with open(run.metrics_path, "ab") as fh:
        fh.write(b'{"update": 3, "sp')
    assert run.trim_metrics(2) == 2
    assert [r["update"] for r in run.metrics()] == [0, 1]
    assert run.metrics_path.read_bytes().endswith(b"\n")


def test_on_the_cpu_async_learns_on_its_own_thread_and_its_errors_reach_the_caller(
    tmp_path, monkeypatch
):
    real = async_ppo.ppo_update
    threads = []

    def watched(*a, **k):
        threads.append(threading.current_thread().name)
        return real(*a, **k)

    monkeypatch.setattr(async_ppo, "ppo_update", watched)
    import gbxcule.rl.train as train_mod

    run = train_mod.train(tiny(mode="async", total_steps=4 * 8 * 3), out=tmp_path / "a")
    assert threads == ["gbxcule-learner"] * 2  # updates 1 and 2 (update 0 has nothing yet)
    for record in run.metrics():  # the emulator alone, measured once, beside each update
        assert (
            record["emulator_sps"] > 0 == record["emulator_sps"] - run.metrics()[0]["emulator_sps"]
        )
        assert record["vs_emulator"] == pytest.approx(record["sps"] / record["emulator_sps"])

    def broken(*a, **k):
        raise RuntimeError("learner broke")

    monkeypatch.setattr(async_ppo, "ppo_update", broken)
    with pytest.raises(train_mod.TrainingFailed) as info:
        train_mod.train(tiny(mode="async", total_steps=4 * 8 * 3), out=tmp_path / "b")
    assert "learner broke" in str(info.value.cause)


def test_a_bf16_trunk_trains_and_its_checkpoint_says_so(tmp_path):
    from gbxcule.rl.agent import CheckpointError, check_policy_fits, load_policy
    from gbxcule.rl.models import ConvPolicy

    model = ConvPolicy(5, 2, precision="bf16")
    seen = []
    model.body[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    logits, value = model(torch.zeros((3, 2, 72, 20), dtype=torch.uint8))
    assert seen == [torch.bfloat16] and logits.dtype == value.dtype == torch.float32
    run = train(tiny(precision="bf16", total_steps=4 * 8 * 2), out=tmp_path)
    ckpt = load_checkpoint(run.path)
    assert ckpt["model_spec"]["precision"] == "bf16"
    assert load_policy(run.path).model.precision == "bf16"
    with pytest.raises(CheckpointError, match="precision 'bf16', the run wants 'fp32'"):
        check_policy_fits(ckpt, {"precision": "fp32"}, "ckpt")
    old = {**ckpt, "model_spec": {k: v for k, v in ckpt["model_spec"].items() if k != "precision"}}
    check_policy_fits(old, {"precision": "fp32"}, "ckpt")  # from before: fp32
    with pytest.raises(ValueError, match="precision must be one of"):
        ConvPolicy(5, 2, precision="fp16")


def test_auto_precision_is_resolved_and_recorded_and_old_runs_stay_fp32(tmp_path, monkeypatch):
    from gbxcule.rl import models

    assert models.resolve_precision("fp32", "cpu") == "fp32"
    assert models.resolve_precision("auto", "cuda:0") == "fp32"
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)
    assert models.resolve_precision("auto", "cpu") == "bf16"
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    assert models.resolve_precision("auto", "cpu") == "fp32"
    run = train(tiny(precision="auto", total_steps=4 * 8), out=tmp_path)
    assert run.config().precision == "fp32"  # resolved (here: no bf16), never "auto"
    old = {k: v for k, v in TrainConfig().to_json().items() if k != "precision"}
    assert TrainConfig.from_json(old).precision == "fp32"
