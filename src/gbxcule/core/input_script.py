"""A script of button presses by frame, the way to reach play through a game's menus.

    start@120 a@200 a+right@300:30   # START on frame 120 (held 8 frames), A on 200, ...

Each token is ``BUTTONS@FRAME`` or ``BUTTONS@FRAME:HOLD``: the buttons (``+`` joins them;
PyBoy's names, ``core/actions.py``) go down as frame ``FRAME`` is emulated (frames count
from the script's start, 0-based) and up ``HOLD`` frames later (default 8). Tokens are
separated by spaces, commas or new lines; ``#`` starts a comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from gbxcule.core.actions import JOYPAD_BUTTONS

DEFAULT_HOLD = 8
MAX_FRAME = 10_000_000  # about 46 hours of play


class ScriptError(ValueError):
    """A script that cannot be played; the message names the token."""


@dataclass(frozen=True)
class Press:
    frame: int
    buttons: tuple[str, ...]
    hold: int = DEFAULT_HOLD

    @property
    def release(self) -> int:
        return self.frame + self.hold

    def shifted(self, frames: int) -> Press:
        return Press(self.frame + frames, self.buttons, self.hold)


def _number(token: str, text: str, what: str) -> int:
    if not text.isdigit():
        raise ScriptError(f"script token {token!r}: {what} {text!r} is not a whole number")
    value = int(text)
    if value > MAX_FRAME:
        raise ScriptError(f"script token {token!r}: {what} {value} is past {MAX_FRAME:,}")
    return value


def parse_script(text: str) -> list[Press]:
    """The presses of ``text`` (module doc), in frame order; a button pressed again while
    it is still held is refused."""
    presses = []
    for line in text.splitlines():
        for token in line.split("#", 1)[0].replace(",", " ").split():
            names, at, when = token.partition("@")
            if not at or not names:
                raise ScriptError(
                    f"script token {token!r} is not BUTTONS@FRAME[:HOLD] (e.g. start@120, "
                    "a+right@300:30)"
                )
            frame_text, colon, hold_text = when.partition(":")
            frame = _number(token, frame_text, "frame")
            hold = _number(token, hold_text, "hold") if colon else DEFAULT_HOLD
            if hold < 1:
                raise ScriptError(f"script token {token!r}: a press is held 1 frame or more")
            buttons = tuple(names.lower().split("+"))
            for b in buttons:
                if b not in JOYPAD_BUTTONS:
                    raise ScriptError(
                        f"script token {token!r}: unknown button {b!r}; buttons: "
                        f"{', '.join(JOYPAD_BUTTONS)}"
                    )
            presses.append(Press(frame, buttons, hold))
    presses.sort(key=lambda p: p.frame)
    held: dict[str, Press] = {}
    for p in presses:
        for b in p.buttons:
            if b in held and held[b].release > p.frame:
                raise ScriptError(
                    f"{b} pressed on frame {p.frame} while still held from frame "
                    f"{held[b].frame} (until {held[b].release})"
                )
            held[b] = p
    return presses


def format_script(presses: list[Press]) -> str:
    return " ".join(
        "+".join(p.buttons) + f"@{p.frame}" + ("" if p.hold == DEFAULT_HOLD else f":{p.hold}")
        for p in presses
    )
