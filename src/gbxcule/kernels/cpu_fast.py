"""The CPU's fast path: base opcodes that touch only registers, decoded on their own.

``cpu_step`` (kernels/cpu.py) decodes every opcode through the same phases (reads,
compute, writes, write-back), so one code path serves whole opcode families; on
the CPU device that costs every instruction the work of all phases. Most
instructions a game runs touch no memory: loads between registers, 8-bit ALU ops,
INC/DEC, 16-bit loads and INC/DEC, relative and absolute jumps. ``cpu_fast`` runs
those directly and ``cpu_step`` skips its phases for them (measured in
history/performance.md, step 13). Everything else,
and any instruction while an EI countdown runs, goes the general way. The results
are the same: the lockstep with PyBoy and the instruction-by-instruction fuzz traces
run both paths.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.alu import alu8, condition, inc_dec8, signed8
from gbxcule.kernels.cpu_regs import CpuRegs, get_r8, get_r16, set_r8, set_r16

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_fast(regs: wp.ref[CpuRegs], op: int, n1: int, n16: int) -> int:
    """Run base opcode ``op`` (operands ``n1`` / ``n16``) if it touches only registers: its
    T-cycles, with PC and the registers updated; 0 (nothing changed) otherwise."""
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    pc = regs.pc
    cyc = wp.int32(0)
    npc = pc + 1
    if x == 1:
        if y != 6 and z != 6:  # LD r,r'
            set_r8(regs, y, get_r8(regs, z))
            cyc = 4
    elif x == 2:
        if z != 6:  # ALU A,r
            r = alu8(y, regs.a, get_r8(regs, z), regs.f)
            regs.a = r[0]
            regs.f = r[1]
            cyc = 4
    elif x == 0:
        if z == 0 and y == 0:  # NOP
            cyc = 4
        if z == 0 and y >= 3:  # JR / JR cc
            cyc = 8
            npc = pc + 2
            if y == 3 or condition(y - 4, regs.f) != 0:
                cyc = 12
                npc = pc + 2 + signed8(n1)
        if z == 1 and (y & 1) == 0:  # LD rr,n16
            set_r16(regs, y >> 1, n16)
            cyc = 12
            npc = pc + 3
        if z == 3:  # INC rr / DEC rr
            set_r16(regs, y >> 1, (get_r16(regs, y >> 1) + 1 - 2 * (y & 1)) & 0xFFFF)
            cyc = 8
        if (z == 4 or z == 5) and y != 6:  # INC r / DEC r
            r = inc_dec8(get_r8(regs, y), z - 4, regs.f)
            set_r8(regs, y, r[0])
            regs.f = r[1]
            cyc = 4
        if z == 6 and y != 6:  # LD r,n8
            set_r8(regs, y, n1)
            cyc = 8
            npc = pc + 2
    else:
        if z == 6:  # ALU A,n8
            r = alu8(y, regs.a, n1, regs.f)
            regs.a = r[0]
            regs.f = r[1]
            cyc = 8
            npc = pc + 2
        if z == 3 and y == 0:  # JP n16
            cyc = 16
            npc = n16
        if z == 2 and y < 4:  # JP cc,n16
            cyc = 12
            npc = pc + 3
            if condition(y, regs.f) != 0:
                cyc = 16
                npc = n16
    if cyc != 0:
        regs.pc = npc & 0xFFFF
    return cyc
