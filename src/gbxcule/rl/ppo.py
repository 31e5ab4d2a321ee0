"""PPO math: GAE, the clipped surrogate, value loss, entropy, grad clipping, minibatches.

Written to read like CleanRL's ``ppo_atari_envpool.py`` (names and order of the loss
terms), over our :class:`~gbxcule.rl.rollout.RolloutBuffer`. Nothing here reads a value
back to the host: statistics stay tensors until the engine logs them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from gbxcule.rl.rollout import RolloutBuffer

STAT_NAMES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "nonfinite")


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``rewards, dones [T, N]`` (``dones[t]``: the episode ended at step t), ``values
    [T+1, N]`` (the last row bootstraps) -> ``(advantages, returns) [T, N]``."""
    T = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        nextnonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * values[t + 1] * nextnonterminal - values[t]
        lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        advantages[t] = lastgaelam
    return advantages, advantages + values[:-1]


def learner_chunk(cfg: Any, device: torch.device) -> int:
    """Samples one forward/backward takes (``TrainConfig.learner_chunk``; 0: 512 on a CPU,
    whose caches a 2,048-sample pass overflows, 1.5-1.9x slower a sample on the AMD EPYC
    here; the whole minibatch on CUDA)."""
    if cfg.learner_chunk > 0:
        return int(cfg.learner_chunk)
    return CPU_CHUNK if torch.device(device).type == "cpu" else int(cfg.minibatch_size)


CPU_CHUNK = 512


def _chunk_loss(model, buf, cfg, mb, t_idx, n_idx, adv, act, old_logp, ret, old_val):
    """The PPO loss of a chunk of a minibatch of ``mb`` samples, as its share of the
    minibatch's means (sums over the chunk / ``mb``), and the shares of the statistics."""

    def share(x: torch.Tensor) -> torch.Tensor:
        return x.sum() / mb

    obs = buf.stacked_at(t_idx, n_idx)
    logits, newvalue = model(obs, buf.features_at(t_idx, n_idx))
    logp_all = torch.log_softmax(logits, dim=-1)
    newlogp = logp_all.gather(1, act.unsqueeze(1)).squeeze(1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    logratio = newlogp - old_logp
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = share((ratio - 1) - logratio)
        clipfrac = share(((ratio - 1.0).abs() > cfg.clip_coef).float())
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1 - cfg.clip_coef, 1 + cfg.clip_coef)
    pg_loss = share(torch.max(pg_loss1, pg_loss2))
    # Clipped value loss (CleanRL's clip_vloss=True).
    v_unclipped = (newvalue - ret) ** 2
    v_clipped = old_val + torch.clamp(newvalue - old_val, -cfg.clip_coef, cfg.clip_coef)
    v_loss = 0.5 * share(torch.max(v_unclipped, (v_clipped - ret) ** 2))
    entropy_loss = share(entropy)
    loss = pg_loss - cfg.ent_coef * entropy_loss + v_loss * cfg.vf_coef
    bad_logits = (~torch.isfinite(logits.detach())).any().float()
    shares = torch.stack([pg_loss.detach(), v_loss.detach(), entropy_loss.detach(),
                          approx_kl, clipfrac, bad_logits])  # fmt: skip
    return loss, shares


def ppo_update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    buf: RolloutBuffer,
    cfg: Any,
    generator: torch.Generator | None = None,
    inject_nan: bool = False,
    dist: Any = None,
) -> torch.Tensor:
    """``update_epochs`` passes of minibatch PPO over ``buf``; returns the mean of
    :data:`STAT_NAMES` over minibatches as a float32 tensor on the buffer's device.

    With ``dist`` (a :class:`gbxcule.rl.distributed.DistContext` of several ranks) the
    batch is the global one (every rank's envs, rank-major): the permutation is drawn
    over it with the same generator on every rank, advantages are all-gathered so each
    minibatch is normalised over the global minibatch, each rank computes its envs'
    share of every mean (``sum / minibatch``), and the gradients are summed over the
    ranks before clipping: the gradient of the one-process loss. The returned stats are
    this rank's shares (the engine sums them over the ranks)."""
    if dist is not None and dist.sharded:
        with dist.allow_host_sync():
            return _ppo_update(model, optimizer, buf, cfg, generator, inject_nan, dist)
    return _ppo_update(model, optimizer, buf, cfg, generator, inject_nan, None)


def _ppo_update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    buf: RolloutBuffer,
    cfg: Any,
    generator: torch.Generator | None,
    inject_nan: bool,
    dist: Any,
) -> torch.Tensor:
    device = buf.device
    advantages, returns = compute_gae(buf.rewards, buf.values, buf.dones, cfg.gamma, cfg.gae_lambda)
    b_adv, b_ret = advantages.reshape(-1), returns.reshape(-1)
    b_logp, b_act = buf.logprobs.reshape(-1), buf.actions.reshape(-1)
    b_val = buf.values[:-1].reshape(-1)
    n_all, lo = buf.N, 0
    g_adv = b_adv
    if dist is not None:  # the global advantages [T, P*N], for the minibatch normalisation
        n_all, lo = dist.num_envs_global, dist.env_lo
        g_adv = dist.gather_envs(advantages).reshape(-1)
    batch = g_adv.numel()
    mb = min(cfg.minibatch_size, batch)
    chunk = learner_chunk(cfg, device)
    stats = torch.zeros(len(STAT_NAMES), dtype=torch.float32, device=device)
    count = 0
    for _epoch in range(cfg.update_epochs):
        order = torch.randperm(batch, device=device, generator=generator)
        for start in range(0, batch - mb + 1, mb):
            idx = order[start : start + mb]
            mb_adv = g_adv[idx]
            if cfg.norm_adv:
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            if dist is None:
                t_idx, n_idx = idx // buf.N, idx % buf.N
            else:  # this rank's envs of the global minibatch
                n_glob = idx % n_all
                pos = torch.nonzero((n_glob >= lo) & (n_glob < lo + buf.N)).squeeze(1)
                t_idx, n_idx = idx[pos] // n_all, n_glob[pos] - lo
                mb_adv = mb_adv[pos]
                idx = t_idx * buf.N + n_idx
            optimizer.zero_grad(set_to_none=True)
            mb_stats = torch.zeros_like(stats)
            for c in range(0, idx.numel(), chunk):  # each chunk adds its share of the means
                part = slice(c, c + chunk)
                loss, shares = _chunk_loss(
                    model, buf, cfg, mb, t_idx[part], n_idx[part], mb_adv[part],
                    b_act[idx[part]], b_logp[idx[part]], b_ret[idx[part]], b_val[idx[part]],
                )  # fmt: skip
                if inject_nan:
                    loss = loss * float("nan")
                loss.backward()
                bad = torch.maximum(shares[-1], (~torch.isfinite(loss.detach())).float())
                mb_stats[:-1] += shares[:-1]
                mb_stats[-1] = torch.maximum(mb_stats[-1], bad)  # 1: a chunk was not finite
            if dist is not None:
                dist.reduce_grads(model.parameters())
            nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            stats += mb_stats
            count += 1
    return stats / max(count, 1)
