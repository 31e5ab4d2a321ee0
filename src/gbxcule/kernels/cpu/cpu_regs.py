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
from gbxcule.kernels.board.memmap import wram_index
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
    """PC, SP, A, F, the other six 8-bit registers packed in one int (``bcdehl``), the
    IME state and the cycle count of one env, and where its mapped ROM banks start.

    B, C, D, E, H and L share one int64, each pair little-endian in its 16 bits (C, B, E,
    D, L, H from bit 0), so register ``idx`` as opcodes number it is the byte ``idx ^ 1``
    and pair ``p`` (BC, DE, HL) the 16 bits at ``16 * p``: ``get_r8``/``set_r8`` shift
    instead of choosing a field. With one field per register, clang turned the choice of
    field into a jump table and a pointer into the struct, which kept every register in
    stack memory for the whole instruction loop (history/performance.md)."""

    pc: wp.int32
    sp: wp.int32
    a: wp.int32
    f: wp.int32
    bcdehl: wp.int64
    ime: wp.int32
    ime_delay: wp.int32
    cycles: wp.int64  # T-cycles since power-on (CYCLES)
    # Where the mapped ROM banks start in ``rom_code`` (kernels/cpu/fetch.py): 0x0000-0x3FFF
    # at ``rom_lo`` + PC, 0x4000-0x7FFF at ``rom_hi`` + PC. Loaded only: a mapper write
    # ends the run of instructions (PyBoy's bail), so they hold for all of it.
    rom_lo: wp.int32
    rom_hi: wp.int32


@wp.func
def pack_bcdehl(b: int, c: int, d: int, e: int, h: int, l: int) -> wp.int64:  # noqa: E741
    """``CpuRegs.bcdehl`` of these six 8-bit registers."""
    bc = wp.int64(((b & 0xFF) << 8) | (c & 0xFF))
    de = wp.int64(((d & 0xFF) << 8) | (e & 0xFF))
    hl = wp.int64(((h & 0xFF) << 8) | (l & 0xFF))
    return bc | (de << wp.int64(16)) | (hl << wp.int64(32))


@wp.func
def reload_regs(m: wp.ref[Machine], i: int, r: wp.ref[CpuRegs]):
    """``load_regs`` into an existing ``CpuRegs``."""
    i32 = m.i32
    r.pc = i32[i, PC]
    r.sp = i32[i, SP]
    r.a = i32[i, REG_A]
    r.f = i32[i, REG_F]
    r.bcdehl = pack_bcdehl(
        i32[i, REG_B], i32[i, REG_C], i32[i, REG_D], i32[i, REG_E], i32[i, REG_H], i32[i, REG_L]
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
    dst.bcdehl = src.bcdehl
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
    x = r.bcdehl
    i32[i, REG_B] = bcdehl_byte(x, 0)
    i32[i, REG_C] = bcdehl_byte(x, 1)
    i32[i, REG_D] = bcdehl_byte(x, 2)
    i32[i, REG_E] = bcdehl_byte(x, 3)
    i32[i, REG_H] = bcdehl_byte(x, 4)
    i32[i, REG_L] = bcdehl_byte(x, 5)
    i32[i, IME] = r.ime
    i32[i, IME_DELAY] = r.ime_delay
    m.i64[i, CYCLES] = r.cycles


@wp.func
def bcdehl_byte(x: wp.int64, idx: int) -> int:
    """Register ``idx`` (0-5: B C D E H L) of a packed ``CpuRegs.bcdehl``."""
    return wp.int32((x >> wp.int64(8 * ((idx ^ 1) & 7))) & wp.int64(0xFF))


@wp.func
def get_r8(regs: wp.ref[CpuRegs], idx: int) -> int:
    """8-bit register ``idx`` as opcodes number it (B C D E H L - A; 6, [HL], reads A)."""
    return wp.where(idx >= 6, regs.a, bcdehl_byte(regs.bcdehl, idx))


@wp.func
def set_r8(regs: wp.ref[CpuRegs], idx: int, v: int):
    """Write 8-bit register ``idx`` (6, [HL], and -1 write nothing) with the byte ``v``."""
    inside = idx >= 0 and idx < 6
    at = wp.int64(8 * ((idx ^ 1) & 7))
    keep = wp.where(inside, ~(wp.int64(0xFF) << at), wp.int64(-1))
    put = wp.where(inside, wp.int64(v & 0xFF) << at, wp.int64(0))
    regs.bcdehl = (regs.bcdehl & keep) | put
    regs.a = wp.where(idx == 7, v, regs.a)


@wp.func
def bcdehl_pair(x: wp.int64, p: int) -> int:
    """Pair ``p`` (0-2: BC DE HL) of a packed ``CpuRegs.bcdehl``."""
    return wp.int32((x >> wp.int64(16 * (p & 3))) & wp.int64(0xFFFF))


@wp.func
def get_r16(regs: wp.ref[CpuRegs], p: int) -> int:
    """Pair ``p`` as opcodes number it: BC, DE, HL, SP."""
    return wp.where(p >= 3, regs.sp, bcdehl_pair(regs.bcdehl, p))


@wp.func
def reg_hl(regs: wp.ref[CpuRegs]) -> int:
    return get_r16(regs, 2)


@wp.func
def set_r16(regs: wp.ref[CpuRegs], p: int, v: int):
    """Write pair ``p`` (BC, DE, HL, SP; 4: AF, as POP AF does: F's low nibble reads as 0)
    with the 16-bit ``v``; any other ``p`` writes nothing."""
    inside = p >= 0 and p < 3
    at = wp.int64(16 * (p & 3))
    keep = wp.where(inside, ~(wp.int64(0xFFFF) << at), wp.int64(-1))
    put = wp.where(inside, wp.int64(v & 0xFFFF) << at, wp.int64(0))
    regs.bcdehl = (regs.bcdehl & keep) | put
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
def direct_index(addr: int) -> int:
    """Column of ``mem`` of an address ``is_direct`` accepts."""
    a = addr & 0xFFFF
    return wp.where(a >= HRAM_LO, HRAM_BASE + a - HRAM_LO, wram_index(a))


@wp.func
def direct_in(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, off: int
) -> int:
    """``bus_in`` of an address ``is_direct`` accepts (no bus call)."""
    return int(m.mem[i, direct_index(addr)])


@wp.func
def direct_out(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, v: int, off: int
) -> int:
    """``bus_out`` to an address ``is_direct`` accepts (no bus call, never a bail)."""
    m.mem[i, direct_index(addr)] = wp.uint8(v & 0xFF)
    return 0


@wp.func
def bus_in(
    m: wp.ref[Machine], i: int, regs: wp.ref[CpuRegs], at: wp.int64, addr: int, off: int
) -> int:
    """A CPU read at cycle ``at`` with access offset ``off``; the bus gets the cycle and HL.
    WRAM (and its echo) and, with no OAM DMA running, HRAM are read directly."""
    a = addr & 0xFFFF
    if a >= WRAM_LO and a < OAM_LO:
        return int(m.mem[i, wram_index(a)])
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
        m.mem[i, wram_index(a)] = wp.uint8(v & 0xFF)
        return 0
    if a >= HRAM_LO and a < IE_ADDR and m.i32[i, DMA_ACTIVE] == 0:
        m.mem[i, HRAM_BASE + a - HRAM_LO] = wp.uint8(v & 0xFF)
        return 0
    return bus_out_slow(m, i, reg_hl(regs), at, a, v, off)
