"""A/B of the CPU backend across source trees: warp-cpu's process time per step, each tree
built and timed in child processes of its own, the trees alternating round by round.

A change to the step kernel moves the CPU's time by a few percent, about what a busy spell
of this shared machine does, and clang's allocation of the whole instruction loop makes
the sign hard to guess (history/cpu-instruction-count.md). So each measurement is one
child process (1 env, 24 frames/step, buttons released after 8, seeded random actions, 2
warm-up steps, then ``--steps`` steps timed by the process's CPU time), the trees take
turns within a round and the order rotates from round to round; the summary gives each
tree's median and its ratio to the first tree's. A tree is a git revision of this
checkout (its ``src/`` exported to a temporary directory) or a directory holding a
``gbxcule`` package (``src`` is the working tree as it is). Every child checks that it
imported ``gbxcule`` from its tree. Each tree is built once, untimed, before the rounds
(a cold build takes seconds; Warp's kernel cache keeps it).

Appends one JSONL row per measurement to results.jsonl and rewrites summary.md (every run,
oldest first) and ab.png (the latest run) beside it.
Usage: python -m bench.cpu_ab --trees REV_OR_DIR,REV_OR_DIR[,...] [--rom busy,game,demo]
       [--rounds 3] [--steps 30] [--out DIR] [--label TEXT]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.step_settings import ACTION_CODEC, FRAMES_PER_STEP, RELEASE_AFTER_FRAMES

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results" / "cpu-ab"
ROMS = ("busy", "game", "demo")


@dataclass(frozen=True)
class Tree:
    name: str  # as given on the command line
    source: str  # the commit it was exported from, or the directory's absolute path
    path: Path  # the directory holding the gbxcule package


def materialize(name: str, tmp: Path) -> Tree:
    """``name`` as a source tree: an existing directory holding ``gbxcule/`` (or ``src/
    gbxcule/``), else a git revision of this checkout, whose ``src/`` goes under ``tmp``."""
    given = Path(name)
    if given.is_dir():
        for cand in (given, given / "src"):
            if (cand / "gbxcule" / "__init__.py").is_file():
                return Tree(name, str(cand.resolve()), cand.resolve())
        raise ValueError(f"{name}: a directory without a gbxcule package (nor src/gbxcule)")
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if rev.returncode != 0:
        raise ValueError(f"{name}: neither a directory nor a git revision of {REPO}")
    sha = rev.stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", sha, "src"],
        capture_output=True,
        check=True,
    ).stdout
    dest = tmp / sha[:12]
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    if not (dest / "src" / "gbxcule" / "__init__.py").is_file():
        raise ValueError(f"{name} ({sha[:12]}): no src/gbxcule package at that revision")
    return Tree(name, sha, dest / "src")


def resolve_rom(rom: str) -> str:
    """A bench ROM name (``demo``, ``busy``, ``game``, a ``loop-*``: bench/sweep.py's
    ``resolve_rom``) as its ROM file, else a path to a ROM file that must exist."""
    from bench.rom_names import resolve_rom as named_or_path

    path = named_or_path(rom)
    if not Path(path).is_file():
        raise ValueError(f"ROM {rom!r}: not one of {', '.join(ROMS)} nor a file")
    return path


def run_child(rom: str, steps: int, tree: Path) -> dict:
    """In the child: ``steps`` timed steps of warp-cpu built from ``tree`` (0: build only)."""
    import numpy as np

    import gbxcule
    from gbxcule.backends.registry import make_backend

    imported = Path(gbxcule.__file__).resolve()
    if tree.resolve() not in imported.parents:
        raise RuntimeError(f"the child imported gbxcule from {imported}, not from {tree}")
    env = make_backend(
        "warp-cpu",
        rom,
        num_envs=1,
        frames_per_step=FRAMES_PER_STEP,
        release_after_frames=RELEASE_AFTER_FRAMES,
        action_codec=ACTION_CODEC,
    )
    try:
        env.reset(seed=0)
        actions = np.random.default_rng(0).integers(0, 7, size=(steps + 2, 1), dtype=np.int64)
        for k in range(min(2, steps)):
            env.step(actions[k])
        t0 = time.process_time()
        for k in range(steps):
            env.step(actions[2 + k])
        spent = time.process_time() - t0
    finally:
        env.close()
    return {"imported": str(imported), "us_per_step": spent / max(steps, 1) * 1e6}


def child(tree: Tree, rom: str, steps: int) -> dict:
    """One child process for ``tree``; its report."""
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tree.path), str(REPO)])
    cmd = [sys.executable, "-m", "bench.cpu_ab", "--child", rom, str(steps), str(tree.path)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"{tree.name} on {rom}: the child failed\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    trees: list[Tree], paths: dict[str, str], rounds: int, steps: int, label: str
) -> list[dict]:
    """Every tree built once, then ``rounds`` rounds per ROM (``paths``: name -> file), the
    trees' order rotating."""
    from bench.machine_info import device_name, versions

    for tree in trees:
        child(tree, next(iter(paths.values())), 0)
    run_id = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    machine = {"device": device_name("warp-cpu"), "versions": versions()}
    rows = []
    for rom, path in paths.items():
        for r in range(rounds):
            k = r % len(trees)
            for tree in trees[k:] + trees[:k]:
                report = child(tree, path, steps)
                rows.append(
                    {
                        "run": run_id,
                        "label": label,
                        "rom": rom,
                        "round": r,
                        "tree": tree.name,
                        "source": tree.source,
                        "steps": steps,
                        "us_per_step": report["us_per_step"],
                        "imported": report["imported"],
                        **machine,
                        "timestamp": time.time(),
                    }
                )
                print(f"{rom} round {r} {tree.name}: {report['us_per_step']:,.1f} us/step")
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Per run, ROM and tree (first-seen order): median, min, max and × the first tree."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        tree = r["tree"] if r["source"].startswith("/") else f"{r['tree']} ({r['source'][:9]})"
        groups.setdefault((r["run"], r["label"], r["rom"], tree), []).append(r["us_per_step"])
    out, first = [], {}
    for (run, label, rom, tree), values in groups.items():
        med = statistics.median(values)
        base = first.setdefault((run, rom), med)
        out.append(
            {
                "run": run,
                "label": label,
                "rom": rom,
                "tree": tree,
                "n": len(values),
                "median": med,
                "min": min(values),
                "max": max(values),
                "ratio": med / base,
            }
        )
    return out


