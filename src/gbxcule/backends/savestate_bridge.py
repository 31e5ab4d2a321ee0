"""PyBoy save states <-> one env of the Warp ``Machine`` (as a host :data:`MachineState`).

Loading (:func:`env_state_from_pyboy`) does what PyBoy 2.8.1's ``load_state`` does to a
machine, field by field (``history/savestates.md`` has the mapping):

* every field the file stores is taken from it: CPU registers, IME and its delay,
  HALT, the queued-interrupt flag, IF/IE, the cycle counter; timer counter, TIMA/TMA/TAC,
  reload state and countdown, last sync, distance to its interrupt; LCD registers,
  clock, target, last sync, next mode, pending transition, first-frame/reset/frame-done
  flags, the window-Y flag; serial SB/SC, transfer, last sync, target, distance; OAM
  DMA; joypad nibbles and P1; ROM/RAM bank registers, RAM enable, MBC1 registers and
  mode; VRAM, OAM, WRAM, FEA0-FEFF, HRAM, cart RAM; the MBC3 clock registers;
* the fields PyBoy's loader derives are derived the same way (``kernels/pyboy_load.py``);
* the fields PyBoy keeps from the machine it loads into take the values of a PyBoy
  that was built and then loaded the post-boot snapshot (the oracle backend's reset):
  those of ``base``, a post-boot env (HALT during an EI delay, the window line
  counter, MBC1's low ROM bank, which PyBoy does not recompute until the next mapper
  write, the clock latch, pending button releases, the serial output ring), except
  the LYC-while-off and STAT-override one-shots, which our boot run leaves set, and the
  sprite-line cache, marked stale so the kernel rebuilds it from the loaded OAM
  (:data:`FRESH_PYBOY_FIELDS`);
* the MBC3 clock's last sync is 0, as PyBoy sets it (the first clock access after
  loading advances the clock by the whole cycle count, as in PyBoy). Unlike PyBoy,
  the wall time since the save is *not* added: the emulated clock only follows cycles.

Exporting (:func:`pyboy_state_from_env`) writes the same fields back into a v29
``PyBoyState``. What it cannot carry: sound (exported as a fresh PyBoy's), the screen
buffer and per-line scroll record (zero; PyBoy redraws on its next frame) and every
field PyBoy does not save (above). The clock's ``saved_at`` is written as +infinity
so PyBoy 2.8.1 adds no wall time when it loads the export.
"""

from __future__ import annotations

import math

import numpy as np

from gbxcule.backends.machine_state import MachineState, capture_env, copy_state, restore_env
from gbxcule.backends.warp_base import MBC_KIND, CartConfig, allocate_machine
from gbxcule.core import memory_layout as ml
from gbxcule.core.pyboy_state import (
    CART_RAM_BANK_BYTES,
    CartState,
    CpuState,
    JoypadState,
    LcdState,
    MemoryState,
    OamDmaState,
    PyBoyState,
    RendererState,
    RtcState,
    SerialState,
    TimerState,
)
from gbxcule.core.savestate import SavestateError, cart_layout_from_rom
from gbxcule.kernels import ioregs as io
from gbxcule.kernels import rtc as rtc_cols

MAX_CYCLES = io.MAX_CYCLES  # PyBoy's "nothing scheduled"
CLOCK_RATE = 4_194_304
DMG_OBJECT_PRIORITY_MODE = 0xFF  # PyBoy's value on DMG (never changed there)
PYBOY_TRANSFER_ENABLED = 0x80  # PyBoy keeps SC & 0x80 as the serial "enabled" flag
STAT_TRANSITION_VBLANK_PRETRIGGERED = 3  # CGB hardware only
# Unsaved fields where a PyBoy that loaded the post-boot snapshot (the oracle's reset)
# differs from a machine that ran the boot ROM: the boot ROM writes LYC with the LCD off,
# which arms the one-shot STAT override; loading a snapshot does not.
FRESH_PYBOY_FIELDS = {"lcd_stat_override": 0, "lcd_lyc_dirty": 0, "oam_lines_ok": 0}
# Machine fields a PyBoy state does not carry: loading keeps them from ``base``, exporting
# drops them. (The LCD's derived distances and IRQ line are recomputed, not listed.)
UNSAVED_FIELDS = frozenset(
    {
        "halt_ei",
        "locked",
        "access_offset",
        "rom_bank_low",
        "lcd_stat_override",
        "lcd_lyc_dirty",
        "lcd_m3_adjust",
        "win_line",
        "lcd_render",
        "serial_buf",
        "serial_len",
        "joy_rel_mask",
        "joy_rel_wait",
        "line_latch",
        "frame_video",
        "oam_lines_ok",  # the sprite-line cache (kernels/ppu.py), rebuilt from OAM
        "oam_lines0",
        "oam_lines1",
        "oam_lines2",
        "oam_scan_end",
    }
)
# IO registers whose value lives in a unit (timer, serial, LCD, IF): PyBoy's raw io bytes
# for them are unused; ours hold the register.
UNIT_REGS = (io.SB, io.SC, io.TIMA, io.TMA, io.TAC, io.IF, *range(io.LCDC, io.WX + 1))


