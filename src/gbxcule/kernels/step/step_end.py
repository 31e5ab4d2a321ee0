"""The step's own length: an action's timing and the early end on a RAM byte.

``core/actions.py`` packs an action's hold and length into the word the step kernel
reads per env (mask, hold << 8, frames << 16; 0: the launch's), and ``core/step_end.py``
says when a step ends early. The condition lives in each env's row of ``Machine.i32``,
in ``STEP_WORDS`` columns past the hook row (``kernels/step/hooks.py``): not emulator state
(capture, restore, start states and ``reset()`` see only the named columns), set by the
host (``backends/warp_base.py``'s ``set_step_end``), the same in every row. The step
writes the frames it ran to ``STEP_FRAMES``.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import CGB_WRAM_BANK_SIZE, CGB_WRAMX, wramx_bank_offset
from gbxcule.kernels.board.memmap import wram_at
from gbxcule.kernels.state import Machine
from gbxcule.kernels.step.hooks import HOOK_ROW, HOOK_WORDS

wp.set_module_options({"enable_backward": False})

STEP_ROW = HOOK_ROW + HOOK_WORDS
STEP_END_AT = wp.constant(STEP_ROW)  # 1 + the byte's column of ``mem``; 0: no early end
STEP_END_OP = wp.constant(STEP_ROW + 1)  # core/step_end.py's STEP_END_OPS index
STEP_END_VALUE = wp.constant(STEP_ROW + 2)
STEP_END_MASK = wp.constant(STEP_ROW + 3)
STEP_END_MIN = wp.constant(STEP_ROW + 4)  # frames a step runs before the end is checked
STEP_FRAMES = wp.constant(STEP_ROW + 5)  # frames this env's last step ran
STEP_WORDS = 6
CGB = False  # True in the CGB variant (kernels/variant.py): D000 by SVBK
WRAMX_LO = wp.constant(CGB_WRAMX[0])
WRAMX_COLUMN = wp.constant(wramx_bank_offset(0, 1))  # D000's column (bank 1)
WRAM_BANK = wp.constant(CGB_WRAM_BANK_SIZE)


@wp.func
def watched_byte(m: wp.ref[Machine], i: int, at: int) -> int:
    """The byte at column ``at - 1`` of ``mem`` (``STEP_END_AT``); on a Game Boy Color
    machine a D000-DFFF byte is read in the bank SVBK maps (``memmap.wram_at``)."""
    column = at - 1
    if wp.static(CGB):
        if column >= WRAMX_COLUMN and column < WRAMX_COLUMN + WRAM_BANK:
            column = wram_at(m, i, WRAMX_LO + column - WRAMX_COLUMN)
    return int(m.mem[i, column])


@wp.func(inline=False)
def step_end_start(m: wp.ref[Machine], i: int) -> int:
    """The watched byte as the step begins, or -1 when no early end is set."""
    at = m.i32[i, STEP_END_AT]
    if at == 0:
        return -1
    return watched_byte(m, i, at)


@wp.func(inline=False)
def step_end_met(m: wp.ref[Machine], i: int, start: int, frames_run: int) -> int:
    """1 when the step ends after its ``frames_run``-th frame (``core/step_end.py``)."""
    i32 = m.i32
    if start < 0 or frames_run < i32[i, STEP_END_MIN]:
        return 0
    mask = i32[i, STEP_END_MASK]
    now = watched_byte(m, i, i32[i, STEP_END_AT]) & mask
    op = i32[i, STEP_END_OP]
    if op == 0:
        return wp.where(now != (start & mask), 1, 0)
    same = now == i32[i, STEP_END_VALUE]
    if op == 1:
        return wp.where(same, 1, 0)
    return wp.where(same, 0, 1)