def write_summary(out_dir: Path) -> Path:
    rows = [json.loads(x) for x in (out_dir / "results.jsonl").read_text().splitlines() if x]
    lines = [
        "# CPU A/B: warp-cpu's process time per step, tree against tree",
        "",
        "1 env, 24 frames/step; one child process per measurement, the trees alternating "
        "within each round; medians. `× first`: against the first tree of the run (below 1: "
        "faster). All runs in `results.jsonl`, oldest first.",
        "",
        "| run (UTC) | label | ROM | tree | rounds | median µs/step | min–max | × first |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for s in summarize(rows):
        lines.append(
            f"| {s['run']} | {s['label']} | {s['rom']} | `{s['tree']}` | {s['n']} "
            f"| {s['median']:,.1f} | {s['min']:,.1f}–{s['max']:,.1f} | {s['ratio']:.3f} |"
        )
    from gbxcule.files import write_atomic

    return write_atomic(out_dir / "summary.md", ("\n".join(lines) + "\n").encode())


def write_plot(out_dir: Path, rows: list[dict]) -> None:
    """ab.png: the run's ratio to the first tree by ROM, a point per tree (min–max whiskers);
    skipped when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot (results.jsonl and summary.md written)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = summarize(rows)
    roms = list(dict.fromkeys(s["rom"] for s in stats))
    trees = list(dict.fromkeys(s["tree"] for s in stats))
    base = {s["rom"]: s["median"] / s["ratio"] for s in stats}
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(roms), 3.6))
    width = 0.8 / len(trees)
    for j, tree in enumerate(trees):
        mine = [next(s for s in stats if s["rom"] == rom and s["tree"] == tree) for rom in roms]
        xs = [i + (j - (len(trees) - 1) / 2) * width for i in range(len(roms))]
        ys = [s["ratio"] for s in mine]
        lo = [s["ratio"] - s["min"] / base[s["rom"]] for s in mine]
        hi = [s["max"] / base[s["rom"]] - s["ratio"] for s in mine]
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=tree)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(roms)), roms)
    ax.set_ylabel("time per step × first tree")
    ax.set_title(f"warp-cpu A/B, {rows[0]['run']} UTC", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    from gbxcule.files import write_atomic

    write_atomic(out_dir / "ab.png", buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trees", default="", help="comma list: git revisions or directories")
    ap.add_argument("--rom", default="busy,game", help=f"comma list of {', '.join(ROMS)} or paths")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per measurement")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    ap.add_argument("--label", default="")
    ap.add_argument("--child", nargs=3, metavar=("ROM", "STEPS", "TREE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child[0], int(args.child[1]), Path(args.child[2]))))
        return 0
    names = [x for x in args.trees.split(",") if x]
    roms = [x for x in args.rom.split(",") if x]
    if len(names) < 2:
        ap.error("--trees: give at least two trees (git revisions or directories)")
    if args.rounds < 1 or args.steps < 1 or not roms:
        ap.error("--rounds and --steps must be positive, --rom not empty")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            trees = [materialize(n, Path(tmp)) for n in names]
            paths = {rom: resolve_rom(rom) for rom in roms}
        except ValueError as exc:
            ap.error(str(exc))
        rows = measure(trees, paths, args.rounds, args.steps, args.label)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "results.jsonl").open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    print(write_summary(args.out).read_text())
    write_plot(args.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