def _check_dmg(state: PyBoyState) -> None:
    lcd = state.lcd
    if lcd.cgb or lcd.downgraded_to_dmg or lcd.speed_shift or state.double_speed:
        raise SavestateError("the state comes from CGB hardware; only DMG states are supported")
    if lcd.stat_transition == STAT_TRANSITION_VBLANK_PRETRIGGERED:
        raise SavestateError("the state has a CGB-only LCD transition (VBlank STAT pre-trigger)")
    if state.oam_dma.reading:
        raise SavestateError("the state was saved in the middle of an OAM DMA byte read")


def env_state_from_pyboy(state: PyBoyState, base: MachineState, cart: CartConfig) -> MachineState:
    """The env state PyBoy 2.8.1 would have after loading ``state`` (see the module doc)."""
    _check_dmg(state)
    st = copy_state(base)
    mem = st["mem"]
    cpu, lcd, timer, serial = state.cpu, state.lcd, state.timer, state.serial
    mem[ml.VRAM_OFF : ml.VRAM_OFF + ml.VRAM_SIZE] = lcd.vram
    mem[ml.WRAM_OFF : ml.WRAM_OFF + ml.WRAM_SIZE] = state.memory.wram
    mem[ml.OAM_OFF : ml.OAM_OFF + ml.OAM_SIZE] = lcd.oam
    mem[ml.UNUSABLE_OFF : ml.UNUSABLE_OFF + ml.UNUSABLE_SIZE] = state.memory.unusable
    mem[ml.HRAM_OFF : ml.HRAM_OFF + ml.HRAM_SIZE] = state.memory.hram
    mem[ml.IE_OFF] = cpu.ie
    io_page = mem[ml.IO_OFF : ml.IO_OFF + len(state.memory.io)]
    io_page[:] = state.memory.io  # P1 and the ports no unit handles
    regs = {
        io.SB: serial.sb,
        io.SC: serial.sc,
        io.TIMA: timer.tima,
        io.TMA: timer.tma,
        io.TAC: timer.tac & 7,
        io.IF: cpu.if_ & 0x1F,
        io.LCDC: lcd.lcdc,
        io.STAT: lcd.stat,
        io.SCY: lcd.scy,
        io.SCX: lcd.scx,
        io.LY: lcd.ly,
        io.LYC: lcd.lyc,
        io.DMA: state.oam_dma.source,
        io.BGP: lcd.bgp,
        io.OBP0: lcd.obp0,
        io.OBP1: lcd.obp1,
        io.WY: lcd.wy,
        io.WX: lcd.wx,
    }
    for reg, value in regs.items():
        io_page[reg] = value
    _load_cart_ram(st, state, cart)

    scalars = {
        "a": cpu.a,
        "f": cpu.f,
        "b": cpu.b,
        "c": cpu.c,
        "d": cpu.d,
        "e": cpu.e,
        "h": cpu.hl >> 8,
        "l": cpu.hl & 0xFF,
        "sp": cpu.sp,
        "pc": cpu.pc,
        "ime": int(bool(cpu.ime)),
        "ime_delay": cpu.ime_delay,
        "halted": int(bool(cpu.halted)),
        "int_queued": int(bool(cpu.interrupt_queued)),
        "cycles": cpu.cycles,
        "boot_on": int(bool(state.bootrom_enabled)),
        "tim_counter": timer.div_counter & 0xFFFF,
        "tim_reload": timer.tima_reload_state,
        "tim_reload_left": timer.tima_counter,
        "tim_last": timer.last_cycles,
        "tim_to_irq": timer.cycles_to_interrupt,
        "lcd_clock": lcd.clock,
        "lcd_target": lcd.clock_target,
        "lcd_last": lcd.last_cycles,
        "lcd_next_mode": lcd.next_stat_mode,
        "lcd_transition": lcd.stat_transition,
        "lcd_first_frame": int(bool(lcd.first_frame)),
        "lcd_reset": int(bool(lcd.reset)),
        "frame_done": int(bool(lcd.frame_done)),
        "win_active": int(bool(state.renderer.wy_activated_frame)),
        "ser_active": int(bool(serial.transfer_enabled)),
        "ser_last": serial.last_cycles,
        "ser_to_irq": serial.cycles_to_interrupt,
        "ser_target": _serial_target(serial),
        "dma_active": int(bool(state.oam_dma.active)),
        "dma_index": state.oam_dma.index,
        "dma_start": state.oam_dma.start_cycle,
        "joy_dir": state.joypad.directional & 0xF,
        "joy_std": state.joypad.standard & 0xF,
        "rom_bank": state.cart.rom_bank,
        "ram_bank": state.cart.ram_bank,
        "ram_enabled": int(bool(state.cart.ram_enabled)),
        "mbc_mode": state.cart.memory_model,
    }
    if cart.mbc_kind == MBC_KIND["mbc1"]:
        scalars["mbc_reg1"] = state.cart.mbc1_bank_register1
        scalars["mbc_reg2"] = state.cart.mbc1_bank_register2
    for name, value in {**FRESH_PYBOY_FIELDS, **scalars}.items():
        st[name] = np.asarray(value, dtype=st[name].dtype)
    if cart.has_rtc and state.cart.rtc is not None:
        _load_rtc(st["rtc"], state.cart.rtc, state.layout)
    return _derive_lcd(st, cart)


