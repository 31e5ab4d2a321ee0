"""Whole LCD lines in one jump, for a CPU in quiet HALT (kernels/step/slice.py, issue #41).

A halted CPU waits for the next interrupt while ``lcd_sync`` (kernels/ppu/ppu.py) takes the LCD
through four transitions a line (mode 3, mode 0, LY + 1, mode 2), each a pass of
``halt_through_lcd``'s loop: on the demo game half the step's work, and on a GPU each pass
an out-of-line call. From the start of a line's mode 2, when no transition of the lines
ahead can raise an interrupt flag, draw, or pass the timer's or serial port's next event,
``lcd_quiet_lines`` moves the LCD to the start of mode 2 of a later line at once, leaving
it as the transitions one by one would have:

- the line takes 456 cycles whatever its sprites (mode 3's 172 + adjustment and mode 0's
  200 - adjustment), so the clock, target and cycle count move by 456 a line;
- LY is the new line, STAT in mode 2 with its coincidence bit for that line, the STAT
  interrupt line low (no mode source is enabled, and the jump ends before the line LYC
  names where the LYC source is: the line at the jump's start may have held it high);
- ``LCD_M3_ADJUST`` is the last line's mode-3 adjustment (``mode3_adjustment``, which also
  builds the OAM band cache where the first line would have);
- the window's Y condition (``WIN_ACTIVE``) holds if WY was one of the lines entered.

It refuses (and the caller runs the transitions one by one) anywhere else: not at mode 2's
start, the LCD off, its first frame or a reset pending, the frame rendered (``draw_line``
latches each line), a STAT mode source (HBlank, VBlank, OAM) enabled, or fewer than one
whole line before line 143 ends (VBlank raises its flag at line 144), before ``limit``, or,
with the LYC source enabled, before the line LYC names (quest's status bar split: entering
it raises STAT).
``tests/test_ppu_quiet.py`` runs both ways from random LCD, timer and OAM states.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.board.ioregs import FRAME_T, LCDC, LY, LYC, STAT, WY, reg, set_reg
from gbxcule.kernels.ppu.ppu import (
    LINE_CYCLES,
    MODE2_CYCLES,
    TRANS_NONE,
    mode3_adjustment,
    speed_shift,
)
from gbxcule.kernels.state import (
    LCD_CLOCK,
    LCD_FIRST_FRAME,
    LCD_IRQ_LINE,
    LCD_LAST,
    LCD_M3_ADJUST,
    LCD_NEXT_MODE,
    LCD_RENDER,
    LCD_RESET,
    LCD_TARGET,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    LCD_TRANSITION,
    WIN_ACTIVE,
    Machine,
)

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py)

LAST_QUIET_LINE = wp.constant(143)  # the skip ends at mode 2 of a line up to 143


@wp.func
def quiet_frame(m: wp.ref[Machine], i: int) -> int:
    """1 on a frame whose lines a jump may cross: the LCD on, past its first frame, no reset
    pending, nothing drawn, no STAT mode source enabled (the LYC source may be). No LCD
    transition changes any of it within a frame (only the CPU's writes do), so a quiet HALT
    tests it once."""
    i32 = m.i32
    if i32[i, LCD_RENDER] != 0 or i32[i, LCD_FIRST_FRAME] != 0 or i32[i, LCD_RESET] != 0:
        return 0
    if (reg(m, i, STAT) & 0x38) != 0 or (reg(m, i, LCDC) & 0x80) == 0:
        return 0
    if wp.static(CGB):  # a line is 912 CPU cycles in double speed: one by one there
        if speed_shift(m, i) != 0:
            return 0
    return 1


@wp.func
def at_quiet_mode2(m: wp.ref[Machine], i: int, cycles: wp.int64) -> int:
    """1 when the LCD is at the start of a line's mode 2, synced to ``cycles``, on a
    ``quiet_frame``."""
    i32 = m.i32
    i64 = m.i64
    if quiet_frame(m, i) == 0:
        return 0
    if i32[i, LCD_TRANSITION] != TRANS_NONE or i32[i, LCD_NEXT_MODE] != 3:
        return 0
    if (reg(m, i, STAT) & 3) != 2:
        return 0
    if i64[i, LCD_TARGET] - i64[i, LCD_CLOCK] != wp.int64(MODE2_CYCLES):
        return 0
    return wp.where(i64[i, LCD_LAST] == cycles, 1, 0)


# One out-of-line copy: inlined in the CPU's step it made the busy ROM, which never halts,
# 7 % slower and quest 11 % (bench.cpu_ab), and its caller calls it only where a
# transition is mode 2's start (once a line of quiet HALT).
@wp.func(inline=False)
def lcd_quiet_lines(m: wp.ref[Machine], i: int, cycles: wp.int64, limit: wp.int64) -> wp.int64:
    """The LCD moved whole lines ahead of ``cycles`` (see the module doc), each line's last
    transition before ``limit``; returns the new cycle count (``cycles``: none moved)."""
    if at_quiet_mode2(m, i, cycles) == 0:
        return cycles
    ly = reg(m, i, LY)
    lines = wp.int64(LAST_QUIET_LINE - ly)
    lines = wp.min(lines, (limit - wp.int64(1) - cycles) // wp.int64(LINE_CYCLES))
    lyc = reg(m, i, LYC)
    if (reg(m, i, STAT) & 0x40) != 0 and lyc > ly:
        lines = wp.min(lines, wp.int64(lyc - 1 - ly))
    if lines <= wp.int64(0):
        return cycles
    i32 = m.i32
    i64 = m.i64
    line = ly + wp.int32(lines)
    i32[i, LCD_M3_ADJUST] = mode3_adjustment(m, i, line - 1)
    wy = reg(m, i, WY)
    if wy > ly and wy <= line:
        i32[i, WIN_ACTIVE] = 1
    set_reg(m, i, LY, line)
    stat = reg(m, i, STAT) & 0xFB
    if lyc == line:
        stat = stat | 0x04
    set_reg(m, i, STAT, stat)
    i32[i, LCD_IRQ_LINE] = 0
    span = lines * wp.int64(LINE_CYCLES)
    clock = i64[i, LCD_CLOCK] + span
    i64[i, LCD_CLOCK] = clock
    i64[i, LCD_TARGET] = i64[i, LCD_TARGET] + span
    i64[i, LCD_LAST] = cycles + span
    i64[i, LCD_TO_IRQ] = wp.int64(MODE2_CYCLES)
    i64[i, LCD_TO_FRAME] = FRAME_T - clock
    return cycles + span
