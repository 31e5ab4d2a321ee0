"""The SM83 CPU's state between instructions: its power-on values and its PyBoy mapping.

The instruction semantics live in ``cpu.py`` / ``cpu_fast.py`` / ``cpu_regs.py`` and the
interrupt check in ``interrupts.py``; this file keeps what PyBoy's ``CPU`` keeps in its
``__init__``, ``save_state`` and ``load_state``: the registers, IME, its EI delay, HALT,
the queued-interrupt flag and the cycle counter (with IF and IE, which PyBoy's CPU saves).

* ``cpu_power_on(m, i)``: PyBoy's ``CPU()``: every register 0, PC 0, nothing pending.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.state import HALT_EI, IME_DELAY, INT_QUEUED, PC, Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_power_on(m: wp.ref[Machine], i: int):
    """PC 0, no EI delay, no HALT-after-EI, no queued interrupt (registers, IME, HALT,
    cycles, IF and IE are 0: every column and the IO page start at 0)."""
    i32 = m.i32
    i32[i, PC] = 0
    i32[i, IME_DELAY] = 0
    i32[i, HALT_EI] = 0
    i32[i, INT_QUEUED] = 0
