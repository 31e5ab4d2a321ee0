"""The CPU registers held in locals while the CPU runs a stretch of instructions.

``cpu_tick`` (kernels/step.py) loads them once (``load_regs``), runs
``cpu_step`` on them, and stores them back (``store_regs``) before anything else
reads them: interrupt dispatch at the next slice, the host. In memory
(``Machine.i32``) only H and L stay current meanwhile, because OAM reads during
DMA compare the address with HL (kernels/dma.py).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.state import (
    IME,
    IME_DELAY,
    PC,
    REG_A,
    REG_B,
    REG_C,
    REG_D,
    REG_E,
    REG_F,
    REG_H,
    REG_L,
    SP,
    Machine,
)

wp.set_module_options({"enable_backward": False})


@wp.struct
class CpuRegs:
    """PC, SP, the 8-bit registers and the IME state of one env."""

    pc: wp.int32
    sp: wp.int32
    a: wp.int32
    f: wp.int32
    b: wp.int32
    c: wp.int32
    d: wp.int32
    e: wp.int32
    h: wp.int32
    l: wp.int32  # noqa: E741
    ime: wp.int32
    ime_delay: wp.int32


@wp.func
def load_regs(m: wp.ref[Machine], i: int) -> CpuRegs:
    i32 = m.i32
    r = CpuRegs()
    r.pc = i32[i, PC]
    r.sp = i32[i, SP]
    r.a = i32[i, REG_A]
    r.f = i32[i, REG_F]
    r.b = i32[i, REG_B]
    r.c = i32[i, REG_C]
    r.d = i32[i, REG_D]
    r.e = i32[i, REG_E]
    r.h = i32[i, REG_H]
    r.l = i32[i, REG_L]
    r.ime = i32[i, IME]
    r.ime_delay = i32[i, IME_DELAY]
    return r


@wp.func
def store_regs(m: wp.ref[Machine], i: int, r: CpuRegs):
    i32 = m.i32
    i32[i, PC] = r.pc
    i32[i, SP] = r.sp
    i32[i, REG_A] = r.a
    i32[i, REG_F] = r.f
    i32[i, REG_B] = r.b
    i32[i, REG_C] = r.c
    i32[i, REG_D] = r.d
    i32[i, REG_E] = r.e
    i32[i, REG_H] = r.h
    i32[i, REG_L] = r.l
    i32[i, IME] = r.ime
    i32[i, IME_DELAY] = r.ime_delay
