"""Cartridge mappers as PyBoy 2.8.1 implements them: ROM banking, cart RAM, MBC3 clock.

The ROM is one shared copy (``Machine.rom``, flat, bank ``k`` at ``k * 0x4000``);
cart RAM lives in each env's ``mem`` row at ``CART_RAM_OFF``. PyBoy quirks we
reproduce on purpose:

* every MBC1/3/5 cart has at least one 8 KiB RAM bank, even when the header
  says none (PyBoy's external RAM table maps code 0 to one bank);
* ROM-only carts accept bank writes at 0x2000-0x3FFF: 0 -> 1, then ``& 1``, so
  an even value maps bank 0 at 0x4000;
* MBC2 RAM stores and returns ``value | 0xF0``;
* MBC3 register select $08-$0C picks a clock register even on carts without a
  clock, which then read $00.

``mbc_power_on`` sets the banks PyBoy's MBCs start with; ``cart_from_pyboy`` /
``cart_to_pyboy`` (host side, at the end) map PyBoy's cartridge block of a save state.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from gbxcule.core.memory_layout import CART_RAM_OFF
from gbxcule.core.pyboy_state import CART_RAM_BANK_BYTES, CartState
from gbxcule.core.savestate import SavestateError
from gbxcule.kernels.address_map import CART_RAM_BANK, CART_RAM_LO
from gbxcule.kernels.board.rtc import (
    RTC_FIELDS,
    rtc_command,
    rtc_from_pyboy,
    rtc_read,
    rtc_tick,
    rtc_to_pyboy,
    rtc_write,
)
from gbxcule.kernels.state import (
    BOOT_ON,
    CYCLES,
    MBC_MODE,
    MBC_REG1,
    MBC_REG2,
    RAM_BANK,
    RAM_ENABLED,
    ROM_BANK,
    ROM_BANK_LOW,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

MBC_NONE = wp.constant(0)
MBC1 = wp.constant(1)
MBC2 = wp.constant(2)
MBC3 = wp.constant(3)
MBC5 = wp.constant(5)
MBC_KIND_BY_NAME = {"none": 0, "mbc1": 1, "mbc2": 2, "mbc3": 3, "mbc5": 5}

CART_RAM_BASE = wp.constant(CART_RAM_OFF)
MBC2_RAM_CELLS = 512


@wp.func
def rom_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    """0x0000-0x7FFF as the CPU sees it: boot ROM overlay, then the mapped banks."""
    i32 = m.i32
    if addr < 0x4000:
        if addr < 0x100 and i32[i, BOOT_ON] != 0:
            return int(m.boot[addr])
        return int(m.rom[i32[i, ROM_BANK_LOW] * 0x4000 + addr])
    return int(m.rom[i32[i, ROM_BANK] * 0x4000 + addr - 0x4000])


@wp.func
def rtc_selected(m: wp.ref[Machine], i: int) -> int:
    sel = m.i32[i, RAM_BANK]
    if m.has_rtc != 0 and sel >= 0x08 and sel <= 0x0C:
        return 1
    return 0


@wp.func
def mbc1_update_banks(m: wp.ref[Machine], i: int):
    i32 = m.i32
    reg1 = i32[i, MBC_REG1]
    reg2 = i32[i, MBC_REG2]
    low = wp.int32(0)
    if i32[i, MBC_MODE] == 1:
        shift = 5
        if m.mbc1_multicart != 0:
            shift = 4
        low = (reg2 << shift) % m.rom_banks
    i32[i, ROM_BANK_LOW] = low
    if m.mbc1_multicart != 0:
        sel = (reg2 << 4) | (reg1 & 0x0F)
        if (reg1 & 0x0F) == 0 and (reg1 & 0x10) == 0:
            sel = sel | 1
        i32[i, ROM_BANK] = sel % m.rom_banks
    else:
        i32[i, ROM_BANK] = ((reg2 << 5) | reg1) % m.rom_banks


@wp.func
def mbc_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    """A CPU write to 0x0000-0x7FFF: mapper registers, by the cart's mapper."""
    kind = m.mbc_kind
    if kind == MBC_NONE:
        rom_only_write(m, i, addr, value)
    elif kind == MBC1:
        mbc1_write(m, i, addr, value)
    elif kind == MBC2:
        mbc2_write(m, i, addr, value)
    elif kind == MBC3:
        mbc3_write(m, i, addr, value)
    elif kind == MBC5:
        mbc5_write(m, i, addr, value)


@wp.func
def rom_only_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    """No mapper: PyBoy still takes a bank number at 0x2000-0x3FFF (module doc)."""
    if addr >= 0x2000 and addr < 0x4000:
        v = value
        if v == 0:
            v = 1
        m.i32[i, ROM_BANK] = v & 1


