"""Game Boy Color registers and banks (FF4C-FF7F), as PyBoy 2.8.1's motherboard and LCD
keep them (``history/cgb.md``). Compiled into the CGB variant only: ``CGB`` is False here,
and ``kernels/variant.graph_variant(kernel, {"CGB": True}, ...)`` builds a kernel whose
functions see it True, so a DMG kernel never carries any of this.

State: the registers in the IO page's backing bytes (which a DMG kernel reads as $FF and
never writes): KEY0, KEY1, VBK, HDMA1-5, BCPS, OCPS, OPRI, SVBK, FF72-FF75; palette RAM
and the VRAM bank the CPU does not see in ``Machine.cgb`` (``core/memory_layout.py``): a
VBK switch exchanges those bytes with ``mem``'s. WRAM banks 2-7 extend the ``mem`` row;
an SVBK write only sets the register (``memmap.wram_at`` picks the bank at each access).

PyBoy gates each register on the hardware (``cgb``: always, in this variant) or on a
Colour cartridge as well (``cgb_mode``: ``Machine.cgb_mode``); the table in
``history/cgb.md`` lists which. HDMA is ``hdma.py``'s. STOP switches the speed here
(``switch_speed``); the LCD and the sound unit count half the CPU's cycles in double
speed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import (
    CGB_BG_PALETTES_OFF,
    CGB_HDMA_OFF,
    CGB_OBJ_PALETTES_OFF,
    CGB_SPEED_OFF,
    CGB_VRAM_OTHER_OFF,
    CGB_WRAM_BANK_SIZE,
    CGB_WRAM_BANKS,
    DMG_CGB_BYTES,
    VRAM_OFF,
    VRAM_SIZE,
    WRAM_OFF,
    wramx_bank_offset,
)
from gbxcule.core.pyboy_state import HdmaState, PaletteIndexState
from gbxcule.kernels.apu.apu import apu_sync
from gbxcule.kernels.board.ioregs import (
    BCPD,
    BCPS,
    HDMA5,
    KEY0,
    KEY1,
    OCPD,
    OCPS,
    OPRI,
    SVBK,
    VBK,
    host_io,
    reg,
    set_reg,
)
from gbxcule.kernels.ppu.ppu import lcd_sync_outlined, speed_shift
from gbxcule.kernels.ppu.video_log import video_log_write
from gbxcule.kernels.state import BOOT_ON, VLOG_LINE, Machine, MachineState, Unit

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py)

VRAM_BASE = wp.constant(VRAM_OFF)
VRAM_BYTES = wp.constant(VRAM_SIZE)
OTHER_VRAM = wp.constant(CGB_VRAM_OTHER_OFF)
BG_PALETTES = wp.constant(CGB_BG_PALETTES_OFF)
OBJ_PALETTES = wp.constant(CGB_OBJ_PALETTES_OFF)
SPEED = wp.constant(CGB_SPEED_OFF)
VIDEO_PALETTES = wp.constant(px.VIDEO_BG_PALETTES_OFF)  # frame_video: BG then OBJ palettes

# every palette at power-on (PyBoy's LCD constructor; its boot ROM writes none)
POWER_ON_PALETTE = (0x1CE7, 0x1E19, 0x7E31, 0x217B)
PAL0 = wp.constant(POWER_ON_PALETTE[0])
PAL1 = wp.constant(POWER_ON_PALETTE[1])
PAL2 = wp.constant(POWER_ON_PALETTE[2])
PAL3 = wp.constant(POWER_ON_PALETTE[3])


@wp.func(inline=False)
def swap_vram_banks(m: wp.ref[Machine], i: int):
    """VBK changed: the other bank's bytes into ``mem``, these into ``Machine.cgb``."""
    mem = m.mem
    banks = m.cgb
    for k in range(VRAM_BYTES):
        seen = mem[i, VRAM_BASE + k]
        mem[i, VRAM_BASE + k] = banks[i, OTHER_VRAM + k]
        banks[i, OTHER_VRAM + k] = seen


