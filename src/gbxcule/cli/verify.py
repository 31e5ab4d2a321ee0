"""``gbxcule verify``: lockstep a backend against a reference on a ROM (or the micro-ROM suite).

``--rom`` works wherever gbxcule is installed; ``--suite``/``--all`` run the micro-ROM
suite of the source checkout (``bench/roms``).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from gbxcule import lockstep
from gbxcule.cli.command import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    bench_module,
    nonnegative_int,
    positive_int,
    seed_int,
)

HELP = "lockstep a backend against PyBoy; repro bundle at the first divergence"


def configure(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--rom", type=Path, help="a ROM file")
    which.add_argument("--suite", nargs="+", metavar="NAME", help="micro-ROM suite entries")
    which.add_argument("--all", action="store_true", help="every micro ROM of the suite")
    which.add_argument(
        "--task",
        help="a task (task.toml, task.py[:NAME], a built-in): its ROM, from each of its start "
        "states, with its actions, step timing and step end",
    )
    p.add_argument(
        "--ref",
        "--reference",
        default="pyboy",
        help="reference backend (default: pyboy, our oracle setup, sound on; pyboy-stock: an "
        "unmodified PyBoy(rom) with its own boot ROM, palette and sound, everything compared; "
        "pyboy-stock-nosound: the same with sound_emulated=False, FF10-FF3F not compared)",
    )
    p.add_argument(
        "--boot",
        choices=("fast", "dmg", "pyboy"),
        help="boot ROM both backends run at reset (default: pyboy for the pyboy-stock "
        "references, else fast)",
    )
    p.add_argument("--dut", default="warp-cpu", help="backend under test (default: warp-cpu)")
    p.add_argument(
        "--state",
        type=Path,
        help="with --rom: a PyBoy .state both backends load after reset (start of play)",
    )
    p.add_argument("--steps", type=positive_int, help="steps to run (default: 100, or the spec's)")
    p.add_argument("--frames-per-step", type=positive_int, help="default: 24, or the spec's")
    p.add_argument(
        "--release-after-frames", type=nonnegative_int, help="default: min(8, frames), or spec"
    )
    p.add_argument("--codec", help="action codec (default: pokemonred_puffer_v1; suite: buttons)")
    p.add_argument(
        "--step-end",
        help="end steps early on a RAM byte, e.g. 0xC011,changes,min_frames=8 (or "
        "ADDR,equals=V / not_equals=V, mask=M); a task's own with --task",
    )
    p.add_argument(
        "--actions",
        help="random (seeded), none, or a .npy [steps, envs] file (default: random; "
        "suite: the spec's inputs)",
    )
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument(
        "--every", type=positive_int, default=1, help="compare every K steps (default 1)"
    )
    p.add_argument(
        "--regions",
        help="memory to compare: region names (vram,cartram,wram,oam,io,hram,ie,rom0,romx) "
        "and/or hex ranges like C000-C0FF (default: vram,cartram,wram,oam,io,hram,ie)",
    )
    p.add_argument("--ignore", default="", help="addresses masked out, e.g. FF04,FF40-FF4B")
    p.add_argument(
        "--no-cycles",
        dest="cycles",
        action="store_false",
        help="do not compare the T-cycle counter (compared by default)",
    )
    p.add_argument("--cycles", dest="cycles", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-frames", action="store_true", help="do not compare frame shades")
    p.add_argument("--num-envs", type=positive_int, default=1)
    p.add_argument("--bundle-dir", type=Path, help="where repro bundles go (default: repro/)")
    p.add_argument("--no-bundle", action="store_true", help="write no repro bundle")
    p.add_argument(
        "--allow-bad-logo",
        action="store_true",
        help="run a ROM with a wrong logo or header checksum, as PyBoy does",
    )


def run(args: argparse.Namespace) -> int:
    from gbxcule.backends.registry import default_boot

    boot = args.boot or default_boot(args.ref)
    regions = lockstep.parse_ranges(args.regions) if args.regions else None
    ignore = lockstep.parse_ranges(args.ignore)
    cases = []  # (label, rom path, config, actions)
    if args.task is not None:
        return _run_cases(args, _task_cases(args, boot, regions, ignore))
    if args.state is not None and args.rom is None:
        raise UsageError("--state goes with --rom (the suite's ROMs start from power-on)")
    if args.state is not None and not args.state.is_file():
        raise UsageError(f"state file not found: {args.state}")
    if args.rom is not None:
        if not args.rom.is_file():
            raise UsageError(f"ROM file not found: {args.rom}")
        fps = args.frames_per_step or 24
        codec = args.codec or "pokemonred_puffer_v1"
        step_end = None
        if args.step_end is not None:
            from gbxcule.core.step_end import parse_step_end

            step_end = parse_step_end(args.step_end)
        cfg = _rom_config(
            args,
            boot,
            regions,
            ignore,
            frames_per_step=fps,
            release_after_frames=args.release_after_frames or min(8, fps),
            codec=codec,
            state=None if args.state is None else str(args.state),
            step_end=step_end,
        )
        acts = lockstep.make_actions(
            args.actions or "random", cfg.steps, cfg.num_envs, codec, args.seed
        )
        cases.append((args.rom.stem, args.rom, cfg, acts))
    else:
        build = bench_module("roms.build")
        spec_mod = bench_module("roms.spec")
        try:
            specs = build.all_roms() if args.all else [build.get_rom(n) for n in args.suite]
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        for spec in specs:
            overrides = {
                k: v
                for k, v in (
                    ("steps", args.steps),
                    ("frames_per_step", args.frames_per_step),
                    ("release_after_frames", args.release_after_frames),
                    ("codec", args.codec),
                    ("regions", regions),
                )
                if v
            }
            cfg = spec_mod.spec_config(
                spec,
                args.ref,
                args.dut,
                every=args.every,
                ignore=ignore,
                compare_cycles=args.cycles,
                compare_frames=not args.no_frames,
                num_envs=args.num_envs,
                **overrides,
            )
            cfg = dataclasses.replace(cfg, boot=boot)
            if args.actions:
                acts = lockstep.make_actions(
                    args.actions, cfg.steps, cfg.num_envs, cfg.codec, args.seed
                )
            else:
                acts = spec_mod.spec_actions(spec, cfg.num_envs)[: cfg.steps]
                if len(acts) < cfg.steps:
                    raise UsageError(f"{spec.name}: the spec defines only {spec.steps} steps")
            cases.append((spec.name, spec_mod.spec_rom_file(spec), cfg, acts))

    return _run_cases(args, cases)


def _rom_config(
    args: argparse.Namespace, boot: str, regions, ignore, **step
) -> lockstep.LockstepConfig:
    """The lockstep of one ROM as the command's options say, with ``step``'s timing, codec,
    start state and step end (``--rom``'s own, or a task's)."""
    return lockstep.LockstepConfig(
        ref=args.ref,
        dut=args.dut,
        steps=args.steps or 100,
        every=args.every,
        ignore=ignore,
        compare_cycles=args.cycles,
        compare_frames=not args.no_frames,
        num_envs=args.num_envs,
        allow_bad_logo=args.allow_bad_logo,
        boot=boot,
        **step,
        **({"regions": regions} if regions else {}),
    )


TASK_SETS = ("state", "frames_per_step", "release_after_frames", "codec", "step_end")


def _task_cases(args: argparse.Namespace, boot: str, regions, ignore) -> list:
    """``--task``: one case per start state of the task (power-on when it has none), with
    the task's actions, timing and step end (its symbol looked up in the ROM's .sym)."""
    from types import SimpleNamespace

    from gbxcule.core.symbols import symbols_beside
    from gbxcule.tasks.load import load_task
    from gbxcule.tasks.session import resolve_step_end

    given = [f"--{k.replace('_', '-')}" for k in TASK_SETS if getattr(args, k) is not None]
    if given:
        raise UsageError(f"--task sets {', '.join(given)} itself: leave them out")
    task = load_task(args.task)
    rom = task.rom_path()
    step_end = task.step_end
    if step_end is not None and not isinstance(step_end.where, int):
        step_end = resolve_step_end(step_end, SimpleNamespace(symbols=symbols_beside(rom)))
    starts = task.start_paths() or [None]
    cases = []
    for k, start in enumerate(starts):
        cfg = _rom_config(
            args,
            boot,
            regions,
            ignore,
            frames_per_step=task.frames_per_step,
            release_after_frames=task.release_after_frames,
            codec=task.action_codec,
            state=None if start is None else str(start),
            step_end=step_end,
        )
        acts = lockstep.make_actions(
            args.actions or "random", cfg.steps, cfg.num_envs, cfg.codec, args.seed + k
        )
        label = f"{task.name} from {'power-on' if start is None else start.name}"
        cases.append((label, rom, cfg, acts))
    return cases


def _run_cases(args: argparse.Namespace, cases: list) -> int:
    bundle_root = None if args.no_bundle else (args.bundle_dir or lockstep.DEFAULT_BUNDLE_ROOT)
    failed = 0
    for label, rom, cfg, acts in cases:
        result = lockstep.run_lockstep(
            rom, acts, cfg, bundle_root=bundle_root, seed=args.seed, extra_meta={"case": label}
        )
        if result.ok:
            print(
                f"PASS {label}: {result.steps_run} steps, {result.checks} checks ({cfg.ref} vs {cfg.dut})"
            )
            continue
        failed += 1
        print(
            f"DIVERGED {label}: step {result.divergence_step}, env {result.divergence_env} "
            f"({cfg.ref} vs {cfg.dut})"
        )
        for line in result.diffs[:12]:
            print(f"    {line}")
        if len(result.diffs) > 12:
            print(f"    ... {len(result.diffs) - 12} more lines in diff.txt")
        if result.bundle is not None:
            print(
                f"    repro bundle: {result.bundle}\n    re-run: bash {result.bundle / 'repro.sh'}"
            )
    if len(cases) > 1:
        print(f"{len(cases) - failed} passed, {failed} diverged")
    return EXIT_FAILED if failed else EXIT_OK
