"""Evaluate a trained policy over fresh episodes, on our backend or on PyBoy, and draw
the run's learning curve.

:func:`evaluate` runs ``episodes`` envs for one episode each, from starts drawn from
the run's task's pool (a seeded draw: the same starts on both backends), with
:func:`gbxcule.rl.agent.load_policy`'s agent (the same code for both backends: the agent
sees ``uint8 [N, 72, 80]`` shades) and returns every episode's return; it can write env
0's episode as a GIF. :func:`plot_learning_curve` writes
the mean episode return per update against env steps as a PNG (matplotlib, imported
lazily).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gbxcule.core.dmg import FRAMES_PER_SECOND
from gbxcule.files import write_atomic
from gbxcule.rl.agent import load_policy, policy_fit
from gbxcule.rl.experiment import Run, check_run_inputs
from gbxcule.tasks.load import load_run_task, run_task_sha256
from gbxcule.tasks.session import TaskSession, make_task_backend


def _session(
    task: Any, cfg: Any, episodes: int, backend: str, seed: int, starts: list | None
) -> TaskSession:
    """``episodes`` envs of the run's task on ``backend`` (``registry.TASK_BACKENDS``:
    warp, ours on the CPU; pyboy, PyBoy 2.8.1 processes), starts drawn from the task's pool
    (or ``starts``) with ``seed``."""
    b = make_task_backend(task, episodes, kind=backend, rom=cfg.rom)
    try:
        if starts is None and cfg.state is not None:
            starts = [cfg.state]
        return TaskSession(task, b, starts=starts, seed=seed)
    except BaseException:
        b.close()
        raise


POLICIES = ("trained", "random", "constant:K")


def evaluate(run_dir: str | Path, **kwargs: Any) -> list[float]:
    """The returns of :func:`evaluate_episodes` (same arguments)."""
    return [r["return"] for r in evaluate_episodes(run_dir, **kwargs)]


def evaluate_episodes(
    run_dir: str | Path,
    *,
    episodes: int = 16,
    backend: str = "warp",
    deterministic: bool = False,
    seed: int = 0,
    gif: str | Path | None = None,
    starts: list[str | Path] | None = None,
    policy: str = "trained",
    gif_envs: int = 1,
) -> list[dict[str, Any]]:
    """One row per episode: ``return``, its ``terms`` (each reward term's part), ``length``
    and the ``start`` (index into the pool, or into ``starts``: held-out start states). ``policy="random"`` plays uniformly random
    actions on the same starts with the same generator (a baseline in the same run)."""
    run = Run.open(run_dir)
    cfg = run.config()
    task = load_run_task(run.path)
    check_run_inputs(run, cfg, task, own_starts=starts is None)
    constant = _constant_action(policy, task.codec.num_actions)
    fit = policy_fit(cfg, task, run_task_sha256(run.path))
    agent = load_policy(run.path, fit=fit) if policy == "trained" else None
    gen = torch.Generator().manual_seed(seed)
    session = _session(task, cfg, episodes, backend, seed, starts)
    b = session.backend
    try:
        session.start()  # every env at a start drawn from the pool, its screen rendered
        drawn = session.slots.cpu().tolist()
        alive = torch.ones(episodes, dtype=torch.bool)
        result = session.new_result()
        # each episode's return, term sums and length where it ended (the session keeps them)
        total = torch.zeros(episodes, dtype=torch.float64)
        terms = torch.zeros((episodes, len(task.terms)), dtype=torch.float64)
        length = torch.zeros(episodes, dtype=torch.int64)
        shown = range(min(gif_envs, episodes))
        shots = [_shot(b, shown)] if gif is not None else []
        # what the agent takes: DMG shades (it packs them for packed2), or colour frames
        seen = "u8" if agent is None or agent.obs_format == "packed2" else agent.obs_format
        for _ in range(task.max_steps):
            if agent is not None:
                frames = session.observe(seen)  # the start's own screen at step 0, as trained
                feats = session.runtime.features() if task.features else None
                actions = agent.act(
                    frames, generator=gen, deterministic=deterministic, features=feats
                )
            elif constant is not None:
                actions = torch.full((episodes,), constant, dtype=torch.int64)
            else:
                actions = torch.randint(0, task.codec.num_actions, (episodes,), generator=gen)
            r = session.step(actions, result)
            total = torch.where(alive, r.episode_return.cpu(), total)
            terms = torch.where(alive[:, None], r.episode_terms.cpu(), terms)
            length = torch.where(alive, r.episode_length.cpu().to(torch.int64), length)
            alive &= ~r.done.cpu()
            if gif is not None and alive[: len(shown)].any():
                shots.append(_shot(b, shown))
            if not alive.any():
                break
    finally:
        b.close()
    if gif is not None:
        from gbxcule.images import write_gif

        frame_ms = max(20, round(1000 * task.frames_per_step / FRAMES_PER_SECOND))
        write_gif(shots, gif, scale=1, frame_ms=frame_ms, shades=not getattr(b, "cgb", False))
    names = list(task.terms)  # the episodes' rows, each term's part of the return
    return [
        {
            "episode": e,
            "return": float(total[e]),
            "length": int(length[e]),
            "start": drawn[e],
            "terms": dict(zip(names, terms[e].tolist())),
        }
        for e in range(episodes)
    ]


def plot_learning_curve(run_dir: str | Path, path: str | Path | None = None) -> Path:
    """``learning_curve.png`` in the run (or ``path``): mean episode return vs env steps."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "the learning-curve PNG needs matplotlib (pip install matplotlib, or the dev extra)"
        ) from exc
    run = Run.open(run_dir)
    records = [r for r in run.metrics() if r.get("episode_return") is not None]
    steps = np.array([r["env_steps"] for r in records], dtype=float)
    ret = np.array([r["episode_return"] for r in records], dtype=float)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(steps, ret, alpha=0.35, label="episodes finished in each update")
    recent = [(r["env_steps"], r.get("episode_return_recent")) for r in records]
    recent = [(x, y) for x, y in recent if y is not None]
    if recent:  # the running mean over the latest >= 100 episodes (rl/monitor.py)
        xs, ys = zip(*recent)
        ax.plot(xs, ys, label="mean of the latest 100+ episodes")
    elif len(ret) >= 5:  # runs from before the running mean was recorded
        k = max(5, len(ret) // 20)
        smooth = np.convolve(ret, np.ones(k) / k, mode="valid")
        ax.plot(steps[k - 1 :], smooth, label=f"mean of {k} updates")
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return")
    ax.set_title(run.run_id, fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return write_atomic(path or run.path / "learning_curve.png", buf.getvalue())


def _constant_action(policy: str, num_actions: int) -> int | None:
    if policy in ("trained", "random"):
        return None
    kind, _, value = str(policy).partition(":")
    if kind != "constant" or not value.isdigit() or not int(value) < num_actions:
        raise ValueError(
            f"policy must be one of trained, random or constant:K (K < {num_actions}), "
            f"got {policy!r}"
        )
    return int(value)


def _shot(backend: Any, envs: range) -> Any:
    from gbxcule.images import tile_frames

    frames = list(backend.screens(list(envs)))  # shades, or RGB on a Game Boy Color game
    gap = {"gap": 0} if frames[0].ndim == 3 else {}  # RGB tiles: black gaps
    return frames[0] if len(frames) == 1 else tile_frames(frames, **gap)
