"""LCD timing as PyBoy 2.8.1 models it (DMG): modes, LY/LYC, STAT, frame boundary.

``lcd_sync`` brings the LCD up to a cycle count and performs AT MOST ONE state
transition per call, exactly like PyBoy's ``LCD.tick``: when the CPU overshoots
several transition points, the rest are taken on later syncs (the run loop then
targets 4 cycles). Transition points are kept on an absolute schedule
(``lcd_target``), so only the moment each change becomes visible lags.

A line with the LCD on (after the first frame): mode 2 for 80 cycles, mode 3 for
172 + adjustment (sprites, SCX & 7), mode 0 for the rest; LY increments 4
cycles before the next line's mode 2. Line 143's mode 0 leads into mode 1 and
LY 144 together (VBlank interrupt, plus the STAT interrupt if its mode-2 source
is selected); line 153 wraps to LY 0 in mode 2 and ends the frame. Switching the
LCD on starts a first frame in mode 0 (no initial mode 2, no SCX penalty) and
ends the current frame; switching it off sets LY 0, mode 0 and ends the frame at
the next sync. While off, a frame ends every 70224 cycles.

Pixels: where PyBoy renders a line (the switch into mode 0) the registers are
latched into ``Machine.line_latch`` when the renderer is on (``lcd_render``);
field order is ``gbxcule.core.pixels`` (LATCH_*). Blanking (LCD off at a frame's
end, VBlank of the first frame after switching on) latches all 144 lines as blank
whether or not the renderer is on, as PyBoy does.

``lcd_power_on`` sets PyBoy's ``LCD()``/``Renderer()`` values; ``lcd_from_pyboy`` /
``lcd_to_pyboy`` (host side, at the end) map PyBoy's LCD and renderer blocks of a save
state, and ``LCD_UNSAVED`` lists the fields PyBoy does not save.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import CGB_SPEED_OFF, OAM_OFF, OAM_SIZE, VRAM_OFF, VRAM_SIZE
from gbxcule.core.pixels_cgb import frame_of_colours, rgb_of_screen_words
from gbxcule.core.pyboy_state import LcdState, RendererState
from gbxcule.kernels.board.ioregs import (
    BGP,
    FRAME_T,
    INT_STAT,
    INT_VBLANK,
    KEY0,
    LCDC,
    LY,
    LYC,
    OBP0,
    OBP1,
    SCX,
    SCY,
    STAT,
    WX,
    WY,
    host_io,
    raise_interrupt,
    reg,
    set_reg,
)
from gbxcule.kernels.ppu.render import snapshot_frame_video
from gbxcule.kernels.ppu.video_log import (
    video_log_line_drawn,
    video_log_stop,
    video_log_write,
)
from gbxcule.kernels.state import (
    ACCESS_OFFSET,
    CYCLES,
    FRAME_DONE,
    LCD_CLOCK,
    LCD_FIRST_FRAME,
    LCD_IRQ_LINE,
    LCD_LAST,
    LCD_LYC_DIRTY,
    LCD_M3_ADJUST,
    LCD_NEXT_MODE,
    LCD_RENDER,
    LCD_RESET,
    LCD_STAT_OVERRIDE,
    LCD_TARGET,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    LCD_TRANSITION,
    OAM_BAND0,
    OAM_BANDS,
    OAM_LINES_OK,
    VLOG_LINE,
    WIN_ACTIVE,
    WIN_LINE,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

# True in the CGB variant (kernels/variant.py): PyBoy's CGB-hardware timing (history/cgb.md)
CGB = False
SPEED = wp.constant(CGB_SPEED_OFF)

# What the next transition does besides a plain mode change (PyBoy's stat_transition).
TRANS_NONE = wp.constant(0)
TRANS_ADVANCE_LY = wp.constant(1)  # LY += 1, mode 2 follows 4 cycles later
TRANS_START_MODE2 = wp.constant(2)
TRANS_VBLANK_PRETRIGGERED = wp.constant(3)  # CGB: the VBlank STAT interrupt raised 4 early

MODE2_CYCLES = wp.constant(80)
MODE3_CYCLES = wp.constant(172)
HBLANK_CYCLES = wp.constant(200)  # mode 0 before the LY increment (4 more at line 143)
LINE_CYCLES = wp.constant(456)
STARTUP_MODE0_CYCLES = wp.constant(76)  # first frame after switching on: mode 0, then 3

OAM_BASE = wp.constant(OAM_OFF)
VIDEO_OAM = wp.constant(px.VIDEO_OAM_OFF)
SCREEN_H = wp.constant(px.SCREEN_H)
SCREEN_W = wp.constant(px.SCREEN_W)
L_LCDC = wp.constant(px.LATCH_LCDC)
L_SCX = wp.constant(px.LATCH_SCX)
L_SCY = wp.constant(px.LATCH_SCY)
L_WX = wp.constant(px.LATCH_WX)
L_WY = wp.constant(px.LATCH_WY)
L_BGP = wp.constant(px.LATCH_BGP)
L_OBP0 = wp.constant(px.LATCH_OBP0)
L_OBP1 = wp.constant(px.LATCH_OBP1)
L_WIN_LINE = wp.constant(px.LATCH_WIN_LINE)
L_FLAGS = wp.constant(px.LATCH_FLAGS)
LATCH_FIELDS = wp.constant(px.LATCH_FIELDS)
FLAG_WINDOW_ACTIVE = wp.constant(px.LATCH_FLAG_WINDOW_ACTIVE)
FLAG_BLANK = wp.constant(px.LATCH_FLAG_BLANK)


# ---- STAT register -----------------------------------------------------------


@wp.func
def lcd_mode(m: wp.ref[Machine], i: int) -> int:
    return reg(m, i, STAT) & 3


@wp.func
def stat_update_line(m: wp.ref[Machine], i: int) -> int:
    """Recompute the STAT interrupt line; INT_STAT on its rising edge."""
    return stat_line(m, i, reg(m, i, STAT))


@wp.func
def stat_line(m: wp.ref[Machine], i: int, stat: int) -> int:
    """``stat_update_line`` for ``stat``, the value STAT holds now (just written by the caller)."""
    i32 = m.i32
    mode = stat & 3
    line = 0
    if mode != 3 and (stat & (1 << (mode + 3))) != 0:
        line = 1
    if (stat & 0x44) == 0x44:
        line = 1
    irq = 0
    if line == 1 and i32[i, LCD_IRQ_LINE] == 0:
        irq = INT_STAT
    i32[i, LCD_IRQ_LINE] = line
    return irq


@wp.func
def stat_set_mode(m: wp.ref[Machine], i: int, mode: int) -> int:
    stat = reg(m, i, STAT)
    if (stat & 3) == mode:
        return 0
    stat = (stat & 0xFC) | mode
    set_reg(m, i, STAT, stat)
    return stat_line(m, i, stat)


@wp.func
def stat_update_lyc(m: wp.ref[Machine], i: int) -> int:
    stat = reg(m, i, STAT) & 0xFB
    if reg(m, i, LYC) == reg(m, i, LY):
        stat = stat | 0x04
    set_reg(m, i, STAT, stat)
    return stat_line(m, i, stat)


@wp.func
def stat_write(m: wp.ref[Machine], i: int, value: int) -> int:
    """Bits 3-6 are writable; bit 7 and the mode/LYC bits are kept."""
    stat = (reg(m, i, STAT) & 0x87) | (value & 0x78)
    set_reg(m, i, STAT, stat)
    return stat_line(m, i, stat)


@wp.func
def stat_read(m: wp.ref[Machine], i: int) -> int:
    """STAT as the CPU reads it; a pending mode override (LYC written while off) is consumed."""
    i32 = m.i32
    value = reg(m, i, STAT)
    if i32[i, LCD_STAT_OVERRIDE] != 0:
        i32[i, LCD_STAT_OVERRIDE] = 0
        value = value & 0xFC
    return value


@wp.func
def lyc_write(m: wp.ref[Machine], i: int, value: int) -> int:
    set_reg(m, i, LYC, value)
    if (reg(m, i, LCDC) & 0x80) != 0:
        return stat_update_lyc(m, i)
    m.i32[i, LCD_LYC_DIRTY] = 1
    return 0


@wp.func
def lcdc_write(m: wp.ref[Machine], i: int, value: int) -> int:
    i32 = m.i32
    i64 = m.i64
    was_on = (reg(m, i, LCDC) & 0x80) != 0
    if wp.static(CGB):  # the window's Y condition resets when it is disabled (not downgraded)
        if reg(m, i, KEY0) == 0 and (reg(m, i, LCDC) & 0x20) != 0 and (value & 0x20) == 0:
            i32[i, WIN_ACTIVE] = 0
    set_reg(m, i, LCDC, value)
    now_on = (value & 0x80) != 0
    if was_on and not now_on:
        i64[i, LCD_CLOCK] = wp.int64(0)
        i64[i, LCD_TARGET] = wp.int64(0)
        i64[i, LCD_TO_FRAME] = wp.int64(0)
        stat_set_mode(m, i, 0)  # the line moves, but PyBoy raises nothing here
        set_reg(m, i, LY, 0)
    if now_on and not was_on:
        i64[i, LCD_TARGET] = wp.int64(0)  # the next sync restarts the LCD and ends the frame
        i32[i, LCD_FIRST_FRAME] = 1
        i32[i, LCD_RESET] = 1
        if i32[i, LCD_LYC_DIRTY] != 0:
            override = 1
            if wp.static(CGB):
                override = wp.where(reg(m, i, KEY0) == 0, 0, 1)
            i32[i, LCD_STAT_OVERRIDE] = override
            i32[i, LCD_LYC_DIRTY] = 0
        if (reg(m, i, STAT) & 0x40) != 0:
            return stat_update_lyc(m, i)
    return 0


# ---- mode 3 length -----------------------------------------------------------


@wp.func
def oam_lines_build(m: wp.ref[Machine], i: int):
    """Summarise OAM's Y bytes in ``oam_band0..9`` (kernels/state.py)."""
    mem = m.mem
    i64 = m.i64
    for b in range(OAM_BANDS):
        i64[i, OAM_BAND0 + b] = wp.int64(0)
    bit = wp.int64(1)  # entry k's
    for k in range(40):
        y = int(mem[i, OAM_BASE + 4 * k])  # the object covers p = LY + 16 in y .. y + 15
        if y > 0 and y < SCREEN_H + 16:
            first = y >> 4
            i64[i, OAM_BAND0 + first] = i64[i, OAM_BAND0 + first] | bit
            last = (y + 15) >> 4
            if last != first and last < OAM_BANDS:
                i64[i, OAM_BAND0 + last] = i64[i, OAM_BAND0 + last] | bit
        bit = bit << wp.int64(1)
    m.i32[i, OAM_LINES_OK] = 1


