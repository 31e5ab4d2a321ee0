"""Instruction fetch as PyBoy 2.8.1's ``fetch_and_execute`` reads it: opcode and operands.

``fetch`` returns the opcode and the two bytes after it packed in one int
(``op | n1 << 8 | n2 << 16``). Code in ROM is read straight from the mapped banks
(PyBoy indexes the bank flat, so an instruction straddling 0x3FFF/0x4000 reads
the neighbouring bytes); elsewhere each byte goes through the bus with PyBoy's
``memory_access_offset`` of 4 per operand byte, and only the opcode's own bytes
(``opcode_length``) are read.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.address_map import HRAM_LO, IE_ADDR, ROM_END
from gbxcule.kernels.board.bus import bus_read_at, hram_read_at
from gbxcule.kernels.board.mbc import rom_read
from gbxcule.kernels.cpu.cpu_regs import publish_for_bus
from gbxcule.kernels.state import BOOT_ON, Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def opcode_length(op: int) -> int:
    """Bytes of base opcode ``op`` (CB counts 2), PyBoy's OPCODE_LENGTHS."""
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    n = wp.int32(1)
    if x == 0:
        if z == 0 and y == 1:
            n = 3
        if z == 0 and y >= 2:
            n = 2
        if z == 1 and (y & 1) == 0:
            n = 3
        if z == 6:
            n = 2
    if x == 3:
        if z == 0 and y >= 4:
            n = 2
        if z == 2 and (y < 4 or y == 5 or y == 7):
            n = 3
        if z == 3 and y == 0:
            n = 3
        if z == 3 and y == 1:
            n = 2
        if z == 4 and y < 4:
            n = 3
        if z == 5 and y == 1:
            n = 3
        if z == 6:
            n = 2
    return n


@wp.func
def is_illegal(op: int) -> int:
    x = op >> 6
    y = (op >> 3) & 7
    z = op & 7
    bad = wp.int32(0)
    if x == 3:
        if z == 3 and y >= 2 and y <= 5:
            bad = 1
        if z == 4 and y >= 4:
            bad = 1
        if z == 5 and (y & 1) == 1 and y > 1:
            bad = 1
    return bad


@wp.func
def rom_code_at(code: wp.array(dtype=wp.int32), pc: int, lo: int, hi: int) -> int:
    """``fetch`` of code in the mapped ROM banks (PC + 2 below 0x8000, no boot ROM mapped
    over it): the entry of ``code`` (``Machine.rom_code``) at ``lo + pc`` or ``hi + pc``."""
    # PyBoy indexes the bank flat, so 0x3FFE/0x3FFF read the switchable bank's
    # neighbour exactly like this. With bank 0 mapped there PyBoy reads before its ROM
    # buffer, which no value can match; ``ROM_CODE_PAD`` in lo and hi makes that word 0
    # and keeps the index >= 0, and the mask tells the compiler so (no negative-index wrap).
    k = wp.where(pc + 2 < 0x4000, lo, hi) + pc
    return code[k & 0x7FFFFFFF]


@wp.func
def fetch_rom(m: wp.ref[Machine], i: int, pc: int, lo: int, hi: int) -> int:
    """``fetch`` of code in ROM (PC + 2 below 0x8000), one load from ``rom_code`` at ``lo +
    pc`` (below 0x4000) or ``hi + pc`` (``CpuRegs.rom_lo`` / ``rom_hi``, the mapped banks);
    -1 for code anywhere else (``fetch_outside_rom``)."""
    if pc + 2 >= ROM_END:
        return -1
    if pc < 0x100:  # the boot ROM may be mapped over 0x0000-0x00FF
        if m.i32[i, BOOT_ON] != 0:
            b0 = rom_read(m, i, pc)
            return b0 | (rom_read(m, i, pc + 1) << 8) | (rom_read(m, i, pc + 2) << 16)
    return rom_code_at(m.rom_code, pc, lo, hi)


@wp.func
def fetch_outside_rom(
    m: wp.ref[Machine],
    i: int,
    pc: int,
    cycles: wp.int64,
    hl: int,
) -> int:
    """``fetch`` of code outside ROM: each byte through the bus, which first gets the CPU's
    ``cycles`` and ``hl``, with PyBoy's access offset of 4 per operand byte."""
    publish_for_bus(m, i, cycles, hl)
    out = wp.int32(0)
    count = wp.int32(1)
    k = wp.int32(0)
    while k < count:
        addr = (pc + k) & 0xFFFF
        v = wp.int32(0)
        if addr >= HRAM_LO and addr < IE_ADDR:
            v = hram_read_at(m, i, addr, 4 * k)
        else:
            v = bus_read_at(m, i, addr, 4 * k)
        out = out | (v << (8 * k))
        if k == 0:
            count = opcode_length(v)
        k += 1
    return out


@wp.func(inline=False)
def fetch_outside_rom_outlined(
    m: wp.ref[Machine],
    i: int,
    pc: int,
    cycles: wp.int64,
    hl: int,
) -> int:
    """``fetch_outside_rom`` as one out-of-line copy (the GPU-shaped step, kernels/step/step.py)."""
    return fetch_outside_rom(m, i, pc, cycles, hl)


def _make_fetch(outside_rom):
    def fetch(
        m: wp.ref[Machine], i: int, pc: int, cycles: wp.int64, hl: int, lo: int, hi: int
    ) -> int:
        """Opcode and the two bytes after it (``op | n1 << 8 | n2 << 16``), read the way
        PyBoy's fetch reads them. Packed into one int so the bytes stay in registers.
        ``lo`` / ``hi``: where the mapped ROM banks start in ``rom_code`` (``CpuRegs``).
        ``hl`` is for the bus, read only for code outside ROM."""
        v = fetch_rom(m, i, pc, lo, hi)
        if v < 0:
            v = wp.static(outside_rom)(m, i, pc, cycles, hl)
        return v

    return fetch


fetch = wp.func(_make_fetch(fetch_outside_rom), name="fetch")
# ``fetch`` with code outside ROM read by ``fetch_outside_rom_outlined`` (the GPU shape)
fetch_rom_or_outlined = wp.func(
    _make_fetch(fetch_outside_rom_outlined), name="fetch_rom_or_outlined"
)
