"""The emulator state as one Warp struct: a handful of arrays, one row per env.

Per-env scalars live in two 2-D arrays, one column per field: ``m.i32[i, PC]``
(``I32_FIELDS``) and ``m.i64[i, CYCLES]`` (``I64_FIELDS``); the column constants
below are the fields' names in capitals (``REG_A`` ... ``REG_L`` for the 8-bit
registers). Per-env RAM is the 2-D ``mem`` array laid out as
``gbxcule.core.memory_layout`` says; the ROM is one shared copy. Every kernel and
``@wp.func`` takes the ``Machine`` and an env index, and touches only that env's
slots. Host code reaches one field of every env as a 1-D view with
``gbxcule.backends.warp_base.field_view(m, "pc")``.

Why so few arrays: Warp passes a struct to every ``@wp.func`` by value, so each
call that is not inlined copies the whole ``Machine`` (one array descriptor per
field). With one array per scalar field that was ~3.8 KB per call and most of
the CPU time; it also makes ~90 kernel parameters on CUDA. Two arrays keep the
struct small and let the allocator lay the scalars out register-major (one
coalesced row per field) where the envs run on a GPU.

Funcs that index a block more than once load it into a local first (``i32 = m.i32``,
``mem = m.mem``): ``m`` arrives by reference, and any byte store into ``mem`` may
alias the struct as far as the C++ compiler knows, so ``m.i32[...]`` would reload the
array descriptor from memory at every access (measured: ~15% of the CPU step time).

To add a per-env scalar, add its name to a section of the unit that owns it in
``I32_SECTIONS`` / ``I64_SECTIONS`` (the column order; ``Unit.scalars`` reads them) and
its column constant beside the others; a per-env array with more dimensions is a
struct field of its own (and a line of ``env_view``), its trailing shape declared in its
unit's ``Unit.arrays`` (``kernels/units.py`` lists the units).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as wp

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py): env_view keeps Machine.cgb

# Per-env int32 scalars, in column order of ``Machine.i32``, by the unit that owns them
# (``Unit.name``; a unit may own several sections): its load, save and power-on touch
# only these (tests/test_savestate_units.py, tests/test_power_on.py).
I32_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cpu", (
        "pc", "sp", "a", "f", "b", "c", "d", "e", "h", "l", "ime", "halted",
        "locked",  # 0, or 0x100 | illegal opcode that locked the env
        # PyBoy's memory_access_offset: T-cycles past the cycle count at which the access
        # in flight happens, as far as the PPU/DMA sync is concerned (0 for most accesses).
        "access_offset",
    )),
    ("mbc", (
        "rom_bank",  # bank seen at 0x4000-0x7FFF
        "rom_bank_low",  # bank seen at 0x0000-0x3FFF (MBC1 mode 1)
        "ram_bank",  # cart RAM bank, or MBC3 RTC register 0x08-0x0C
        "ram_enabled",
        "mbc_mode",  # MBC1 banking mode (0/1)
        "mbc_reg1",  # MBC1 bank register 1 (5 bits, never 0)
        "mbc_reg2",  # MBC1 bank register 2 (2 bits)
    )),
    # ---- IO/timing (PyBoy CPU attributes shared with cpu.py first) ----------------
    ("cpu", (
        "ime_delay",  # interrupt_enable_delay: EI sets 2, cpu.py counts down
        "halt_ei",  # halted_during_ei: set by HALT, cleared by interrupts.py
    )),
    ("bus", ("boot_on",)),  # boot ROM mapped at 0x0000-0x00FF (FF50 write clears)
    ("cpu", ("int_queued",)),  # interrupt_queued
    ("lcd", ("frame_done",)),  # lcd.frame_done: ends the frame loop
    ("timer", (
        "tim_counter",  # 16-bit divider counter (DIV = tim_counter >> 8)
        "tim_reload",  # TIMA reload state 0/1/2
        "tim_reload_left",  # cycles left in the reload state
    )),
    ("lcd", (
        "lcd_irq_line",  # STAT interrupt line level
        "lcd_next_mode",
        "lcd_transition",  # ppu.TRANS_*
        "lcd_first_frame",
        "lcd_reset",
        "lcd_stat_override",
        "lcd_lyc_dirty",  # LYC written while the LCD was off
        "lcd_m3_adjust",
        "win_line",  # renderer's window line counter (ly_window)
        "win_active",  # renderer's wy_activated_frame
        "lcd_render",  # renderer on this frame (PyBoy renders the last)
        # 1 + the last line drawn while VRAM/OAM writes are logged for the renderer
        # (kernels/ppu/video_log.py); 0: not logging (not the last frame, or past line 142)
        "vlog_line",
    )),
    ("serial", (
        "ser_active",  # transfer_enabled
        "serial_len",  # SB writes since reset
    )),
    ("dma", ("dma_active", "dma_index")),
    ("joypad", (
        "joy_dir",  # directional nibble, 0 = pressed
        "joy_std",  # standard nibble, 0 = pressed
    )),
    # ---- derived caches (0 = stale; rebuilt from the state they summarise) ---------
    ("lcd", ("oam_lines_ok",)),  # 1 while oam_band0..9 describe OAM (OAM writes clear it)
)  # fmt: skip
I32_FIELDS = tuple(name for _, names in I32_SECTIONS for name in names)

# ``Machine.i32`` has ``HOOK_WORDS`` more columns after these: each env's event-hook row
# (kernels/step/hooks.py), then ``STEP_WORDS`` of the step's early end (kernels/step/step_end.py).
# They are not emulator state: capture, restore, start states and reset leave them alone.

# 16-line bands of LY + 16 with an OAM entry mask each (oam_band<b> below): the visible
# lines are bands 1-9
OAM_BANDS = wp.constant(10)

# Per-env int64 scalars (cycle counts and distances), in column order of ``Machine.i64``,
# by owner as ``I32_SECTIONS``.
I64_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cpu", ("cycles",)),  # T-cycles since reset
    ("timer", (
        "tim_last",  # cycle count of the last timer sync
        "tim_to_irq",  # timer._cycles_to_interrupt
    )),
    ("lcd", ("lcd_clock", "lcd_target", "lcd_last", "lcd_to_irq", "lcd_to_frame")),
    ("serial", (
        "ser_last",  # serial clock == cycle count of its last sync
        "ser_target",
        "ser_to_irq",
    )),
    ("dma", ("dma_start",)),
    # the sound unit's per-frame sample count (kernels/apu/apu.py): the cycle count when
    # the frame began, and the frame start its count runs from
    ("apu", ("snd_frame_start", "snd_count_from")),
    # bit k of oam_band<b> is set when OAM entry k's Y byte lies in p - 15 .. p for some p
    # (= LY + 16) in 16 * b .. 16 * b + 15: the entries a line's sprite scan must look at,
    # as 16-pixel-tall objects (ppu.sprite_penalty)
    ("lcd", tuple(f"oam_band{b}" for b in range(OAM_BANDS))),
)  # fmt: skip
I64_FIELDS = tuple(name for _, names in I64_SECTIONS for name in names)


def scalars_of(unit: str) -> tuple[str, ...]:
    """The per-env scalar fields ``unit`` owns (``I32_SECTIONS``, ``I64_SECTIONS``)."""
    sections = (*I32_SECTIONS, *I64_SECTIONS)
    return tuple(name for owner, names in sections if owner == unit for name in names)


def _col(fields: tuple[str, ...], name: str):
    return wp.constant(fields.index(name))


# One env's state on the host (``backends/machine_state.py`` captures and restores it):
# field name -> that env's values as a NumPy array, the env axis removed (``pc`` a 0-d
# int32 array, ``mem`` a 1-D uint8 row). The units' PyBoy-state mappings read and write it.
MachineState = dict[str, np.ndarray]


@dataclass(frozen=True)
class Unit:
    """A hardware unit as the rest of the package sees it: declared at the end of its own
    file (``TIMER`` in ``timer.py``) and listed once, in ``kernels/units.py``. The reset
    kernel, the save-state bridge, the allocator's array shapes and the per-unit tests are
    built from that list, so a new unit is its file and one line there.

    ``load(state, st, cart)`` takes its part of a PyBoy state (``core.pyboy_state``) into
    the env state ``st``; ``save(st, cart, layout)`` gives its part back as keyword
    arguments of ``PyBoyState``."""

    name: str
    power_on: Any  # @wp.func (m, i): its state as PyBoy's constructors leave it
    load: Callable[[Any, MachineState, Any], None]
    save: Callable[[MachineState, Any, Any], dict[str, Any]]
    unsaved: frozenset[str] = frozenset()  # fields PyBoy does not save: loads keep them
    # unsaved fields a PyBoy that loaded a state holds otherwise than one that ran the boot
    # ROM: set to these on load
    fresh_after_load: Mapping[str, int] = field(default_factory=dict)
    # per-env arrays it owns (Machine fields besides mem and the scalar blocks) -> the
    # trailing shape after the env axis
    arrays: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # PyBoy state fields (dotted paths) only audio samples depend on, which this emulator
    # does not advance: its save writes them as the last load or trigger left them
    sample_only: tuple[str, ...] = ()
    # its int64 scalars holding the cycles to its next event (PyBoy's
    # ``_cycles_to_interrupt``): every slice ends at the nearest (kernels/step/slice.py)
    events: tuple[str, ...] = ()

    @property
    def scalars(self) -> tuple[str, ...]:
        """Its per-env scalars: its sections of ``I32_SECTIONS`` / ``I64_SECTIONS``."""
        return scalars_of(self.name)


def put_fields(st: MachineState, values: dict[str, int]) -> None:
    """Store each scalar of ``values`` in ``st`` as a 0-d array of that field's dtype."""
    for name, value in values.items():
        st[name] = np.asarray(value, dtype=st[name].dtype)


