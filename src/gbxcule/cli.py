"""The ``gbxcule`` command line (also ``python -m gbxcule``).

Every subcommand is one :class:`Command` in :data:`COMMANDS`: a help line, a
function that adds its arguments, and a function that runs it and returns the
exit code. To add or finish a command, write those two functions and put them
in the dict; ``main`` needs no change.

Exit codes: 0 success, 1 the check failed (divergence, unsupported ROM),
2 bad usage or a command that is not implemented yet.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Command:
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad arguments; printed without a traceback, exit code 2."""


def _bench_module(name: str) -> ModuleType:
    """Import ``bench.<name>`` from the repository checkout (``bench`` is not installed)."""
    try:
        return importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in ("bench", f"bench.{name}"):
            raise
    repo = Path(__file__).resolve().parents[2]
    if not (repo / "bench" / f"{name}.py").is_file():
        raise UsageError(f"bench/{name}.py not found: run gbxcule from a source checkout")
    sys.path.insert(0, str(repo))
    return importlib.import_module(f"bench.{name}")


# ------------------------------------------------------------------ verify


def _configure_verify(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--rom", type=Path, help="a ROM file")
    which.add_argument("--suite", nargs="+", metavar="NAME", help="micro-ROM suite entries")
    which.add_argument("--all", action="store_true", help="every micro ROM of the suite")
    p.add_argument("--ref", default="pyboy", help="reference backend (default: pyboy)")
    p.add_argument("--dut", default="warp-cpu", help="backend under test (default: warp-cpu)")
    p.add_argument("--steps", type=int, help="steps to run (default: 100, or the spec's)")
    p.add_argument("--frames-per-step", type=int, help="default: 24, or the spec's")
    p.add_argument("--release-after-frames", type=int, help="default: min(8, frames), or spec")
    p.add_argument("--codec", help="action codec (default: pokemonred_puffer_v1; suite: buttons)")
    p.add_argument(
        "--actions",
        help="random (seeded), none, or a .npy [steps, envs] file (default: random; "
        "suite: the spec's inputs)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--every", type=int, default=1, help="compare every K steps (default 1)")
    p.add_argument(
        "--regions",
        help="memory to compare: region names (vram,cartram,wram,oam,io,hram,ie,rom0,romx) "
        "and/or hex ranges like C000-C0FF (default: vram,cartram,wram,oam,io,hram,ie)",
    )
    p.add_argument("--ignore", default="", help="addresses masked out, e.g. FF04,FF40-FF4B")
    p.add_argument("--cycles", action="store_true", help="also compare the cycle counter")
    p.add_argument("--no-frames", action="store_true", help="do not compare frame shades")
    p.add_argument("--num-envs", type=int, default=1)
    p.add_argument("--bundle-dir", type=Path, help="where repro bundles go (default: repro/)")
    p.add_argument("--no-bundle", action="store_true", help="write no repro bundle")


def _run_verify(args: argparse.Namespace) -> int:
    harness = _bench_module("harness")
    regions = harness.parse_ranges(args.regions) if args.regions else None
    ignore = harness.parse_ranges(args.ignore)
    cases = []  # (label, rom path, config, actions)
    if args.rom is not None:
        if not args.rom.is_file():
            raise UsageError(f"ROM file not found: {args.rom}")
        fps = args.frames_per_step or 24
        codec = args.codec or "pokemonred_puffer_v1"
        cfg = harness.LockstepConfig(
            ref=args.ref,
            dut=args.dut,
            steps=args.steps or 100,
            frames_per_step=fps,
            release_after_frames=args.release_after_frames or min(8, fps),
            codec=codec,
            every=args.every,
            ignore=ignore,
            compare_cycles=args.cycles,
            compare_frames=not args.no_frames,
            num_envs=args.num_envs,
            **({"regions": regions} if regions else {}),
        )
        acts = harness.make_actions(
            args.actions or "random", cfg.steps, cfg.num_envs, codec, args.seed
        )
        cases.append((args.rom.stem, args.rom, cfg, acts))
    else:
        from bench.roms.build import all_roms, get_rom

        try:
            specs = all_roms() if args.all else [get_rom(n) for n in args.suite]
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
            cfg = harness.spec_config(
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
            if args.actions:
                acts = harness.make_actions(
                    args.actions, cfg.steps, cfg.num_envs, cfg.codec, args.seed
                )
            else:
                acts = harness.spec_actions(spec, cfg.num_envs)[: cfg.steps]
                if len(acts) < cfg.steps:
                    raise UsageError(f"{spec.name}: the spec defines only {spec.steps} steps")
            cases.append((spec.name, harness.spec_rom_file(spec), cfg, acts))

    bundle_root = None if args.no_bundle else (args.bundle_dir or harness.DEFAULT_BUNDLE_ROOT)
    failed = 0
    for label, rom, cfg, acts in cases:
        result = harness.run_lockstep(
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


# -------------------------------------------------------------------- info


def _configure_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("rom", type=Path, help="ROM file")


def _run_info(args: argparse.Namespace) -> int:
    from gbxcule.core.cartridge import CartridgeError, CartridgeHeader

    if not args.rom.is_file():
        raise UsageError(f"ROM file not found: {args.rom}")
    data = args.rom.read_bytes()
    try:
        h = CartridgeHeader.parse(data, strict=False)
    except CartridgeError as exc:
        print(f"{args.rom}: not a cartridge: {exc}")
        return EXIT_FAILED
    rows = [
        ("file", f"{args.rom} ({len(data)} bytes)"),
        ("title", h.title),
        ("cartridge", f"${h.cart_type:02X} {h.cart_type_name} (mbc: {h.mbc})"),
        ("ROM", f"{h.rom_banks} banks of 16 KiB (code ${h.rom_size_code:02X})"),
        ("RAM", f"{h.ram_banks} banks, {h.ram_bytes} bytes (code ${h.ram_size_code:02X})"),
        ("extras", f"battery={h.has_battery} timer={h.has_timer} rumble={h.has_rumble}"),
        ("logo", "ok" if h.logo_ok else "MISMATCH"),
        ("header checksum", "ok" if h.header_checksum_ok else "MISMATCH"),
        ("global checksum", "ok" if h.global_checksum_ok else "mismatch (ignored by hardware)"),
        ("supported", "yes" if h.supported else "no: " + "; ".join(h.problems)),
    ]
    for key, value in rows:
        print(f"{key:>16}: {value}")
    return EXIT_OK if h.supported else EXIT_FAILED


# ----------------------------------------------------- demo, record, bench


def _configure_passthrough(p: argparse.ArgumentParser) -> None:
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the command")


def _rollout_command(module: str) -> tuple[Callable, Callable]:
    """configure/run of ``gbxcule.<module>``; its RolloutError is reported like bad usage."""

    def configure(p: argparse.ArgumentParser) -> None:
        importlib.import_module(f"gbxcule.{module}").configure(p)

    def run(args: argparse.Namespace) -> int:
        from gbxcule.rollout import RolloutError

        try:
            return importlib.import_module(f"gbxcule.{module}").run(args)
        except RolloutError as exc:
            raise UsageError(str(exc)) from None

    return configure, run


def _configure_bench(p: argparse.ArgumentParser) -> None:
    try:
        sweep = _bench_module("sweep")
    except UsageError:  # not a source checkout: running it says so
        _configure_passthrough(p)
        return
    sweep.add_arguments(p)


def _run_bench(args: argparse.Namespace) -> int:
    return _bench_module("sweep").run(args)


COMMANDS: dict[str, Command] = {
    "verify": Command(
        "lockstep a backend against PyBoy; repro bundle at the first divergence",
        _configure_verify,
        _run_verify,
    ),
    "info": Command("print a ROM's cartridge header", _configure_info, _run_info),
    "demo": Command(
        "run N envs of the demo game; print steps/s, write a PNG grid and a GIF",
        *_rollout_command("demo_cli"),
    ),
    "bench": Command(
        "benchmark sweep of every backend (bench/sweep.py)", _configure_bench, _run_bench
    ),
    "record": Command(
        "record one env's screen over a rollout to a GIF (or MP4 with ffmpeg)",
        *_rollout_command("record"),
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gbxcule", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, cmd in COMMANDS.items():
        cmd.configure(sub.add_parser(name, help=cmd.help, description=cmd.help))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except (UsageError, FileNotFoundError) as exc:
        print(f"gbxcule {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, ImportError) as exc:
        print(f"gbxcule {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USAGE
