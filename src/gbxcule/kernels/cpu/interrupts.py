"""Interrupt check and dispatch as PyBoy 2.8.1's CPU does them.

PyBoy checks interrupts once per run-loop slice, at the start of ``CPU.tick``,
never between the instructions of a slice. A pending interrupt (IF & IE) wakes
HALT: PC, which HALT left on the HALT opcode, then moves past it, unless HALT
ran right after EI (``halt_ei``), in which case the handler returns to the HALT.
With IME set the interrupt is dispatched: the high byte of PC is pushed first,
then the choice is made again (that push may have written IE or IF); if nothing
is pending any more, dispatch is cancelled with PC = 0 and IME cleared.
Otherwise the chosen flag is cleared, the low byte pushed, PC jumps to the
vector and 20 cycles pass. Nothing is checked while an EI delay is counting.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.board.bus import bus_write
from gbxcule.kernels.board.ioregs import IF, interrupt_vector, lowest_set_bit, pending_interrupts
from gbxcule.kernels.board.ioregs import reg as io_reg
from gbxcule.kernels.board.ioregs import set_reg as set_io_reg
from gbxcule.kernels.state import (
    CYCLES,
    HALT_EI,
    HALTED,
    IME,
    IME_DELAY,
    INT_QUEUED,
    PC,
    SP,
    Machine,
)

wp.set_module_options({"enable_backward": False})

DISPATCH_CYCLES = wp.constant(wp.int64(20))


@wp.func
def handle_interrupt(m: wp.ref[Machine], i: int) -> int:
    """Dispatch the highest-priority pending interrupt; 0 if the first push cancelled it.
    The two pushes share one bus write (one copy of the IO write paths, not two)."""
    i32 = m.i32
    i64 = m.i64
    sp = i32[i, SP]
    pc = i32[i, PC]
    k = wp.int32(0)
    while k < 2:
        bus_write(m, i, (sp - 1 - k) & 0xFFFF, wp.where(k == 0, pc >> 8, pc & 0xFF))
        if k == 0:
            pending = pending_interrupts(m, i)
            if pending == 0:
                i32[i, PC] = 0
                i32[i, IME] = 0
                return 0
            bit = lowest_set_bit(pending)
            set_io_reg(m, i, IF, io_reg(m, i, IF) ^ bit)
            i32[i, PC] = interrupt_vector(bit)
        k += 1
    i32[i, SP] = (sp - 2) & 0xFFFF
    i64[i, CYCLES] = i64[i, CYCLES] + DISPATCH_CYCLES
    i32[i, IME] = 0
    return 1


@wp.func
def check_interrupts(m: wp.ref[Machine], i: int) -> int:
    """PyBoy's ``check_interrupts``: 1 when an interrupt is pending (the CPU leaves HALT)."""
    i32 = m.i32
    if i32[i, INT_QUEUED] != 0 or i32[i, IME_DELAY] != 0:
        return 0
    if pending_interrupts(m, i) == 0:
        i32[i, INT_QUEUED] = 0
        return 0
    if i32[i, HALTED] != 0 and i32[i, HALT_EI] == 0:
        i32[i, PC] = (i32[i, PC] + 1) & 0xFFFF  # step past the HALT opcode
    i32[i, HALT_EI] = 0
    if i32[i, IME] != 0:
        handle_interrupt(m, i)
    i32[i, INT_QUEUED] = 1
    return 1


@wp.func(inline=False)
def check_interrupts_outlined(m: wp.ref[Machine], i: int) -> int:
    """``check_interrupts`` as one out-of-line copy (the GPU-shaped step, kernels/step/step.py)."""
    return check_interrupts(m, i)