def _serial_target(serial: SerialState) -> int:
    """PyBoy's serial ``clock_target`` (serial-clock units) as a cycle count."""
    if serial.clock_target >= MAX_CYCLES:
        return MAX_CYCLES
    return serial.clock_target - serial.clock + serial.last_cycles


def _load_cart_ram(st: MachineState, state: PyBoyState, cart: CartConfig) -> None:
    if cart.cart_ram_bytes == 0:
        return
    ram = np.asarray(state.cart.ram, dtype=np.uint8)
    if len(ram) < cart.cart_ram_bytes:
        raise SavestateError(
            f"the state holds {len(ram)} bytes of cart RAM, this cartridge needs "
            f"{cart.cart_ram_bytes}"
        )
    st["mem"][ml.CART_RAM_OFF : ml.CART_RAM_OFF + cart.cart_ram_bytes] = ram[: cart.cart_ram_bytes]


def _load_rtc(row: np.ndarray, rtc: RtcState, layout: str) -> None:
    # v29 writes halt/carry twice; PyBoy 2.8.1 keeps the second copy. Older layouts: the first.
    halt, carry = (
        (rtc.halt_again, rtc.day_carry_again) if layout == "v29" else (rtc.halt, rtc.day_carry)
    )
    row[rtc_cols.RTC_SEC] = rtc.seconds & 0x3F
    row[rtc_cols.RTC_MIN] = rtc.minutes & 0x3F
    row[rtc_cols.RTC_HOUR] = rtc.hours & 0x1F
    row[rtc_cols.RTC_DAY_LOW] = rtc.day_low & 0xFF
    row[rtc_cols.RTC_DAY_HIGH] = rtc.day_high & 1
    row[rtc_cols.RTC_HALT] = halt & 1
    row[rtc_cols.RTC_CARRY] = carry & 1
    row[rtc_cols.RTC_SUBSEC] = rtc.rtc_cycles % CLOCK_RATE
    row[rtc_cols.RTC_LAST] = 0


def _derive_lcd(st: MachineState, cart: CartConfig) -> MachineState:
    """Run ``kernels/pyboy_load.py`` on a one-env scratch machine holding ``st``."""
    import warp as wp

    from gbxcule.kernels.pyboy_load import derive_lcd_after_load

    m = allocate_machine(
        1,
        rom=np.zeros(0x8000, dtype=np.uint8),  # not read by the derivation
        boot=np.zeros(0x100, dtype=np.uint8),
        cart=cart,
        device="cpu",
    )
    restore_env(m, 0, st)
    one = wp.ones(1, dtype=wp.uint8, device="cpu")
    wp.launch(derive_lcd_after_load, dim=1, inputs=[m, one], device="cpu")
    return capture_env(m, 0)


