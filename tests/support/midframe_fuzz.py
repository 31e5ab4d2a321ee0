"""Mid-frame fuzz: ROMs that write VRAM, OAM (directly and by DMA) and LCD registers at
pseudo-random points of every frame, run on our emulator and on PyBoy side by side.

A ROM holds ``SCENES_PER_ROM`` scenes (seeded). A scene is one frame's script: ops
``(ly, delay, kind, address, value)`` sorted by line; the interpreter waits until
LY >= ly, spins ``delay`` x 16 cycles, then does the op. Lines 0 and 153 are drawn
often. At the end of a scene it waits for LY 153 and then for LY 0, so each scene is
one PyBoy frame. The scene of a frame is ``counter ^ (d-pad nibble << 4)``: envs with
different buttons run different scenes. Ops:

* ``OP_WRITE``: ``ld [hl], a`` (no access offset: PyBoy never locks it), VRAM tile data,
  tile maps, OAM or an LCD register (LCDC keeps the LCD on);
* ``OP_WRITE_DE``: ``ld [de], a`` (PyBoy's access offset: VRAM locked in mode 3, OAM in
  modes 2 and 3), VRAM or OAM;
* ``OP_BURST``: 8 bytes ``value, value + 1, ...`` with ``ld [hl+], a``;
* ``OP_DMA``: OAM DMA from a WRAM page of sprite data or from VRAM;
* ``OP_BLINK``: LCDC bit 7 off and on again (the frame is cut short).

``run_fuzz`` steps a Warp CPU backend and the PyBoy oracle (2 frames a step, so the
first frame of each step is not rendered) and compares, every step and env, the full
frame, the 72x80 shades and packed2 with PyBoy's screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gbxcule.asm import build_rom
from gbxcule.core import pixels as px

SCENES_PER_ROM = 256
OP_WRITE, OP_WRITE_DE, OP_DMA, OP_BURST, OP_BLINK = range(5)
BURST_BYTES = 8
LCD_REGS = (0xFF40, 0xFF42, 0xFF43, 0xFF47, 0xFF48, 0xFF49, 0xFF4A, 0xFF4B)
DMA_PAGES = (0xC1, 0xC2, 0xC3)  # WRAM pages filled with sprite data at start
FRAMES_PER_STEP = 2


def _db(data: bytes) -> str:
    return "\n".join(
        "    db " + ", ".join(f"${b:02X}" for b in data[i : i + 16])
        for i in range(0, len(data), 16)
    )


def _target(rng: np.random.Generator, span: int = 1) -> int:
    """A VRAM tile-data, tile-map or OAM address with ``span`` bytes from it in range."""
    region = rng.choice(3, p=(0.4, 0.3, 0.3))
    if region == 0:
        return 0x8000 + int(rng.integers(0, 0x1800 - span + 1))
    if region == 1:
        return 0x9800 + int(rng.integers(0, 0x800 - span + 1))
    return 0xFE00 + int(rng.integers(0, 0xA0 - span + 1))


def _op(rng: np.random.Generator) -> tuple[int, int, int, int, int]:
    r = rng.random()
    if r < 0.18:
        ly = int(rng.choice((0, 0, 1, 143, 152, 153, 153)))
    else:
        ly = int(rng.integers(0, 154))
    delay = int(rng.integers(0, 31)) if ly < 153 else int(rng.integers(0, 12))
    value = int(rng.integers(0, 256))
    kind = int(rng.choice(5, p=(0.60, 0.14, 0.08, 0.16, 0.02)))
    if kind == OP_WRITE and rng.random() < 0.3:
        addr = int(rng.choice(LCD_REGS))
        if addr == 0xFF40:
            value |= 0x80
        return ly, delay, kind, addr, value
    if kind == OP_DMA:
        page = int(rng.choice(DMA_PAGES)) if rng.random() < 0.7 else int(rng.integers(0x80, 0xA0))
        return ly, delay, kind, 0, page
    if kind == OP_BLINK:
        return min(ly, 152), delay, kind, 0, value | 0x80
    span = BURST_BYTES if kind == OP_BURST else 1
    return ly, delay, kind, _target(rng, span), value


def scene_ops(rng: np.random.Generator) -> list[tuple[int, int, int, int, int]]:
    """One scene: 1..8 ops ``(ly, delay, kind, address, value)`` in the order they run."""
    return sorted(_op(rng) for _ in range(int(rng.integers(1, 9))))


def scene_script(rng: np.random.Generator) -> bytes:
    out = bytearray()
    for ly, delay, kind, addr, value in scene_ops(rng):
        out += bytes((ly, delay, kind, addr & 0xFF, addr >> 8, value))
    return bytes(out + b"\xff")


BASE_CASES = (  # op kinds 1-4 (kind 0, OP_WRITE, is the fall-through ``ld [hl], a``)
    ("de", "    ld [de], a\n"),
    ("dma", "    ldh [$46], a\n"),
    ("burst", "{burst}\n"),
    ("blink", "    ld b, a\n    and $7F\n    ldh [$40], a\n    ld a, b\n    ldh [$40], a\n"),
)


def scene_interpreter(
    burst: str, extra: tuple[tuple[str, str], ...] = (), far: bool = False
) -> str:
    """The scene interpreter (module doc), entered at ``NextOp`` with HL on a scene: op
    kind k >= 1 runs case k of ``BASE_CASES`` then ``extra`` (``(label, code)``), kind 0
    ``ld [hl], a``; a scene's end jumps to ``SceneEnd``. ``far``: ``jp`` for the jumps
    out of it (a long one)."""
    jump = "jp" if far else "jr"
    cases = [*BASE_CASES, *extra]
    dispatch = "".join(f"    dec c\n    jr z, .{label}\n" for label, _ in cases)
    bodies = "    jr .done\n".join(f".{label}:\n{code}" for label, code in cases)
    return f"""NextOp:
    ld a, [hl+]
    cp $FF
    {jump} z, SceneEnd
    ld b, a
