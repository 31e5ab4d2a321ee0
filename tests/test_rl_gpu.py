"""The RL engine on CUDA: two streams, event ordering, no host sync in the hot loop.

Skipped without a CUDA device (run with ``make test-gpu`` on a GPU machine).
"""

from __future__ import annotations

import pytest
import torch

from gbxcule.backends import pixels as pixels_mod
from gbxcule.rl import async_ppo
from gbxcule.rl.schemas import TrainConfig

pytestmark = [
    pytest.mark.api,
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def cuda_cfg(**kw) -> TrainConfig:
    base = dict(
        num_envs=256,
        num_steps=16,
        total_steps=256 * 16 * 4,
        minibatch_size=1024,
        update_epochs=1,
        device="cuda",
        mode="async",
        sync_guard=True,
        tag="gpu",
    )
    base.update(kw)
    return TrainConfig(**base)


def test_async_cuda_run_has_no_host_sync_and_overlaps(tmp_path):
    from gbxcule.rl.train import train

    run = train(cuda_cfg(), out=tmp_path)  # sync_guard: set_sync_debug_mode("error")
    records = run.metrics()
    assert [r["update"] for r in records] == [0, 1, 2, 3]
    assert all(r["overlap_efficiency"] >= 0.99 for r in records[1:])
    assert "render_ms" not in records[0]  # host timings are CPU-only


def test_actor_reads_the_new_weights_after_policy_ready(tmp_path, monkeypatch):
    """Forced weight change on the learner stream; the checksum the actor stream computes
    right after waiting on policy_ready must equal the learner's after the copy."""
    real = async_ppo.ppo_update
    seen = []

    def forced(model, *a, **k):
        stats = real(model, *a, **k)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)
        return stats

    real_finish = async_ppo.Engine.finish

    def spy(self, p):
        out = real_finish(self, p)
        seen.append((p.actor_checksum.item(), p.learner_checksum.item(), p.read_versions))
        return out

    monkeypatch.setattr(async_ppo, "ppo_update", forced)
    monkeypatch.setattr(async_ppo.Engine, "finish", spy)
    from gbxcule.rl.train import train

    train(cuda_cfg(total_steps=256 * 16 * 5), out=tmp_path)
    for (_, learner_after, _), (actor_next, _, _) in zip(seen, seen[1:]):
        assert actor_next == pytest.approx(learner_after, rel=1e-12)
    for _, _, versions in seen[1:]:  # the buffer was not rewritten while the learner read it
        assert versions[0].item() == versions[1].item()


def test_one_render_per_env_step_on_cuda(monkeypatch):
    from gbxcule.rl.rollout import RolloutBuffer, make_env
    from gbxcule.tasks import load_task

    calls = []
    real = pixels_mod.PixelBuffers._render_shades

    def counting(self, *a):
        calls.append(1)
        return real(self, *a)

    monkeypatch.setattr(pixels_mod.PixelBuffers, "_render_shades", counting)
    cfg = cuda_cfg(num_envs=64)
    env = make_env(load_task("demo-coins"), cfg)
    buf = RolloutBuffer(8, 64, 2, "packed2", "cuda")
    env.start(buf)
    for t in range(8):
        env.step(torch.randint(0, 7, (64,), device="cuda"), buf, t)
    torch.cuda.synchronize()
    assert len(calls) == 9
    env.backend.close()
