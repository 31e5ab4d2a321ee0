"""A step that ends early on a RAM event: the frame-granular cut every backend makes.

A step runs its action's frames (``frames_per_step``, or the action's own ``frames=``)
but ends after the first frame, from ``min_frames`` on, at whose end the byte at
``where`` satisfies the condition: ``changes`` (its masked value differs from the one
it had when the step began), ``equals=V`` or ``not_equals=V`` (masked). A menu that
needs many frames, or a walk that ends at a map change, is then one step of variable
length; each env reports the frames its step ran. PyBoy checks the byte after each
``tick(1)``; the Warp step kernel after each frame (and latches every frame's lines,
since any may be the last).

The byte lies in RAM the CPU cannot bank away: VRAM, WRAM and its echo, OAM or HRAM.
"""

from __future__ import annotations

from dataclasses import dataclass

from gbxcule.core.memory_layout import FIXED_RAM, spans_text

STEP_END_OPS = ("changes", "equals", "not_equals")
STEP_END_SPANS = FIXED_RAM  # where a step-end byte may lie (core/memory_layout.py)


class StepEndError(ValueError):
    """A step-end condition that cannot run; the message names the field."""


@dataclass(frozen=True)
class StepEnd:
    """End a step after the first frame (from ``min_frames`` on) where the byte at
    ``where`` (an address, or a ``.sym`` name a task resolves) meets the condition."""

    where: int | str
    changes: bool = False
    equals: int | None = None
    not_equals: int | None = None
    mask: int = 0xFF
    min_frames: int = 1

    def __post_init__(self) -> None:
        given = [self.changes is True, self.equals is not None, self.not_equals is not None]
        if sum(given) != 1:
            raise StepEndError(
                "StepEnd takes exactly one condition: changes=True, equals=V or not_equals=V"
            )
        for key in ("equals", "not_equals", "mask"):
            value = getattr(self, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFF
            ):
                raise StepEndError(f"StepEnd.{key} must be a byte 0..255, got {value!r}")
        m = self.min_frames
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise StepEndError(f"StepEnd.min_frames must be an int >= 1, got {m!r}")
        if isinstance(self.where, int) and not isinstance(self.where, bool):
            check_step_end_address(self.where)
        elif not isinstance(self.where, str) or not self.where:
            raise StepEndError(f"StepEnd.where must be an address or a symbol, got {self.where!r}")

    @property
    def op(self) -> int:
        """Index into ``STEP_END_OPS`` (what the kernel compares with)."""
        if self.changes:
            return 0
        return 1 if self.equals is not None else 2

    @property
    def value(self) -> int:
        v = self.equals if self.equals is not None else self.not_equals
        return 0 if v is None else v

    def met(self, start: int, now: int) -> bool:
        """Whether the byte, ``start`` when the step began and ``now``, ends the step."""
        now &= self.mask
        if self.op == 0:
            return now != start & self.mask
        return (now == self.value) == (self.op == 1)


def check_step_end_address(addr: int) -> int:
    """``addr`` when a step-end byte may lie there, else a ``StepEndError`` saying where."""
    if not any(s.holds(addr) for s in STEP_END_SPANS):
        raise StepEndError(
            f"StepEnd at {addr:#06x}: a step-end byte lies in RAM no bank switch moves "
            f"({spans_text(STEP_END_SPANS)})"
        )
    return addr


def format_step_end(end: StepEnd) -> str:
    """``end`` as ``gbxcule verify --step-end`` takes it: ``0xC011,changes,min_frames=8``."""
    if not isinstance(end.where, int):
        raise StepEndError(f"StepEnd at symbol {end.where!r}: resolve it to an address first")
    parts = [f"{end.where:#06x}"]
    parts.append("changes" if end.changes else f"{STEP_END_OPS[end.op]}={end.value}")
    if end.mask != 0xFF:
        parts.append(f"mask={end.mask:#04x}")
    if end.min_frames != 1:
        parts.append(f"min_frames={end.min_frames}")
    return ",".join(parts)


def parse_step_end(text: str) -> StepEnd:
    """The inverse of :func:`format_step_end` (numbers in decimal or 0x hex)."""
    where, *options = [p.strip() for p in text.split(",")]
    kwargs: dict[str, object] = {}
    try:
        addr = int(where, 0)
        for option in options:
            key, sep, value = option.partition("=")
            if key == "changes" and not sep:
                kwargs["changes"] = True
            elif key in ("equals", "not_equals", "mask", "min_frames") and sep:
                kwargs[key] = int(value, 0)
            else:
                raise StepEndError(
                    f"step end {text!r}: {option!r} is not changes, equals=V, not_equals=V, "
                    "mask=M or min_frames=N"
                )
    except ValueError as exc:
        if isinstance(exc, StepEndError):
            raise
        raise StepEndError(f"step end {text!r}: {exc}") from None
    return StepEnd(addr, **kwargs)  # type: ignore[arg-type]
