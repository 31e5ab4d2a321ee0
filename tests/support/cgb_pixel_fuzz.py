"""Game Boy Color screens under fuzz: ROMs that fill both VRAM banks, OAM and the palette
RAM with random bytes and then rewrite them, the bank select and the LCD registers at
pseudo-random points of every frame; our CGB variant and PyBoy ``cgb=True`` run them
frame by frame and their screens are compared pixel for pixel in RGB.

The scene interpreter is ``midframe_fuzz``'s (``(ly, delay, kind, address, value)`` ops,
sorted by line, one scene a frame, chosen by a frame counter) with CGB ops added:

* ``OP_VBK``: VBK = value (later VRAM writes reach the other bank);
* ``OP_PALETTE``: an index register (BCPS or OCPS, the address's low byte) = the
  address's high byte (with or without auto-increment), then the data register = value;
* ``OP_HDMA``: a general-purpose HDMA of 16 bytes from ROM page ``value`` to the VRAM
  address (of the bank VBK selects).

The start image sets random attributes in every map entry (palette, bank, flips,
priority), random object attributes (palette, bank, flips, priority) and random colours
in all 64 palette words, and LCDC values with the master priority bit (0) on and off.
"""

from __future__ import annotations

import numpy as np

from gbxcule.asm import build_rom

from .midframe_fuzz import BURST_BYTES, DMA_PAGES, _db, scene_interpreter

SCENES_PER_ROM = 96
OP_WRITE, OP_WRITE_DE, OP_DMA, OP_BURST, OP_BLINK, OP_VBK, OP_PALETTE, OP_HDMA = range(8)
LCD_REGS = (0xFF40, 0xFF42, 0xFF43, 0xFF47, 0xFF4A, 0xFF4B)
LCDC_VALUES = (0x83, 0x93, 0xA7, 0xE3, 0xF7, 0x9B, 0x82, 0x96, 0xE6, 0xB2)
KIND_P = (0.36, 0.08, 0.05, 0.10, 0.02, 0.13, 0.20, 0.06)


def _vram_target(rng: np.random.Generator, span: int = 1) -> int:
    region = rng.choice(3, p=(0.4, 0.35, 0.25))
    if region == 0:
        return 0x8000 + int(rng.integers(0, 0x1800 - span + 1))
    if region == 1:
        return 0x9800 + int(rng.integers(0, 0x800 - span + 1))
    return 0xFE00 + int(rng.integers(0, 0xA0 - span + 1))


def _op(rng: np.random.Generator) -> tuple[int, int, int, int, int]:
    if rng.random() < 0.15:
        ly = int(rng.choice((0, 1, 143, 153)))
    else:
        ly = int(rng.integers(0, 154))
    delay = int(rng.integers(0, 31)) if ly < 153 else int(rng.integers(0, 12))
    value = int(rng.integers(0, 256))
    kind = int(rng.choice(8, p=KIND_P))
    if kind == OP_WRITE and rng.random() < 0.3:
        addr = int(rng.choice(LCD_REGS))
        if addr == 0xFF40:
            value = int(rng.choice(LCDC_VALUES))
        return ly, delay, kind, addr, value
    if kind == OP_DMA:
        return ly, delay, kind, 0, int(rng.choice(DMA_PAGES))
    if kind == OP_BLINK:
        return min(ly, 152), delay, kind, 0, int(rng.choice(LCDC_VALUES))
    if kind == OP_VBK:
        return ly, delay, kind, 0, value & 1
    if kind == OP_PALETTE:
        index = int(rng.integers(0, 64)) | int(rng.choice((0, 0x80)))
        return ly, delay, kind, (index << 8) | int(rng.choice((0x68, 0x6A))), value
    if kind == OP_HDMA:
        dst = 0x8000 + int(rng.integers(0, 0x200)) * 16
        return ly, delay, kind, dst, int(rng.integers(0x40, 0x80))
    span = BURST_BYTES if kind == OP_BURST else 1
    return ly, delay, kind, _vram_target(rng, span), value


def scene_ops(rng: np.random.Generator) -> list[tuple[int, int, int, int, int]]:
    """One scene: 1..8 ops ``(ly, delay, kind, address, value)`` in the order they run."""
    return sorted(_op(rng) for _ in range(int(rng.integers(1, 9))))