# ---- columns of m.i32 ---------------------------------------------------------
PC = _col(I32_FIELDS, "pc")
SP = _col(I32_FIELDS, "sp")
REG_A = _col(I32_FIELDS, "a")
REG_F = _col(I32_FIELDS, "f")
REG_B = _col(I32_FIELDS, "b")
REG_C = _col(I32_FIELDS, "c")
REG_D = _col(I32_FIELDS, "d")
REG_E = _col(I32_FIELDS, "e")
REG_H = _col(I32_FIELDS, "h")
REG_L = _col(I32_FIELDS, "l")
IME = _col(I32_FIELDS, "ime")
HALTED = _col(I32_FIELDS, "halted")
LOCKED = _col(I32_FIELDS, "locked")
ACCESS_OFFSET = _col(I32_FIELDS, "access_offset")
ROM_BANK = _col(I32_FIELDS, "rom_bank")
ROM_BANK_LOW = _col(I32_FIELDS, "rom_bank_low")
RAM_BANK = _col(I32_FIELDS, "ram_bank")
RAM_ENABLED = _col(I32_FIELDS, "ram_enabled")
MBC_MODE = _col(I32_FIELDS, "mbc_mode")
MBC_REG1 = _col(I32_FIELDS, "mbc_reg1")
MBC_REG2 = _col(I32_FIELDS, "mbc_reg2")
IME_DELAY = _col(I32_FIELDS, "ime_delay")
HALT_EI = _col(I32_FIELDS, "halt_ei")
BOOT_ON = _col(I32_FIELDS, "boot_on")
INT_QUEUED = _col(I32_FIELDS, "int_queued")
FRAME_DONE = _col(I32_FIELDS, "frame_done")
TIM_COUNTER = _col(I32_FIELDS, "tim_counter")
TIM_RELOAD = _col(I32_FIELDS, "tim_reload")
TIM_RELOAD_LEFT = _col(I32_FIELDS, "tim_reload_left")
LCD_IRQ_LINE = _col(I32_FIELDS, "lcd_irq_line")
LCD_NEXT_MODE = _col(I32_FIELDS, "lcd_next_mode")
LCD_TRANSITION = _col(I32_FIELDS, "lcd_transition")
LCD_FIRST_FRAME = _col(I32_FIELDS, "lcd_first_frame")
LCD_RESET = _col(I32_FIELDS, "lcd_reset")
LCD_STAT_OVERRIDE = _col(I32_FIELDS, "lcd_stat_override")
LCD_LYC_DIRTY = _col(I32_FIELDS, "lcd_lyc_dirty")
LCD_M3_ADJUST = _col(I32_FIELDS, "lcd_m3_adjust")
WIN_LINE = _col(I32_FIELDS, "win_line")
WIN_ACTIVE = _col(I32_FIELDS, "win_active")
LCD_RENDER = _col(I32_FIELDS, "lcd_render")
VLOG_LINE = _col(I32_FIELDS, "vlog_line")
SER_ACTIVE = _col(I32_FIELDS, "ser_active")
SERIAL_LEN = _col(I32_FIELDS, "serial_len")
DMA_ACTIVE = _col(I32_FIELDS, "dma_active")
DMA_INDEX = _col(I32_FIELDS, "dma_index")
JOY_DIR = _col(I32_FIELDS, "joy_dir")
JOY_STD = _col(I32_FIELDS, "joy_std")
OAM_LINES_OK = _col(I32_FIELDS, "oam_lines_ok")

