"""Whole LCD lines in one jump (kernels/ppu/ppu_quiet.py) against the transitions one by one.

A differential fuzz: envs of the demo game and quest, stepped with random buttons, get
random LCD, timer, serial and OAM states (LYC, WY, SCX, STAT's interrupt sources, sprite
size and enable, a rendered frame or not, the timer's and serial port's next events, OAM
bytes), their LCD moved a random number of transitions ahead; then two machines built the
same way run the quiet HALT loop with the jump (``halt_through_lcd``) and without it
(``halt_through_lcd_stepwise``), and every per-env array must be equal. The jump itself
is also checked alone: from each env's next mode-2 start, ``lcd_quiet_lines`` against
``lcd_sync`` transition by transition up to the same cycle.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.warp_base import field_view, per_env_arrays
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.memory_layout import OAM_OFF
from gbxcule.games import bundled_rom_path
from gbxcule.kernels.board.ioregs import IO_BASE, LCDC, LY, LYC, SCX, STAT, WY, raise_interrupt
from gbxcule.kernels.ppu.ppu import lcd_sync
from gbxcule.kernels.ppu.ppu_quiet import at_quiet_mode2, lcd_quiet_lines
from gbxcule.kernels.state import (
    CYCLES,
    LCD_TO_FRAME,
    LCD_TO_IRQ,
    Machine,
    env_view,
)
from gbxcule.kernels.step.slice import MIN_SLICE, halt_through_lcd, halt_through_lcd_stepwise

pytestmark = pytest.mark.l2
wp.set_module_options({"enable_backward": False})

ENVS = 48
ROUNDS = 12


@wp.func
def one_transition(m: wp.ref[Machine], i: int):
    """The LCD's next transition, as the quiet HALT loop takes it (flags raised)."""
    t = wp.max(MIN_SLICE, wp.min(m.i64[i, LCD_TO_IRQ], m.i64[i, LCD_TO_FRAME]))
    cycles = m.i64[i, CYCLES] + t
    m.i64[i, CYCLES] = cycles
    raise_interrupt(m, i, lcd_sync(m, i, cycles))


