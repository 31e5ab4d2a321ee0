"""CGB HDMA's registers and state (FF51-FF55) as PyBoy 2.8.1 keeps them (``HDMA`` in its
``mb.py``); the CGB variant only (``CGB``, kernels/variant.py). The bytes move through the
bus (``kernels/board/bus.py``: ``hdma_io_write``, ``hdma_block``), which calls these.

State: HDMA1-5 as written in the IO page's backing bytes (HDMA1-4 read $FF; HDMA5 reads as
PyBoy keeps it), the current source and destination and the active flag in
``Machine.cgb`` at ``CGB_HDMA_OFF``. PyBoy's rules, which hardware does not share: a
general-purpose transfer takes no cycles and is not wrapped inside VRAM; an HBlank block is
copied whenever the motherboard loop meets mode 0 with the CPU running (not halted), and
adds 206 cycles; stopping a transfer leaves HDMA5 reading $80.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import CGB_HDMA_OFF
from gbxcule.kernels.address_map import CART_RAM_LO, VRAM_LO
from gbxcule.kernels.board.ioregs import HDMA5, LCDC, STAT, reg, set_reg
from gbxcule.kernels.state import HALTED, Machine

wp.set_module_options({"enable_backward": False})

SRC = wp.constant(CGB_HDMA_OFF)
DST = wp.constant(CGB_HDMA_OFF + 2)
ACTIVE = wp.constant(CGB_HDMA_OFF + 4)
BLOCK_CYCLES = wp.constant(206)  # PyBoy's HDMA.tick: the CPU waits this long a block


@wp.func
def hdma_word(m: wp.ref[Machine], i: int, at: int) -> int:
    return int(m.cgb[i, at]) | (int(m.cgb[i, at + 1]) << 8)


@wp.func
def set_hdma_word(m: wp.ref[Machine], i: int, at: int, value: int):
    m.cgb[i, at] = wp.uint8(value & 0xFF)
    m.cgb[i, at + 1] = wp.uint8((value >> 8) & 0xFF)


@wp.func
def hdma_active(m: wp.ref[Machine], i: int) -> int:
    return int(m.cgb[i, ACTIVE])


@wp.func
def hdma_running(m: wp.ref[Machine], i: int) -> int:
    """An HBlank transfer PyBoy's coordinator runs: active, on a Colour cartridge."""
    return wp.where(m.cgb_mode != 0 and hdma_active(m, i) != 0, 1, 0)


@wp.func
def hdma_address_write(m: wp.ref[Machine], i: int, r: int, v: int):
    """FF51-FF54 (``r`` 0x51-0x54) on a Colour cartridge: the raw byte, and the source or
    destination it shapes (PyBoy's masks: source low nibble 0, destination in VRAM)."""
    set_reg(m, i, r, v)
    src = hdma_word(m, i, SRC)
    dst = hdma_word(m, i, DST)
    if r == 0x51:
        set_hdma_word(m, i, SRC, (v << 8) | (src & 0xFF))
    elif r == 0x52:
        set_hdma_word(m, i, SRC, (src & 0xFF00) | (v & 0xF0))
    elif r == 0x53:
        set_hdma_word(m, i, DST, ((v & 0x1F) << 8) | (dst & 0xFF) | VRAM_LO)
    else:
        set_hdma_word(m, i, DST, (dst & 0xFF00) | (v & 0xF0))


@wp.func
def hdma5_write(m: wp.ref[Machine], i: int, v: int) -> int:
    """FF55 on a Colour cartridge (PyBoy's ``set_hdma5``): the bytes a general-purpose
    transfer now copies (the bus copies them, then calls ``hdma_general_done``), -1 for an
    HBlank transfer started (-2: started with the LCD off, whose first block the bus
    copies at once), 0 for a running transfer stopped or relengthened."""
    result = 0
    if hdma_active(m, i) != 0:
        if (v & 0x80) == 0:
            m.cgb[i, ACTIVE] = wp.uint8(0)
            set_reg(m, i, HDMA5, 0x80)
        else:
            set_reg(m, i, HDMA5, v & 0x7F)
    elif (v & 0x80) == 0:
        set_reg(m, i, HDMA5, v)
        result = ((v & 0x7F) + 1) * 16
    else:
        set_reg(m, i, HDMA5, v & 0x7F)
        m.cgb[i, ACTIVE] = wp.uint8(1)
        result = -1
        if (reg(m, i, LCDC) & 0x80) == 0:
            result = -2
    return result


@wp.func
def hdma_general_done(m: wp.ref[Machine], i: int, n: int):
    set_hdma_word(m, i, SRC, hdma_word(m, i, SRC) + n)
    set_hdma_word(m, i, DST, hdma_word(m, i, DST) + n)
    set_reg(m, i, HDMA5, 0xFF)


@wp.func
def hdma_block_done(m: wp.ref[Machine], i: int):
    """After an HBlank block's 16 bytes: the addresses on (the destination wraps in VRAM,
    the source skips it), HDMA1-4 from them, the length down or the transfer over."""
    src = (hdma_word(m, i, SRC) + 0x10) & 0xFFFF
    dst = (hdma_word(m, i, DST) + 0x10) & 0xFFFF
    if dst == CART_RAM_LO:
        dst = VRAM_LO
    if src == VRAM_LO:
        src = CART_RAM_LO
    set_hdma_word(m, i, SRC, src)
    set_hdma_word(m, i, DST, dst)
    set_reg(m, i, 0x51, src >> 8)
    set_reg(m, i, 0x52, src & 0xFF)
    set_reg(m, i, 0x53, dst >> 8)
    set_reg(m, i, 0x54, dst & 0xFF)
    left = reg(m, i, HDMA5)
    if left == 0:
        m.cgb[i, ACTIVE] = wp.uint8(0)
        set_reg(m, i, HDMA5, 0xFF)
    else:
        set_reg(m, i, HDMA5, left - 1)


@wp.func
def hdma_block_due(m: wp.ref[Machine], i: int) -> int:
    """PyBoy's coordinator copies a block instead of running the CPU: a Colour cartridge,
    the CPU not halted, a transfer running, the LCD on and in mode 0."""
    if m.i32[i, HALTED] != 0 or hdma_running(m, i) == 0:
        return 0
    if (reg(m, i, LCDC) & 0x80) == 0 or (reg(m, i, STAT) & 3) != 0:
        return 0
    return 1