# ---- columns of m.i64 ---------------------------------------------------------
CYCLES = _col(I64_FIELDS, "cycles")
TIM_LAST = _col(I64_FIELDS, "tim_last")
TIM_TO_IRQ = _col(I64_FIELDS, "tim_to_irq")
LCD_CLOCK = _col(I64_FIELDS, "lcd_clock")
LCD_TARGET = _col(I64_FIELDS, "lcd_target")
LCD_LAST = _col(I64_FIELDS, "lcd_last")
LCD_TO_IRQ = _col(I64_FIELDS, "lcd_to_irq")
LCD_TO_FRAME = _col(I64_FIELDS, "lcd_to_frame")
SER_LAST = _col(I64_FIELDS, "ser_last")
SER_TARGET = _col(I64_FIELDS, "ser_target")
SER_TO_IRQ = _col(I64_FIELDS, "ser_to_irq")
DMA_START = _col(I64_FIELDS, "dma_start")
SND_FRAME_START = _col(I64_FIELDS, "snd_frame_start")
SND_COUNT_FROM = _col(I64_FIELDS, "snd_count_from")
OAM_BAND0 = _col(I64_FIELDS, "oam_band0")  # oam_band<b> is column OAM_BAND0 + b


# Entries before ROM byte 0 in ``Machine.rom_code``, copies of its first word: the fetch at
# 0x3FFE/0x3FFF with bank 0 mapped at 0x4000 indexes 2 before it (kernels/cpu/fetch.py).
ROM_CODE_PAD = wp.constant(2)