@wp.func
def palette_byte(m: wp.ref[Machine], i: int, base: int, index_reg: int) -> int:
    """The palette RAM byte the index register ``index_reg`` points at."""
    ps = reg(m, i, index_reg)
    return int(m.cgb[i, base + (ps & 0x3F)])


@wp.func
def palette_write(m: wp.ref[Machine], i: int, base: int, index_reg: int, v: int):
    """PyBoy's ``PaletteColorRegister.set``: the byte, then the index's auto-increment
    (``$80 | value + 1`` in 8 bits, so from $BF the stored index reads $C0)."""
    ps = reg(m, i, index_reg)
    k = base + (ps & 0x3F)
    if m.i32[i, VLOG_LINE] != 0:  # the last frame is being drawn (kernels/ppu/video_log.py)
        video_log_write(m, i, VIDEO_PALETTES + k - BG_PALETTES, int(m.cgb[i, k]), v & 0xFF)
    m.cgb[i, k] = wp.uint8(v & 0xFF)
    if ps & 0x80 != 0:
        set_reg(m, i, index_reg, 0x80 | ((ps + 1) & 0xFF))


@wp.func
def cgb_io_peek(m: wp.ref[Machine], i: int, r: int) -> int:
    """What the CPU reads at ``0xFF00 + r`` (``r`` 0x4C-0x7F) on CGB hardware."""
    colour = m.cgb_mode != 0  # a Colour cartridge (PyBoy's cgb_mode)
    value = 0xFF
    if r == KEY0 and colour:
        value = reg(m, i, KEY0) | 0xFB
    elif r == KEY1 and colour:
        value = reg(m, i, KEY1)
    elif r == VBK:
        value = reg(m, i, VBK) | 0xFE
    elif r == HDMA5 and colour:
        value = reg(m, i, HDMA5)
    elif r == BCPS or r == OCPS:
        value = reg(m, i, r) | 0x40
    elif r == BCPD and colour:
        value = palette_byte(m, i, BG_PALETTES, BCPS)
    elif r == OCPD and colour:
        value = palette_byte(m, i, OBJ_PALETTES, OCPS)
    elif r == OPRI and colour:
        value = reg(m, i, OPRI) | 0xFE
    elif r == SVBK and colour:
        value = reg(m, i, SVBK) | 0xF8
    elif r == 0x72 or r == 0x73 or r == 0x75 or (r == 0x74 and colour):
        value = reg(m, i, r)
    return value


@wp.func
def cgb_io_write(m: wp.ref[Machine], i: int, r: int, v: int) -> int:
    """A CPU write to ``0xFF00 + r`` (``r`` 0x4C-0x7F, HDMA's FF51-FF55 aside: the bus
    routes those to kernels/board/hdma.py) on CGB hardware; returns 1 where PyBoy ends
    the slice (KEY1)."""
    colour = m.cgb_mode != 0
    bail = 0
    if r == KEY0:
        if m.i32[i, BOOT_ON] != 0:
            set_reg(m, i, KEY0, v & 0x04)
    elif r == KEY1:
        set_reg(m, i, KEY1, v)
        bail = 1
    elif r == VBK:
        if (v & 1) != reg(m, i, VBK):
            swap_vram_banks(m, i)
        set_reg(m, i, VBK, v & 1)
    elif r == BCPS or r == OCPS:
        set_reg(m, i, r, v)
    elif r == BCPD:
        palette_write(m, i, BG_PALETTES, BCPS, v)
    elif r == OCPD:
        if colour:
            palette_write(m, i, OBJ_PALETTES, OCPS, v)
    elif r == OPRI:
        if colour:
            set_reg(m, i, OPRI, v & 1)
    elif r == SVBK:
        if colour:  # D000's bank: memmap.wram_at reads it at each access
            set_reg(m, i, SVBK, v & 7)
    elif r == 0x72 or r == 0x73 or (r == 0x74 and colour):
        set_reg(m, i, r, v)
    elif r == 0x75:
        set_reg(m, i, r, v | 0x8F)
    return bail


