"""Write PNG (last frame) and optionally GIF (one frame per step) of chosen envs.

    python tools/snapshot.py ROM --backend warp-cpu --envs 0 3 --steps 120 --out out/snap --gif

Frames come from the backend's ``frame_shades(env)`` (full 144x160 shades; on our
Warp backends that is ``kernels.ppu.render.render_full_kernel``), written by
``gbxcule.images`` in PyBoy's 4 DMG greys. Actions are random in the backend's codec
(``--seed``) or none.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from gbxcule.backends.registry import backend_names, make_backend
from gbxcule.core.actions import get_codec
from gbxcule.images import write_gif, write_png


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("rom", type=Path)
    p.add_argument("--backend", default="warp-cpu", choices=backend_names())
    p.add_argument("--num-envs", type=int, default=None, help="default: max(--envs) + 1")
    p.add_argument("--envs", type=int, nargs="+", default=[0], help="envs to snapshot")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--frames-per-step", type=int, default=4)
    p.add_argument("--release-after-frames", type=int, default=2)
    p.add_argument("--codec", default="buttons")
    p.add_argument("--actions", choices=["none", "random"], default="none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=2)
    p.add_argument("--gif", action="store_true", help="also write one GIF frame per step")
    p.add_argument("--out", type=Path, default=Path("out/snapshots"))
    args = p.parse_args(argv)
    if min(args.envs) < 0:
        p.error("--envs must be >= 0")
    if args.num_envs is None:
        args.num_envs = max(args.envs) + 1
    if max(args.envs) >= args.num_envs:
        p.error(f"--envs must be < --num-envs ({args.num_envs})")
    if args.steps < 1 or args.scale < 1:
        p.error("--steps and --scale must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.rom.is_file():
        print(f"snapshot: no ROM at {args.rom}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    codec = get_codec(args.codec)
    backend = make_backend(
        args.backend,
        str(args.rom),
        num_envs=args.num_envs,
        frames_per_step=args.frames_per_step,
        release_after_frames=args.release_after_frames,
        action_codec=args.codec,
    )
    frames: dict[int, list[np.ndarray]] = {env: [] for env in args.envs}
    try:
        backend.reset(args.seed)
        for _ in range(args.steps):
            if args.actions == "random":
                actions = rng.integers(0, codec.num_actions, args.num_envs)
            else:
                actions = np.zeros(args.num_envs, dtype=np.int64)
            backend.step(actions)
            if args.gif:
                for env in args.envs:
                    frames[env].append(backend.frame_shades(env))
        stem = args.rom.stem
        for env in args.envs:
            png = args.out / f"{stem}_{args.backend}_env{env}.png"
            write_png(backend.frame_shades(env), png, args.scale)
            print(png)
            if args.gif:
                gif = png.with_suffix(".gif")
                write_gif(frames[env], gif, args.scale)
                print(gif)
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
