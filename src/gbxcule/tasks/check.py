"""A task tried before it is trained on: a short random rollout through the episode driver
(:class:`~gbxcule.tasks.session.TaskSession`, as training runs it: the start pool, the
action rules, resets, the swarm), then what a user needs to know about it.

:func:`check_task` returns a :class:`CheckReport`: each read's range and whether it ever
moved, each reward term's mean, max and how often it paid, the episodes that ended and
how (terminated / truncated) and their lengths, the frames a step ran, a contact sheet of
the first envs' screens, and warnings a user can act on (a term that never pays, a read
that never changes, episodes that never end or end at once, a feature too large for its
scale, a reward so rare in random play that learning may not start). A predicate that raises is a ``TaskError`` naming it. :func:`first_difference`
compares the traces of two backends (ours and PyBoy) step by step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gbxcule.tasks.session import TaskSession, make_task_backend
from gbxcule.tasks.task import Task
from gbxcule.tasks.terms import StepCost

SHEET_ENVS = 16  # envs on the contact sheet
SHEET_FRAMES = 40  # frames of the contact-sheet GIF, spread over the rollout
FEATURE_LIMIT = 10.0  # a feature's |value * scale| past this dwarfs the rest of the input
RARE_SHARE = 0.01  # of random episodes earning any reward: below it, say learning may not start
RARE_MIN_EPISODES = 100  # fewer finished episodes say too little about a 1% share


@dataclass
class ReadStats:
    name: str
    lo: int
    hi: int
    changed: bool  # within an episode (not only across starts)


@dataclass
class TermStats:
    name: str
    mean: float  # per env-step
    max: float
    paid: float  # fraction of env-steps with a non-zero reward


@dataclass
class CheckReport:
    task: str
    backend: str
    envs: int
    steps: int
    seed: int
    reads: list[ReadStats]
    terms: list[TermStats]
    episodes: int
    terminated: int
    truncated: int
    lengths: tuple[float, int, int]  # mean, min, max of finished episodes (steps)
    returns: tuple[float, float, float]  # mean, min, max of finished episodes
    frames: tuple[float, int, int]  # per step: mean, min, max
    # finished episodes in which a term other than a StepCost paid (what a policy can seek)
    rewarded: int = 0
    warnings: list[str] = field(default_factory=list)
    sheet: list[np.ndarray] = field(default_factory=list, repr=False)  # uint8 [envs, 72, 80]
    sheet_obs: str = "u8"  # the sheet's frames: DMG shades, or a Game Boy Color game's luma
    trace: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # [steps, envs]


def check_task(
    task: Task,
    *,
    kind: str = "warp",
    envs: int = 16,
    steps: int = 400,
    seed: int = 0,
    threads: int | None = None,
) -> CheckReport:
    """``steps`` steps of uniformly random actions in ``envs`` envs on backend ``kind``
    (``registry.TASK_BACKENDS``), finished episodes restarting (module doc)."""
    backend = make_task_backend(task, envs, kind=kind, threads=threads)
    session = TaskSession(task, backend, seed=seed)
    try:
        return _rollout(task, session, kind, envs, steps, seed)
    finally:
        session.close()


def _rollout(task: Task, session: TaskSession, kind: str, envs: int, steps: int, seed: int):
    session.start()
    rt = session.runtime
    names = list(task.reads)
    gen = torch.Generator().manual_seed(seed)
    n_actions = task.codec.num_actions
    trace = {k: np.zeros((steps, envs), np.float64) for k in ("reward", "terminated",
                                                               "truncated", "frames")}  # fmt: skip
    terms = np.zeros((steps, envs, len(task.terms)), np.float32)
    values = {n: np.zeros((steps, envs), np.int64) for n in names}
    episodes: list[tuple[int, float]] = []  # (length, return) of each finished episode
    seekable = np.array([not isinstance(t, StepCost) for t in task.terms.values()], bool)
    paid_this_episode = np.zeros(envs, bool)
    rewarded = 0
    sheet: list[np.ndarray] = []
    seen = "luma" if getattr(session.backend, "cgb", False) else "u8"  # the sheet's frames
    every = max(1, steps // SHEET_FRAMES)
    for step in range(steps):
        actions = torch.randint(0, n_actions, (envs,), generator=gen)
        res = session.step(actions.to(session.device))
        for name in names:  # this step's values (after_step keeps them as "prev")
            values[name][step] = rt.buffers[f"read.{name}.prev"].cpu().numpy()
        for key in ("reward", "terminated", "truncated", "frames"):
            trace[key][step] = getattr(res, key).cpu().numpy()
        terms[step] = res.terms.cpu().numpy()
        done = res.done.cpu().numpy()
        paid_this_episode |= (terms[step][:, seekable] != 0).any(axis=1)
        for e in np.flatnonzero(done):
            episodes.append((int(res.episode_length[e]), float(res.episode_return[e])))
            rewarded += int(paid_this_episode[e])
            paid_this_episode[e] = False
        if step % every == 0:
            sheet.append(session.observe(seen)[:SHEET_ENVS].cpu().numpy())
        if done.any():
            session.reset_envs(res.done)
        session.swarm()
    same_episode = (trace["terminated"][:-1] == 0) & (trace["truncated"][:-1] == 0)
    moved = {n: bool(((v[1:] != v[:-1]) & same_episode).any()) for n, v in values.items()}
    report = CheckReport(
        task=task.name,
        backend=kind,
        envs=envs,
        steps=steps,
        seed=seed,
        reads=[ReadStats(n, int(values[n].min()), int(values[n].max()), moved[n]) for n in names],
        terms=[
            TermStats(
                t,
                float(terms[..., k].mean()),
                float(terms[..., k].max()),
                float((terms[..., k] != 0).mean()),
            )  # fmt: skip
            for k, t in enumerate(task.terms)
        ],
        episodes=len(episodes),
        rewarded=rewarded,
        terminated=int(trace["terminated"].sum()),
        truncated=int(trace["truncated"].sum()),
        lengths=_spread([length for length, _ in episodes]),
        returns=_spread([ret for _, ret in episodes]),
        frames=(
            float(trace["frames"].mean()),
            int(trace["frames"].min()),
            int(trace["frames"].max()),
        ),  # fmt: skip
        sheet=sheet,
        sheet_obs=seen,
        trace=trace,
    )
    report.warnings = _warnings(task, report)
    return report


def _spread(xs: list[Any]) -> tuple:
    if not xs:
        return (0.0, 0, 0)
    return (float(np.mean(xs)), min(xs), max(xs))


def _warnings(task: Task, r: CheckReport) -> list[str]:
    out = []
    played = f"{r.steps} steps x {r.envs} envs of random play"
    for t in r.terms:
        term = task.terms[t.name]
        if t.paid == 0:
            watched = ", ".join(repr(w) for w in term.watches) or "nothing"
            out.append(
                f"reward term {t.name!r} paid nothing in {played}: check the read it follows "
                f"({watched}): its address and kind; or random play never reaches what it pays "
                "for, and learning will start slowly"
            )
        elif t.paid > 0.95 and not isinstance(term, StepCost):
            out.append(
                f"reward term {t.name!r} paid on {t.paid:.0%} of steps: does its read move by "
                "itself (a timer, a frame counter)? A policy learns nothing from a reward it "
                "cannot change"
            )
    for read in r.reads:
        if not read.changed:
            value = f"always {read.lo}" if read.lo == read.hi else f"{read.lo}..{read.hi} by start"
            out.append(
                f"read {read.name!r} never changed within an episode ({value}): check its "
                "address, size and bank (or random play never moves it)"
            )
    for name, scale in task.features.items():
        (read,) = [x for x in r.reads if x.name == name]
        top = max(abs(read.lo), abs(read.hi)) * abs(scale)
        if top > FEATURE_LIMIT:
            out.append(
                f"feature {name!r} reaches {top:g} (value {max(abs(read.lo), abs(read.hi))} x "
                f"scale {scale:g}): give it a smaller scale (values near 0..1 train best)"
            )
    if r.episodes == 0:
        out.append(
            f"no episode ended in {r.steps} steps (max_steps {task.max_steps}): nothing "
            "here shows that terminated ever fires; try --steps above max_steps"
        )
    elif r.terminated == 0 and task.terminated is not None:
        out.append(
            f"terminated never fired in {r.episodes} episodes: every one ended at max_steps "
            f"({task.max_steps}) or by truncated"
        )
    seekable = [t for t in r.terms if not isinstance(task.terms[t.name], StepCost)]
    paid_some = any(t.paid > 0 for t in seekable)
    if paid_some and r.episodes >= RARE_MIN_EPISODES and r.rewarded < RARE_SHARE * r.episodes:
        out.append(
            f"only {r.rewarded} of {r.episodes} episodes of random play earned a reward "
            f"({r.rewarded / r.episodes:.2%}; step costs not counted): PPO learns from what "
            "random play finds. In bench.genre_learning a reward found in 1.6% of random "
            "episodes was learned within 10 minutes on 2 cores and one found in 0.35% was "
            "not; add a denser term that leads to it (survival, progress toward it) or "
            "start nearer to it"
        )
    if r.episodes and r.lengths[0] <= 2:
        out.append(
            f"episodes end after {r.lengths[0]:.1f} steps on average: is terminated (or "
            "truncated) already true at the start states?"
        )
    return out


def first_difference(a: CheckReport, b: CheckReport) -> str | None:
    """Where two backends' traces of the same check part (reward, ends, frames), or None."""
    for key in ("reward", "terminated", "truncated", "frames"):
        x, y = a.trace[key], b.trace[key]
        bad = np.argwhere(x != y)
        if len(bad):
            step, env = (int(v) for v in bad[0])
            return (
                f"step {step}, env {env}: {key} {x[step, env]:g} on {a.backend}, "
                f"{y[step, env]:g} on {b.backend}"
            )
    return None


