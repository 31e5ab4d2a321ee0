"""``gbxcule demo``: N copies of a bundled game under seeded random actions.

Runs a bundled game (``--game``: the demo, :mod:`gbxcule.demo`, by default; every one in
:mod:`gbxcule.games`) on the Warp backend (CUDA when Warp sees a device,
else the CPU), ``pokemonred_puffer_v1`` actions, 24 frames per step with the
buttons released after 8. Prints steps/s and frames/s (timed from the second
step: the first one includes loading or compiling the kernels), each shown
env's score, position (and the like: the game's ``status``) read from WRAM, and writes into ``--out``:

* ``final_frames.png``: every env's last frame, tiled (8 per row for 64 envs),
  160x144 each in the DMG greys, separated by a black gap;
* ``envs.gif``: the first few envs side by side, one GIF frame per step, in real
  time.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.cli.command import nonnegative_int, positive_int, seed_int
from gbxcule.cli.playback import (
    DEVICES,
    backend_for,
    gif_frame_ms,
    random_actions,
    timed_step,
)
from gbxcule.games import DEFAULT_GAME, GAMES, bundled_game, bundled_rom_path
from gbxcule.images import GAP_SHADE, grid_cols, tile_frames, write_gif, write_png

HELP = "run N envs of a bundled game; print steps/s, write a PNG grid and a GIF"
CODEC = "pokemonred_puffer_v1"
FRAMES_PER_STEP = 24
RELEASE_AFTER_FRAMES = 8
SHOWN_ENVS = 8  # env lines printed


@dataclass(frozen=True)
class EnvSummary:
    env: int
    values: dict[str, int]  # the game's status: score, position, ticks run, ...

    @property
    def score(self) -> int:
        return self.values["score"]


@dataclass(frozen=True)
class DemoResult:
    backend: str
    game: str
    num_envs: int
    steps: int
    timed_steps: int
    seconds: float  # wall time of the timed steps
    first_step_seconds: float
    envs: list[EnvSummary]
    png: Path
    gif: Path
    gif_envs: list[int]

    @property
    def sps(self) -> float:
        """Env-steps per second over the timed steps (all envs together)."""
        return self.timed_steps * self.num_envs / self.seconds if self.seconds > 0 else math.inf

    @property
    def fps(self) -> float:
        """Emulated frames per second, all envs together."""
        return self.sps * FRAMES_PER_STEP


def read_env(backend: Any, env: int, game: str = DEFAULT_GAME) -> EnvSummary:
    """The game's status values of ``env`` (score, position, ...) from its documented RAM."""
    values = bundled_game(game).read_status(lambda lo, hi: backend.read_memory(env, lo, hi))
    return EnvSummary(env, values)


def run_demo(
    num_envs: int,
    steps: int,
    out_dir: Path,
    *,
    device: str | None = None,
    backend: str | None = None,
    seed: int = 0,
    gif_envs: int = 4,
    game: str = DEFAULT_GAME,
) -> DemoResult:
    """Run ``game`` and write its PNG grid and GIF into ``out_dir``."""

    from gbxcule.backends.registry import make_backend

    if num_envs < 1 or steps < 1 or gif_envs < 1:
        raise ValueError(f"need envs, steps, gif envs >= 1, got {num_envs}, {steps}, {gif_envs}")
    name = backend_for(device, backend)
    shown = list(range(min(gif_envs, num_envs)))
    gif_frames: list[np.ndarray] = []
    env_backend = make_backend(  # first: it refuses envs that cannot fit, before actions
        name,
        str(bundled_rom_path(game)),
        num_envs=num_envs,
        frames_per_step=FRAMES_PER_STEP,
        release_after_frames=RELEASE_AFTER_FRAMES,
        action_codec=CODEC,
    )
    colour = bool(getattr(env_backend, "cgb", False))  # screens() gives RGB, not shades
    gap = 0 if colour else GAP_SHADE
    try:
        actions = random_actions(steps, num_envs, CODEC, seed)
        env_backend.reset(seed=seed)
        times = []
        for k in range(steps):
            times.append(timed_step(env_backend, actions[k]))
            gif_frames.append(
                tile_frames(list(env_backend.screens(shown)), grid_cols(len(shown)), gap=gap)
            )
        summaries = [read_env(env_backend, env, game) for env in range(num_envs)]
        finals = list(env_backend.screens(range(num_envs)))
    finally:
        env_backend.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    png, gif = out_dir / "final_frames.png", out_dir / "envs.gif"
    write_png(tile_frames(finals, grid_cols(num_envs), gap=gap), png, shades=not colour)
    frame_ms = gif_frame_ms(FRAMES_PER_STEP)
    write_gif(gif_frames, gif, scale=2, frame_ms=frame_ms, shades=not colour)
    timed = times[1:] if steps > 1 else times
    return DemoResult(
        backend=name,
        game=game,
        num_envs=num_envs,
        steps=steps,
        timed_steps=len(timed),
        seconds=sum(timed),
        first_step_seconds=times[0],
        envs=summaries,
        png=png,
        gif=gif,
        gif_envs=shown,
    )