@wp.func
def oam_store(m: wp.ref[Machine], i: int, index: int, value: int):
    """Write OAM byte ``index`` (CPU or DMA); every OAM write goes through here to stale
    the line mask and, while the last frame is drawn, to log the byte it replaces."""
    mem = m.mem
    i32 = m.i32
    if i32[i, VLOG_LINE] != 0:
        video_log_write(m, i, VIDEO_OAM + index, int(mem[i, OAM_BASE + index]), value & 0xFF)
    mem[i, OAM_BASE + index] = wp.uint8(value & 0xFF)
    i32[i, OAM_LINES_OK] = 0


@wp.func
def oam_candidates(m: wp.ref[Machine], i: int, ly: int) -> wp.uint64:
    """Bit k set for each OAM entry that may be on line ``ly`` (one whose bit is clear is
    not): the line's band mask; below the screen, where no band is kept, all 40."""
    p = ly + 16
    if p >> 4 >= OAM_BANDS:
        return wp.uint64(0xFFFFFFFFFF)
    if m.i32[i, OAM_LINES_OK] == 0:
        oam_lines_build(m, i)
    return wp.uint64(m.i64[i, OAM_BAND0 + (p >> 4)])


@wp.func
def sprite_penalty(m: wp.ref[Machine], i: int, ly: int) -> int:
    """Extra mode-3 cycles for the (up to 10) objects on line ``ly``."""
    mem = m.mem
    lcdc = reg(m, i, LCDC)
    if (lcdc & 0x02) == 0:
        return 0
    one = wp.uint64(1)
    zero = wp.uint64(0)
    left = oam_candidates(m, i, ly)  # the scan below counts no object outside it
    if left == zero:
        return 0
    height = 8
    if (lcdc & 0x04) != 0:
        height = 16
    scx = reg(m, i, SCX)
    count = wp.int32(0)
    groups = wp.int32(0)
    penalty = wp.int32(0)
    seen0 = wp.uint64(0)
    seen1 = wp.uint64(0)
    seen2 = wp.uint64(0)
    k = wp.int32(0)
    while left != zero and count < 10:  # the entries in OAM order, as PyBoy scans them
        if (left & one) != zero:
            y = int(mem[i, OAM_BASE + 4 * k]) - 16
            if y <= ly and ly < y + height:
                x = int(mem[i, OAM_BASE + 4 * k + 1])
                if x < 168:
                    penalty += 6
                    dup = wp.int32(0)
                    if x < 64:
                        bit = one << wp.uint64(x)
                        if (seen0 & bit) != zero:
                            dup = 1
                        seen0 = seen0 | bit
                    elif x < 128:
                        bit = one << wp.uint64(x - 64)
                        if (seen1 & bit) != zero:
                            dup = 1
                        seen1 = seen1 | bit
                    else:
                        bit = one << wp.uint64(x - 128)
                        if (seen2 & bit) != zero:
                            dup = 1
                        seen2 = seen2 | bit
                    if dup == 0:
                        groups += 1
                        alignment = 5 - ((x + scx - 8) & 7)
                        if alignment > 0:
                            penalty += alignment
                count += 1
        left = left >> one
        k += 1
    if count > 0 and groups == 0:
        return -4  # only off-screen objects: one machine cycle shorter
    if count == 0:
        return 0
    if wp.static(CGB):
        return (wp.max(0, penalty - 7) + 3) // 4 * 4
    return wp.max(0, penalty - 7)


