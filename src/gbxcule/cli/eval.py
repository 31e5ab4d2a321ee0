"""``gbxcule eval RUN_DIR``: the mean return of a trained policy over fresh episodes."""

from __future__ import annotations

import argparse
import statistics

from gbxcule.backends.registry import TASK_BACKENDS
from gbxcule.cli.command import EXIT_OK, add_trust_task, positive_int, seed_int, trust_if_asked

HELP = "mean return of a trained policy (run dir or checkpoint) over fresh episodes"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a run directory written by gbxcule train")
    p.add_argument("--episodes", type=positive_int, default=32, help="fresh episodes (default 32)")
    p.add_argument(
        "--backend",
        choices=TASK_BACKENDS,
        default="warp",
        help="emulator to run the policy on (pyboy: PyBoy 2.8.1 processes)",
    )
    p.add_argument(
        "--deterministic", action="store_true", help="argmax actions instead of sampling"
    )
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--gif", default=None, help="write env 0's episode as a GIF here")
    p.add_argument(
        "--video",
        type=positive_int,
        default=1,
        metavar="N",
        help="the GIF shows N envs in a grid (1)",
    )
    p.add_argument(
        "--state",
        action="append",
        default=None,
        metavar="FILE",
        help="a start state (repeat for a pool) instead of the task's: held-out starts",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="also play a uniformly random policy and the best constant action, on the same "
        "starts and seeds",
    )
    add_trust_task(p)


def run(args: argparse.Namespace) -> int:
    import torch

    from gbxcule.rl.evaluate import evaluate_episodes

    torch.set_num_threads(1)  # see TrainConfig.torch_threads
    trust_if_asked(args, args.run_dir)
    common = dict(episodes=args.episodes, backend=args.backend, seed=args.seed, starts=args.state)
    rows = evaluate_episodes(
        args.run_dir, deterministic=args.deterministic, gif=args.gif, gif_envs=args.video, **common
    )
    print("episode  start    return  length")
    for r in rows:
        print(f"{r['episode']:7d}  {r['start']:5d}  {r['return']:8.3f}  {r['length']:6d}")
    print(summary_line("policy", rows, args.backend))
    print(terms_line("policy", rows))
    if len({(r["return"], r["length"]) for r in rows}) == 1 and len(rows) > 1:
        print(
            f"warning: all {len(rows)} episodes are identical: a deterministic game from one "
            "start gives one episode; add start states or sticky actions to the task"
        )
    if args.baseline:
        baseline = evaluate_episodes(args.run_dir, policy="random", **common)
        print(summary_line("random", baseline, args.backend))
        print(terms_line("random", baseline))
        print(paired_line("random", rows, baseline))
        from gbxcule.tasks import load_run_task

        best = None
        for k in range(load_run_task(args.run_dir).codec.num_actions):
            got = evaluate_episodes(args.run_dir, policy=f"constant:{k}", **common)
            mean = statistics.fmean(r["return"] for r in got)
            if best is None or mean > best[0]:
                best = (mean, k, got)
        assert best is not None
        name = f"best constant action ({best[1]})"
        print(summary_line(name, best[2], args.backend))
        print(terms_line(name, best[2]))
        print(paired_line(name, rows, best[2]))
    return EXIT_OK


def terms_line(who: str, rows: list[dict]) -> str:
    """Each reward term's mean part of an episode's return."""
    names = list(rows[0]["terms"]) if rows else []
    parts = ", ".join(f"{n} {statistics.fmean(r['terms'][n] for r in rows):+.3f}" for n in names)
    return f"{who}: per term {parts or '(none)'}"


def paired_line(who: str, policy: list[dict], other: list[dict]) -> str:
    """The policy's return minus ``who``'s, episode by episode (the same starts and
    seeds: paired), with its 95% CI and whether it excludes zero."""
    from gbxcule.rl.l4 import mean_ci

    if [r["start"] for r in policy] != [r["start"] for r in other]:
        raise ValueError("paired episodes must share their starts")
    diffs = [p["return"] - o["return"] for p, o in zip(policy, other, strict=True)]
    mean, lo, hi = mean_ci(diffs)
    if len(diffs) < 2:
        return f"policy - {who}: {mean:+.3f} (one episode: no interval)"
    verdict = (
        "the policy is better" if lo > 0 else "the policy is worse" if hi < 0
        else "not significant (the interval holds 0)"
    )  # fmt: skip
    return (
        f"policy - {who}: {mean:+.3f} per episode (95% CI {lo:+.3f} to {hi:+.3f}, paired "
        f"over {len(diffs)} episodes): {verdict}"
    )


def summary_line(who: str, rows: list[dict], backend: str) -> str:
    from gbxcule.rl.l4 import mean_ci

    returns = [r["return"] for r in rows]
    mean, lo, hi = mean_ci(returns)
    length = statistics.fmean(r["length"] for r in rows)
    ci = "" if len(rows) < 2 else f" (95% CI {lo:.3f} to {hi:.3f})"
    return (
        f"{who}: mean return {mean:.3f}{ci} over {len(rows)} episodes on {backend}, "
        f"mean length {length:.1f}"
    )