def format_report(r: CheckReport) -> str:
    """The report as the CLI prints it."""
    lines = [f"task {r.task!r} on {r.backend}: {r.steps} steps x {r.envs} envs, seed {r.seed}"]
    lines.append("  reads                     min          max  changed")
    for read in r.reads:
        moved = "yes" if read.changed else "NO"
        lines.append(f"    {read.name:<18} {read.lo:>12} {read.hi:>12}  {moved}")
    lines.append("  reward terms        mean/step          max      paid")
    for t in r.terms:
        paid = f"{100 * t.paid:.3g}%"
        lines.append(f"    {t.name:<18} {t.mean:>12.4g} {t.max:>12.4g}  {paid:>7}")
    lines.append(
        f"  episodes ended: {r.episodes} ({r.terminated} terminated, {r.truncated} truncated"
        f", {r.rewarded} earned a reward)"
        + (
            f"; length mean {r.lengths[0]:.1f} (min {r.lengths[1]}, max {r.lengths[2]});"
            f" return mean {r.returns[0]:.4g} (min {r.returns[1]:.4g}, max {r.returns[2]:.4g})"
            if r.episodes
            else ""
        )
    )
    lines.append(
        f"  frames per step: mean {r.frames[0]:.1f} (min {r.frames[1]}, max {r.frames[2]})"
    )
    for w in r.warnings:
        lines.append(f"  warning: {w}")
    if not r.warnings:
        lines.append("  no warnings")
    return "\n".join(lines)