@wp.func
def mode3_adjustment(m: wp.ref[Machine], i: int, ly: int) -> int:
    adjustment = sprite_penalty(m, i, ly)
    if not wp.static(CGB):  # no SCX penalty on CGB hardware
        if m.i32[i, LCD_FIRST_FRAME] == 0:
            adjustment += ((reg(m, i, SCX) & 7) + 3) // 4 * 4
    return adjustment


# ---- line latches for the renderer -------------------------------------------


@wp.func
def latch_registers(m: wp.ref[Machine], i: int, ly: int, flags: int):
    m.line_latch[i, ly, L_LCDC] = wp.uint8(reg(m, i, LCDC))
    m.line_latch[i, ly, L_SCX] = wp.uint8(reg(m, i, SCX))
    m.line_latch[i, ly, L_SCY] = wp.uint8(reg(m, i, SCY))
    m.line_latch[i, ly, L_WX] = wp.uint8(reg(m, i, WX))
    m.line_latch[i, ly, L_WY] = wp.uint8(reg(m, i, WY))
    m.line_latch[i, ly, L_BGP] = wp.uint8(reg(m, i, BGP))
    m.line_latch[i, ly, L_OBP0] = wp.uint8(reg(m, i, OBP0))
    m.line_latch[i, ly, L_OBP1] = wp.uint8(reg(m, i, OBP1))
    m.line_latch[i, ly, L_WIN_LINE] = wp.uint8(m.i32[i, WIN_LINE] & 0xFF)
    m.line_latch[i, ly, L_FLAGS] = wp.uint8(flags)