@wp.struct
class Machine:
    # ---- shared, read-only -------------------------------------------------
    rom: wp.array(dtype=wp.uint8)  # one copy of the cartridge ROM for all envs
    # rom_code[ROM_CODE_PAD + k] = rom[k] | rom[k+1] << 8 | rom[k+2] << 16 (0 past the end):
    # an instruction fetched from ROM is one load (kernels/cpu/fetch.py). Built from rom by
    # warp_base (rom_code_words).
    rom_code: wp.array(dtype=wp.int32)
    boot: wp.array(dtype=wp.uint8)  # 256-byte boot ROM mapped at 0x0000 until FF50 is written
    # ---- per-env RAM: [N, row_bytes], see core/memory_layout.py -----------
    mem: wp.array2d(dtype=wp.uint8)
    # ---- per-env scalars: [N, len(I32_FIELDS)] and [N, len(I64_FIELDS)] ----
    i32: wp.array2d(dtype=wp.int32)
    i64: wp.array2d(dtype=wp.int64)

    # ---- CPU/bus/MBC section ----------------------------------------------
    rtc: wp.array2d(dtype=wp.int64)  # [N, RTC_FIELDS] MBC3 clock, columns in kernels/board/rtc.py
    # cartridge constants, the same for every env (see backends/warp_base.py)
    mbc_kind: wp.int32  # MBC_NONE / MBC1 / MBC2 / MBC3 / MBC5 (kernels/board/mbc.py)
    rom_banks: wp.int32  # 16 KiB banks in the image
    ram_banks: wp.int32  # 8 KiB cart RAM banks backed in mem (PyBoy's external_ram_count)
    has_rtc: wp.int32  # MBC3+TIMER
    mbc1_multicart: wp.int32  # 64-bank MBC1 with the logo in every bank (4-bit bank shift)
    mbc30: wp.int32  # MBC3 with more than 4 RAM or 128 ROM banks: 8-bit ROM bank register
    # 1: cpu_step runs the common opcodes through kernels/cpu/cpu_fast.py (the default); 0: every
    # opcode through its general phases. Same results; a knob for timing the two on a GPU.
    cpu_fast_paths: wp.int32
    # 1: a Colour cartridge on CGB hardware (PyBoy's ``cgb_mode``; kernels/board/cgb.py); the
    # same for every env, read by the CGB variant only
    cgb_mode: wp.int32

    # ---- IO/timing section --------------------------------------------------
    # Plain register values live in mem's IO page: FF00 P1 (as computed at the last
    # write), FF01 SB, FF02 SC, FF05 TIMA, FF06 TMA, FF07 TAC & 7, FF0F IF & 0x1F,
    # FF40-FF4B LCD registers (FF41 = PyBoy's STAT value, FF46 = DMA source), and IE
    # at IE_OFF. Reads go through kernels/board/io.py (masks, syncing). Powered-on values:
    # each unit's <unit>_power_on(m, i), composed by kernels/step/reset.py.
    serial_buf: wp.array2d(dtype=wp.uint8)  # [N, serial.SERIAL_CAP] ring of SB writes
    joy_rel_mask: wp.array2d(dtype=wp.int32)  # [N, joypad.JOY_QUEUE] pending release masks
    joy_rel_wait: wp.array2d(dtype=wp.int32)  # frames until each pending release
    apu: wp.array2d(dtype=wp.int64)  # [N, APU_FIELDS] the sound unit, columns in kernels/apu/apu.py

    # ---- pixels section -----------------------------------------------------
    # [N, 144, LATCH_FIELDS] registers per line of the step's last frame; written by
    # ppu.py, read by render.py; field indices in gbxcule.core.pixels (LATCH_*).
    line_latch: wp.array3d(dtype=wp.uint8)
    # [N, FRAME_VIDEO_BYTES] VRAM + OAM as they were when line 143 was latched
    # (render.snapshot_frame_video); the renderers read it, not mem.
    frame_video: wp.array2d(dtype=wp.uint8)
    # [N, VIDEO_LOG_WORDS] the VRAM/OAM writes made while the last frame was drawn, so each
    # line can be rendered with VRAM/OAM as PyBoy drew it (kernels/ppu/video_log.py).
    video_log: wp.array2d(dtype=wp.int32)
    # ---- Game Boy Color ---------------------------------------------------------
    # [N, CGB_BYTES] the banks the CPU does not see and palette RAM (core/memory_layout.py,
    # kernels/board/cgb.py); a DMG machine's row is DMG_CGB_BYTES unused bytes
    cgb: wp.array2d(dtype=wp.uint8)


