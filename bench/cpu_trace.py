"""The kernels of bench/cpu_profile.py: an instruction trace and the fast paths' coverage.

Warp's kernel language, type-checked by the Warp compiler like ``src/gbxcule/kernels``
(so pyright skips this file, pyproject.toml).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.cpu.cpu_fast import cpu_fast, cpu_fast_cb, cpu_fast_mem
from gbxcule.kernels.cpu.cpu_regs import CpuRegs, get_r16, load_regs, reg_hl, set_bcdehl
from gbxcule.kernels.cpu.cpu_step import cpu_execute
from gbxcule.kernels.cpu.fetch import fetch, is_illegal
from gbxcule.kernels.cpu.interrupts import check_interrupts
from gbxcule.kernels.state import HALTED, INT_QUEUED, LOCKED, Machine
from gbxcule.kernels.step.slice import sync_units

wp.set_module_options({"enable_backward": False})

BINS = 512  # base opcodes, then CB opcodes (256 + the byte after $CB)
TRACE_COLS = 6  # code bytes, pc, hl, bc, de, sp << 8 | f


@wp.kernel
def trace_kernel(m: Machine, count: int, rows: wp.array2d(dtype=wp.int64)):
    """Run up to ``count`` instructions, one record each in ``rows`` (launch with dim 1):
    interrupts checked and the units synced after every instruction (bench/cpu_profile.py)."""
    i = wp.tid()
    n = wp.int32(0)
    while n < count:
        if m.i32[i, LOCKED] != 0 or m.i32[i, HALTED] != 0:
            break
        check_interrupts(m, i)
        m.i32[i, INT_QUEUED] = 0
        r = load_regs(m, i)
        rows[n, 0] = wp.int64(fetch(m, i, r.pc, r.cycles, r.hl, r.rom_lo, r.rom_hi))
        rows[n, 1] = wp.int64(r.pc)
        rows[n, 2] = wp.int64(reg_hl(r))
        rows[n, 3] = wp.int64(get_r16(r, 0))
        rows[n, 4] = wp.int64(get_r16(r, 1))
        rows[n, 5] = wp.int64((r.sp << 8) | r.f)
        cpu_execute(m, i)
        sync_units(m, i)
        n += 1


@wp.kernel
def coverage_kernel(m: Machine, out: wp.array(dtype=wp.int32)):
    """``out[k]`` = 1 when the fast paths run opcode bin k, else 0. Env 0 of ``m`` is
    scratch: the memory fast paths really access it (WRAM and HRAM addresses)."""
    k = wp.tid()
    regs = CpuRegs()
    regs.pc = 0xC000
    regs.sp = 0xDFF0
    set_bcdehl(regs, 0xC1, 0x80, 0xC1, 0, 0xC1, 0)
    fast = wp.int32(0)
    if k < 256:
        if is_illegal(k) == 0 and k != 0xCB:
            fast = cpu_fast(regs, k, 0x80, 0xC110)
            if fast == 0:
                fast = cpu_fast_mem(m, 0, regs, k, 0x80, 0xC110)
    elif ((k - 256) & 7) != 6:
        fast = cpu_fast_cb(regs, k - 256)
    out[k] = wp.where(fast != 0, 1, 0)
