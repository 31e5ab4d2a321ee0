"""L4: a policy loaded with ``load_policy`` acts the same on our backend and on PyBoy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.backends.pyboy_backend import PyBoySingleBackend
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import pixels as px
from gbxcule.demo.rom import demo_rom_path
from gbxcule.rl.agent import load_policy
from gbxcule.rl.schemas import TrainConfig
from gbxcule.rl.train import train

pytestmark = pytest.mark.l4

N, STEPS = 2, 12


def test_the_same_agent_code_drives_both_backends_to_the_same_actions(tmp_path):
    cfg = TrainConfig(
        num_envs=4, num_steps=8, total_steps=32, minibatch_size=16, update_epochs=1, threads=1
    )
    run = train(cfg, out=tmp_path)
    actions = {}
    for name in ("warp", "pyboy"):
        agent = load_policy(run.path)
        gen = torch.Generator().manual_seed(7)
        if name == "warp":
            b = WarpVecCpuBackend(demo_rom_path(), num_envs=N, render_pixels=True, threads=1)
            frames = b.pixels_torch
        else:
            b = PyBoySingleBackend(demo_rom_path(), num_envs=N)
            frames = lambda b=b: torch.from_numpy(  # noqa: E731
                px.downsample(np.stack([b.frame_shades(e) for e in range(N)]))
            )
        seq = []
        agent.reset()
        for t in range(STEPS):  # before the first step our screen is not rendered yet: zeros
            f = frames() if t else torch.zeros(N, 72, 80, dtype=torch.uint8)
            a = agent.act(f, generator=gen)
            seq.append(a.tolist())
            b.step(a.numpy())
        b.close()
        actions[name] = seq
    assert actions["warp"] == actions["pyboy"]
    assert len({tuple(s) for s in actions["warp"]}) > 1  # not a constant policy by accident
