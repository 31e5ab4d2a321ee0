"""Start states without guesswork: a script of presses (``core/input_script.py``) played on
PyBoy, the oracle, from power-on or a state; numbered screens to find where play begins;
states saved at chosen frames, or a pool of them from the script started on frames a
seed draws (each game's generator seeded anew). ``gbxcule states`` is the command.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gbxcule.core.input_script import Press


@dataclass
class ScriptRun:
    screens: dict[int, np.ndarray] = field(default_factory=dict)  # frame -> RGB [144, 160, 3]
    states: dict[int, bytes] = field(default_factory=dict)  # frame -> PyBoy state


def play_script(
    rom: bytes,
    presses: list[Press],
    *,
    until: int,
    start_state: bytes | None = None,
    shots: set[int] | frozenset[int] = frozenset(),
    saves: set[int] | frozenset[int] = frozenset(),
) -> ScriptRun:
    """Emulate ``until`` frames with ``presses``; the screen after each frame in ``shots``
    and the state after each frame in ``saves`` (taken before that frame's presses)."""
    from gbxcule.backends.pyboy_backend import make_pyboy

    downs: dict[int, list[str]] = {}
    ups: dict[int, list[str]] = {}
    for p in presses:
        downs.setdefault(p.frame, []).extend(p.buttons)
        ups.setdefault(p.release, []).extend(p.buttons)
    events = sorted(f for f in {0, until, *downs, *ups, *shots, *saves} if f <= until)
    run = ScriptRun()
    pyboy = make_pyboy(rom)
    try:
        if start_state is not None:
            pyboy.load_state(io.BytesIO(start_state))
        done = 0
        for frame in events:
            if frame > done:
                pyboy.tick(frame - done, frame in shots)
                done = frame
            if frame in shots:
                run.screens[frame] = np.array(pyboy.screen.ndarray[:, :, :3])
            if frame in saves:
                out = io.BytesIO()
                pyboy.save_state(out)
                run.states[frame] = out.getvalue()
            for b in ups.get(frame, ()):
                pyboy.button_release(b)
            for b in downs.get(frame, ()):
                pyboy.button_press(b)
    finally:
        pyboy.stop(save=False)
    return run


def pool_offsets(count: int, jitter: int, seed: int) -> list[int]:
    """How many frames later the script starts for each state of a pool: 0 for the first,
    then distinct draws in ``1..jitter`` from ``seed``."""
    if count > jitter + 1:
        raise ValueError(f"a pool of {count} needs --jitter >= {count - 1} (distinct starts)")
    rng = np.random.default_rng(seed)
    rest = rng.choice(np.arange(1, jitter + 1), size=count - 1, replace=False)
    return [0, *(int(x) for x in rest)]


def contact_sheet(screens: dict[int, np.ndarray], cols: int = 8) -> np.ndarray:
    """RGB ``uint8`` grid of the screens in frame order, each under its frame number."""
    from PIL import Image, ImageDraw

    frames = sorted(screens)
    label_h, gap = 12, 2
    h, w = 144 + label_h, 160
    cols = max(1, min(cols, len(frames)))
    rows = -(-len(frames) // cols)
    sheet = Image.new("RGB", (cols * w + (cols - 1) * gap, rows * h + (rows - 1) * gap), "black")
    draw = ImageDraw.Draw(sheet)
    for k, frame in enumerate(frames):
        r, c = divmod(k, cols)
        x, y = c * (w + gap), r * (h + gap)
        sheet.paste(Image.fromarray(screens[frame]), (x, y + label_h))
        draw.text((x + 2, y), f"frame {frame}", fill="white")
    return np.asarray(sheet)


def write_png_rgb(image: np.ndarray, path: str | Path) -> Path:
    from PIL import Image

    from gbxcule.files import write_atomic

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return write_atomic(path, buf.getvalue())
