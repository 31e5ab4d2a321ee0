"""CleanRL-style PPO in one file, on gbxcule's Gymnasium vector env.

    python examples/cleanrl_ppo.py --num-envs 64 --total-updates 200            # CPU
    python examples/cleanrl_ppo.py --device cuda --num-envs 4096 --total-updates 500

The env is ``gbxcule.envs.make_vector_env`` with ``autoreset_mode="same_step"`` (the
observation after a done is the next episode's first, as CleanRL's scripts assume).
On CUDA the env returns Torch tensors on the GPU, so nothing crosses to the host.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical

from gbxcule.envs import make_vector_env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="demo-coins")
    p.add_argument("--rom", default=None, help="default: the task's ROM (the demo game)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=32, help="steps per env per update")
    p.add_argument("--total-updates", type=int, default=50)
    p.add_argument("--stack", type=int, default=2)
    p.add_argument("--lr", type=float, default=2.5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--update-epochs", type=int, default=2)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.1)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--torch-threads", type=int, default=1, help="more oversubscribes the env's")
    return p.parse_args(argv)


class Agent(nn.Module):
    """Nature-CNN-like net on [stack, 72, 80] shades 0..3."""

    def __init__(self, stack: int, num_actions: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(stack, 16, 8, stride=4),
            nn.ReLU(),
            nn.Conv2d(16, 32, 4, stride=2),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(32 * 7 * 8, 256),
            nn.ReLU(),
        )
        self.actor = nn.Linear(256, num_actions)
        self.critic = nn.Linear(256, 1)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs.float() / 3.0)

    def get_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.features(obs)).flatten()

    def get_action_and_value(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        h = self.features(obs)
        dist = Categorical(logits=self.actor(h))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h).flatten()


def as_tensor(x, device: torch.device) -> torch.Tensor:
    return x if torch.is_tensor(x) else torch.as_tensor(np.asarray(x), device=device)


def ppo_update(agent, optimizer, args, b) -> dict[str, float]:
    batch = b["obs"].shape[0]
    mb = batch // args.num_minibatches
    for _ in range(args.update_epochs):
        for idx in torch.randperm(batch, device=b["obs"].device).split(mb):
            _, logp, ent, value = agent.get_action_and_value(b["obs"][idx], b["actions"][idx])
            ratio = (logp - b["logprobs"][idx]).exp()
            adv = b["advantages"][idx]
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = torch.max(
                -adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
            ).mean()
            v_loss = 0.5 * ((value - b["returns"][idx]) ** 2).mean()
            loss = pg_loss - args.ent_coef * ent.mean() + args.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            optimizer.step()
    return {"pg_loss": pg_loss.item(), "v_loss": v_loss.item(), "entropy": ent.mean().item()}


def gae_batch(agent, args, obs_buf, actions, logprobs, rewards, dones, values, next_obs, next_done):
    """GAE over a ``[T, N]`` rollout (``dones[t]``: obs t starts a new episode, CleanRL's
    convention) and the flat minibatch source for :func:`ppo_update`."""
    T = rewards.shape[0]
    with torch.no_grad():
        next_value = agent.get_value(next_obs)
        adv = torch.zeros_like(rewards)
        last = torch.zeros_like(rewards[0])
        for t in reversed(range(T)):
            nonterm = 1.0 - (next_done if t == T - 1 else dones[t + 1])
            nv = next_value if t == T - 1 else values[t + 1]
            delta = rewards[t] + args.gamma * nv * nonterm - values[t]
            adv[t] = last = delta + args.gamma * args.gae_lambda * nonterm * last
    return {
        "obs": obs_buf.flatten(0, 1),
        "actions": actions.flatten(0, 1),
        "logprobs": logprobs.flatten(0, 1),
        "advantages": adv.flatten(0, 1),
        "returns": (adv + values).flatten(0, 1),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    envs = make_vector_env(
        args.rom,
        args.num_envs,
        args.task,
        device=args.device,
        stack=args.stack,
        autoreset_mode="same_step",
    )
    device = envs.device
    agent = Agent(args.stack, envs.single_action_space.n).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    T, N = args.num_steps, args.num_envs
    obs_buf = torch.zeros(
        (T, N, *envs.single_observation_space.shape), dtype=torch.uint8, device=device
    )
    actions = torch.zeros((T, N), dtype=torch.int64, device=device)
    logprobs, rewards, dones, values = (torch.zeros((T, N), device=device) for _ in range(4))
    next_obs = as_tensor(envs.reset(seed=args.seed)[0], device)
    next_done = torch.zeros(N, device=device)
    log, ep_returns, ep_return = [], [], torch.zeros(N, device=device)
    start = time.perf_counter()
    for update in range(1, args.total_updates + 1):
        for t in range(T):
            obs_buf[t], dones[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(next_obs)
            actions[t], logprobs[t], values[t] = action, logp, value
            o, r, term, trunc, _ = envs.step(action if device.type == "cuda" else action.numpy())
            rewards[t] = as_tensor(r, device).float()
            done = as_tensor(term, device) | as_tensor(trunc, device)
            ep_return += rewards[t]
            ep_returns += ep_return[done].tolist() if device.type == "cpu" else []
            ep_return = ep_return * (~done)
            next_obs, next_done = as_tensor(o, device), done.float()
        b = gae_batch(
            agent, args, obs_buf, actions, logprobs, rewards, dones, values, next_obs, next_done
        )
        stats = ppo_update(agent, optimizer, args, b)
        sps = update * T * N / (time.perf_counter() - start)
        recent = ep_returns[-100:]
        stats.update(
            update=update,
            sps=round(sps, 1),
            episodes=len(ep_returns),
            mean_return=float(np.mean(recent)) if recent else None,
        )
        log.append(stats)
        print(
            f"update {update} sps {sps:.0f} episodes {len(ep_returns)} "
            f"return {stats['mean_return']} pg {stats['pg_loss']:.4f} v {stats['v_loss']:.4f}",
            flush=True,
        )
    envs.close()
    return log


if __name__ == "__main__":
    main()
