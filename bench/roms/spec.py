"""What a micro ROM is: its bytes, how long to run it, and its absolute self-check.

Suite modules (``bench/roms/suite/*.py``) each define ``ROMS: list[RomSpec]``.
A check gets any backend (PyBoy or ours) after ``steps`` steps and raises
``AssertionError`` with a specific message when the ROM's result is wrong. It
checks an absolute expectation (serial "Passed", a WRAM signature computed
here in Python), never just "agrees with PyBoy".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gbxcule.backends.protocol import Backend


@dataclass(frozen=True)
class RomSpec:
    name: str  # file stem, e.g. "alu_add"; unique across the suite
    description: str  # what it tests, one line (goes into the manifest)
    build: Callable[[], bytes]  # full cartridge image with a valid header
    check: Callable[[Backend, int], None]  # raise AssertionError on a wrong result
    steps: int = 60  # steps to run before the check
    frames_per_step: int = 1
    release_after_frames: int = 1
    # Per-step actions in the "buttons" codec (8-bit masks); None = nothing pressed.
    # Step k uses inputs[k % len(inputs)].
    inputs: tuple[int, ...] | None = None
    tags: tuple[str, ...] = field(
        default_factory=tuple
    )  # "cpu", "timer", "ppu", "mbc", "demo", ...