def pyboy_state_from_env(st: MachineState, cart: CartConfig, rom: bytes) -> PyBoyState:
    """A v29 ``PyBoyState`` of the env state ``st`` (see the module doc for what is lost)."""
    mem = st["mem"]
    io_page = mem[ml.IO_OFF : ml.IO_OFF + 0x4C].copy()

    def reg(r: int) -> int:
        return int(io_page[r])

    def val(name: str) -> int:
        return int(st[name])

    raw_io = io_page.copy()
    raw_io[list(UNIT_REGS)] = 0  # PyBoy's backing bytes of unit registers stay 0
    layout = cart_layout_from_rom(rom)
    cpu = CpuState(
        a=val("a"),
        f=val("f"),
        b=val("b"),
        c=val("c"),
        d=val("d"),
        e=val("e"),
        hl=val("h") << 8 | val("l"),
        sp=val("sp"),
        pc=val("pc"),
        ime=val("ime"),
        ime_delay=val("ime_delay"),
        halted=val("halted"),
        stopped=0,
        ie=int(mem[ml.IE_OFF]),
        interrupt_queued=val("int_queued"),
        if_=reg(io.IF),
        cycles=val("cycles"),
    )
    lcd = LcdState(
        vram=mem[ml.VRAM_OFF : ml.VRAM_OFF + ml.VRAM_SIZE].copy(),
        oam=mem[ml.OAM_OFF : ml.OAM_OFF + ml.OAM_SIZE].copy(),
        lcdc=reg(io.LCDC),
        bgp=reg(io.BGP),
        obp0=reg(io.OBP0),
        obp1=reg(io.OBP1),
        stat=reg(io.STAT),
        ly=reg(io.LY),
        lyc=reg(io.LYC),
        scy=reg(io.SCY),
        scx=reg(io.SCX),
        wy=reg(io.WY),
        wx=reg(io.WX),
        object_priority_mode=DMG_OBJECT_PRIORITY_MODE,
        frame_done=val("frame_done"),
        first_frame=val("lcd_first_frame"),
        reset=val("lcd_reset"),
        last_cycles=val("lcd_last"),
        clock=val("lcd_clock"),
        clock_target=val("lcd_target"),
        next_stat_mode=val("lcd_next_mode"),
        stat_transition=val("lcd_transition"),
    )
    counter = val("tim_counter")
    timer = TimerState(
        div=counter >> 8,
        tima=reg(io.TIMA),
        div_counter=counter,
        tima_counter=val("tim_reload_left"),
        tma=reg(io.TMA),
        tac=reg(io.TAC),
        tima_reload_state=val("tim_reload"),
        last_cycles=val("tim_last"),
        cycles_to_interrupt=val("tim_to_irq"),
    )
    ser_last = val("ser_last")
    serial = SerialState(
        sb=reg(io.SB),
        sc=reg(io.SC),
        transfer_enabled=PYBOY_TRANSFER_ENABLED if val("ser_active") else 0,
        internal_clock=reg(io.SC) & 1,
        last_cycles=ser_last,
        cycles_to_interrupt=val("ser_to_irq"),
        clock=ser_last,
        clock_target=val("ser_target"),
    )
    return PyBoyState(
        cart_layout=layout,
        bootrom_enabled=val("boot_on"),
        cpu=cpu,
        oam_dma=OamDmaState(
            active=val("dma_active"),
            reading=0,
            source=reg(io.DMA),
            index=val("dma_index"),
            start_cycle=val("dma_start"),
        ),
        lcd=lcd,
        renderer=RendererState(wy_activated_frame=val("win_active")),
        memory=MemoryState(
            wram=mem[ml.WRAM_OFF : ml.WRAM_OFF + ml.WRAM_SIZE].copy(),
            unusable=mem[ml.UNUSABLE_OFF : ml.UNUSABLE_OFF + ml.UNUSABLE_SIZE].copy(),
            io=raw_io,
            hram=mem[ml.HRAM_OFF : ml.HRAM_OFF + ml.HRAM_SIZE].copy(),
        ),
        timer=timer,
        cart=_export_cart(st, cart, layout.ram_banks),
        joypad=JoypadState(directional=val("joy_dir"), standard=val("joy_std")),
        serial=serial,
    )


def _export_cart(st: MachineState, cart: CartConfig, pyboy_banks: int) -> CartState:
    ram = np.zeros(pyboy_banks * CART_RAM_BANK_BYTES, dtype=np.uint8)
    n = min(cart.cart_ram_bytes, len(ram))
    ram[:n] = st["mem"][ml.CART_RAM_OFF : ml.CART_RAM_OFF + n]
    out = CartState(
        rom_bank=int(st["rom_bank"]),
        ram_bank=int(st["ram_bank"]),
        ram_enabled=int(st["ram_enabled"]),
        memory_model=int(st["mbc_mode"]),
        ram=ram,
        mbc1_bank_register1=int(st["mbc_reg1"]),
        mbc1_bank_register2=int(st["mbc_reg2"]),
    )
    if cart.has_rtc:
        row = st["rtc"]
        halt, carry = int(row[rtc_cols.RTC_HALT]), int(row[rtc_cols.RTC_CARRY])
        out.rtc = RtcState(
            timezero=0.0,
            halt=halt,
            day_carry=carry,
            seconds=int(row[rtc_cols.RTC_SEC]),
            minutes=int(row[rtc_cols.RTC_MIN]),
            hours=int(row[rtc_cols.RTC_HOUR]),
            day_low=int(row[rtc_cols.RTC_DAY_LOW]),
            day_high=int(row[rtc_cols.RTC_DAY_HIGH]),
            halt_again=halt,
            day_carry_again=carry,
            rtc_cycles=int(row[rtc_cols.RTC_SUBSEC]),
            saved_at=math.inf,
        )
    return out
