"""``gbxcule states ROM``: make start states without guesswork (``gbxcule.tasks.state_maker``).

    gbxcule states game.gb --script "start@120 a@200" --until 1500        # a numbered sheet
    gbxcule states game.gb --script "start@120 a@200" --save-at 1140      # the state there
    gbxcule states game.gb --script "start@120 a@200" --save-at 1140 --pool 8 --jitter 90

The script plays on PyBoy 2.8.1 from power-on (or ``--from STATE``). Every state written
carries a sidecar (``NAME.state.json``) with its ROM's sha256, so a task refuses it on
another game.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gbxcule.cli.command import EXIT_OK, UsageError, positive_int, seed_int

HELP = "play a script of presses on PyBoy: a numbered contact sheet and start states to train from"
MAX_SHOTS = 240


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("rom", type=Path, metavar="ROM", help="the game's ROM file")
    p.add_argument("--from", dest="start", type=Path, help="a PyBoy .state to start from")
    p.add_argument("--script", default="", help='presses: "start@120 a@200 a+right@300:30"')
    p.add_argument("--script-file", type=Path, help="presses from a file (the same tokens)")
    p.add_argument(
        "--until",
        type=positive_int,
        help="frames to play (default: 60 past the last press or save)",
    )
    p.add_argument("--every", type=positive_int, default=30, help="sheet: a screen every K frames")
    p.add_argument("--sheet", type=Path, help="contact sheet PNG (default OUT/NAME-sheet.png)")
    p.add_argument("--no-sheet", action="store_true", help="write no contact sheet")
    p.add_argument("--save-at", help="save states after these frames: F[,F...]")
    p.add_argument("--pool", type=positive_int, help="a pool of N states at the --save-at frame")
    p.add_argument("--jitter", type=positive_int, default=60,
                   help="pool: the script starts 0..J frames later (default 60)")  # fmt: skip
    p.add_argument("--seed", type=seed_int, default=0, help="pool: which frames (default 0)")
    p.add_argument("--out", type=Path, default=Path("."), help="folder for states and the sheet")
    p.add_argument("--name", help="file name stem (default: the ROM's)")
    p.add_argument("--to", type=Path, help="the one state of --save-at F: write it here")


def _frames(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        frames = sorted({int(f) for f in text.split(",") if f.strip()})
    except ValueError:
        raise UsageError(f"--save-at {text!r}: frames are whole numbers, F[,F...]") from None
    if frames and frames[0] < 0:
        raise UsageError(f"--save-at {text!r}: frames count from 0")
    return frames


def run(args: argparse.Namespace) -> int:
    from gbxcule.backends.checks import read_rom
    from gbxcule.core.input_script import format_script, parse_script
    from gbxcule.tasks import state_maker as sm
    from gbxcule.tasks.provenance import write_state

    rom = read_rom(args.rom)
    text = args.script
    if args.script_file is not None:
        text += "\n" + args.script_file.read_text()
    presses = parse_script(text)
    saves = _frames(args.save_at)
    if args.pool and len(saves) != 1:
        raise UsageError("--pool N makes N states at one frame: give --save-at F")
    if args.to is not None and (len(saves) != 1 or args.pool):
        raise UsageError("--to names one state: give one --save-at F and no --pool")
    offsets = sm.pool_offsets(args.pool, args.jitter, args.seed) if args.pool else [0]
    last = max([p.release for p in presses] + saves + [0])
    until = args.until or last + 60
    if saves and saves[-1] > until:
        raise UsageError(f"--save-at {saves[-1]} is past --until {until}")
    name = args.name or args.rom.stem
    start = None
    if args.start is not None:
        if not args.start.is_file():
            raise UsageError(f"--from {args.start}: no such file")
        start = args.start.read_bytes()
        from gbxcule.core.pyboy_state_io import SavestateError, load_pyboy_state, refuse_cgb

        try:  # ours first: PyBoy's own errors on a file that is no state are tracebacks
            refuse_cgb(load_pyboy_state(start, rom))  # the script runs on a DMG PyBoy
        except SavestateError as exc:
            raise UsageError(f"--from {args.start}: {exc}") from None
        from gbxcule.tasks.provenance import check_state_rom

        check_state_rom(args.start, start, rom, args.rom.name)  # another ROM's: refused
    shots = set() if args.no_sheet else set(range(args.every, until + 1, args.every))
    if len(shots) > MAX_SHOTS:
        raise UsageError(
            f"a sheet of {len(shots)} screens (--until {until} / --every {args.every}): "
            f"at most {MAX_SHOTS}; raise --every or lower --until"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    for k, offset in enumerate(offsets):
        script = [p.shifted(offset) for p in presses]
        frames = {f + offset for f in saves}
        run_ = sm.play_script(
            rom,
            script,
            until=until + offset,
            start_state=start,
            shots=shots if k == 0 else frozenset(),
            saves=frames,
        )
        if k == 0 and shots:
            sheet = args.sheet or args.out / f"{name}-sheet.png"
            sm.write_png_rgb(sm.contact_sheet(run_.screens), sheet)
            print(f"sheet: {sheet} ({len(shots)} screens, frames {min(shots)} to {max(shots)}, every "
                  f"{args.every})")  # fmt: skip
        for frame, data in sorted(run_.states.items()):
            stem = f"{name}-pool{k}" if args.pool else f"{name}-f{frame}"
            info = {"frame": frame, "script": format_script(script), "made_by": "gbxcule states"}
            if args.start is not None:
                info["from"] = str(args.start)
            if args.pool:
                info.update(pool_offset=offset, pool_seed=args.seed)
            target = args.to or args.out / f"{stem}.state"
            path = write_state(target, data, rom, args.rom.name, **info)
            print(f"state: {path} (after frame {frame}; sidecar {path.name}.json)")
    return EXIT_OK
