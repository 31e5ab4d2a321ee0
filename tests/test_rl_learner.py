"""The learner's arithmetic shortcuts change no result: the input table gives the shades
the unpack-and-scale did, bit for bit, and a minibatch trained in chunks makes the update
the whole minibatch makes."""

from __future__ import annotations

import pytest
import torch

from gbxcule.rl.models import ConvPolicy, input_table
from gbxcule.rl.ppo import STAT_NAMES, learner_chunk, ppo_update
from gbxcule.rl.rollout import RolloutBuffer
from gbxcule.rl.schemas import TrainConfig

pytestmark = pytest.mark.api


def _unpack_and_scale(obs: torch.Tensor, obs_format: str) -> torch.Tensor:
    """What the trunk computed before the table: shifts and masks, float, times 1/3."""
    if obs_format == "packed2":
        shifts = torch.tensor([0, 2, 4, 6], dtype=torch.uint8)
        obs = ((obs.unsqueeze(-1) >> shifts) & 3).reshape(*obs.shape[:-1], 80)
    return obs.to(torch.float32) * (1.0 / 3.0)


@pytest.mark.parametrize("obs_format,width", [("packed2", 20), ("u8", 80)])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_input_table_gives_the_unpacked_scaled_shades_exactly(obs_format, width, precision):
    obs = torch.arange(256, dtype=torch.uint8).repeat(3 * 72 * width // 256 + 1)
    obs = obs[: 3 * 72 * width].reshape(3, 1, 72, width)  # every byte value appears
    table = input_table(obs_format, precision)
    got = torch.nn.functional.embedding(obs.long(), table).reshape(3, 1, 72, 80)
    want = _unpack_and_scale(obs, obs_format)
    if precision == "bf16":  # what autocast handed the first conv
        want = want.to(torch.bfloat16)
    assert got.dtype == want.dtype and torch.equal(got, want)


def _filled_buffer(seed: int) -> RolloutBuffer:
    gen = torch.Generator().manual_seed(seed)
    buf = RolloutBuffer(16, 8, 2, "packed2", "cpu")
    buf.frames.copy_(torch.randint(0, 256, buf.frames.shape, generator=gen, dtype=torch.uint8))
    buf.first.copy_(torch.rand(buf.first.shape, generator=gen) < 0.05)
    buf.rewards.copy_(torch.randn(buf.rewards.shape, generator=gen))
    buf.values.copy_(torch.randn(buf.values.shape, generator=gen))
    buf.dones.copy_((torch.rand(buf.dones.shape, generator=gen) < 0.05).float())
    buf.actions.copy_(torch.randint(0, 5, buf.actions.shape, generator=gen))
    buf.logprobs.copy_(-torch.rand(buf.logprobs.shape, generator=gen) - 1.0)
    return buf


def _update(chunk: int, precision: str = "fp32"):
    torch.manual_seed(0)
    model = ConvPolicy(5, 2, "packed2", (4, 8), 32, precision=precision)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-5)
    cfg = TrainConfig(num_envs=8, num_steps=16, minibatch_size=64, update_epochs=2)
    cfg.learner_chunk = chunk
    stats = ppo_update(model, opt, _filled_buffer(3), cfg, torch.Generator().manual_seed(7))
    return model, stats


@pytest.mark.parametrize("chunk", [7, 16, 1000])
def test_a_minibatch_in_chunks_makes_the_update_the_whole_minibatch_makes(chunk):
    whole, whole_stats = _update(64)
    parts, part_stats = _update(chunk)
    for (name, a), b in zip(whole.named_parameters(), parts.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=name)
    torch.testing.assert_close(whole_stats, part_stats, rtol=1e-4, atol=1e-6)
    assert whole_stats.shape == (len(STAT_NAMES),)


def test_chunked_updates_still_move_the_weights_and_flag_a_nan():
    torch.manual_seed(0)
    before = ConvPolicy(5, 2, "packed2", (4, 8), 32)  # the init _update starts from
    after, _ = _update(7)
    moved = [not torch.equal(a, b) for a, b in zip(before.parameters(), after.parameters())]
    assert all(moved)
    model = ConvPolicy(5, 2, "packed2", (4, 8), 32)
    cfg = TrainConfig(num_envs=8, num_steps=16, minibatch_size=64, learner_chunk=7)
    opt = torch.optim.Adam(model.parameters())
    stats = ppo_update(model, opt, _filled_buffer(3), cfg, inject_nan=True)
    assert stats[STAT_NAMES.index("nonfinite")] == 1.0  # every minibatch flagged once


def test_the_chunk_is_cache_sized_on_a_cpu_and_whole_on_cuda_unless_set():
    cfg = TrainConfig(minibatch_size=2048)
    assert learner_chunk(cfg, torch.device("cpu")) == 512
    assert learner_chunk(cfg, torch.device("cuda", 0)) == 2048
    cfg.learner_chunk = 100
    assert learner_chunk(cfg, torch.device("cuda", 0)) == 100
    with pytest.raises(ValueError, match="learner_chunk must be >= 0"):
        TrainConfig(learner_chunk=-1).check()