@wp.func(inline=False)
def switch_speed(m: wp.ref[Machine], i: int, cycles: wp.int64):
    """STOP's speed switch (PyBoy's ``switch_speed``): with KEY1 bit 0 set, the LCD and the
    sound unit come up to ``cycles`` at the old speed (the LCD's interrupt bits dropped, as
    PyBoy drops them), the speed flips and KEY1 ^= $81 (bit 7 toggles, it does not mirror
    the speed)."""
    key1 = reg(m, i, KEY1)
    if (key1 & 1) != 0:
        lcd_sync_outlined(m, i, cycles)
        apu_sync(m, i, cycles)
        m.cgb[i, SPEED] = wp.uint8(1 - speed_shift(m, i))
        set_reg(m, i, KEY1, key1 ^ 0x81)


@wp.func
def cgb_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's CGB hardware at power-on: every palette ``POWER_ON_PALETTE``, OPRI $FF,
    HDMA5 $FF (the rest of its registers, HDMA's addresses and the banks 0)."""
    if wp.static(CGB):
        for side in range(2):
            for n in range(32):
                word = PAL0
                if n % 4 == 1:
                    word = PAL1
                elif n % 4 == 2:
                    word = PAL2
                elif n % 4 == 3:
                    word = PAL3
                at = BG_PALETTES + side * (OBJ_PALETTES - BG_PALETTES) + 2 * n
                m.cgb[i, at] = wp.uint8(word & 0xFF)
                m.cgb[i, at + 1] = wp.uint8(word >> 8)
        set_reg(m, i, OPRI, 0xFF)
        set_reg(m, i, HDMA5, 0xFF)


def cgb_from_pyboy(state: Any, st: MachineState, cart: Any = None) -> None:
    """A CGB-hardware PyBoy state's CGB parts into the host state of a CGB machine (after
    the other units loaded theirs; a DMG state leaves the row alone): the registers, the
    banks as ``Machine.cgb`` keeps them (``mem`` holds the selected ones), palette RAM,
    HDMA's addresses and the speed."""
    if not state.from_cgb:
        return
    row = st["cgb"]
    lcd = state.lcd
    io = host_io(st)
    io[KEY0], io[KEY1], io[OPRI] = state.key0, state.key1, lcd.object_priority_mode
    io[SVBK] = state.wram_select
    h = state.hdma
    io[HDMA5 - 4 : HDMA5 + 1] = (h.hdma1, h.hdma2, h.hdma3, h.hdma4, h.hdma5)
    hdma = CGB_HDMA_OFF
    row[hdma : hdma + 2] = (h.curr_src & 0xFF, h.curr_src >> 8)
    row[hdma + 2 : hdma + 4] = (h.curr_dst & 0xFF, h.curr_dst >> 8)
    row[hdma + 4] = h.transfer_active
    row[CGB_SPEED_OFF] = state.double_speed
    mem = st["mem"]
    wram = np.asarray(state.memory.wram, dtype=np.uint8)
    for b in range(1, CGB_WRAM_BANKS + 1):  # bank 1 at D000, banks 2-7 past the cart RAM
        at = wramx_bank_offset(len(mem), b)
        mem[at : at + CGB_WRAM_BANK_SIZE] = wram[
            b * CGB_WRAM_BANK_SIZE : (b + 1) * CGB_WRAM_BANK_SIZE
        ]
    if lcd.cgb:  # not downgraded: its VRAM bank 1 and palettes are in the file
        io[VBK] = lcd.vbk & 1
        io[BCPS], io[OCPS] = lcd.bcps.value, lcd.ocps.value
        row[CGB_BG_PALETTES_OFF : CGB_BG_PALETTES_OFF + 64] = np.asarray(lcd.bcpd, "<u2").view(
            np.uint8
        )
        row[CGB_OBJ_PALETTES_OFF : CGB_OBJ_PALETTES_OFF + 64] = np.asarray(lcd.ocpd, "<u2").view(
            np.uint8
        )
        banks = (np.asarray(lcd.vram, np.uint8), np.asarray(lcd.vram1, np.uint8))
        seen = lcd.vbk & 1
        mem[VRAM_OFF : VRAM_OFF + VRAM_SIZE] = banks[seen]
        row[CGB_VRAM_OTHER_OFF : CGB_VRAM_OTHER_OFF + VRAM_SIZE] = banks[1 - seen]


def _banks_of(st: MachineState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(VRAM bank 0, VRAM bank 1, WRAM banks 0-7 in order) of a CGB machine's host state."""
    row, mem, io = st["cgb"], st["mem"], host_io(st)
    seen = mem[VRAM_OFF : VRAM_OFF + VRAM_SIZE]
    other = row[CGB_VRAM_OTHER_OFF : CGB_VRAM_OTHER_OFF + VRAM_SIZE]
    vram = (other, seen) if io[VBK] & 1 else (seen, other)
    wram = [mem[WRAM_OFF : WRAM_OFF + CGB_WRAM_BANK_SIZE]]
    for b in range(1, CGB_WRAM_BANKS + 1):
        at = wramx_bank_offset(len(mem), b)
        wram.append(mem[at : at + CGB_WRAM_BANK_SIZE])
    return vram[0].copy(), vram[1].copy(), np.concatenate(wram)


def _palette_index(value: int) -> PaletteIndexState:
    value = int(value)
    return PaletteIndexState(value, (value >> 7) & 1, (value >> 1) & 31, value & 1)


def cgb_into_pyboy(st: MachineState, parts: dict) -> dict:
    """The inverse of :func:`cgb_from_pyboy`: a CGB machine's registers, banks, palettes,
    HDMA and speed into the PyBoy state ``parts`` the other units gave back (its header
    fields; the LCD block's CGB tail and both VRAM banks; all 8 WRAM banks). A DMG
    cartridge's machine (the boot ROM wrote KEY0) saves a downgraded LCD, as PyBoy does."""
    row, io = st["cgb"], host_io(st)
    vram0, vram1, wram = _banks_of(st)
    hdma = CGB_HDMA_OFF
    lcd = parts["lcd"]
    downgraded = int(io[KEY0]) & 0x04 != 0
    lcd.cgb, lcd.downgraded_to_dmg = int(not downgraded), int(downgraded)
    lcd.speed_shift = int(row[CGB_SPEED_OFF])
    lcd.object_priority_mode = int(io[OPRI])
    lcd.vram, lcd.vram1, lcd.vbk = vram0, vram1, int(io[VBK]) & 1
    lcd.bcps, lcd.ocps = _palette_index(io[BCPS]), _palette_index(io[OCPS])
    palettes = row[CGB_BG_PALETTES_OFF : CGB_OBJ_PALETTES_OFF + 64].copy().view("<u2")
    lcd.bcpd, lcd.ocpd = palettes[:32].astype(np.uint16), palettes[32:].astype(np.uint16)
    parts["memory"].wram = wram
    parts["sound"].speed_shift = int(row[CGB_SPEED_OFF])
    h = HdmaState(
        *(int(v) for v in io[HDMA5 - 4 : HDMA5 + 1]),
        transfer_active=int(row[hdma + 4]),
        curr_src=int(row[hdma]) | int(row[hdma + 1]) << 8,
        curr_dst=int(row[hdma + 2]) | int(row[hdma + 3]) << 8,
    )
    return {
        **parts,
        "key0": int(io[KEY0]),
        "key1": int(io[KEY1]),
        "double_speed": int(row[CGB_SPEED_OFF]),
        "cgb": 1,
        "hdma": h,
        "wram_select": int(io[SVBK]),
    }


CGB_UNIT = Unit(
    "cgb",
    cgb_power_on,
    load=cgb_from_pyboy,
    save=lambda st, cart, layout: {},
    unsaved=frozenset({"cgb"}),  # a DMG machine's row: in no DMG state
    arrays={"cgb": (DMG_CGB_BYTES,)},  # a CGB machine's row is CGB_BYTES: backends/warp_base.py
)
