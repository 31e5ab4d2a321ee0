"""Shared pieces of the PPU micro ROMs: scene ROMs, SM83 helpers, frame checks.

A *scene* is a VRAM image, an OAM image, the registers at the top of each
frame and optional mid-frame register changes ``(line, register, value)``.
:func:`scene_source` turns it into a ROM that, with the LCD off during
VBlank, copies the images into VRAM/OAM, then redraws the same frame forever:
the VBlank handler restores the top-of-frame registers and an LYC STAT
handler applies each change during the HBlank of the line before ``line``
(so it takes effect from ``line`` on documented hardware and on PyBoy, which
renders a line at the start of its HBlank). :func:`scene_spec` wraps it in a
RomSpec whose check compares the whole frame with :func:`render_frame`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from bench.roms.spec import RomSpec
from bench.roms.suite.ppu_reference import (
    OAM_SIZE,
    SCREEN_H,
    VRAM_SIZE,
    PpuRegs,
    first_mismatch,
    regs_per_line,
    render_frame,
)
from gbxcule.asm import build_rom, routines
from gbxcule.asm.routines import ASM_ROUTINES
from gbxcule.backends.protocol import Backend

# WRAM the scene ROMs own (the checks read W_FRAMES).
W_FRAMES = 0xC000  # VBlank count since the LCD was switched back on (wraps at 256)
W_NEXT_CHANGE = 0xC001  # 2 bytes: pointer into the change table
MIN_STABLE_FRAMES = 4  # frames drawn after setup before a picture is compared

# LcdOff (waits for VBlank; returns at once if the LCD is off), MemCopy (BC bytes HL -> DE),
# MemFill (BC bytes at HL = D): the demo game's routines, reused.
ASM_HELPERS = ASM_ROUTINES


def db_lines(data: bytes, label: str | None = None) -> str:
    """``db`` directives (16 bytes a line) for ``data``, optionally under a label."""
    return f"{label}:\n{routines.db_lines(data)}" if label else routines.db_lines(data)


def write_regs_asm(regs: PpuRegs) -> str:
    return "\n".join(f"    ld a, ${v:02X}\n    ldh [${r:02X}], a" for r, v in regs.items())


@dataclass(frozen=True)
class Scene:
    vram: bytes  # 8 KiB image of $8000-$9FFF
    oam: bytes  # 160 bytes
    regs: PpuRegs  # in effect at the top of every frame (LCDC must have bit 7 set)
    changes: tuple[tuple[int, int, int], ...] = ()  # (line, register $FFxx low byte, value)

    def __post_init__(self):
        if len(self.vram) != VRAM_SIZE or len(self.oam) != OAM_SIZE:
            raise ValueError(f"scene needs {VRAM_SIZE} VRAM and {OAM_SIZE} OAM bytes")
        if not self.regs.lcdc & 0x80:
            raise ValueError("scene LCDC must keep the LCD on (bit 7)")
        lines = [c[0] for c in self.changes]
        if lines != sorted(lines) or any(not 2 <= ln < SCREEN_H for ln in lines):
            raise ValueError(f"change lines must be sorted and in 2..143, got {lines}")
        if any(b - a == 1 for a, b in zip(sorted(set(lines)), sorted(set(lines))[1:])):
            raise ValueError("change lines must be at least two lines apart")

    def line_regs(self) -> list[PpuRegs]:
        return regs_per_line(self.regs, self.changes)


def _change_table(changes: tuple[tuple[int, int, int], ...]) -> tuple[int, bytes]:
    """(first LYC, table): per line [count, (reg, value) * count, next LYC]; LYC $FF = none."""
    groups: dict[int, list[tuple[int, int]]] = {}
    for line, reg, value in changes:
        groups.setdefault(line, []).append((reg, value))
    lines = sorted(groups)
    table = bytearray()
    for i, line in enumerate(lines):
        table.append(len(groups[line]))
        for reg, value in groups[line]:
            table += bytes((reg, value))
        table.append(lines[i + 1] - 1 if i + 1 < len(lines) else 0xFF)
    first = lines[0] - 1 if lines else 0xFF
    return first, bytes(table) or b"\x00"


def scene_source(scene: Scene, vblank_hook: str = "", extra: str = "") -> str:
    """ROM source for ``scene``. ``vblank_hook`` runs in the VBlank handler before the
    top-of-frame registers are written (it may use AF, BC, HL and must keep DE);
    ``extra`` is appended (more code/data/sections)."""
    first_lyc, table = _change_table(scene.changes)
    return f"""
SECTION "vblank_vector", ROM0[$0040]
    jp VBlank
SECTION "stat_vector", ROM0[$0048]
    jp Stat

SECTION "vars", WRAM0[$C000]
wFrames: ds 1
wNextChange: ds 2

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
    call LcdOff
    ld hl, VramImage
    ld de, $8000
    ld bc, $2000
    call MemCopy
    ld hl, OamImage
    ld de, $FE00
    ld bc, $00A0
    call MemCopy
    xor a
    ld [wFrames], a
    call FrameStart
    ld a, $40           ; STAT source: LYC=LY only
    ldh [$41], a
    xor a
    ldh [$0F], a
    ld a, $03           ; IE: VBlank, STAT
    ldh [$FF], a
    ei