def report(result: DemoResult) -> list[str]:
    """The lines ``gbxcule demo`` prints for ``result``."""
    timed = f"steps 2..{result.steps}" if result.timed_steps < result.steps else "the single step"
    lines = [
        f"{result.game}: {result.steps} steps x {FRAMES_PER_STEP} frames, {result.num_envs} envs "
        f"on {result.backend}: {result.sps:,.1f} steps/s, {result.fps:,.0f} frames/s "
        f"(timed over {timed}; the first took {result.first_step_seconds:.2f} s)",
        f"{'env':>5}" + "".join(f" {k:>6}" for k in result.envs[0].values),
    ]
    for s in result.envs[:SHOWN_ENVS]:
        lines.append(f"{s.env:>5}" + "".join(f" {v:>6}" for v in s.values.values()))
    scores = [s.score for s in result.envs]
    best = max(result.envs, key=lambda s: s.score)
    if len(result.envs) > SHOWN_ENVS:
        lines.append(f"  ... {len(result.envs) - SHOWN_ENVS} more envs")
    lines += [
        f"score: total {sum(scores)}, mean {np.mean(scores):.2f}, best {best.score} (env {best.env})",
        f"final frames of all envs: {result.png}",
        f"envs {result.gif_envs[0]}..{result.gif_envs[-1]}, one frame per step: {result.gif}",
    ]
    return lines


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--game",
        choices=list(GAMES),
        default=DEFAULT_GAME,
        help="the bundled game: "
        + "; ".join(f"{g.name}: {g.summary}" for g in GAMES.values())
        + f" (default {DEFAULT_GAME})",
    )
    p.add_argument("--envs", type=positive_int, default=64, help="number of envs (default 64)")
    p.add_argument("--steps", type=positive_int, default=100, help="steps to run (default 100)")
    p.add_argument(
        "--device", choices=DEVICES, help="Warp device (default: cuda if Warp sees one, else cpu)"
    )
    p.add_argument("--backend", help="run another registry backend instead (e.g. pyboy)")
    p.add_argument("--seed", type=seed_int, default=0, help="action seed (default 0)")
    p.add_argument(
        "--gif-envs", type=nonnegative_int, default=4, help="envs shown in the GIF (default 4)"
    )
    p.add_argument("--out", type=Path, default=Path("out/demo"), help="default: out/demo/")
    p.add_argument(
        "--save-rom",
        type=Path,
        metavar="PATH",
        help="write the game's ROM to PATH (its .sym beside it) and exit (a game to try the "
        "guide on)",
    )


def run(args: argparse.Namespace) -> int:
    if args.save_rom is not None:
        from gbxcule.files import write_atomic

        rom = bundled_rom_path(args.game)
        write_atomic(args.save_rom, rom.read_bytes())
        write_atomic(args.save_rom.with_suffix(".sym"), rom.with_suffix(".sym").read_bytes())
        print(f"{args.game} ROM: {args.save_rom} (symbols: {args.save_rom.with_suffix('.sym')})")
        return 0
    name = backend_for(args.device, args.backend)
    print(
        f"{args.game} game: {args.envs} envs on {name}, {args.steps} steps x {FRAMES_PER_STEP} frames, "
        f"random actions (seed {args.seed}) ...",
        flush=True,
    )
    result = run_demo(
        args.envs,
        args.steps,
        args.out,
        backend=name,
        seed=args.seed,
        gif_envs=args.gif_envs,
        game=args.game,
    )
    print("\n".join(report(result)))
    return 0
