"""The CPU registers held in locals while the CPU runs a stretch of instructions.

``cpu_tick`` (kernels/step/step.py) loads them once (``load_regs``), runs
``cpu_step`` on them, and stores them back (``store_regs``) before anything else
reads them: interrupt dispatch at the next slice, the host. The cycle counter
travels with them (``cycles``). Meanwhile memory is brought up to date only where
something else reads it: before every bus access the CPU stores the access's cycle
count (``CYCLES``) and H and L (OAM reads during DMA compare the address with HL,
kernels/board/dma.py): ``publish_for_bus``. ``bus_in`` / ``bus_out`` are the CPU's data
accesses for both decode paths (kernels/cpu/cpu.py, kernels/cpu/cpu_fast.py); they reach
WRAM directly, since nothing there depends on the cycle, and HRAM directly while no
OAM DMA runs (every 0xFF00-0xFFFF access first catches the DMA up, kernels/board/dma.py).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.address_map import HRAM_LO, IE_ADDR, OAM_LO, ROM_END, WRAM_LO
from gbxcule.kernels.board.bus import HRAM_BASE, bus_read_at, bus_write_at
from gbxcule.kernels.board.mbc import rom_read
from gbxcule.kernels.board.memmap import wram_at
from gbxcule.kernels.state import (
    CYCLES,
    DMA_ACTIVE,
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
    ROM_BANK,
    ROM_BANK_LOW,
    ROM_CODE_PAD,
    SP,
    Machine,
)

wp.set_module_options({"enable_backward": False})


@wp.struct
class CpuRegs:
    """PC, SP, A, F, the other six 8-bit registers packed in two ints (``bcde``, ``hl``),
    the IME state and the cycle count of one env, and where its mapped ROM banks start.

    B, C, D and E share one int32 and H and L another, each pair little-endian in its 16
    bits (C, B, E, D from bit 0; L, H), so register ``idx`` as opcodes number it is the
    byte ``(idx ^ 1) & 3`` of ``bcde`` (0-3) or of ``hl`` (4, 5), and pair ``p`` (BC, DE)
    the 16 bits at ``16 * p`` of ``bcde``: ``get_r8``/``set_r8`` shift instead of choosing
    a field. With one field per register, clang turned the choice of field into a jump
    table and a pointer into the struct, which kept every register in stack memory for
    the whole instruction loop (history/performance.md); 32-bit words, not the one int64
    of before, because a GPU does 64-bit shifts and masks in pairs of registers."""

    pc: wp.int32
    sp: wp.int32
    a: wp.int32
    f: wp.int32
    bcde: wp.int32
    hl: wp.int32
    ime: wp.int32
    ime_delay: wp.int32
    cycles: wp.int64  # T-cycles since power-on (CYCLES)
    # Where the mapped ROM banks start in ``rom_code`` (kernels/cpu/fetch.py): 0x0000-0x3FFF
    # at ``rom_lo`` + PC, 0x4000-0x7FFF at ``rom_hi`` + PC. Loaded only: a mapper write
    # ends the run of instructions (PyBoy's bail), so they hold for all of it.
    rom_lo: wp.int32
    rom_hi: wp.int32


@wp.func
def set_bcdehl(r: wp.ref[CpuRegs], b: int, c: int, d: int, e: int, h: int, l: int):  # noqa: E741
    """``CpuRegs.bcde`` and ``CpuRegs.hl`` of these six 8-bit registers."""
    r.bcde = ((b & 0xFF) << 8) | (c & 0xFF) | ((d & 0xFF) << 24) | ((e & 0xFF) << 16)
    r.hl = ((h & 0xFF) << 8) | (l & 0xFF)


@wp.func
def reload_regs(m: wp.ref[Machine], i: int, r: wp.ref[CpuRegs]):
    """``load_regs`` into an existing ``CpuRegs``."""
    i32 = m.i32
    r.pc = i32[i, PC]
    r.sp = i32[i, SP]
    r.a = i32[i, REG_A]
    r.f = i32[i, REG_F]
    set_bcdehl(
        r, i32[i, REG_B], i32[i, REG_C], i32[i, REG_D], i32[i, REG_E], i32[i, REG_H], i32[i, REG_L]
    )
    r.ime = i32[i, IME]
    r.ime_delay = i32[i, IME_DELAY]
    r.cycles = m.i64[i, CYCLES]
    r.rom_lo = i32[i, ROM_BANK_LOW] * 0x4000 + ROM_CODE_PAD
    r.rom_hi = i32[i, ROM_BANK] * 0x4000 - 0x4000 + ROM_CODE_PAD


@wp.func
def copy_regs(src: wp.ref[CpuRegs], dst: wp.ref[CpuRegs]):
    """Every field of ``src`` into ``dst``."""
    dst.pc = src.pc
    dst.sp = src.sp
    dst.a = src.a
    dst.f = src.f
    dst.bcde = src.bcde
    dst.hl = src.hl
    dst.ime = src.ime
    dst.ime_delay = src.ime_delay
    dst.cycles = src.cycles
    dst.rom_lo = src.rom_lo
    dst.rom_hi = src.rom_hi


@wp.func
def load_regs(m: wp.ref[Machine], i: int) -> CpuRegs:
    r = CpuRegs()
    reload_regs(m, i, r)
    return r


@wp.func
def store_regs(m: wp.ref[Machine], i: int, r: CpuRegs):
    i32 = m.i32
    i32[i, PC] = r.pc
    i32[i, SP] = r.sp
    i32[i, REG_A] = r.a
    i32[i, REG_F] = r.f
    i32[i, REG_B] = (r.bcde >> 8) & 0xFF
    i32[i, REG_C] = r.bcde & 0xFF
    i32[i, REG_D] = (r.bcde >> 24) & 0xFF
    i32[i, REG_E] = (r.bcde >> 16) & 0xFF
    i32[i, REG_H] = (r.hl >> 8) & 0xFF
    i32[i, REG_L] = r.hl & 0xFF
    i32[i, IME] = r.ime
    i32[i, IME_DELAY] = r.ime_delay
    m.i64[i, CYCLES] = r.cycles


@wp.func
def get_r8(regs: wp.ref[CpuRegs], idx: int) -> int:
    """8-bit register ``idx`` as opcodes number it (B C D E H L - A; 6, [HL], reads A)."""
    word = wp.where(idx >= 4, regs.hl, regs.bcde)
    return wp.where(idx >= 6, regs.a, (word >> (8 * ((idx ^ 1) & 3))) & 0xFF)


@wp.func
def set_r8(regs: wp.ref[CpuRegs], idx: int, v: int):
    """Write 8-bit register ``idx`` (6, [HL], and -1 write nothing) with the byte ``v``."""
    at = 8 * ((idx ^ 1) & 3)
    keep = ~(0xFF << at)
    put = (v & 0xFF) << at
    in_bcde = idx >= 0 and idx < 4
    in_hl = idx == 4 or idx == 5
    regs.bcde = wp.where(in_bcde, (regs.bcde & keep) | put, regs.bcde)
    regs.hl = wp.where(in_hl, (regs.hl & keep) | put, regs.hl)
    regs.a = wp.where(idx == 7, v, regs.a)


@wp.func
def get_r16(regs: wp.ref[CpuRegs], p: int) -> int:
    """Pair ``p`` as opcodes number it: BC, DE, HL, SP."""
    bc_de = (regs.bcde >> (16 * (p & 1))) & 0xFFFF
    return wp.where(p >= 2, wp.where(p >= 3, regs.sp, regs.hl), bc_de)


@wp.func
def reg_hl(regs: wp.ref[CpuRegs]) -> int:
    return regs.hl


@wp.func
def set_r16(regs: wp.ref[CpuRegs], p: int, v: int):
    """Write pair ``p`` (BC, DE, HL, SP; 4: AF, as POP AF does: F's low nibble reads as 0)
    with the 16-bit ``v``; any other ``p`` writes nothing."""
    at = 16 * (p & 1)
    keep = ~(0xFFFF << at)
    put = (v & 0xFFFF) << at
    regs.bcde = wp.where(p == 0 or p == 1, (regs.bcde & keep) | put, regs.bcde)
    regs.hl = wp.where(p == 2, v & 0xFFFF, regs.hl)
    if p == 3:
        regs.sp = v
    if p == 4:
        regs.a = v >> 8
        regs.f = v & 0xF0


@wp.func
def publish_for_bus(m: wp.ref[Machine], i: int, at: wp.int64, hl: int):
    """What the bus reads of the CPU while its registers are held: the cycle count of the
    access (timer, LCD and DMA sync to it) and HL (OAM reads during DMA compare with it)."""
    m.i64[i, CYCLES] = at
    m.i32[i, REG_H] = hl >> 8
    m.i32[i, REG_L] = hl & 0xFF


@wp.func(inline=False)
def bus_in_published(m: wp.ref[Machine], i: int, hl: int, at: wp.int64, addr: int, off: int) -> int:
    """``bus_in_slow`` past ROM: the cycle and HL published to the bus, then the read."""
    publish_for_bus(m, i, at, hl)
    return bus_read_at(m, i, addr, off)


@wp.func(inline=False)  # one out-of-line copy: inlined at every call site, ptxas took 4x longer
def bus_in_slow(m: wp.ref[Machine], i: int, hl: int, at: wp.int64, addr: int, off: int) -> int:
    if addr < ROM_END:
        # ROM reads neither sync nor see the cycle, HL or access offset: read here, before
        # publishing them, in a function small enough to save no registers (a game's table
        # lookups in banked ROM); the rest of the bus is a call of its own
        return rom_read(m, i, addr)
    return bus_in_published(m, i, hl, at, addr, off)


@wp.func(inline=False)
def bus_out_slow(
    m: wp.ref[Machine], i: int, hl: int, at: wp.int64, addr: int, v: int, off: int
) -> int:
    publish_for_bus(m, i, at, hl)
    return bus_write_at(m, i, addr, v, off)


@wp.func
def is_direct(m: wp.ref[Machine], i: int, addr: int) -> int:
    """1 if a CPU access to ``addr`` is a plain byte of ``mem`` with no side effect and no
    timing: WRAM (and its echo) and, with no OAM DMA running, HRAM."""
    a = addr & 0xFFFF
    if a >= WRAM_LO and a < OAM_LO:
        return 1
    if a >= HRAM_LO and a < IE_ADDR and m.i32[i, DMA_ACTIVE] == 0:
        return 1
    return 0


@wp.func
def direct_index(m: wp.ref[Machine], i: int, addr: int) -> int:
    """Column of ``mem`` of an address ``is_direct`` accepts."""
    a = addr & 0xFFFF
    return wp.where(a >= HRAM_LO, HRAM_BASE + a - HRAM_LO, wram_at(m, i, a))


@wp.func
def direct_in(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, off: int
) -> int:
    """``bus_in`` of an address ``is_direct`` accepts (no bus call)."""
    return int(m.mem[i, direct_index(m, i, addr)])


@wp.func
def direct_out(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, v: int, off: int
) -> int:
    """``bus_out`` to an address ``is_direct`` accepts (no bus call, never a bail)."""
    m.mem[i, direct_index(m, i, addr)] = wp.uint8(v & 0xFF)
    return 0


@wp.func
def bus_in(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, off: int
) -> int:
    """A CPU read at cycle ``at`` with access offset ``off``; the bus gets the cycle and HL.
    WRAM (and its echo) and, with no OAM DMA running, HRAM are read directly."""
    a = addr & 0xFFFF
    if a >= WRAM_LO and a < OAM_LO:
        return int(m.mem[i, wram_at(m, i, a)])
    if a >= HRAM_LO and a < IE_ADDR and m.i32[i, DMA_ACTIVE] == 0:
        return int(m.mem[i, HRAM_BASE + a - HRAM_LO])
    return bus_in_slow(m, i, reg_hl(regs), at, a, off)


@wp.func
def bus_out(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, v: int, off: int
) -> int:
    """A CPU write at cycle ``at`` with access offset ``off``; PyBoy's ``bail`` (1: stop).
    WRAM (and its echo) and, with no OAM DMA running, HRAM are written directly."""
    a = addr & 0xFFFF
    if a >= WRAM_LO and a < OAM_LO:
        m.mem[i, wram_at(m, i, a)] = wp.uint8(v & 0xFF)
        return 0
    if a >= HRAM_LO and a < IE_ADDR and m.i32[i, DMA_ACTIVE] == 0:
        m.mem[i, HRAM_BASE + a - HRAM_LO] = wp.uint8(v & 0xFF)
        return 0
    return bus_out_slow(m, i, reg_hl(regs), at, a, v, off)