.idle:
    halt
    nop
    jr .idle

; Top-of-frame registers (LCDC last), first LYC, change-table pointer.
FrameStart:
{write_regs_asm(scene.regs)}
    ld a, ${first_lyc:02X}
    ldh [$45], a
    ld a, LOW(ChangeTable)
    ld [wNextChange], a
    ld a, HIGH(ChangeTable)
    ld [wNextChange + 1], a
    ret

VBlank:
    push af
    push bc
    push hl
    ld hl, wFrames
    inc [hl]
{vblank_hook}
    call FrameStart
    pop hl
    pop bc
    pop af
    reti

; LY == LYC == line - 1: wait for this line's HBlank, then apply the line's changes.
Stat:
    push af
    push bc
    push hl
    ld a, [wNextChange]
    ld l, a
    ld a, [wNextChange + 1]
    ld h, a
.mode3:
    ldh a, [$41]
    and 3
    cp 3
    jr nz, .mode3
.mode0:
    ldh a, [$41]
    and 3
    jr nz, .mode0
    ld a, [hl+]
    ld b, a
.apply:
    ld a, [hl+]
    ld c, a
    ld a, [hl+]
    ldh [c], a
    dec b
    jr nz, .apply
    ld a, [hl+]
    ldh [$45], a
    ld a, l
    ld [wNextChange], a
    ld a, h
    ld [wNextChange + 1], a
    pop hl
    pop bc
    pop af
    reti
{ASM_HELPERS}
{db_lines(table, "ChangeTable")}

SECTION "images", ROMX[$4000], BANK[1]
{db_lines(scene.vram, "VramImage")}
{db_lines(scene.oam, "OamImage")}
{extra}
"""


def check_frame(backend: Backend, env: int, expected: np.ndarray, name: str) -> None:
    """Raise AssertionError naming the first pixel where the last frame differs."""
    msg = first_mismatch(backend.frame_shades(env), expected)
    if msg is not None:
        raise AssertionError(f"{name}: {msg}")


def require_frames(backend: Backend, env: int, name: str, minimum: int = MIN_STABLE_FRAMES):
    frames = int(backend.read_memory(env, W_FRAMES, W_FRAMES + 1)[0])
    if frames < minimum:
        raise AssertionError(f"{name}: only {frames} frames drawn after setup, need {minimum}")


def scene_spec(
    name: str,
    description: str,
    scene: Scene,
    steps: int = 16,
    vblank_hook: str = "",
    extra: str = "",
    shown: Scene | None = None,
) -> RomSpec:
    """RomSpec of a scene ROM; ``shown`` is the picture expected at the end when the
    hook changes VRAM (default: ``scene`` itself)."""
    final = shown or scene

    @functools.cache
    def expected() -> np.ndarray:
        return render_frame(final.vram, final.oam, final.line_regs())

    def build() -> bytes:
        return build_rom(scene_source(scene, vblank_hook, extra), title=name.upper()[:15])

    def check(backend: Backend, env: int) -> None:
        require_frames(backend, env, name)
        check_frame(backend, env, expected(), name)

    return RomSpec(
        name=name, description=description, build=build, check=check, steps=steps, tags=("ppu",)
    )


# ---- building VRAM images ----


def random_tiles(rng: np.random.Generator, count: int) -> bytes:
    """``count`` tiles of random colour indices (every tile distinct with overwhelming odds)."""
    return rng.integers(0, 256, size=count * 16, dtype=np.uint8).tobytes()


def vram_image(
    tiles: bytes = b"", tiles_at: int = 0, map9800: bytes = b"", map9c00: bytes = b""
) -> bytes:
    """8 KiB VRAM: ``tiles`` at byte offset ``tiles_at`` (from $8000), maps at $9800/$9C00."""
    vram = bytearray(VRAM_SIZE)
    if tiles_at + len(tiles) > 0x1800 or len(map9800) > 0x400 or len(map9c00) > 0x400:
        raise ValueError("tiles must fit $8000-$97FF and maps 1024 bytes")
    vram[tiles_at : tiles_at + len(tiles)] = tiles
    vram[0x1800 : 0x1800 + len(map9800)] = map9800
    vram[0x1C00 : 0x1C00 + len(map9c00)] = map9c00
    return bytes(vram)


def oam_image(objects: list[tuple[int, int, int, int]]) -> bytes:
    """OAM from (Y, X, tile, attributes) entries; the rest hidden at Y=0."""
    if len(objects) > 40:
        raise ValueError("OAM holds 40 objects")
    oam = bytearray(OAM_SIZE)
    for n, obj in enumerate(objects):
        oam[4 * n : 4 * n + 4] = bytes(obj)
    return bytes(oam)
