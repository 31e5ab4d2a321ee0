"""A NumPy DMG picture model written from Pan Docs, used as the PPU ROMs' expectation.

Given the VRAM/OAM image a ROM places and the register values in effect on
each line, :func:`render_frame` returns the [144, 160] shade indices (0..3,
after BGP/OBP0/OBP1) that documented DMG hardware shows. It models:

* BG: tile map $9800/$9C00 (LCDC.3), tile data $8000 unsigned / $8800 signed
  (LCDC.4), SCX/SCY scrolling with 256-pixel wrap, BGP.
* Window: the per-frame "Y condition" (set when WY == LY at a line start),
  the window's own line counter (advances only on lines the window is
  drawn), WX/WY position, map select (LCDC.6), enable (LCDC.5).
* LCDC.0 = 0: BG and window blank (colour index 0, drawn white), objects only.
* Objects: 8x8/8x16 (LCDC.2, tile LSB ignored in 8x16), X/Y flip, OBP0/OBP1,
  the first ten objects in OAM order whose Y range covers the line (X not
  considered), drawing priority by smaller X then lower OAM index, colour 0
  transparent, and "BG over OBJ" resolved after object priority (so a
  higher-priority hidden object masks lower ones, Pan Docs "OAM").

Deliberately not modelled (scenes must avoid them; :func:`validate_regs`
raises on the register cases): WX < 7 and WX = 166 with the window enabled,
mid-line register changes, the DMG window-disable pixel-insertion quirk.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

SCREEN_H = 144
SCREEN_W = 160
VRAM_SIZE = 0x2000
OAM_SIZE = 0xA0

# Register addresses (low byte of $FFxx) a scene may set or change mid-frame.
REG_LCDC = 0x40
REG_SCY = 0x42
REG_SCX = 0x43
REG_BGP = 0x47
REG_OBP0 = 0x48
REG_OBP1 = 0x49
REG_WY = 0x4A
REG_WX = 0x4B
_REG_FIELDS = {
    REG_LCDC: "lcdc",
    REG_SCY: "scy",
    REG_SCX: "scx",
    REG_BGP: "bgp",
    REG_OBP0: "obp0",
    REG_OBP1: "obp1",
    REG_WY: "wy",
    REG_WX: "wx",
}


@dataclass(frozen=True)
class PpuRegs:
    lcdc: int = 0x91
    scx: int = 0
    scy: int = 0
    bgp: int = 0xE4
    obp0: int = 0xE4
    obp1: int = 0xE4
    wy: int = 0
    wx: int = 0

    def with_reg(self, reg: int, value: int) -> PpuRegs:
        if reg not in _REG_FIELDS:
            raise ValueError(f"register $FF{reg:02X} is not a PPU register a scene can set")
        if not 0 <= value <= 0xFF:
            raise ValueError(f"register value {value} is not a byte")
        return replace(self, **{_REG_FIELDS[reg]: value})

    def items(self) -> list[tuple[int, int]]:
        """(register, value) pairs in the order a ROM writes them (LCDC last)."""
        pairs = [(reg, getattr(self, name)) for reg, name in _REG_FIELDS.items()]
        return [p for p in pairs if p[0] != REG_LCDC] + [(REG_LCDC, self.lcdc)]


def validate_regs(regs: PpuRegs, where: str) -> None:
    """Reject register values whose documented behaviour the model leaves out."""
    if regs.lcdc & 0x20 and regs.lcdc & 0x01 and (regs.wx < 7 or regs.wx == 166):
        raise ValueError(f"{where}: WX={regs.wx} with the window on is outside the modelled range")


def palette_lut(palette: int) -> np.ndarray:
    return np.array([(palette >> (2 * i)) & 3 for i in range(4)], dtype=np.uint8)


def tile_rows(vram: np.ndarray) -> np.ndarray:
    """[384, 8, 8] colour indices of every tile in $8000-$97FF."""
    data = vram[:0x1800].reshape(384, 8, 2)
    bits = np.arange(7, -1, -1)
    lo = (data[:, :, 0:1] >> bits) & 1
    hi = (data[:, :, 1:2] >> bits) & 1
    return (lo | (hi << 1)).astype(np.uint8)


def bg_tile_number(index: np.ndarray, lcdc: int) -> np.ndarray:
    """Tile-table slot (0..383) of a map byte under LCDC.4 addressing."""
    index = index.astype(np.int32)
    if lcdc & 0x10:
        return index
    return np.where(index < 0x80, index + 256, index)


def _map_pixels(vram, tiles, map_base, lcdc, row, cols) -> np.ndarray:
    """Colour indices of map pixel row ``row`` (0..255) at pixel columns ``cols`` (0..255)."""
    tmap = vram[map_base : map_base + 0x400].reshape(32, 32)
    numbers = bg_tile_number(tmap[row // 8, cols // 8], lcdc)
    return tiles[numbers, row % 8, cols % 8]


def _object_line(oam, tiles, lcdc, ly):
    """Per-column (colour index, attributes) of the winning object pixel, or None."""
    height = 16 if lcdc & 0x04 else 8
    selected = []
    for n in range(40):
        top = int(oam[4 * n]) - 16
        if top <= ly < top + height:
            selected.append(n)
            if len(selected) == 10:
                break
    if not selected:
        return None
    colour = np.zeros(SCREEN_W, dtype=np.uint8)
    attrs = np.zeros(SCREEN_W, dtype=np.uint8)
    taken = np.zeros(SCREEN_W, dtype=bool)
    for n in sorted(selected, key=lambda k: (int(oam[4 * k + 1]), k)):
        y, x, tile, attr = (int(v) for v in oam[4 * n : 4 * n + 4])
        row = ly - (y - 16)
        if attr & 0x40:
            row = height - 1 - row
        if height == 16:
            tile = (tile & 0xFE) + row // 8
        pixels = tiles[tile, row % 8]
        if attr & 0x20:
            pixels = pixels[::-1]
        for dx in range(8):
            sx = x - 8 + dx
            if 0 <= sx < SCREEN_W and not taken[sx] and pixels[dx] != 0:
                taken[sx] = True
                colour[sx] = pixels[dx]
                attrs[sx] = attr
    return colour, attrs, taken


def render_frame(vram: bytes, oam: bytes, line_regs: list[PpuRegs]) -> np.ndarray:
    """Shades [144, 160] of one frame; ``line_regs[ly]`` = registers in effect on line ``ly``."""
    if len(vram) != VRAM_SIZE or len(oam) != OAM_SIZE:
        raise ValueError(f"need {VRAM_SIZE} VRAM and {OAM_SIZE} OAM bytes")
    if len(line_regs) != SCREEN_H:
        raise ValueError(f"need registers for {SCREEN_H} lines, got {len(line_regs)}")
    vram_a = np.frombuffer(bytes(vram), dtype=np.uint8)
    oam_a = np.frombuffer(bytes(oam), dtype=np.uint8)
    tiles = tile_rows(vram_a)
    out = np.zeros((SCREEN_H, SCREEN_W), dtype=np.uint8)
    cols = np.arange(SCREEN_W)
    window_y_condition = False
    window_line = 0
    for ly, r in enumerate(line_regs):
        validate_regs(r, f"line {ly}")
        if r.wy == ly:
            window_y_condition = True
        bg = np.zeros(SCREEN_W, dtype=np.uint8)
        if r.lcdc & 0x01:
            bg_map = 0x1C00 if r.lcdc & 0x08 else 0x1800
            bg = _map_pixels(
                vram_a, tiles, bg_map, r.lcdc, (ly + r.scy) & 0xFF, (cols + r.scx) & 0xFF
            )
            if r.lcdc & 0x20 and window_y_condition and r.wx < 166:
                start = r.wx - 7
                win_map = 0x1C00 if r.lcdc & 0x40 else 0x1800
                wcols = np.arange(start, SCREEN_W) - start
                bg[start:] = _map_pixels(vram_a, tiles, win_map, r.lcdc, window_line, wcols)
                window_line += 1
            shades = palette_lut(r.bgp)[bg]
        else:
            shades = np.zeros(SCREEN_W, dtype=np.uint8)
        if r.lcdc & 0x02:
            obj = _object_line(oam_a, tiles, r.lcdc, ly)
            if obj is not None:
                colour, attrs, taken = obj
                visible = taken & ~(((attrs & 0x80) != 0) & (bg != 0))
                pal = np.where(attrs & 0x10, 1, 0)
                obj_shades = np.where(
                    pal == 1, palette_lut(r.obp1)[colour], palette_lut(r.obp0)[colour]
                )
                shades = np.where(visible, obj_shades, shades)
        out[ly] = shades
    return out


def regs_per_line(initial: PpuRegs, changes: tuple[tuple[int, int, int], ...]) -> list[PpuRegs]:
    """Registers on each visible line given (line, register, value) changes effective from ``line``."""
    regs = []
    current = initial
    for ly in range(SCREEN_H):
        for line, reg, value in changes:
            if line == ly:
                current = current.with_reg(reg, value)
        regs.append(current)
    return regs


def first_mismatch(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """None when equal, else a message naming the first differing pixel (row-major)."""
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"frame shape {actual.shape} != expected {expected.shape}"
    diff = np.argwhere(actual != expected)
    if len(diff) == 0:
        return None
    y, x = (int(v) for v in diff[0])
    return (
        f"{len(diff)} pixels differ; first at (y={y}, x={x}): "
        f"shade {int(actual[y, x])}, expected {int(expected[y, x])}"
    )