@wp.func
def draw_line(m: wp.ref[Machine], i: int, ly: int):
    """PyBoy's ``Renderer.scanline`` bookkeeping: window line counter, then the latch."""
    i32 = m.i32
    if i32[i, LCD_RENDER] == 0:
        return
    flags = 0
    if i32[i, WIN_ACTIVE] != 0:
        flags = FLAG_WINDOW_ACTIVE
        if (reg(m, i, LCDC) & 0x20) != 0 and reg(m, i, WX) - 7 < SCREEN_W:
            i32[i, WIN_LINE] = i32[i, WIN_LINE] + 1
    if ly < SCREEN_H:
        latch_registers(m, i, ly, flags)
        video_log_line_drawn(m, i, ly)  # later VRAM/OAM writes: logged as after this line
    if ly == SCREEN_H - 1:
        i32[i, WIN_LINE] = -1
        snapshot_frame_video(m, i)  # the picture's VRAM/OAM, before VBlank rewrites them


@wp.func
def blank_screen(m: wp.ref[Machine], i: int):
    video_log_stop(m, i)
    for ly in range(SCREEN_H):
        latch_registers(m, i, ly, FLAG_BLANK)


# ---- the LCD clock -----------------------------------------------------------


@wp.func
def wy_hit(m: wp.ref[Machine], i: int, ly: int) -> int:
    """1 when WY equals ``ly`` (the window's Y condition, checked at line starts)."""
    if reg(m, i, WY) == ly:
        return 1
    return 0


