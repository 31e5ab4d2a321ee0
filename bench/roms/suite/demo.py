"""The demo game (gbxcule.demo_game) as a suite ROM with a scripted input sequence.

The check compares the game state in WRAM (player position, score, BCD score,
coins, generator state, tick count) with the Python model of the game's rules
run on the same inputs, and the final frame with the NumPy picture model drawn
from that state (tiles, map, window status bar, shadow OAM, scroll).

The script starts with idle frames (the ROM's setup frames; idle ticks change
nothing but the tick counter), then walks to coins greedily, exercises every
direction, B's double speed, opposite keys cancelling and buttons the game
ignores, and ends idle so the last frame shows the final state.
"""

from __future__ import annotations

import functools

import numpy as np

from bench.roms.spec import RomSpec
from bench.roms.suite.ppu_reference import PpuRegs, first_mismatch, render_frame
from gbxcule.backends.protocol import Backend
from gbxcule.demo import game as g
from gbxcule.demo import rom as demo_rom

SETUP_FRAMES = 10  # idle steps first: the ROM needs a few frames to set up
TAIL_FRAMES = 6  # idle steps last: the picture lags the state by two frames


def _toward(a: int, b: int) -> int:
    """Signed shortest step from a to b on the 256-pixel wrapping axis."""
    return ((b - a + 128) & 0xFF) - 128


def greedy_script(frames: int, state: g.DemoState) -> list[int]:
    """Inputs that walk to the nearest coin, holding B while far from it."""
    script = []
    for _ in range(frames):
        dists = [
            (abs(_toward(state.x, cx)) + abs(_toward(state.y, cy)), i)
            for i, (cx, cy) in enumerate(state.coins)
        ]
        cx, cy = state.coins[min(dists)[1]]
        dx, dy = _toward(state.x, cx), _toward(state.y, cy)
        mask = 0
        if dx:
            mask |= g.BUTTON_RIGHT if dx > 0 else g.BUTTON_LEFT
        if dy:
            mask |= g.BUTTON_DOWN if dy > 0 else g.BUTTON_UP
        if max(abs(dx), abs(dy)) > 12:
            mask |= g.BUTTON_B
        script.append(mask)
        state = g.tick(state, mask)
    return script


@functools.cache
def demo_script() -> tuple[int, ...]:
    manual = (
        [g.BUTTON_RIGHT] * 20
        + [g.BUTTON_DOWN | g.BUTTON_B] * 15
        + [g.BUTTON_LEFT | g.BUTTON_RIGHT] * 5  # cancel out
        + [g.BUTTON_UP | g.BUTTON_LEFT] * 12
        + [g.BUTTON_A | 0x40 | 0x80] * 3  # A, select, start: ignored
    )
    state = g.simulate([0] * SETUP_FRAMES + manual)
    script = [0] * SETUP_FRAMES + manual + greedy_script(400, state) + [0] * TAIL_FRAMES
    return tuple(script)


def read_state(backend: Backend, env: int) -> g.DemoState:
    lo, hi = g.STATE_BYTES
    return g.state_from_wram(bytes(backend.read_memory(env, lo, hi)), lo)


def expected_frame(state: g.DemoState) -> np.ndarray:
    """The picture documented hardware shows once ``state`` has been on screen a frame."""
    vram = bytearray(0x2000)
    vram[: len(g.tile_data())] = g.tile_data()
    vram[0x1800:0x1C00] = g.bg_map()
    vram[0x1C00:0x1C20] = g.bar_map(state.score)
    scx, scy = g.scroll(state)
    regs = PpuRegs(
        lcdc=g.LCDC, scx=scx, scy=scy, bgp=g.BGP, obp0=g.OBP0, obp1=g.OBP1, wy=g.BAR_LINE, wx=7
    )
    return render_frame(bytes(vram), g.shadow_oam(state), [regs] * 144)


def check_demo(backend: Backend, env: int, inputs: tuple[int, ...] | None = None) -> None:
    inputs = demo_script() if inputs is None else inputs
    want = g.simulate(inputs)
    got = read_state(backend, env)
    # Ticks begin once setup is done; the idle frames before make no difference.
    if not len(inputs) - SETUP_FRAMES <= got.frame <= len(inputs):
        raise AssertionError(f"demo: {got.frame} game ticks in {len(inputs)} frames")
    for field in ("x", "y", "score", "coins", "rng"):
        if getattr(got, field) != getattr(want, field):
            raise AssertionError(
                f"demo: {field} = {getattr(got, field)}, model says {getattr(want, field)}"
            )
    bcd = int.from_bytes(
        bytes(backend.read_memory(env, g.W_SCORE_BCD, g.W_SCORE_BCD + 2)), "little"
    )
    if bcd != g.score_bcd(want.score):
        raise AssertionError(f"demo: BCD score {bcd:#06x}, expected {g.score_bcd(want.score):#06x}")
    msg = first_mismatch(backend.frame_shades(env), expected_frame(want))
    if msg is not None:
        raise AssertionError(f"demo frame: {msg}")


ROMS = [
    RomSpec(
        name="demo_game",
        description="demo game: scripted walk collecting coins; WRAM state and frame vs the model",
        build=demo_rom.demo_rom_bytes,
        check=check_demo,
        steps=len(demo_script()),
        inputs=demo_script(),
        tags=("demo",),
    )
]
