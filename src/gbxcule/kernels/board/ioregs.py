"""IO page access and interrupt-flag raising shared by the IO units.

Plain register values live in ``Machine.mem``'s IO page (``IO_OFF + addr - 0xFF00``);
IE lives at ``IE_OFF``. IF keeps only its 5 flag bits; reads add the unused
bits as 1 (``kernels/board/io.py``). The timing constants are PyBoy's.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from gbxcule.core.dmg import FRAME_CYCLES, MAX_CYCLES
from gbxcule.core.memory_layout import IE_OFF, IO_OFF, IO_SIZE
from gbxcule.kernels.state import Machine, MachineState

wp.set_module_options({"enable_backward": False})

IO_BASE = wp.constant(IO_OFF)
IE_INDEX = wp.constant(IE_OFF)

# Register offsets within the IO page (address - 0xFF00).
P1 = wp.constant(0x00)
SB = wp.constant(0x01)
SC = wp.constant(0x02)
TIMA = wp.constant(0x05)
TMA = wp.constant(0x06)
TAC = wp.constant(0x07)
IF = wp.constant(0x0F)
LCDC = wp.constant(0x40)
STAT = wp.constant(0x41)
SCY = wp.constant(0x42)
SCX = wp.constant(0x43)
LY = wp.constant(0x44)
LYC = wp.constant(0x45)
DMA = wp.constant(0x46)
BGP = wp.constant(0x47)
OBP0 = wp.constant(0x48)
OBP1 = wp.constant(0x49)
WY = wp.constant(0x4A)
WX = wp.constant(0x4B)
# Game Boy Color registers (kernels/board/cgb.py, hdma.py; the CGB variant only)
KEY0 = wp.constant(0x4C)  # non-zero: a DMG cartridge's LCD downgraded
KEY1 = wp.constant(0x4D)
VBK = wp.constant(0x4F)
HDMA5 = wp.constant(0x55)
BCPS = wp.constant(0x68)
BCPD = wp.constant(0x69)
OCPS = wp.constant(0x6A)
OCPD = wp.constant(0x6B)
OPRI = wp.constant(0x6C)
SVBK = wp.constant(0x70)

# Interrupt flag bits (IF/IE), highest priority first.
INT_VBLANK = wp.constant(0x01)
INT_STAT = wp.constant(0x02)
INT_TIMER = wp.constant(0x04)
INT_SERIAL = wp.constant(0x08)
INT_JOYPAD = wp.constant(0x10)

# IO registers whose value lives in a unit (timer, serial, LCD, IF): PyBoy's raw io bytes
# for them are unused (a PyBoy state keeps them 0); ours hold the register.
UNIT_REGS = (SB, SC, TIMA, TMA, TAC, IF, *range(LCDC, WX + 1))

FRAME_T = wp.constant(wp.int64(FRAME_CYCLES))
NEVER = wp.constant(wp.int64(MAX_CYCLES))


@wp.func
def reg(m: wp.ref[Machine], i: int, r: int) -> int:
    """Raw value of IO register ``0xFF00 + r``."""
    return int(m.mem[i, IO_BASE + r])


@wp.func
def set_reg(m: wp.ref[Machine], i: int, r: int, value: int):
    m.mem[i, IO_BASE + r] = wp.uint8(value & 0xFF)


@wp.func
def raise_interrupt(m: wp.ref[Machine], i: int, bits: int):
    """PyBoy's ``set_interruptflag``: OR ``bits`` into IF."""
    if bits != 0:
        m.mem[i, IO_BASE + IF] = wp.uint8((int(m.mem[i, IO_BASE + IF]) | bits) & 0x1F)


@wp.func
def interrupt_enable(m: wp.ref[Machine], i: int) -> int:
    return int(m.mem[i, IE_INDEX])


@wp.func
def pending_interrupts(m: wp.ref[Machine], i: int) -> int:
    """IF & IE over the 5 interrupt bits (PyBoy's ``raised_and_enabled``)."""
    return reg(m, i, IF) & int(m.mem[i, IE_INDEX]) & 0x1F


@wp.func
def lowest_set_bit(bits: int) -> int:
    """The highest-priority interrupt bit of a non-zero ``bits`` (VBlank first)."""
    return bits & (-bits)


@wp.func
def interrupt_vector(bit: int) -> int:
    """Handler address of one interrupt bit: 0x40, 0x48, 0x50, 0x58, 0x60."""
    n = wp.int32(0)
    b = bit
    while b > 1:
        b = b >> 1
        n += 1
    return 0x40 + 8 * n


def host_io(st: MachineState) -> np.ndarray:
    """The IO page (0xFF00-0xFF7F) of a host state: a view into ``st["mem"]``."""
    return st["mem"][IO_OFF : IO_OFF + IO_SIZE]
