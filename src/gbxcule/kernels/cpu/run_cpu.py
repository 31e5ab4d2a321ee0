"""A bare instruction loop with no timing, for testing the CPU and memory map alone.

``run_instructions`` executes up to ``count`` instructions per env, stopping early
at ``stop_pc`` (when >= 0 and the boot ROM is unmapped), on HALT, or when the
env is locked. Interrupts are never dispatched: programs run with it must keep
IME off. The real run loop is kernels/step/step.py.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.cpu.cpu_step import cpu_execute
from gbxcule.kernels.state import BOOT_ON, HALTED, LOCKED, PC, Machine

wp.set_module_options({"enable_backward": False})


@wp.kernel
def run_instructions(m: Machine, count: int, stop_pc: int):
    i = wp.tid()
    n = wp.int32(0)
    while n < count:
        if m.i32[i, LOCKED] != 0 or m.i32[i, HALTED] != 0:
            break
        if stop_pc >= 0 and m.i32[i, PC] == stop_pc and m.i32[i, BOOT_ON] == 0:
            break
        cpu_execute(m, i)
        n += 1