@wp.func
def mbc1_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    i32 = m.i32
    if addr < 0x2000:
        i32[i, RAM_ENABLED] = wp.where((value & 0x0F) == 0x0A, 1, 0)
    elif addr < 0x4000:
        v = value & 0x1F
        if v == 0:
            v = 1
        i32[i, MBC_REG1] = v
    elif addr < 0x6000:
        i32[i, MBC_REG2] = value & 0x03
    else:
        i32[i, MBC_MODE] = value & 0x01
    mbc1_update_banks(m, i)


@wp.func
def mbc2_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    """Address bit 8 picks the register: 0 RAM enable, 1 ROM bank."""
    if addr < 0x4000:
        v = value & 0x0F
        if (addr & 0x100) == 0:
            m.i32[i, RAM_ENABLED] = wp.where(v == 0x0A, 1, 0)
        else:
            if v == 0:
                v = 1
            m.i32[i, ROM_BANK] = v % m.rom_banks


@wp.func
def mbc3_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    """0x4000-0x5FFF selects a RAM bank or a clock register; 0x6000-0x7FFF latches the
    clock (kernels/board/rtc.py), brought up to the write's cycle first."""
    i32 = m.i32
    if addr < 0x2000:
        i32[i, RAM_ENABLED] = wp.where((value & 0x0F) == 0x0A, 1, 0)
    elif addr < 0x4000:
        v = value
        if m.mbc30 == 0:
            v = value & 0x7F
        if v == 0:
            v = 1
        i32[i, ROM_BANK] = v % m.rom_banks
    elif addr < 0x6000:
        if value >= 0x08 and value <= 0x0C:
            i32[i, RAM_BANK] = value
        else:
            i32[i, RAM_BANK] = value % m.ram_banks
    elif m.has_rtc != 0:
        rtc_tick(m, i, m.i64[i, CYCLES])
        rtc_command(m, i, value)


@wp.func
def mbc5_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    """A 9-bit ROM bank: low byte at 0x2000-0x2FFF, bit 8 at 0x3000-0x3FFF."""
    i32 = m.i32
    if addr < 0x2000:
        i32[i, RAM_ENABLED] = wp.where(value == 0x0A, 1, 0)
    elif addr < 0x3000:
        i32[i, ROM_BANK] = ((i32[i, ROM_BANK] & 0x100) | value) % m.rom_banks
    elif addr < 0x4000:
        i32[i, ROM_BANK] = (((value & 1) << 8) | (i32[i, ROM_BANK] & 0xFF)) % m.rom_banks
    elif addr < 0x6000:
        i32[i, RAM_BANK] = (value & 0x0F) % m.ram_banks


@wp.func
def cart_ram_index(m: wp.ref[Machine], bank: int, addr: int) -> int:
    """Row offset of cart RAM byte ``addr`` (0xA000-0xBFFF) in ``bank``; -1 if not backed."""
    if bank < 0 or bank >= m.ram_banks:
        return -1
    return CART_RAM_BASE + bank * CART_RAM_BANK + addr - CART_RAM_LO


@wp.func
def cart_ram_read(m: wp.ref[Machine], i: int, addr: int) -> int:
    """A CPU read of 0xA000-0xBFFF (PyBoy syncs the clock first when a register is selected)."""
    i32 = m.i32
    mem = m.mem
    if rtc_selected(m, i) != 0:
        rtc_tick(m, i, m.i64[i, CYCLES])
    kind = m.mbc_kind
    if kind == MBC_NONE or i32[i, RAM_ENABLED] == 0:
        return 0xFF
    if kind == MBC2:
        return int(mem[i, CART_RAM_BASE + (addr - CART_RAM_LO) % MBC2_RAM_CELLS]) | 0xF0
    bank = i32[i, RAM_BANK]
    if kind == MBC1:
        bank = 0
        if i32[i, MBC_MODE] == 1:
            bank = i32[i, MBC_REG2] % m.ram_banks
    elif rtc_selected(m, i) != 0:
        return rtc_read(m, i, bank)
    k = cart_ram_index(m, bank, addr)
    if k < 0:
        return 0x00
    return int(mem[i, k])


