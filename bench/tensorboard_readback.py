"""A run's TensorBoard files read back with TensorBoard's own reader, drawn as one PNG.

No browser here to screenshot TensorBoard with: this reads ``RUN/tensorboard`` through
``EventAccumulator`` (what TensorBoard's server uses) and draws what its Scalars and
Images tabs would show for the main tags: the running episode return, SPS, the policy
loss, each reward term, and the latest screens grid. Writes ``tensorboard.png``,
``results.jsonl`` and ``summary.md`` (every tag with its point count) to ``--out``.

Usage: python -m bench.tensorboard_readback RUN_DIR [--out DIR]
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from bench.report import write_report
from gbxcule.files import write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "tensorboard-readback"
SHOWN = ("episode/episode_return_recent", "perf/sps", "losses/policy_loss")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(args.run / "tensorboard"), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    rewards = sorted(t for t in tags["scalars"] if t.startswith("reward/"))
    panels = [t for t in (*SHOWN, *rewards) if t in tags["scalars"]]
    fig, axes = plt.subplots(2, 3, figsize=(13, 6.5), dpi=90)
    for ax, name in zip(axes.flat, [*panels[:5], "media/screens"]):
        if name == "media/screens":
            events = acc.Images(name)
            if events:
                ax.imshow(Image.open(io.BytesIO(events[-1].encoded_image_string)), cmap="gray")
                ax.set_title(f"{name} (step {events[-1].step:,})", fontsize=9)
            ax.axis("off")
            continue
        points = acc.Scalars(name)
        ax.plot([p.step for p in points], [p.value for p in points])
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("env steps", fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle(f"{args.run.name}: read back from its TensorBoard files", fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "tensorboard.png", buf.getvalue())
    rows = [
        {
            "tag": t,
            "kind": kind,
            "points": len(acc.Scalars(t) if kind == "scalars" else acc.Images(t)),
        }
        for kind in ("scalars", "images")
        for t in sorted(tags[kind])
    ]
    lines = [
        f"# TensorBoard tags of `{args.run.name}`",
        "",
        "| tag | kind | points |",
        "|---|---|---:|",
    ]
    lines += [f"| {r['tag']} | {r['kind']} | {r['points']} |" for r in rows]
    write_report(args.out, rows, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
