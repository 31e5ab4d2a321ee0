"""Env-steps/s of gbxcule's Gymnasium vector env against ``gymnasium.vector.AsyncVectorEnv``
of the PyBoy single env (``gbxcule.envs.reference.PyBoyTaskEnv``), same task, same run.

    python -m bench.envs_vs_async --envs 64 --steps 50 [--device cuda]

Random actions (seeded), ``next_step`` autoreset, u8 observations. Writes one JSONL
record per backend and ``summary.md`` to ``bench/results/envs/`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np


def _run(env, steps: int, n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    env.step(rng.integers(0, 7, size=n))  # warm-up (kernel loads, worker start)
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(rng.integers(0, 7, size=n))
    sync = getattr(getattr(env, "backend", None), "synchronize", None)
    if sync is not None:
        sync()
    dt = time.perf_counter() - t0
    env.close()
    return {"seconds": dt, "env_steps_per_s": steps * n / dt}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--device", default="cpu")
    p.add_argument("--task", default="demo-coins")
    p.add_argument("--out", default="bench/results/envs")
    args = p.parse_args(argv)
    import gymnasium as gym
    import torch

    torch.set_num_threads(1)
    from gbxcule.envs import PyBoyTaskEnv, make_vector_env

    n, records = args.envs, []
    ours = make_vector_env(None, n, args.task, device=args.device)
    records.append({"backend": f"gbxcule-{args.device}", **_run(ours, args.steps, n)})
    ref = gym.vector.AsyncVectorEnv([lambda: PyBoyTaskEnv(None, args.task)] * n)
    records.append({"backend": "pyboy-async", **_run(ref, args.steps, n)})
    ratio = records[0]["env_steps_per_s"] / records[1]["env_steps_per_s"]
    meta = {
        "envs": n,
        "steps": args.steps,
        "task": args.task,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "ratio": ratio,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = f"{args.device.replace(':', '')}-{n}"
    with open(out / f"envs_vs_async-{tag}.jsonl", "w") as f:
        for r in records:
            f.write(json.dumps({**meta, **r}) + "\n")
    lines = [f"# envs vs AsyncVectorEnv({n} x PyBoy), task {args.task}, {os.cpu_count()} CPUs", ""]
    lines += ["| backend | env-steps/s |", "|---|---|"]
    lines += [f"| {r['backend']} | {r['env_steps_per_s']:.0f} |" for r in records]
    lines += ["", f"ratio: {ratio:.2f}x AsyncVectorEnv"]
    (out / f"summary-{tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
