"""LCD fields PyBoy 2.8.1's ``load_state`` derives instead of reading them from the file.

After the saved LCD fields are in place (``backends/savestate_bridge.py``), PyBoy sets:
the distance to the next LCD event (``clock_target - clock``; the CGB-only VBlank STAT
pre-trigger does not apply on DMG), the distance to the end of the frame, the STAT
interrupt line (recomputed from STAT with the line first low, so loading raises
nothing), and, when STAT says mode 3, the mode-3 length adjustment for the current line.
Each is computed here with the LCD's own functions (``kernels/ppu/ppu.py``).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.board.ioregs import FRAME_T, LY, reg
from gbxcule.kernels.ppu.ppu import lcd_mode, mode3_adjustment, stat_update_line
from gbxcule.kernels.state import (
    LCD_CLOCK,
    LCD_IRQ_LINE,
    LCD_M3_ADJUST,
    LCD_TARGET,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    Machine,
)

wp.set_module_options({"enable_backward": False})


@wp.kernel
def derive_lcd_after_load(m: Machine, mask: wp.array(dtype=wp.uint8)):
    i = wp.tid()
    if mask[i] == wp.uint8(0):
        return
    m.i64[i, LCD_TO_IRQ] = m.i64[i, LCD_TARGET] - m.i64[i, LCD_CLOCK]
    m.i64[i, LCD_TO_FRAME] = FRAME_T - m.i64[i, LCD_CLOCK]
    m.i32[i, LCD_IRQ_LINE] = 0
    stat_update_line(m, i)  # sets the line; the would-be interrupt is dropped, as PyBoy does
    if lcd_mode(m, i) == 3:
        m.i32[i, LCD_M3_ADJUST] = mode3_adjustment(m, i, reg(m, i, LY))