.wait:
    ldh a, [$44]
    cp b
    jr c, .wait
    ld a, [hl+]
    and a
    jr z, .go
.delay:
    dec a
    jr nz, .delay
.go:
    ld a, [hl+]
    ld c, a
    ld a, [hl+]
    ld e, a
    ld a, [hl+]
    ld d, a
    ld a, [hl+]
    push hl
    ld h, d
    ld l, e
{dispatch}    ld [hl], a
    jr .done
{bodies.format(burst=burst)}.done:
    pop hl
    {jump} NextOp
"""


def fuzz_source(seed: int) -> str:
    """ROM source of one fuzz ROM (``SCENES_PER_ROM`` scenes from ``seed``)."""
    rng = np.random.default_rng(seed)
    vram = rng.integers(0, 256, 0x2000, dtype=np.uint8)
    oam = rng.integers(0, 256, (40, 4), dtype=np.uint8)
    oam[:, 0] = rng.integers(0, 170, 40)
    oam[:, 1] = rng.integers(0, 176, 40)
    pages = rng.integers(0, 256, (len(DMA_PAGES), 256), dtype=np.uint8)
    pages[:, 0:160:4] = rng.integers(8, 168, (len(DMA_PAGES), 40))
    regs = {
        0x42: int(rng.integers(0, 256)),
        0x43: int(rng.integers(0, 256)),
        0x47: 0xE4,
        0x48: 0xD2,
        0x49: 0x1B,
        0x4A: int(rng.integers(0, 150)),
        0x4B: int(rng.integers(0, 170)),
        0x40: int(rng.choice((0x83, 0x93, 0xA7, 0xE3, 0xF7, 0x9B))),
    }
    scripts = [scene_script(rng) for _ in range(SCENES_PER_ROM)]
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
    ld hl, VramImage
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
    ld a, $20
    ldh [$00], a
    ldh a, [$00]
    cpl
    and $0F
    swap a
    ld b, a
    ld a, [wScene]
    inc a
    ld [wScene], a
    xor b
    ld l, a
    ld h, 0
    add hl, hl
    ld bc, SceneTable
    add hl, bc
    ld a, [hl+]
    ld h, [hl]
    ld l, a
{scene_interpreter(burst)}
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
{_db(oam.tobytes())}
DmaPages:
{_db(pages.tobytes())}
{data}

SECTION "vram_image", ROMX[$4000]
VramImage:
{_db(vram.tobytes())}
"""


def fuzz_rom(seed: int) -> bytes:
    return build_rom(fuzz_source(seed), title=f"MIDFRAME{seed % 1000}")


@dataclass
class FuzzResult:
    scenes: int = 0  # (step, env) frames compared
    logged: int = 0  # of them, frames with at least one mid-frame write logged
    entries_max: int = 0  # most log entries in one frame
    mismatches: list[str] = field(default_factory=list)


def compare_step(warp, oracle, step: int, result: FuzzResult) -> None:
    """Compare every env's frame (full, shades, packed2) of one step; record mismatches."""
    shades = warp.pixels_torch().numpy()
    packed = warp.pixels_packed_torch().numpy()
    log = warp.machine.video_log.numpy()
    for env in range(warp.num_envs):
        expected = oracle.frame_shades(env)
        down = px.downsample(expected)
        result.scenes += 1
        count = int(log[env, px.VLOG_COUNT])
        result.logged += int(count > 0)
        result.entries_max = max(result.entries_max, count)
        got = warp.frame_shades(env)
        for what, ok in (
            ("full", np.array_equal(got, expected)),
            ("shades", np.array_equal(shades[env], down)),
            ("packed2", np.array_equal(packed[env], px.pack_shades(down))),
        ):
            if not ok:
                rows = sorted({int(y) for y in np.nonzero(got != expected)[0]})
                result.mismatches.append(f"step {step} env {env} {what}: lines {rows[:8]}")
                break


def run_fuzz(tmp_path, seed: int, steps: int, num_envs: int = 2) -> FuzzResult:
    """``steps`` steps of fuzz ROM ``seed`` on ``num_envs`` envs (random d-pad per env and
    step) on the Warp CPU backend and on PyBoy; every step and env compared."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend
    from gbxcule.backends.warp_vec import WarpVecCpuBackend

    rom = tmp_path / f"midframe_{seed}.gb"
    rom.write_bytes(fuzz_rom(seed))
    kwargs = dict(
        num_envs=num_envs,
        frames_per_step=FRAMES_PER_STEP,
        release_after_frames=FRAMES_PER_STEP,
        action_codec="buttons",
    )
    warp = WarpVecCpuBackend(
        rom, threads=1, render_pixels=True, render_pixels_packed=True, **kwargs
    )
    oracle = PyBoySingleBackend(rom, **kwargs)
    rng = np.random.default_rng(seed + 1)
    result = FuzzResult()
    try:
        for step in range(steps):
            actions = rng.integers(0, 256, num_envs)
            warp.step(actions)
            oracle.step(actions)
            compare_step(warp, oracle, step, result)
    finally:
        warp.close()
        oracle.close()
    return result