@wp.func
def lcd_sync(m: wp.ref[Machine], i: int, cycles: wp.int64) -> int:
    """Advance the LCD to ``cycles`` (one transition at most); returns IF bits to raise."""
    i32 = m.i32
    i64 = m.i64
    delta = cycles - i64[i, LCD_LAST]
    if delta == wp.int64(0):
        return 0
    i64[i, LCD_LAST] = cycles
    irq = 0
    shift = 0
    if wp.static(CGB):  # the LCD counts dots: half the CPU's cycles in double speed
        shift = speed_shift(m, i)
    clock = i64[i, LCD_CLOCK] + (delta >> wp.int64(shift))
    i64[i, LCD_CLOCK] = clock
    target = i64[i, LCD_TARGET]
    if wp.static(CGB):
        if vblank_stat_due(m, i) != 0 and clock >= target - wp.int64(4):
            i32[i, LCD_TRANSITION] = TRANS_VBLANK_PRETRIGGERED
            irq = INT_STAT
    if clock >= target:
        on = (reg(m, i, LCDC) & 0x80) != 0
        ly = reg(m, i, LY)
        trans = i32[i, LCD_TRANSITION]
        if not on:
            i32[i, FRAME_DONE] = 1
            i64[i, LCD_CLOCK] = clock % FRAME_T
            i64[i, LCD_TARGET] = FRAME_T
            blank_screen(m, i)
        elif i32[i, LCD_RESET] != 0:
            i32[i, LCD_RESET] = 0
            i32[i, FRAME_DONE] = 1
            video_log_stop(m, i)  # a frame cut short by switching the LCD off and on
            set_reg(m, i, LY, 0)
            i64[i, LCD_CLOCK] = wp.int64(0)
            i64[i, LCD_TARGET] = wp.int64(STARTUP_MODE0_CYCLES)
            i32[i, LCD_NEXT_MODE] = 3
            i32[i, LCD_TRANSITION] = TRANS_NONE
            irq = irq | stat_set_mode(m, i, 0)
            i32[i, WIN_ACTIVE] = wy_hit(m, i, 0)
            irq = irq | stat_update_lyc(m, i)
        elif ly == 153:
            if i32[i, LCD_FIRST_FRAME] != 0 and target < FRAME_T:
                i64[i, LCD_TARGET] = FRAME_T  # the startup line is 8 cycles short
            else:
                i32[i, FRAME_DONE] = 1
                video_log_stop(m, i)
                set_reg(m, i, LY, 0)
                i64[i, LCD_CLOCK] = clock % FRAME_T
                i32[i, LCD_FIRST_FRAME] = 0
                i64[i, LCD_TARGET] = target % FRAME_T + wp.int64(MODE2_CYCLES)
                i32[i, LCD_NEXT_MODE] = 3
                i32[i, LCD_TRANSITION] = TRANS_NONE
                irq = irq | stat_set_mode(m, i, 2)
                i32[i, WIN_ACTIVE] = wy_hit(m, i, 0)
                irq = irq | stat_update_lyc(m, i)
        elif trans == TRANS_ADVANCE_LY:
            set_reg(m, i, LY, ly + 1)
            if i32[i, LCD_FIRST_FRAME] != 0:
                set_reg(m, i, STAT, reg(m, i, STAT) & 0xFB)  # compared again at mode 2
                irq = irq | stat_update_line(m, i)
            else:
                irq = irq | stat_update_lyc(m, i)
            i64[i, LCD_TARGET] = target + wp.int64(4)
            i32[i, LCD_TRANSITION] = TRANS_START_MODE2
        elif trans == TRANS_START_MODE2:
            irq = irq | stat_set_mode(m, i, 2)
            if i32[i, LCD_FIRST_FRAME] != 0:
                irq = irq | stat_update_lyc(m, i)
            i64[i, LCD_TARGET] = target + wp.int64(MODE2_CYCLES)
            i32[i, LCD_NEXT_MODE] = 3
            i32[i, LCD_TRANSITION] = TRANS_NONE
            if reg(m, i, WY) == ly:
                i32[i, WIN_ACTIVE] = 1
        else:
            irq = irq | mode_transition(m, i, target)
    i64[i, LCD_TO_IRQ] = i64[i, LCD_TARGET] - i64[i, LCD_CLOCK]
    i64[i, LCD_TO_FRAME] = FRAME_T - i64[i, LCD_CLOCK]
    if wp.static(CGB):
        if vblank_stat_due(m, i) != 0:
            i64[i, LCD_TO_IRQ] = i64[i, LCD_TO_IRQ] - wp.int64(4)
        i64[i, LCD_TO_IRQ] = i64[i, LCD_TO_IRQ] << wp.int64(shift)  # in CPU cycles again
        i64[i, LCD_TO_FRAME] = i64[i, LCD_TO_FRAME] << wp.int64(shift)
    return irq


@wp.func
def speed_shift(m: wp.ref[Machine], i: int) -> int:
    """1 in CGB double speed (the CGB variant's ``Machine.cgb`` row), else 0."""
    return int(m.cgb[i, SPEED])


