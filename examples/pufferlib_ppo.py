"""PPO through PufferLib 3.0's vector API on gbxcule (``gbxcule.envs.make_puffer_env``).

    PYTHONPATH=.pufferlib python examples/pufferlib_ppo.py --num-envs 64 --total-updates 100

``pufferlib.vector.make(make_puffer_env, backend=pufferlib.vector.PufferEnv)`` returns
our native env as the vector env (all Game Boys in one launch); the loop below drives it
the way PufferLib's trainer does (``async_reset``, then ``recv`` / ``send``) and learns
with the CleanRL-style update of ``cleanrl_ppo.py``. PufferLib's own trainer
(``pufferlib.pufferl.PuffeRL``) needs the compiled ``pufferlib._C`` of a CUDA build of
Torch 2.9 (history/ecosystem.md); ``--backend Serial`` runs several of our envs through
PufferLib's Serial backend instead.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pufferlib  # noqa: E402
import pufferlib.vector  # noqa: E402
from cleanrl_ppo import Agent, gae_batch, ppo_update  # noqa: E402

from gbxcule.envs import make_puffer_env  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rom", default=None)
    p.add_argument("--task", default="demo-coins")
    p.add_argument("--num-envs", type=int, default=16, help="Game Boys per PufferEnv")
    p.add_argument("--backend", default="PufferEnv", choices=["PufferEnv", "Serial"])
    p.add_argument("--copies", type=int, default=2, help="PufferEnvs under Serial")
    p.add_argument("--num-steps", type=int, default=32)
    p.add_argument("--total-updates", type=int, default=20)
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
    return p.parse_args(argv)


def make_vecenv(args: argparse.Namespace):
    kwargs = dict(rom=args.rom, num_envs=args.num_envs, task=args.task, stack=args.stack)
    if args.backend == "PufferEnv":
        return pufferlib.vector.make(
            make_puffer_env, env_kwargs=kwargs, backend=pufferlib.vector.PufferEnv
        )
    return pufferlib.vector.make(
        make_puffer_env, env_kwargs=kwargs, backend=pufferlib.vector.Serial, num_envs=args.copies
    )


def unpack_recv(out: tuple) -> tuple:
    """(obs, rewards, terminals, truncations, infos): PufferLib 3.0's ``recv`` returns
    infos 5th; pufferlib-core 3.0.23 puts its ``teacher_actions`` buffer before them."""
    infos = out[4] if isinstance(out[4], list) else out[5]
    return (*out[:4], infos)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vecenv = make_vecenv(args)
    n = vecenv.num_agents
    agent = Agent(args.stack, vecenv.single_action_space.n)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    T = args.num_steps
    obs_buf = torch.zeros((T, n, *vecenv.single_observation_space.shape), dtype=torch.uint8)
    actions = torch.zeros((T, n), dtype=torch.int64)
    logprobs, rewards, dones, values = (torch.zeros((T, n)) for _ in range(4))
    vecenv.async_reset(seed=0)  # PufferLib's protocol: async_reset / recv / send
    next_obs = torch.from_numpy(np.asarray(vecenv.recv()[0]).copy())
    next_done = torch.zeros(n)
    log, episode_infos = [], []
    start = time.perf_counter()
    for update in range(1, args.total_updates + 1):
        for t in range(T):
            obs_buf[t], dones[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(next_obs)
            actions[t], logprobs[t], values[t] = action, logp, value
            vecenv.send(action.numpy().astype(np.int32))
            o, r, term, trunc, infos = unpack_recv(vecenv.recv())
            episode_infos += [i for i in infos if "episode_return" in i]
            rewards[t] = torch.from_numpy(np.asarray(r, dtype=np.float32).copy())
            next_obs = torch.from_numpy(np.asarray(o).copy())
            next_done = torch.from_numpy(np.asarray(term) | np.asarray(trunc)).float()
        b = gae_batch(
            agent, args, obs_buf, actions, logprobs, rewards, dones, values, next_obs, next_done
        )
        stats = ppo_update(agent, optimizer, args, b)
        sps = update * T * n / (time.perf_counter() - start)
        ret = episode_infos[-1]["episode_return"] if episode_infos else None
        stats.update(update=update, sps=round(sps, 1), episode_return=ret)
        log.append(stats)
        print(f"update {update} sps {sps:.0f} return {ret} pg {stats['pg_loss']:.4f}", flush=True)
    vecenv.close()
    return log


if __name__ == "__main__":
    main()
