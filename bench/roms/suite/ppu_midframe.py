"""Mid-frame register changes driven by the LYC STAT interrupt.

Every change is written during the HBlank of the line before it takes
effect (see ppu_common), the documented safe moment. The scenes cover an
SCX/SCY split, a BGP change, a status bar made with WX and LCDC.1 (Pan Docs
"faux-layer" recipe), and the LCD switched off and on during VBlank.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bench.roms.suite.ppu_common import (
    Scene,
    db_lines,
    oam_image,
    random_tiles,
    scene_spec,
    vram_image,
)
from bench.roms.suite.ppu_reference import (
    REG_BGP,
    REG_LCDC,
    REG_SCX,
    REG_SCY,
    REG_WX,
    PpuRegs,
)
from bench.roms.suite.ppu_sprites import OBP0, OBP1, grid_objects


def _vram(tag: int) -> bytes:
    rng = np.random.default_rng(0x31D00 + tag)
    tiles = random_tiles(rng, 256)
    maps = rng.integers(0, 256, size=2048, dtype=np.uint8).tobytes()
    return vram_image(tiles, 0, maps[:1024], maps[1024:])


def scroll_split_scene() -> Scene:
    regs = PpuRegs(lcdc=0x91, scx=0, scy=0)
    changes = (
        (48, REG_SCX, 0x41),
        (48, REG_SCY, 0x90),
        (96, REG_SCX, 0xFA),
        (96, REG_SCY, 0x07),
    )
    return Scene(_vram(1), bytes(160), regs, changes)


def palette_split_scene() -> Scene:
    regs = PpuRegs(lcdc=0x91, scx=21, scy=9, bgp=0xE4)
    changes = ((72, REG_BGP, 0x1B), (110, REG_BGP, 0xF0))
    return Scene(_vram(2), bytes(160), regs, changes)


def status_bar_scene() -> Scene:
    """Window rows 0-15 as a top status bar (map $9C00) without objects, then WX=167
    hides the window and objects come back for the play field."""
    regs = PpuRegs(lcdc=0xF1, scx=30, scy=70, wx=7, wy=0, obp0=OBP0, obp1=OBP1)
    changes = ((16, REG_WX, 167), (16, REG_LCDC, 0xF3))
    return Scene(_vram(3), oam_image(grid_objects(8)), regs, changes)


LCD_CYCLES = 2  # times the LCD is switched off and on again
W_LCD_CYCLES = 0xC010


def _lcd_maps() -> list[bytes]:
    rng = np.random.default_rng(0x31D0F)
    return [rng.integers(0, 256, size=1024, dtype=np.uint8).tobytes() for _ in range(LCD_CYCLES)]


def lcd_cycle_scenes() -> tuple[Scene, Scene]:
    """(scene at start, scene after the last off/on cycle): map $9800 replaced."""
    start = Scene(_vram(4), bytes(160), PpuRegs(lcdc=0x91, scx=50, scy=17))
    vram = bytearray(start.vram)
    vram[0x1800:0x1C00] = _lcd_maps()[-1]
    return start, Scene(bytes(vram), start.oam, start.regs)


# In VBlank, 3 frames after each LCD-on: LCD off, copy the next map into $9800 while
# VRAM is free, then FrameStart switches the LCD back on; wFrames restarts at 0.
LCD_CYCLE_HOOK = f"""
    ld a, [wLcdCycles]
    cp {LCD_CYCLES}
    jr nc, .no_cycle
    ld a, [wFrames]
    cp 3
    jr c, .no_cycle
    xor a
    ldh [$40], a
    ld [wFrames], a
    push de
    ld a, [wLcdCycles]
    add a, a
    add a, a
    add a, HIGH(LcdMaps)
    ld h, a
    ld l, 0
    ld de, $9800
    ld bc, $0400
    call MemCopy
    pop de
    ld hl, wLcdCycles
    inc [hl]
.no_cycle:
"""


def lcd_cycle_extra() -> str:
    maps = b"".join(_lcd_maps())
    return f"""
SECTION "lcd_vars", WRAM0[${W_LCD_CYCLES:04X}]
wLcdCycles: ds 1

SECTION "lcd_maps", ROMX[$6400], BANK[1]
{db_lines(maps, "LcdMaps")}
"""


def check_lcd_cycles(backend, env) -> None:
    done = int(backend.read_memory(env, W_LCD_CYCLES, W_LCD_CYCLES + 1)[0])
    if done != LCD_CYCLES:
        raise AssertionError(f"ppu_lcd_off_on: {done} LCD off/on cycles, expected {LCD_CYCLES}")


def _lcd_spec():
    start, final = lcd_cycle_scenes()
    spec = scene_spec(
        "ppu_lcd_off_on",
        "LCD off in VBlank, map rewritten while off, LCD on again (twice); final picture",
        start,
        steps=30,
        vblank_hook=LCD_CYCLE_HOOK,
        extra=lcd_cycle_extra(),
        shown=final,
    )
    frame_check = spec.check

    def check(backend, env) -> None:
        check_lcd_cycles(backend, env)
        frame_check(backend, env)

    return replace(spec, check=check)


ROMS = [
    scene_spec(
        "ppu_mid_scroll_split",
        "SCX/SCY changed at lines 48 and 96 from an LYC interrupt",
        scroll_split_scene(),
    ),
    scene_spec(
        "ppu_mid_bgp_split", "BGP changed at lines 72 and 110 from LYC", palette_split_scene()
    ),
    scene_spec(
        "ppu_mid_status_bar",
        "top status bar: window and no objects on lines 0-15, then WX=167 and objects on",
        status_bar_scene(),
    ),
    _lcd_spec(),
]