@wp.func
def env_view(m: Machine, i: int) -> Machine:
    """``m`` narrowed to env ``i``, which is env 0 of the view (no copy: array views).

    The step kernel runs each env through this view with the literal index 0, so the
    compiler drops the env offset and the negative-index check from every array
    access (+34 % CPU throughput, history/performance.md). Lists every field of
    ``Machine``; tests/test_kernel_state.py checks that none is missing.
    """
    v = Machine()
    v.rom = m.rom
    v.rom_code = m.rom_code
    v.boot = m.boot
    v.mem = m.mem[i : i + 1]
    v.i32 = m.i32[i : i + 1]
    v.i64 = m.i64[i : i + 1]
    v.rtc = m.rtc[i : i + 1]
    v.mbc_kind = m.mbc_kind
    v.rom_banks = m.rom_banks
    v.ram_banks = m.ram_banks
    v.has_rtc = m.has_rtc
    v.mbc1_multicart = m.mbc1_multicart
    v.mbc30 = m.mbc30
    v.cpu_fast_paths = m.cpu_fast_paths
    v.serial_buf = m.serial_buf[i : i + 1]
    v.joy_rel_mask = m.joy_rel_mask[i : i + 1]
    v.joy_rel_wait = m.joy_rel_wait[i : i + 1]
    v.apu = m.apu[i : i + 1]
    v.line_latch = m.line_latch[i : i + 1]
    v.frame_video = m.frame_video[i : i + 1]
    v.video_log = m.video_log[i : i + 1]
    v.cgb_mode = m.cgb_mode
    if wp.static(CGB):
        v.cgb = m.cgb[i : i + 1]
    return v
