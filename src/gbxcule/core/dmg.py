"""DMG hardware constants, and the cycle conventions of PyBoy 2.8.1 that we share.

Kernels wrap these in ``wp.constant`` where they need them; nothing redefines them.
"""

from __future__ import annotations

CLOCK_RATE = 4_194_304  # T-cycles per second
LINE_CYCLES = 456  # T-cycles of one LCD line
LINES_PER_FRAME = 154  # 144 visible + 10 VBlank
FRAME_CYCLES = LINE_CYCLES * LINES_PER_FRAME  # 70_224
FRAMES_PER_SECOND = CLOCK_RATE / FRAME_CYCLES  # ~59.73
POST_BOOT_PC = 0x0100  # where every boot ROM hands over to the cartridge
MAX_CYCLES = 1 << 31  # PyBoy's "no event scheduled" distance