@wp.func
def cart_ram_write(m: wp.ref[Machine], i: int, addr: int, value: int):
    i32 = m.i32
    mem = m.mem
    if rtc_selected(m, i) != 0:
        rtc_tick(m, i, m.i64[i, CYCLES])
    kind = m.mbc_kind
    if kind == MBC1:
        # PyBoy's MBC1.setitem recomputes the ROM banks after every write, RAM writes too
        # (a no-op unless the banks disagree with the registers, as in pre-2.3 save states).
        mbc1_update_banks(m, i)
    if kind == MBC_NONE or i32[i, RAM_ENABLED] == 0:
        return
    if kind == MBC2:
        k2 = CART_RAM_BASE + (addr - CART_RAM_LO) % MBC2_RAM_CELLS
        mem[i, k2] = wp.uint8((value | 0xF0) & 0xFF)
        return
    bank = i32[i, RAM_BANK]
    if kind == MBC1:
        bank = 0
        if i32[i, MBC_MODE] == 1:
            bank = i32[i, MBC_REG2] % m.ram_banks
    if kind == MBC3:
        if rtc_selected(m, i) != 0:
            rtc_write(m, i, bank, value)
            return
        limit = 3
        if m.mbc30 != 0:
            limit = 7
        if bank > limit:
            return
    k = cart_ram_index(m, bank, addr)
    if k >= 0:
        mem[i, k] = wp.uint8(value & 0xFF)


@wp.func
def mbc_power_on(m: wp.ref[Machine], i: int):
    """Banks as PyBoy's MBCs start: bank 1 at 0x4000, bank 0 at 0x0000, MBC1 register 1 = 1.

    RAM bank, RAM enable, MBC1 mode and register 2 are 0 (every column starts at 0).
    """
    i32 = m.i32
    i32[i, ROM_BANK] = 1
    i32[i, ROM_BANK_LOW] = 0
    i32[i, MBC_REG1] = 1


# ---- PyBoy save state (host side) ------------------------------------------------------

# MBC1's low ROM bank: PyBoy does not save it and does not recompute it until the next
# mapper write, so loading keeps it from the machine loaded into.
MBC_UNSAVED = frozenset({"rom_bank_low"})


def cart_from_pyboy(
    cart: CartState,
    layout: str,
    st: MachineState,
    *,
    mbc_kind: int,
    ram_bytes: int,
    has_rtc: bool,
) -> None:
    """Load PyBoy's cartridge block into the host state ``st``: bank registers, RAM enable,
    MBC1 mode (and registers, on MBC1), ``ram_bytes`` of cart RAM, the MBC3 clock
    (``layout`` is the state file's). Raises ``SavestateError`` when the block holds
    less RAM than the cart needs."""
    if ram_bytes:
        ram = np.asarray(cart.ram, dtype=np.uint8)
        if len(ram) < ram_bytes:
            raise SavestateError(
                f"the state holds {len(ram)} bytes of cart RAM, this cartridge needs {ram_bytes}"
            )
        st["mem"][CART_RAM_OFF : CART_RAM_OFF + ram_bytes] = ram[:ram_bytes]
    put_fields(
        st,
        {
            "rom_bank": cart.rom_bank,
            "ram_bank": cart.ram_bank,
            "ram_enabled": int(bool(cart.ram_enabled)),
            "mbc_mode": cart.memory_model,
        },
    )
    if mbc_kind == MBC1:
        put_fields(st, {"mbc_reg1": cart.mbc1_bank_register1, "mbc_reg2": cart.mbc1_bank_register2})
    if has_rtc and cart.rtc is not None:
        rtc_from_pyboy(cart.rtc, layout, st["rtc"])


def cart_to_pyboy(
    st: MachineState, *, ram_bytes: int, pyboy_banks: int, has_rtc: bool
) -> CartState:
    """PyBoy's cartridge block for the host state ``st``: ``pyboy_banks`` x 8 KiB of RAM
    (PyBoy's bank count for the cart; the first ``ram_bytes`` are ours)."""
    ram = np.zeros(pyboy_banks * CART_RAM_BANK_BYTES, dtype=np.uint8)
    n = min(ram_bytes, len(ram))
    ram[:n] = st["mem"][CART_RAM_OFF : CART_RAM_OFF + n]
    out = CartState(
        rom_bank=int(st["rom_bank"]),
        ram_bank=int(st["ram_bank"]),
        ram_enabled=int(st["ram_enabled"]),
        memory_model=int(st["mbc_mode"]),
        ram=ram,
        mbc1_bank_register1=int(st["mbc_reg1"]),
        mbc1_bank_register2=int(st["mbc_reg2"]),
    )
    if has_rtc:
        out.rtc = rtc_to_pyboy(st["rtc"])
    return out


CART = Unit(
    "mbc",
    mbc_power_on,
    load=lambda state, st, cart: cart_from_pyboy(
        state.cart,
        state.layout,
        st,
        mbc_kind=cart.mbc_kind,
        ram_bytes=cart.cart_ram_bytes,
        has_rtc=bool(cart.has_rtc),
    ),
    save=lambda st, cart, layout: {
        "cart": cart_to_pyboy(
            st,
            ram_bytes=cart.cart_ram_bytes,
            pyboy_banks=layout.ram_banks,
            has_rtc=bool(cart.has_rtc),
        )
    },
    unsaved=MBC_UNSAVED,
    arrays={"rtc": (RTC_FIELDS,)},
)