@wp.kernel
def advance_lcd(m: Machine, counts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    e = env_view(m, i)
    for _ in range(counts[i]):
        one_transition(e, 0)


@wp.kernel
def to_quiet_mode2(m: Machine, limit: int):
    """Each env's LCD up to its next quiet mode-2 start (at most ``limit`` transitions)."""
    i = wp.tid()
    e = env_view(m, i)
    n = wp.int32(0)
    while n < limit and at_quiet_mode2(e, 0, e.i64[0, CYCLES]) == 0:
        one_transition(e, 0)
        n += 1


@wp.kernel
def jump(m: Machine, spans: wp.array(dtype=wp.int64), jumped: wp.array(dtype=wp.int64)):
    i = wp.tid()
    e = env_view(m, i)
    cycles = e.i64[0, CYCLES]
    after = lcd_quiet_lines(e, 0, cycles, cycles + spans[i])
    e.i64[0, CYCLES] = after
    jumped[i] = after - cycles


@wp.kernel
def steps_to(m: Machine, jumped: wp.array(dtype=wp.int64)):
    i = wp.tid()
    e = env_view(m, i)
    end = e.i64[0, CYCLES] + jumped[i]
    while e.i64[0, CYCLES] < end:
        one_transition(e, 0)


@wp.kernel
def halt_quiet(m: Machine):
    i = wp.tid()
    e = env_view(m, i)
    halt_through_lcd(e, 0)


@wp.kernel
def halt_stepwise(m: Machine):
    i = wp.tid()
    e = env_view(m, i)
    halt_through_lcd_stepwise(e, 0)


def perturb(b: WarpVecCpuBackend, rng: np.random.Generator) -> None:
    """Random LCD registers, STAT sources, rendering, sprites, timer/serial events, OAM."""
    n = b.num_envs
    mem = b.machine.mem.numpy()
    mem[:, IO_BASE + LYC] = rng.integers(0, 160, n)
    mem[:, IO_BASE + WY] = rng.integers(0, 160, n)
    mem[:, IO_BASE + SCX] = rng.integers(0, 256, n)
    # no source, the LYC source alone (quest's status bar), or any mix of the four
    pick = rng.random(n)
    sources = np.where(pick < 0.4, 0, np.where(pick < 0.7, 0x40, rng.integers(0, 16, n) << 3))
    mem[:, IO_BASE + STAT] = (mem[:, IO_BASE + STAT] & 0x87) | sources
    mem[:, IO_BASE + LCDC] = (mem[:, IO_BASE + LCDC] & 0xF9) | (rng.integers(0, 4, n) << 1)
    oam = rng.random(n) < 0.5
    mem[oam, OAM_OFF : OAM_OFF + 160] = rng.integers(0, 256, (int(oam.sum()), 160))
    b.machine.mem.assign(mem)
    field_view(b.machine, "oam_lines_ok").zero_()
    field_view(b.machine, "frame_done").zero_()  # a step ended its last frame
    field_view(b.machine, "lcd_render").assign((rng.random(n) < 0.2).astype(np.int32))
    cycles = field_view(b.machine, "cycles").numpy()
    for name, last in (("tim_to_irq", "tim_last"), ("ser_to_irq", "ser_last")):
        field_view(b.machine, last).assign(cycles)
        far = rng.random(n) < 0.3
        field_view(b.machine, name).assign(np.where(far, 1 << 40, rng.integers(4, 80_000, n)))


def on_lyc_line(b: WarpVecCpuBackend, pick: np.ndarray) -> None:
    """The picked envs on the line LYC names, with the LYC source on: coincidence set and
    the STAT interrupt line high, as the LCD would have left them."""
    mem = b.machine.mem.numpy()
    mem[pick, IO_BASE + LYC] = mem[pick, IO_BASE + LY]
    mem[pick, IO_BASE + STAT] = (mem[pick, IO_BASE + STAT] & 0x83) | 0x44
    b.machine.mem.assign(mem)
    line = field_view(b.machine, "lcd_irq_line").numpy()
    field_view(b.machine, "lcd_irq_line").assign(np.where(pick, 1, line).astype(np.int32))


def machines(rom: str, seed: int):
    """Two backends with the same history: random buttons, then the same perturbation."""
    out = []
    for _ in range(2):
        b = WarpVecCpuBackend(rom, num_envs=ENVS, threads=1, frames_per_step=4)
        rng = np.random.default_rng(seed)
        for _ in range(3):
            b.step(rng.integers(0, 7, ENVS))
        perturb(b, rng)
        counts = wp.array(rng.integers(0, 700, ENVS).astype(np.int32), device="cpu")
        wp.launch(advance_lcd, dim=ENVS, inputs=[b.machine, counts], device="cpu")
        out.append(b)
    return out


def state(b) -> dict[str, np.ndarray]:
    return {name: arr.numpy().copy() for name, arr in per_env_arrays(b.machine)}


def diff(a, b) -> list[str]:
    x, y = state(a), state(b)
    return [k for k in x if not np.array_equal(x[k], y[k])]


@pytest.mark.parametrize("game", ["demo", "quest"])
def test_quiet_halt_with_jumps_equals_the_transitions_one_by_one(game):
    rom = str(bundled_rom_path(game))
    jumps = 0
    for r in range(ROUNDS):
        quick, slow = machines(rom, seed=100 * r + 7 + len(game))
        assert diff(quick, slow) == []
        before = field_view(quick.machine, "cycles").numpy().copy()
        wp.launch(halt_quiet, dim=ENVS, inputs=[quick.machine], device="cpu")
        wp.launch(halt_stepwise, dim=ENVS, inputs=[slow.machine], device="cpu")
        bad = diff(quick, slow)
        assert bad == [], f"round {r}: {bad}"
        jumps += int((field_view(quick.machine, "cycles").numpy() - before > 456).sum())
        quick.close()
        slow.close()
    print(f"{game}: {ENVS * ROUNDS} quiet HALT loops compared, {jumps} past a whole line")
    assert jumps >= ENVS * ROUNDS // 8, f"only {jumps} HALT loops got past a whole line"


@pytest.mark.parametrize("game", ["demo", "quest"])
def test_a_jump_equals_the_transitions_it_stands_for(game):
    rom = str(bundled_rom_path(game))
    taken = compared = 0
    for r in range(ROUNDS):
        quick, slow = machines(rom, seed=100 * r + 11 + len(game))
        pick = np.random.default_rng(r + 50).random(ENVS) < 0.3
        for b in (quick, slow):
            wp.launch(to_quiet_mode2, dim=ENVS, inputs=[b.machine, 2000], device="cpu")
            on_lyc_line(b, pick)
        assert diff(quick, slow) == []
        rng = np.random.default_rng(r)
        spans = wp.array(rng.integers(1, 80_000, ENVS).astype(np.int64), device="cpu")
        jumped = wp.zeros(ENVS, dtype=wp.int64, device="cpu")
        wp.launch(jump, dim=ENVS, inputs=[quick.machine, spans, jumped], device="cpu")
        wp.launch(steps_to, dim=ENVS, inputs=[slow.machine, jumped], device="cpu")
        bad = diff(quick, slow)
        assert bad == [], f"round {r}: {bad}"
        moved = jumped.numpy()
        assert np.all(moved % 456 == 0) and np.all(moved < spans.numpy())
        taken += int((moved > 0).sum())
        compared += ENVS
        quick.close()
        slow.close()
    print(f"{game}: {compared} jumps compared with the transitions, {taken} moved the LCD")
    assert taken >= compared // 4, f"{taken} jumps in {compared} envs"
