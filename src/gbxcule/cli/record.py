"""``gbxcule record``: one env's screen over a rollout, as a GIF (or MP4 with ffmpeg).

One video frame per step: the last frame of each step, shown for the step's real
duration. For every emulated frame use ``--frames-per-step 1
--release-after-frames 1`` (then each press lasts one frame and is released and
pressed again at the next frame start, which PyBoy counts as a new joypad edge).

Actions: ``--actions FILE`` with one action id per line (``#`` comments and blank
lines ignored) or a ``.npy`` array, either 1-D ``[steps]`` (the env's own actions)
or 2-D ``[steps, envs]`` (column ``--env``); without a file, seeded random actions
drawn as ``[steps, --num-envs]`` exactly as ``gbxcule demo`` draws them, column
``--env``, so ``record --env K`` with the demo's seed and env count replays the
demo's env K. Only that one env is emulated.

``--state FILE`` loads a save state after reset on backends with a
``load_state(path)`` method; others are refused with a clear error.

MP4 needs an ffmpeg executable: ``imageio_ffmpeg``'s bundled one when that package
is installed, else ``ffmpeg`` on PATH. Without either, ``.mp4`` is refused.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.cli.command import (
    add_trust_task,
    nonnegative_int,
    positive_int,
    seed_int,
    trust_if_asked,
)
from gbxcule.cli.playback import (
    DEVICES,
    RolloutError,
    backend_for,
    gif_frame_ms,
    random_actions,
)
from gbxcule.core.actions import ActionRangeError, first_bad_action, get_codec, validate_actions
from gbxcule.core.dmg import FRAMES_PER_SECOND
from gbxcule.images import to_image, write_gif

HELP = "record one env's screen over a rollout to a GIF (or MP4 with ffmpeg)"
VIDEO_SUFFIXES = (".gif", ".mp4")


def load_actions(path: Path, env: int, codec: str) -> np.ndarray:
    """int64 ``[steps]`` actions of ``env`` from a text or ``.npy`` file, validated."""
    if not path.is_file():
        raise FileNotFoundError(f"actions file not found: {path}")
    if path.suffix == ".npy":
        arr = np.load(path, allow_pickle=False)
    else:
        values = []
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                values.append(int(text))
            except ValueError:
                raise ValueError(f"{path}:{lineno}: not an action id: {text!r}") from None
        arr = np.array(values, dtype=np.int64)
    if arr.ndim == 2:
        if not 0 <= env < arr.shape[1]:
            raise ValueError(f"--env {env} is not a column of {path} (shape {arr.shape})")
        arr = arr[:, env]
    elif arr.ndim != 1:
        raise ValueError(
            f"actions file {path} has shape {arr.shape}; need [steps] or [steps, envs]"
        )
    if len(arr) == 0:
        raise ValueError(f"actions file {path} holds no actions")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"actions file {path} holds {arr.dtype} values, need integers")
    the_codec = get_codec(codec)
    bad = first_bad_action(arr, the_codec)
    if bad is not None:
        raise ActionRangeError(
            f"{path}: action {int(arr[bad])} at step {bad} is out of range for "
            f"codec {the_codec.name!r} (valid: 0..{the_codec.num_actions - 1})"
        )
    return validate_actions(arr, len(arr), the_codec)


def find_ffmpeg() -> str | None:
    """Path of an ffmpeg executable (imageio-ffmpeg's, else PATH's), or None."""
    try:
        import imageio_ffmpeg  # type: ignore[import-not-found]

        return imageio_ffmpeg.get_ffmpeg_exe()
    except ImportError:
        return shutil.which("ffmpeg")


def require_ffmpeg() -> str:
    """:func:`find_ffmpeg`, or a :class:`RolloutError` saying that MP4 cannot be written."""
    ffmpeg = find_ffmpeg()
    if ffmpeg is None:
        raise RolloutError(
            "cannot write .mp4: no video encoder found (imageio-ffmpeg is not installed and "
            "there is no ffmpeg on PATH); write a .gif instead, or install imageio-ffmpeg"
        )
    return ffmpeg


def write_mp4(
    frames: list[np.ndarray], path: Path, fps: float, scale: int = 1, shades: bool = True
) -> None:
    """Encode grey shade frames (or RGB screens, ``shades=False``) as H.264 MP4 by piping
    raw pixels into ffmpeg."""
    ffmpeg = require_ffmpeg()
    if not frames:
        raise ValueError("write_mp4 needs at least one frame")
    images = [np.asarray(to_image(f, scale, shades)) for f in frames]
    h, w = images[0].shape[:2]
    pix_fmt = "rgb24" if images[0].ndim == 3 else "gray"
    cmd = [
        ffmpeg, "-y", "-loglevel", "error",
        "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{w}x{h}", "-r", f"{fps:.4f}", "-i", "-",
        "-pix_fmt", "yuv420p", str(path),
    ]  # fmt: skip
    proc = subprocess.run(cmd, input=b"".join(i.tobytes() for i in images), capture_output=True)
    if proc.returncode != 0:
        raise RolloutError(f"ffmpeg failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")


def record(
    rom: Path,
    out: Path,
    *,
    steps: int | None = None,
    actions_file: Path | None = None,
    state: Path | None = None,
    env: int = 0,
    num_envs: int = 64,
    frames_per_step: int = 24,
    release_after_frames: int | None = None,
    codec: str = "pokemonred_puffer_v1",
    seed: int = 0,
    scale: int = 2,
    device: str | None = None,
    backend: str | None = None,
    allow_bad_logo: bool = False,
) -> tuple[Path, int, str]:
    """Record and write ``out``; returns (path, frames written, backend name)."""

    from gbxcule.backends.registry import make_backend

    if out.suffix not in VIDEO_SUFFIXES:
        raise ValueError(f"--out must end in {' or '.join(VIDEO_SUFFIXES)}, got {out.name}")
    if out.suffix == ".mp4":
        require_ffmpeg()  # refuse before any emulation
    if not rom.is_file():
        raise FileNotFoundError(f"ROM file not found: {rom}")
    if state is not None and not state.is_file():
        raise FileNotFoundError(f"save state file not found: {state}")
    if env < 0 or (actions_file is None and env >= num_envs):
        raise ValueError(f"--env {env} must be in 0..{num_envs - 1} (--num-envs {num_envs})")
    if actions_file is not None:
        actions = load_actions(actions_file, env, codec)
        steps = len(actions) if steps is None else steps
        if steps > len(actions):
            raise ValueError(f"{actions_file} has {len(actions)} steps, {steps} requested")
    else:
        steps = 100 if steps is None else steps
        actions = random_actions(steps, num_envs, codec, seed)[:, env]
    if steps < 1 or scale < 1:
        raise ValueError(f"--steps and --scale must be >= 1, got {steps}, {scale}")
    name = backend_for(device, backend)
    emu = make_backend(
        name,
        str(rom),
        num_envs=1,
        frames_per_step=frames_per_step,
        release_after_frames=release_after_frames,
        action_codec=codec,
        **({"allow_bad_logo": True} if allow_bad_logo else {}),
    )
    frames: list[np.ndarray] = []
    colour = bool(getattr(emu, "cgb", False))  # a Game Boy Color game: RGB screens
    try:
        emu.reset(seed=seed)
        if state is not None:
            _load_state(emu, name, state)
        for k in range(steps):
            emu.step(actions[k : k + 1])
            frames.append(emu.screens([0])[0])  # shades, or RGB on a Game Boy Color game
    finally:
        emu.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".gif":
        ms = gif_frame_ms(frames_per_step)
        write_gif(frames, out, scale=scale, frame_ms=ms, shades=not colour)
    else:
        fps = FRAMES_PER_SECOND / frames_per_step
        write_mp4(frames, out, fps=fps, scale=scale, shades=not colour)
    return out, len(frames), name


def _load_state(emu: Any, name: str, state: Path) -> None:
    loader = getattr(emu, "load_state", None)
    if loader is None:
        raise RolloutError(
            f"--state: backend {name} cannot load save states yet (it has no load_state)"
        )
    loader(state)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("rom", type=Path, nargs="?", help="ROM file (not with --policy)")
    p.add_argument(
        "--policy",
        type=Path,
        metavar="RUN",
        help="replay a trained policy (a run directory): one episode of its task, env 0",
    )
    add_trust_task(p)
    p.add_argument("--state", type=Path, help="save state to start from (backends with load_state)")
    p.add_argument("--actions", type=Path, help="action ids: text (one per line) or .npy")
    p.add_argument(
        "--env", type=nonnegative_int, default=0, help="env whose actions are replayed (default 0)"
    )
    p.add_argument(
        "--num-envs",
        type=positive_int,
        default=64,
        help="width of the random action draw (default 64)",
    )
    p.add_argument(
        "--steps", type=positive_int, help="default: the actions file's length, else 100"
    )
    p.add_argument(
        "--out", type=Path, help="FILE.gif or FILE.mp4 (default out/record/ROM_envK.gif)"
    )
    p.add_argument("--frames-per-step", type=positive_int, default=24)
    p.add_argument(
        "--release-after-frames", type=nonnegative_int, help="default: min(8, frames per step)"
    )
    p.add_argument("--codec", default="pokemonred_puffer_v1", help="action codec")
    p.add_argument("--seed", type=seed_int, default=0, help="random-action seed (default 0)")
    p.add_argument(
        "--scale", type=positive_int, default=2, help="pixel scale of the video (default 2)"
    )
    p.add_argument(
        "--device", choices=DEVICES, help="Warp device (default: cuda if seen, else cpu)"
    )
    p.add_argument("--backend", help="run another registry backend instead (e.g. pyboy)")
    p.add_argument(
        "--allow-bad-logo",
        action="store_true",
        help="run a ROM with a wrong logo or header checksum, as PyBoy does",
    )


def run(args: argparse.Namespace) -> int:
    if args.policy is not None:
        return record_policy(args)
    if args.rom is None:
        raise RolloutError("give a ROM file, or --policy RUN to replay a trained policy")
    out = args.out or Path("out/record") / f"{args.rom.stem}_env{args.env}.gif"
    path, count, name = record(
        args.rom,
        out,
        steps=args.steps,
        actions_file=args.actions,
        state=args.state,
        env=args.env,
        num_envs=args.num_envs,
        frames_per_step=args.frames_per_step,
        release_after_frames=args.release_after_frames,
        codec=args.codec,
        seed=args.seed,
        scale=args.scale,
        allow_bad_logo=args.allow_bad_logo,
        device=args.device,
        backend=args.backend,
    )
    print(f"recorded env {args.env} on {name}: {count} frames (one per step) -> {path}")
    return 0


def record_policy(args: argparse.Namespace) -> int:
    """One episode of the run's task played by its policy, env 0's full screen as a GIF
    (``--state`` starts it there instead of the task's pool; ``--seed`` seeds sampling)."""
    from gbxcule.rl.evaluate import evaluate_episodes

    if args.rom is not None:
        raise RolloutError("--policy replays the run's own task and ROM: give no ROM file")
    trust_if_asked(args, args.policy)
    out = args.out or Path("out/record") / f"{args.policy.name}.gif"
    if out.suffix != ".gif":
        raise RolloutError(f"--policy writes a GIF, not {out.suffix or 'no suffix'}: {out}")
    starts = None if args.state is None else [args.state]
    (row,) = evaluate_episodes(args.policy, episodes=1, seed=args.seed, gif=out, starts=starts)
    print(
        f"recorded the policy of {args.policy.name}: return {row['return']:.3f} over "
        f"{row['length']} steps -> {out}"
    )
    return 0
