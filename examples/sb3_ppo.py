"""Stable-Baselines3's PPO on gbxcule: the demo game's coin task, CnnPolicy on shades.

    python examples/sb3_ppo.py --num-envs 16 --total-timesteps 200000      # CPU
    python examples/sb3_ppo.py --device cuda --num-envs 1024 --total-timesteps 5000000

``gbxcule.envs.make_sb3_env`` is a Stable-Baselines3 ``VecEnv`` (``pip install
gbxcule[sb3]``); ``VecMonitor`` keeps the episode returns Stable-Baselines3 logs. The
observations are 2-bit shades (0-3), so the policy takes them as they are
(``normalize_images=False``) rather than dividing by 255. Stable-Baselines3 works on
NumPy: on CUDA each step's observations come to the host once.
"""

from __future__ import annotations

import argparse
import time

from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor

from gbxcule.envs import make_sb3_env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="demo-coins")
    p.add_argument("--rom", default=None, help="default: the task's ROM (the demo game)")
    p.add_argument("--device", default="cpu", help="where the Game Boys run")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--stack", type=int, default=4)
    p.add_argument("--n-steps", type=int, default=64, help="steps per env per update")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--total-timesteps", type=int, default=50_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report-every", type=int, default=0, help="timesteps between reports")
    p.add_argument("--save", default=None, help="where to save the trained model (.zip)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> PPO:
    args = parse_args(argv)
    env = VecMonitor(
        make_sb3_env(args.rom, args.num_envs, args.task, device=args.device, stack=args.stack)
    )
    model = PPO(
        "CnnPolicy",
        env,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=2,
        learning_rate=2.5e-4,
        ent_coef=0.01,
        seed=args.seed,
        policy_kwargs={"normalize_images": False},
        device="cuda" if args.device.startswith("cuda") else "cpu",
    )
    t0 = time.perf_counter()
    chunk = args.report_every or args.total_timesteps
    while model.num_timesteps < args.total_timesteps:
        left = args.total_timesteps - model.num_timesteps
        model.learn(total_timesteps=min(chunk, left), reset_num_timesteps=False)
        seconds = time.perf_counter() - t0
        returns = [ep["r"] for ep in model.ep_info_buffer]
        mean = sum(returns) / len(returns) if returns else float("nan")
        print(
            f"{model.num_timesteps} steps in {seconds:.1f} s "
            f"({model.num_timesteps / seconds:,.0f} steps/s); "
            f"mean return of the last {len(returns)} episodes {mean:.2f}",
            flush=True,
        )
    if args.save:
        model.save(args.save)
    env.close()
    return model


if __name__ == "__main__":
    main()