@wp.func
def cycles_to_mode0(m: wp.ref[Machine], i: int) -> wp.int64:
    """Cycles until the LCD next enters mode 0, on CGB hardware (PyBoy's
    ``cycles_to_mode0``: a running HBlank HDMA ends the CPU's slices there)."""
    mode = lcd_mode(m, i)
    left = m.i64[i, LCD_TARGET] - m.i64[i, LCD_CLOCK]
    if mode == 0:
        return wp.int64(0)
    if mode == 3:
        return left
    ly = reg(m, i, LY)
    line = wp.where(mode == 1, 0, ly)
    mode3 = MODE3_CYCLES - 2 + mode3_adjustment(m, i, line)
    if mode == 2:
        if m.i32[i, LCD_FIRST_FRAME] != 0:
            mode3 = mode3 + 2
        return left + wp.int64(mode3)
    return left + wp.int64(LINE_CYCLES * (153 - ly) + MODE2_CYCLES + mode3)


@wp.func
def vblank_stat_due(m: wp.ref[Machine], i: int) -> int:
    """CGB hardware raises the VBlank STAT interrupt 4 dots before mode 1 (PyBoy's
    ``_should_pretrigger_vblank_stat``): line 143's mode 0 with mode 1 next, STAT bit 5
    set, the STAT line low."""
    if (reg(m, i, LCDC) & 0x80) == 0 or reg(m, i, LY) != 143 or lcd_mode(m, i) != 0:
        return 0
    if m.i32[i, LCD_NEXT_MODE] != 1 or (reg(m, i, STAT) & 0x20) == 0:
        return 0
    return wp.where(m.i32[i, LCD_IRQ_LINE] == 0, 1, 0)


@wp.func(inline=False)
def lcd_sync_outlined(m: wp.ref[Machine], i: int, cycles: wp.int64) -> int:
    """``lcd_sync`` as one out-of-line copy, for the bus's IO/VRAM/OAM paths: inlined into
    each of them, its ~130 registers made every bus access spill on sm_90."""
    return lcd_sync(m, i, cycles)


@wp.func
def mode_transition(m: wp.ref[Machine], i: int, target: wp.int64) -> int:
    """Enter ``lcd_next_mode`` and schedule the one after it."""
    i32 = m.i32
    i64 = m.i64
    pretriggered = 0
    if wp.static(CGB):
        if i32[i, LCD_TRANSITION] == TRANS_VBLANK_PRETRIGGERED:
            pretriggered = 1
    irq = stat_set_mode(m, i, i32[i, LCD_NEXT_MODE])
    mode = lcd_mode(m, i)
    ly = reg(m, i, LY)
    i32[i, LCD_TRANSITION] = TRANS_NONE
    if mode == 2:
        ly = ly + 1
        set_reg(m, i, LY, ly)
        i64[i, LCD_TARGET] = target + wp.int64(MODE2_CYCLES)
        i32[i, LCD_NEXT_MODE] = 3
        irq = irq | stat_update_lyc(m, i)
        if reg(m, i, WY) == ly:
            i32[i, WIN_ACTIVE] = 1
    if mode == 3:
        adjustment = mode3_adjustment(m, i, ly)
        i32[i, LCD_M3_ADJUST] = adjustment
        mode3 = MODE3_CYCLES
        if wp.static(CGB):
            if i32[i, LCD_FIRST_FRAME] == 0:
                mode3 = MODE3_CYCLES - 2
        i64[i, LCD_TARGET] = target + wp.int64(mode3 + adjustment)
        i32[i, LCD_NEXT_MODE] = 0
    if mode == 0:
        hblank = HBLANK_CYCLES - i32[i, LCD_M3_ADJUST]
        if wp.static(CGB) and i32[i, LCD_FIRST_FRAME] == 0:
            hblank += 6  # 206 dots, then mode 2 (LY counts there) or mode 1
            i32[i, LCD_NEXT_MODE] = wp.where(ly < 143, 2, 1)
        elif ly < 143:
            i32[i, LCD_NEXT_MODE] = 2
            i32[i, LCD_TRANSITION] = TRANS_ADVANCE_LY
        else:
            i32[i, LCD_NEXT_MODE] = 1
            if i32[i, LCD_FIRST_FRAME] == 0:
                hblank += 4
        i64[i, LCD_TARGET] = target + wp.int64(hblank)
        draw_line(m, i, ly)
    if mode == 1:
        i64[i, LCD_TARGET] = target + wp.int64(LINE_CYCLES)
        i32[i, LCD_NEXT_MODE] = 1
        ly = ly + 1
        set_reg(m, i, LY, ly)
        irq = irq | stat_update_lyc(m, i)
        if ly == 144:
            if (reg(m, i, STAT) & 0x20) != 0 and i32[i, LCD_IRQ_LINE] == 0 and pretriggered == 0:
                irq = irq | INT_STAT
            irq = irq | INT_VBLANK
            i32[i, WIN_ACTIVE] = 0
            if i32[i, LCD_FIRST_FRAME] != 0:
                blank_screen(m, i)
    return irq


