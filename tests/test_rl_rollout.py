"""RL rollout storage and tasks: one render per env-step into the slot, rewards from RAM."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from gbxcule.backends import pixels as pixels_mod
from gbxcule.core import pixels as px
from gbxcule.demo import game
from gbxcule.rl.rollout import RolloutBuffer, make_env, stack_frames
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.tasks import get_task, packed_l1_distance

pytestmark = pytest.mark.api

N, T = 3, 5


def _env(obs_format: str = "packed2", max_steps: int | None = None):
    spec = get_task("demo-coins")
    if max_steps is not None:
        spec = dataclasses.replace(spec, max_steps=max_steps)
    cfg = TrainConfig(num_envs=N, obs_format=obs_format, threads=1)
    return make_env(spec, cfg), RolloutBuffer(T, N, 2, obs_format, "cpu")


def _actions(t: int) -> torch.Tensor:
    return torch.tensor([(t + e) % 7 for e in range(N)], dtype=torch.int64)


def test_one_render_per_env_step_into_the_slot(monkeypatch):
    calls = []
    real = pixels_mod.PixelBuffers._render_shades

    def counting(self, video, latch, video_log, shades, packed, stream):
        calls.append((shades is not None, packed is not None))
        return real(self, video, latch, video_log, shades, packed, stream)

    monkeypatch.setattr(pixels_mod.PixelBuffers, "_render_shades", counting)
    env, buf = _env(max_steps=3)  # a reset inside the rollout too
    env.start(buf)
    for t in range(T):
        env.step(_actions(t), buf, t)
    assert calls == [(False, True)] * (T + 1)
    # Each slot holds what the emulator shows: the last step's frame, packed.
    shades = np.stack([px.downsample(env.backend.frame_shades(e)) for e in range(N)])
    assert np.array_equal(px.unpack_shades(buf.obs[T].numpy()), shades)
    env.backend.close()


def test_packed_and_u8_slots_agree_and_resets_show_the_start_frame():
    frames = {}
    for fmt in ("packed2", "u8"):
        env, buf = _env(fmt, max_steps=3)
        env.start(buf)
        for t in range(T):
            env.step(_actions(t), buf, t)
        frames[fmt] = buf.obs.clone()
        assert buf.dones[2].tolist() == [1.0] * N and buf.dones[:2].sum() == 0
        assert buf.first[buf.slot(3)].all() and not buf.first[buf.slot(2)].any()
        env.backend.close()
    assert torch.equal(px.pack_shades_torch(frames["u8"]), frames["packed2"])
    # After the truncation reset, slot 3 shows the start state's screen again (= slot 0).
    assert torch.equal(frames["packed2"][3], frames["packed2"][0])
    assert not torch.equal(frames["packed2"][2], frames["packed2"][0])


def test_reward_is_the_coin_increase_during_the_step():
    env, buf = _env()
    env.start(buf)
    env.step(_actions(0), buf, 0)  # the game's init clears WRAM during its first frame

    def coins(e: int) -> int:
        return int.from_bytes(env.backend.read_memory(e, game.W_SCORE, game.W_SCORE + 2), "little")

    before = [coins(e) for e in range(N)]
    env.backend.write_memory(1, game.W_SCORE, bytes([5, 0]))  # +5 coins "during" step 0
    env.backend.write_memory(2, game.W_SCORE, bytes([0xFF, 0xFF]))
    env.step(_actions(1), buf, 1)
    after = [coins(e) for e in range(N)]
    assert buf.rewards[1].tolist() == [float((a - b) % 65536) for a, b in zip(after, before)]
    assert buf.rewards[1, 1].item() >= 5
    env.backend.write_memory(2, game.W_SCORE, bytes([1, 0]))  # 0xFFFF -> 1: a 16-bit wrap
    env.step(_actions(2), buf, 2)
    assert buf.rewards[2, 2].item() == (coins(2) - after[2]) % 65536 >= 2
    env.backend.close()


def test_stack_frames_never_reaches_across_an_episode_start():
    frames = torch.arange(1, 4, dtype=torch.uint8).view(3, 1, 1, 1).expand(3, 2, 72, 20).clone()
    first = torch.tensor([[False, False], [False, True], [False, False]])
    out = stack_frames(frames, first)
    assert out.shape == (2, 3, 72, 20)
    assert out[0, :, 0, 0].tolist() == [1, 2, 3]
    assert out[1, :, 0, 0].tolist() == [0, 2, 3]


def test_packed_l1_distance_matches_the_core_lut():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, size=(4, 72, 20), dtype=np.uint8)
    g = rng.integers(0, 256, size=(72, 20), dtype=np.uint8)
    want = px.packed_l1_distance(a, np.broadcast_to(g, a.shape))
    got = packed_l1_distance(torch.from_numpy(a), torch.from_numpy(g))
    assert got.tolist() == want.tolist()
    assert packed_l1_distance(torch.from_numpy(a), torch.from_numpy(a)).sum().item() == 0


def test_per_env_start_states_restart_each_env_from_its_own_slot():
    env, buf = _env(max_steps=2)
    env.start(buf)
    for t in range(3):  # make the envs differ, then keep two of them as start states
        env.step(_actions(t), buf, t % T)
    b = env.backend
    states = [b.capture_state(0), b.capture_state(1)]
    env.start(buf, start_states=states)
    assert b.num_start_states == 2 and b.last_reset_slots().numpy().tolist() == [0, 1, 0]
    frames = buf.obs[0].clone()
    assert torch.equal(frames[0], frames[2]) and not torch.equal(frames[0], frames[1])
    for t in range(2):
        env.step(_actions(t), buf, t)  # truncation after 2 steps: every env restored again
    assert torch.equal(buf.obs[2], frames)
    env.backend.close()