def _script(rng: np.random.Generator) -> bytes:
    out = bytearray()
    for ly, delay, kind, addr, value in scene_ops(rng):
        out += bytes((ly, delay, kind, addr & 0xFF, addr >> 8, value))
    return bytes(out + b"\xff")


def _start_image(rng: np.random.Generator) -> dict[str, np.ndarray]:
    oam = rng.integers(0, 256, (40, 4), dtype=np.uint8)
    oam[:, 0] = rng.integers(0, 170, 40)
    oam[:, 1] = rng.integers(0, 176, 40)
    pages = rng.integers(0, 256, (len(DMA_PAGES), 256), dtype=np.uint8)
    pages[:, 0:160:4] = rng.integers(8, 168, (len(DMA_PAGES), 40))
    return {
        "vram0": rng.integers(0, 256, 0x2000, dtype=np.uint8),
        "vram1": rng.integers(0, 256, 0x2000, dtype=np.uint8),
        "oam": oam,
        "pages": pages,
        "palettes": rng.integers(0, 256, 128, dtype=np.uint8),
    }


CGB_CASES = (  # op kinds 5-7, after midframe_fuzz's
    ("vbk", "    ldh [$4F], a\n"),
    (
        "palette",
        "    ld b, a\n    ld c, e\n    ld a, d\n    ld [c], a\n    inc c\n    ld a, b\n"
        "    ld [c], a\n",
    ),  # fmt: skip
    (
        "hdma",
        "    ldh [$51], a\n    xor a\n    ldh [$52], a\n    ld a, h\n    ldh [$53], a\n"
        "    ld a, l\n    ldh [$54], a\n    xor a\n    ldh [$55], a\n",
    ),  # fmt: skip
)


def fuzz_source(seed: int) -> str:
    """ROM source of one CGB fuzz ROM (``SCENES_PER_ROM`` scenes from ``seed``)."""
    rng = np.random.default_rng(seed)
    image = _start_image(rng)
    regs = {
        0x42: int(rng.integers(0, 256)),
        0x43: int(rng.integers(0, 256)),
        0x47: 0xE4,
        0x4A: int(rng.integers(0, 150)),
        0x4B: int(rng.integers(0, 170)),
        0x40: int(rng.choice(LCDC_VALUES)),
    }
    scripts = [_script(rng) for _ in range(SCENES_PER_ROM)]
    burst = "\n".join(["    ld [hl+], a\n    inc a"] * BURST_BYTES)
    set_regs = "\n".join(f"    ld a, ${v:02X}\n    ldh [${r:02X}], a" for r, v in regs.items())
    table = "\n".join(f"    dw Scene{k}" for k in range(SCENES_PER_ROM))
    data = "\n".join(f"Scene{k}:\n{_db(s)}" for k, s in enumerate(scripts))
    return f"""
SECTION "vars", WRAM0[$C000]
wScene: ds 1

SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, $E000
.vblank:
    ldh a, [$44]
    cp 144
    jr c, .vblank
    xor a
    ldh [$40], a
    ld a, 1
    ldh [$4F], a
    ld hl, Vram1Image
    ld de, $8000
    ld bc, $2000
    call Copy
    xor a
    ldh [$4F], a
    ld hl, Vram0Image
    ld de, $8000
    ld bc, $2000
    call Copy
    ld hl, OamImage
    ld de, $FE00
    ld bc, $00A0
    call Copy
    ld hl, DmaPages
    ld de, ${DMA_PAGES[0]:02X}00
    ld bc, ${len(DMA_PAGES) * 256:04X}
    call Copy
    ld a, $80
    ldh [$68], a
    ldh [$6A], a
    ld hl, Palettes
    ld b, 64
.bg_colours:
    ld a, [hl+]
    ldh [$69], a
    dec b
    jr nz, .bg_colours
    ld b, 64
.obj_colours:
    ld a, [hl+]
    ldh [$6B], a
    dec b
    jr nz, .obj_colours
    xor a
    ld [wScene], a
{set_regs}
SceneEnd:
    ldh a, [$44]
    cp 153
    jr nz, SceneEnd
.top:
    ldh a, [$44]
    cp 153
    jr z, .top
    ld a, [wScene]
    inc a
    cp {SCENES_PER_ROM}
    jr c, .pick
    xor a
.pick:
    ld [wScene], a
    ld l, a
    ld h, 0
    add hl, hl
    ld bc, SceneTable
    add hl, bc
    ld a, [hl+]
    ld h, [hl]
    ld l, a
{scene_interpreter(burst, CGB_CASES, far=True)}
Copy:                       ; BC bytes from HL to DE (LCD off)
    ld a, [hl+]
    ld [de], a
    inc de
    dec bc
    ld a, b
    or c
    jr nz, Copy
    ret

SceneTable:
{table}
OamImage:
{_db(image["oam"].tobytes())}
DmaPages:
{_db(image["pages"].tobytes())}
Palettes:
{_db(image["palettes"].tobytes())}
{data}

SECTION "vram_images", ROMX[$4000]
Vram0Image:
{_db(image["vram0"].tobytes())}
Vram1Image:
{_db(image["vram1"].tobytes())}
"""


