"""L2: the timer, LCD timing and serial units against PyBoy 2.8.1's own unit models.

PyBoy ships the Python sources its compiled modules are built from
(``pyboy/core/timer.py``, ``lcd.py``, ``serial.py``). We load those sources as plain
Python modules and drive them, next to our Warp units, with the same random
sequences of syncs and register accesses at arbitrary cycle counts (PyBoy's own
motherboard glue is replayed for each access: which unit is synced to which
cycle first). After every operation the full unit state, the interrupt flags and
the value read must agree. Cycle counts never go backwards, as in PyBoy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyboy
import pytest
import warp as wp

from gbxcule.asm import build_rom
from gbxcule.asm.bootrom import boot_rom_bytes
from gbxcule.backends.warp_base import allocate_machine, cart_config
from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import IO_OFF
from gbxcule.kernels.board import io as io_unit
from gbxcule.kernels.board import serial, timer
from gbxcule.kernels.board.ioregs import raise_interrupt
from gbxcule.kernels.ppu import ppu
from gbxcule.kernels.state import (
    ACCESS_OFFSET,
    CYCLES,
    FRAME_DONE,
    LCD_CLOCK,
    LCD_FIRST_FRAME,
    LCD_IRQ_LINE,
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
    SER_ACTIVE,
    SER_TO_IRQ,
    TIM_COUNTER,
    TIM_RELOAD,
    TIM_RELOAD_LEFT,
    TIM_TO_IRQ,
    WIN_ACTIVE,
    WIN_LINE,
    Machine,
)

pytestmark = pytest.mark.l2

wp.set_module_options({"enable_backward": False})

PYBOY_CORE = Path(pyboy.__file__).parent / "core"
OP_SYNC, OP_WRITE, OP_READ, OP_OAM = 0, 1, 2, 3
# Recorded after each op (ours in the kernel below, PyBoy's in ``ref_record``).
FIELDS = (
    "value", "IF",
    "DIV_counter", "TIMA", "TMA", "TAC", "reload", "reload_left", "tim_to_irq",
    "LY", "LYC", "STAT", "irq_line", "clock", "clock_target", "next_mode", "transition",
    "frame_done", "first_frame", "reset", "override", "lyc_dirty", "m3_adjust",
    "lcd_to_irq", "lcd_to_frame", "wy_active", "win_line",
    "SB", "SC", "ser_active", "ser_to_irq",
)  # fmt: skip
NF = len(FIELDS)


def load_pyboy_source(name: str):
    """PyBoy's ``core/<name>.py`` as a pure-Python module (not the compiled extension)."""
    spec = importlib.util.spec_from_file_location(f"_pyboy_py_{name}", PYBOY_CORE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@wp.kernel
def run_ops(m: Machine, ops: wp.array3d(dtype=wp.int64), out: wp.array3d(dtype=wp.int64)):
    i = wp.tid()
    m.i32[i, LCD_RENDER] = 1  # PyBoy's renderer on: the window line counter is kept
    for k in range(ops.shape[1]):
        kind = int(ops[i, k, 0])
        addr = int(ops[i, k, 1])
        value = int(ops[i, k, 2])
        m.i64[i, CYCLES] = ops[i, k, 3]
        m.i32[i, ACCESS_OFFSET] = 0
        got = -1
        if kind == OP_SYNC:
            c = m.i64[i, CYCLES]
            raise_interrupt(m, i, serial.serial_sync(m, i, c))
            raise_interrupt(m, i, timer.timer_sync(m, i, c))
            raise_interrupt(m, i, ppu.lcd_sync(m, i, c))
        if kind == OP_WRITE:
            io_unit.io_write(m, i, addr, value)
        if kind == OP_READ:
            m.i32[i, ACCESS_OFFSET] = value
            got = io_unit.io_read(m, i, addr)
            m.i32[i, ACCESS_OFFSET] = 0
        if kind == OP_OAM:
            ppu.oam_store(m, i, addr, value)
        r = IO_OFF - 0xFF00
        rec = wp.vector(
            wp.int64(got), wp.int64(m.mem[i, r + 0xFF0F]),
            wp.int64(m.i32[i, TIM_COUNTER]), wp.int64(m.mem[i, r + 0xFF05]),
            wp.int64(m.mem[i, r + 0xFF06]), wp.int64(m.mem[i, r + 0xFF07]),
            wp.int64(m.i32[i, TIM_RELOAD]), wp.int64(m.i32[i, TIM_RELOAD_LEFT]), m.i64[i, TIM_TO_IRQ],
            wp.int64(m.mem[i, r + 0xFF44]), wp.int64(m.mem[i, r + 0xFF45]),
            wp.int64(m.mem[i, r + 0xFF41]), wp.int64(m.i32[i, LCD_IRQ_LINE]),
            m.i64[i, LCD_CLOCK], m.i64[i, LCD_TARGET], wp.int64(m.i32[i, LCD_NEXT_MODE]),
            wp.int64(m.i32[i, LCD_TRANSITION]), wp.int64(m.i32[i, FRAME_DONE]),
            wp.int64(m.i32[i, LCD_FIRST_FRAME]), wp.int64(m.i32[i, LCD_RESET]),
            wp.int64(m.i32[i, LCD_STAT_OVERRIDE]), wp.int64(m.i32[i, LCD_LYC_DIRTY]),
            wp.int64(m.i32[i, LCD_M3_ADJUST]), m.i64[i, LCD_TO_IRQ], m.i64[i, LCD_TO_FRAME],
            wp.int64(m.i32[i, WIN_ACTIVE]), wp.int64(m.i32[i, WIN_LINE]),
            wp.int64(m.mem[i, r + 0xFF01]), wp.int64(m.mem[i, r + 0xFF02]),
            wp.int64(m.i32[i, SER_ACTIVE]), m.i64[i, SER_TO_IRQ],
            length=NF, dtype=wp.int64,
        )  # fmt: skip
        for f in range(NF):
            out[i, k, f] = rec[f]


class PyBoyUnits:
    """PyBoy's timer, LCD and serial (pure Python) wired as its motherboard wires them."""

    def __init__(self, timer_mod, lcd_mod, serial_mod):
        self.timer = timer_mod.Timer()
        pal = (0xFFFFFF, 0xAAAAAA, 0x555555, 0x000000)
        self.lcd = lcd_mod.LCD(False, False, pal, (pal, pal, pal))
        self.lcd.disable_renderer = False
        self.latched: dict[int, tuple] = {}
        r = self.lcd.renderer
        # Only the renderer's bookkeeping matters here: no pixels.
        r.scanline_background = lambda y, x, bx, by, cols, lcd: cols
        r.scanline_window = lambda y, x, wx, wy, cols, lcd: cols
        r.scanline_blank = lambda y, x, cols, lcd: cols
        r.scanline_sprites = lambda *args: None
        # The line latch our renderer gets: registers when PyBoy draws or blanks a line.
        self.latch = np.zeros((px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
        draw = r.scanline

        def scanline(y):
            lcd = self.lcd
            wx_on = lcd._LCDC.window_enable and r.wy_activated_frame and lcd.WX - 7 < 160
            flags = px.LATCH_FLAG_WINDOW_ACTIVE if r.wy_activated_frame else 0
            self.put_latch(y, r.ly_window + (1 if wx_on else 0), flags)
            draw(y)

        def blank_screen():
            for y in range(px.SCREEN_H):
                self.put_latch(y, r.ly_window, px.LATCH_FLAG_BLANK)

        r.scanline = scanline
        r.blank_screen = blank_screen
        self.serial = serial_mod.Serial(False)
        self.IF = 0

    def sync(self, c):
        if self.serial.tick(c):
            self.IF |= 0x08
        if self.timer.tick(c):
            self.IF |= 0x04
        self.IF |= self.lcd.tick(c)

    def write(self, addr, v, c):
        t, lcd = self.timer, self.lcd
        if addr in (0xFF01, 0xFF02):
            if self.serial.tick(c):
                self.IF |= 0x08
            if addr == 0xFF01:
                self.serial.set_SB(v)
            else:
                self.serial.set_SC(v)
        elif 0xFF04 <= addr <= 0xFF07:
            if t.tick(c):
                self.IF |= 0x04
            {0xFF04: lambda: t.reset(), 0xFF05: lambda: t.write_tima(v),
             0xFF06: lambda: t.write_tma(v), 0xFF07: lambda: t.write_tac(v)}[addr]()  # fmt: skip
        elif 0xFF40 <= addr <= 0xFF4B:
            self.IF |= lcd.tick(c)
            if addr == 0xFF40:
                self.IF |= lcd.set_lcdc(v)
            elif addr == 0xFF41:
                self.IF |= lcd._STAT.set(v)
            elif addr == 0xFF45:
                lcd.LYC = v
                if lcd._LCDC.lcd_enable:
                    self.IF |= lcd._STAT.update_LYC(lcd.LYC, lcd.LY)
                else:
                    lcd.lyc_changed_while_disabled = True
            elif addr in (0xFF42, 0xFF43, 0xFF4A, 0xFF4B):
                setattr(lcd, {0xFF42: "SCY", 0xFF43: "SCX", 0xFF4A: "WY", 0xFF4B: "WX"}[addr], v)
        else:
            raise ValueError(f"unexpected write address {addr:#x}")

    def read(self, addr, offset, c):
        t, lcd = self.timer, self.lcd
        if addr in (0xFF01, 0xFF02):
            if self.serial.tick(c):
                self.IF |= 0x08
            return self.serial.SB if addr == 0xFF01 else self.serial.SC
        if 0xFF04 <= addr <= 0xFF07:
            if t.tick(c):
                self.IF |= 0x04
            return {0xFF04: t.DIV, 0xFF05: t.read_tima(), 0xFF06: t.TMA, 0xFF07: t.TAC | 0xF8}[addr]
        self.IF |= lcd.tick(c + offset)
        if addr == 0xFF41:
            value = lcd._STAT.value
            if lcd.stat_mode_override:
                lcd.stat_mode_override = False
                value &= 0xFC
            return value
        return {0xFF44: lcd.LY, 0xFF45: lcd.LYC, 0xFF40: lcd._LCDC.value}[addr]

    def put_latch(self, y, win_line, flags):
        lcd = self.lcd
        row = self.latch[y]
        row[px.LATCH_LCDC] = lcd._LCDC.value
        row[px.LATCH_SCX] = lcd.SCX
        row[px.LATCH_SCY] = lcd.SCY
        row[px.LATCH_WX] = lcd.WX
        row[px.LATCH_WY] = lcd.WY
        row[px.LATCH_BGP] = lcd.BGP.value
        row[px.LATCH_OBP0] = lcd.OBP0.value
        row[px.LATCH_OBP1] = lcd.OBP1.value
        row[px.LATCH_WIN_LINE] = win_line & 0xFF
        row[px.LATCH_FLAGS] = flags

    def record(self, value):
        t, lcd, s = self.timer, self.lcd, self.serial
        return [
            value, self.IF,
            t.DIV_counter, t.TIMA, t.TMA, t.TAC, t.tima_reload_state, t.TIMA_counter,
            t._cycles_to_interrupt,
            lcd.LY, lcd.LYC, lcd._STAT.value, int(bool(lcd._STAT._irq_line)), lcd.clock,
            lcd.clock_target, lcd.next_stat_mode, lcd.stat_transition, int(lcd.frame_done),
            int(lcd.first_frame), int(lcd.reset), int(lcd.stat_mode_override),
            int(lcd.lyc_changed_while_disabled), lcd.mode3_adjustment,
            lcd._cycles_to_interrupt, lcd._cycles_to_frame,
            int(bool(lcd.renderer.wy_activated_frame)), lcd.renderer.ly_window,
            s.SB, s.SC, int(bool(s.transfer_enabled)), s._cycles_to_interrupt,
        ]  # fmt: skip


WRITE_ADDRS = (0xFF04, 0xFF05, 0xFF06, 0xFF07, 0xFF40, 0xFF41, 0xFF42, 0xFF43, 0xFF45,
               0xFF4A, 0xFF4B, 0xFF01, 0xFF02)  # fmt: skip
READ_ADDRS = (0xFF04, 0xFF05, 0xFF07, 0xFF41, 0xFF44, 0xFF02)


SPARSE_STEPS = (0, 1, 2, 3, 4, 4, 8, 12, 20, 76, 80, 172, 200, 456, 4000)
DENSE_STEPS = (4, 8, 12, 16, 24, 40, 60, 80, 100)  # the LCD keeps up, frames complete


def random_ops(rng: np.random.Generator, n: int, dense: bool = False) -> np.ndarray:
    """Random syncs/writes/reads/OAM pokes at non-decreasing cycle counts."""
    ops = np.zeros((n, 4), dtype=np.int64)
    c = 0
    for k in range(n):
        r = rng.random()
        c += int(rng.choice(DENSE_STEPS if dense else SPARSE_STEPS))
        if r < 0.02 and not dense:
            c += int(rng.integers(0, 300_000))
        if r < 0.35:
            ops[k] = (OP_SYNC, 0, 0, c)
        elif r < 0.75:
            addr = int(rng.choice(WRITE_ADDRS))
            v = int(rng.integers(0, 256))
            if addr == 0xFF40:
                v = int(rng.choice([0x91, 0x93, 0x97, 0xB3, 0xF1, 0xA3, v | 0x80]))
                if rng.random() < (0.01 if dense else 0.15):
                    v = int(rng.choice([0x00, 0x11, 0x33]))
            if addr == 0xFF4B and rng.random() < 0.7:
                v = int(rng.integers(0, 170))
            if addr == 0xFF07:
                v = int(rng.choice([4, 5, 6, 7, 0, 1, v]))
            if addr == 0xFF06 and rng.random() < 0.5:
                v = 0xFF
            if addr == 0xFF45 and rng.random() < 0.7:
                v = int(rng.integers(0, 154))
            if addr == 0xFF4A and rng.random() < 0.7:
                v = int(rng.integers(0, 144))
            if addr == 0xFF02:
                v = int(rng.choice([0x81, 0x80, 0x01, 0x00, v]))
            ops[k] = (OP_WRITE, addr, v, c)
        elif r < 0.92:
            offset = int(rng.choice([0, 0, 4, 8]))
            ops[k] = (OP_READ, int(rng.choice(READ_ADDRS)), offset, c)
            c += offset  # the CPU's cycle count never falls behind an offset sync
        else:
            ops[k] = (OP_OAM, int(rng.integers(0, 0xA0)), int(rng.integers(0, 256)), c)
    return ops


def machine_for_units(envs: int):
    """Envs at PyBoy's power-on state (the cartridge is irrelevant to these units)."""
    from gbxcule.kernels.step.reset import power_on

    rom = build_rom('SECTION "main", ROM0[$0150]\nMain:\n    jr Main\n')
    _, cart = cart_config(rom)
    m = allocate_machine(
        envs,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.frombuffer(boot_rom_bytes(), np.uint8),
        cart=cart,
        device="cpu",
    )
    wp.launch(power_on, dim=envs, inputs=[m], device="cpu")
    return m


@pytest.fixture(scope="module")
def pyboy_modules():
    return tuple(load_pyboy_source(n) for n in ("timer", "lcd", "serial"))


@pytest.mark.parametrize("seed,dense", [(1, False), (2, False), (3, True), (4, True)])
def test_units_match_pyboy_sources(pyboy_modules, seed, dense):
    envs, n_ops = 8, 3000 if dense else 600
    rng = np.random.default_rng(seed)
    ops = np.stack([random_ops(rng, n_ops, dense) for _ in range(envs)])
    m = machine_for_units(envs)
    out = wp.zeros((envs, n_ops, NF), dtype=wp.int64, device="cpu")
    wp.launch(run_ops, dim=envs, inputs=[m, wp.array(ops, dtype=wp.int64), out], device="cpu")
    got = out.numpy()
    for env in range(envs):
        ref = PyBoyUnits(*pyboy_modules)
        for k in range(n_ops):
            kind, addr, value, c = (int(x) for x in ops[env, k])
            read = -1
            if kind == OP_SYNC:
                ref.sync(c)
            elif kind == OP_WRITE:
                ref.write(addr, value, c)
            elif kind == OP_READ:
                read = ref.read(addr, value, c)
            else:
                ref.lcd.OAM[addr] = value
            want = ref.record(read)
            if list(got[env, k]) != want:
                bad = [
                    f"{f}: pyboy {w} ours {g}"
                    for f, w, g in zip(FIELDS, want, got[env, k])
                    if w != g
                ]
                raise AssertionError(f"env {env} op {k} {ops[env, k].tolist()}: {bad}")
        latch = m.line_latch.numpy()[env]
        bad_lines = np.nonzero((latch != ref.latch).any(axis=1))[0]
        assert len(bad_lines) == 0, (
            f"env {env}: line latch differs on lines {bad_lines[:10].tolist()}: "
            f"pyboy {ref.latch[bad_lines[0]].tolist()} ours {latch[bad_lines[0]].tolist()}"
        )