# ---- VRAM access (PyBoy locks it only for accesses with a cycle offset) -------


@wp.func
def vram_blocked(m: wp.ref[Machine], i: int, is_write: int) -> int:
    """Sync the LCD to ``cycles + access_offset``; 1 if that VRAM access is locked out.

    Called by the memory map only when ``i32[i, ACCESS_OFFSET] != 0``. Reads are
    locked in mode 3 and in the last 4 cycles of mode 2, writes in mode 3.
    """
    i32 = m.i32
    i64 = m.i64
    raise_interrupt(m, i, lcd_sync_outlined(m, i, i64[i, CYCLES] + wp.int64(i32[i, ACCESS_OFFSET])))
    if (reg(m, i, LCDC) & 0x80) == 0:
        return 0
    mode = lcd_mode(m, i)
    if mode == 3:
        return 1
    if mode == 2 and is_write == 0:
        ahead = i64[i, LCD_TARGET] - i64[i, LCD_CLOCK]
        if ahead >= wp.int64(0) and ahead <= wp.int64(4):
            return 1
    return 0


# ---- power-on ----------------------------------------------------------------


@wp.func
def lcd_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``LCD()`` and ``Renderer()`` (DMG): LCD off, mode 0, a frame target ahead.

    STAT $80, BGP $FC, OBP0/OBP1 $FF; LCDC, LY, LYC, scroll and window registers are 0
    (the IO page is zero). The sprite-line cache stays 0 (stale): it is rebuilt from OAM.
    The frame shown is black, as PyBoy's new screen buffer of zero words is, until a frame
    is drawn or blanked (an episode with no start state shows it after a quick boot).
    """
    i32 = m.i32
    i64 = m.i64
    set_reg(m, i, STAT, 0x80)
    set_reg(m, i, BGP, 0xFC)
    set_reg(m, i, OBP0, 0xFF)
    set_reg(m, i, OBP1, 0xFF)
    i32[i, FRAME_DONE] = 0
    i64[i, LCD_CLOCK] = wp.int64(0)
    i64[i, LCD_TARGET] = FRAME_T
    i64[i, LCD_LAST] = wp.int64(0)
    i64[i, LCD_TO_IRQ] = wp.int64(0)
    i64[i, LCD_TO_FRAME] = FRAME_T
    i32[i, LCD_IRQ_LINE] = 0
    i32[i, LCD_NEXT_MODE] = 2
    i32[i, LCD_TRANSITION] = 0
    i32[i, LCD_FIRST_FRAME] = 0
    i32[i, LCD_RESET] = 0
    i32[i, LCD_STAT_OVERRIDE] = 0
    i32[i, LCD_LYC_DIRTY] = 0
    i32[i, LCD_M3_ADJUST] = 0
    i32[i, WIN_LINE] = 0
    i32[i, WIN_ACTIVE] = 0
    i32[i, LCD_RENDER] = 0
    for ly in range(SCREEN_H):
        for f in range(LATCH_FIELDS):
            m.line_latch[i, ly, f] = wp.uint8(0)
        m.line_latch[i, ly, L_BGP] = wp.uint8(0xFF)  # colour 0 is shade 3
        m.line_latch[i, ly, L_FLAGS] = wp.uint8(FLAG_BLANK)


# ---- PyBoy save state (host side) ------------------------------------------------------

# LCD and renderer fields PyBoy does not save: loading keeps them from the machine it loads
# into. (The frame the renderers draw is loaded from the state's screen, lcd_from_pyboy;
# the distances to the next event and frame end, the STAT IRQ line and, in mode 3,
# the mode-3 adjustment are derived after loading: kernels/pyboy_load.py.)
LCD_UNSAVED = frozenset(
    {
        "lcd_stat_override",
        "lcd_lyc_dirty",
        "lcd_m3_adjust",
        "win_line",  # the renderer's window line counter
        "lcd_render",
        "vlog_line",
        "oam_lines_ok",  # the sprite-line cache, rebuilt from OAM
        *(f"oam_band{b}" for b in range(OAM_BANDS)),
    }
)
# Unsaved fields where a PyBoy that loaded the post-boot snapshot (the oracle's reset)
# differs from a machine that ran the boot ROM: the boot ROM writes LYC with the LCD off,
# which arms the one-shot STAT override; loading a snapshot does not. The sprite-line cache
# is marked stale so the kernel rebuilds it from the loaded OAM.
LCD_FRESH_AFTER_LOAD = {"lcd_stat_override": 0, "lcd_lyc_dirty": 0, "oam_lines_ok": 0}
DMG_OBJECT_PRIORITY_MODE = 0xFF  # PyBoy's value on DMG (never changed there)
# LcdState's register fields and their IO registers
LCD_REGS = {"lcdc": LCDC, "stat": STAT, "scy": SCY, "scx": SCX, "ly": LY, "lyc": LYC,
            "bgp": BGP, "obp0": OBP0, "obp1": OBP1, "wy": WY, "wx": WX}  # fmt: skip


def lcd_from_pyboy(lcd: LcdState, renderer: RendererState, st: MachineState) -> None:
    """Load PyBoy's LCD and renderer blocks into the host state ``st`` (VRAM, OAM, the
    registers, the LCD clock and its flags, the window-Y flag; the unsaved one-shots as
    :data:`LCD_FRESH_AFTER_LOAD`). Run ``kernels/pyboy_load.py`` afterwards.

    The screen PyBoy saved becomes the frame the renderers draw (``px.frame_of_shades``;
    on a Game Boy Color machine ``pixels_cgb.frame_of_colours``) until the next one is:
    what PyBoy shows after loading the state. A screen in a custom palette, or a colour
    screen that does not fit 8 palettes, leaves the frame as it was."""
    if st["frame_video"].shape[-1] == px.FRAME_VIDEO_BYTES_CGB:
        frame = frame_of_colours(rgb_of_screen_words(renderer.screen))
    else:
        shades = px.shades_of_screen_words(renderer.screen)
        frame = None if shades is None else px.frame_of_shades(shades)
    if frame is not None:
        st["line_latch"][...], st["frame_video"][...] = frame
        st["video_log"][...] = 0
    mem = st["mem"]
    mem[VRAM_OFF : VRAM_OFF + VRAM_SIZE] = lcd.vram
    mem[OAM_OFF : OAM_OFF + OAM_SIZE] = lcd.oam
    io = host_io(st)
    for name, r in LCD_REGS.items():
        io[r] = getattr(lcd, name)
    put_fields(st, LCD_FRESH_AFTER_LOAD)
    put_fields(
        st,
        {
            "lcd_clock": lcd.clock,
            "lcd_target": lcd.clock_target,
            "lcd_last": lcd.last_cycles,
            "lcd_next_mode": lcd.next_stat_mode,
            "lcd_transition": lcd.stat_transition,
            "lcd_first_frame": int(bool(lcd.first_frame)),
            "lcd_reset": int(bool(lcd.reset)),
            "frame_done": int(bool(lcd.frame_done)),
            "win_active": int(bool(renderer.wy_activated_frame)),
        },
    )


def lcd_to_pyboy(st: MachineState) -> tuple[LcdState, RendererState]:
    """PyBoy's LCD and renderer blocks for the host state ``st`` (DMG; no per-line record)."""
    mem = st["mem"]
    io = host_io(st)
    lcd = LcdState(
        vram=mem[VRAM_OFF : VRAM_OFF + VRAM_SIZE].copy(),
        oam=mem[OAM_OFF : OAM_OFF + OAM_SIZE].copy(),
        **{name: int(io[r]) for name, r in LCD_REGS.items()},
        object_priority_mode=DMG_OBJECT_PRIORITY_MODE,
        frame_done=int(st["frame_done"]),
        first_frame=int(st["lcd_first_frame"]),
        reset=int(st["lcd_reset"]),
        last_cycles=int(st["lcd_last"]),
        clock=int(st["lcd_clock"]),
        clock_target=int(st["lcd_target"]),
        next_stat_mode=int(st["lcd_next_mode"]),
        stat_transition=int(st["lcd_transition"]),
    )
    return lcd, RendererState(wy_activated_frame=int(st["win_active"]))


def _lcd_save(st: MachineState, cart, layout) -> dict:
    lcd, renderer = lcd_to_pyboy(st)
    return {"lcd": lcd, "renderer": renderer}


LCD = Unit(
    "lcd",
    lcd_power_on,
    load=lambda state, st, cart: lcd_from_pyboy(state.lcd, state.renderer, st),
    save=_lcd_save,
    unsaved=LCD_UNSAVED,
    fresh_after_load=LCD_FRESH_AFTER_LOAD,
    # the step's last frame as the renderers read it (core/pixels.py, kernels/ppu/render.py,
    # kernels/ppu/video_log.py)
    arrays={
        "line_latch": (px.SCREEN_H, px.LATCH_FIELDS),
        "frame_video": (px.FRAME_VIDEO_BYTES,),
        "video_log": (px.VIDEO_LOG_WORDS,),
    },
    events=("lcd_to_irq", "lcd_to_frame"),
)