def fuzz_rom(seed: int) -> bytes:
    return build_rom(fuzz_source(seed), title=f"CGBPIX{seed % 1000}", cgb_flag=0xC0)


def render_frames(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Env 0's last frame from our CGB renderers: full RGB [144, 160, 3], and the
    downsampled RGB [72, 80, 3] and luminance [72, 80] of one pass."""
    import warp as wp

    from gbxcule.core import pixels as px
    from gbxcule.kernels.ppu.render_cgb import render_cgb_kernels

    full_kernel, down_kernel = render_cgb_kernels()
    envs = wp.array([0], dtype=wp.int32, device="cpu")
    full = wp.zeros((1, px.SCREEN_H, px.SCREEN_W, 3), dtype=wp.uint8, device="cpu")
    rgb = wp.zeros((1, px.DOWN_H, px.DOWN_W, 3), dtype=wp.uint8, device="cpu")
    luma = wp.zeros((1, px.DOWN_H, px.DOWN_W), dtype=wp.uint8, device="cpu")
    video = [m.frame_video, m.line_latch, m.video_log]
    wp.launch(full_kernel, dim=(1, px.SCREEN_H), inputs=[*video, envs, full], device="cpu")
    wp.launch(down_kernel, dim=(1, px.DOWN_H), inputs=[*video, rgb, luma], device="cpu")
    return full.numpy()[0], rgb.numpy()[0], luma.numpy()[0]


def run(seed: int, frames: int) -> dict:
    """``frames`` frames of fuzz ROM ``seed`` from power-on (PyBoy's CGB boot first) on our
    CGB variant and on PyBoy ``cgb=True``, every frame's screens compared."""
    from gbxcule.core import pixels as px

    from .cgb_support import cgb_frame, cgb_machine, pyboy_cgb

    rom = fuzz_rom(seed)
    pyboy = pyboy_cgb(rom)
    m = cgb_machine(rom)
    out = {"frames": 0, "logged": 0, "colours": 0, "mismatches": []}
    try:
        for f in range(frames):
            pyboy.tick(1, True)
            cgb_frame(m, render=True)
            want = np.asarray(pyboy.screen.ndarray)[:, :, :3]
            full, rgb, luma = render_frames(m)
            out["frames"] += 1
            out["logged"] += int(m.video_log.numpy()[0, px.VLOG_COUNT] > 0)
            out["colours"] = max(out["colours"], len(np.unique(want.reshape(-1, 3), axis=0)))
            down = px.downsample(want, rgb=True)
            for what, ok in (
                ("full", np.array_equal(full, want)),
                ("rgb", np.array_equal(rgb, down)),
                ("luma", np.array_equal(luma, px.luma(down))),
            ):
                if not ok:
                    got = full if what == "full" else rgb if what == "rgb" else luma
                    ref = want if what == "full" else down if what == "rgb" else px.luma(down)
                    rows = sorted({int(y) for y in np.nonzero(got != ref)[0]})
                    out["mismatches"].append(f"frame {f + 1} {what}: rows {rows[:8]}")
    finally:
        pyboy.stop(save=False)
    return out
