"""Mid-frame register changes (scroll splits, status bars, window tricks) vs PyBoy.

A ROM built with our assembler waits for chosen LY values and rewrites LCD
registers there every frame; the per-line latches are the schedule (checked
against PyBoy's own per-line SCX/SCY/WX/WY record), VRAM/OAM are poked random.
"""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.asm import assemble
from gbxcule.core import pixels as px

from .support import pixel_scenes as ps

pytestmark = pytest.mark.l2

FIELD_BY_NAME = {
    "lcdc": px.LATCH_LCDC,
    "scx": px.LATCH_SCX,
    "scy": px.LATCH_SCY,
    "wx": px.LATCH_WX,
    "wy": px.LATCH_WY,
    "bgp": px.LATCH_BGP,
    "obp0": px.LATCH_OBP0,
    "obp1": px.LATCH_OBP1,
}

# name -> [(first line, registers written when LY reaches it)]; the line-0 set is
# written at LY=144 so it holds from the top of the next frame.
SCHEDULES = {
    "scroll_split": [
        (0, dict(lcdc=0x93, scx=0, scy=0, bgp=0xE4)),
        (40, dict(scx=37, scy=5)),
        (41, dict(scx=200, scy=130)),
        (100, dict(bgp=0x1B, scx=3)),
    ],
    "status_bar": [
        (0, dict(lcdc=0xE3, scx=11, scy=22, wx=7, wy=112, bgp=0xE4, obp0=0xD2)),
        (60, dict(scx=90, obp0=0x2D)),
        (112, dict(lcdc=0xE1)),  # sprites off over the bar
    ],
    "window_toggle": [  # the window's line counter only advances on drawn lines
        (0, dict(lcdc=0x83, wx=30, wy=10, scx=0, bgp=0xE4)),
        (20, dict(lcdc=0xA3)),
        (40, dict(lcdc=0x83)),
        (60, dict(lcdc=0xA3, wx=100)),
        (90, dict(wx=170)),  # off the right edge: not drawn, counter holds
        (110, dict(wx=0)),
    ],
    "lcdc_bits_split": [  # map, tile data, sprite size, BG enable changing per band
        (0, dict(lcdc=0x87, scx=5, scy=9, wx=50, wy=0, obp0=0xE4, obp1=0x1B, bgp=0x6C)),
        (30, dict(lcdc=0x8F)),
        (60, dict(lcdc=0x9B)),
        (90, dict(lcdc=0xF6)),
        (120, dict(lcdc=0xB1, bgp=0xE4)),
    ],
}


def schedule_source(schedule) -> str:
    def writes(regs):
        lines = []
        for name in sorted(regs, key=lambda n: n == "scx"):  # SCX last: it proves the timing
            addr = ps.REG_ADDR[FIELD_BY_NAME[name]] & 0xFF
            lines.append(f"    ld a, ${regs[name]:02X}\n    ldh [${addr:02X}], a")
        return "\n".join(lines)

    body = ["Main:", "    di", "Frame:"]
    for line, regs in [(144, schedule[0][1]), *schedule[1:]]:
        body += [f"    ld b, {line}", "    call WaitLy", writes(regs)]
    body += [
        "    jr Frame",
        "WaitLy:",
        "    ldh a, [$44]",
        "    cp b",
        "    jr nz, WaitLy",
        "    ret",
    ]
    return "\n".join(body) + "\n"


def expected_registers(schedule, ly: int) -> dict[int, int]:
    regs: dict[int, int] = {}
    for line, values in schedule:
        if line <= ly:
            regs.update({FIELD_BY_NAME[k]: v for k, v in values.items()})
    return regs


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_midframe_schedule_matches_pyboy(name):
    schedule = SCHEDULES[name]
    pyboy = ps.start_pyboy(schedule_source(schedule), name)
    try:
        rng = np.random.default_rng(sorted(SCHEDULES).index(name))
        vram = rng.integers(0, 256, 0x2000, dtype=np.uint8)
        oam = rng.integers(0, 256, 160, dtype=np.uint8).reshape(40, 4)
        oam[:, 0] = rng.integers(10, 170, 40)  # keep most sprites on screen
        ps.poke(pyboy, vram, oam.ravel())
        pyboy.tick(4, True)
        compared = 0
        for frame in range(3):
            pyboy.tick(1, True)
            latch = ps.latches_from_pyboy(pyboy, lambda ly: expected_registers(schedule, ly))
            positions = np.array(pyboy.screen.tilemap_position_list)
            assert (positions[:, 0] == latch[0, :, px.LATCH_SCX]).all(), (
                "SCX split on the wrong line"
            )
            assert (positions[:, 1] == latch[0, :, px.LATCH_SCY]).all(), (
                "SCY split on the wrong line"
            )
            assert (positions[:, 2] + 7 == latch[0, :, px.LATCH_WX]).all(), (
                "WX split on the wrong line"
            )
            compared += ps.assert_matches_pyboy(f"{name}_{frame}", pyboy, latch)
        assert compared == 3 * (px.SCREEN_H * px.SCREEN_W + px.DOWN_H * px.DOWN_W)
    finally:
        pyboy.stop(save=False)


def test_window_toggle_counter_holds_while_hidden():
    """Our model of PyBoy's window counter (what ppu.py must latch) on the toggle schedule."""
    latch = np.zeros((px.SCREEN_H, px.LATCH_FIELDS), dtype=np.uint8)
    for ly in range(px.SCREEN_H):
        for field, value in expected_registers(SCHEDULES["window_toggle"], ly).items():
            latch[ly, field] = value
    ps.window_model(latch)
    win_line = latch[:, px.LATCH_WIN_LINE].astype(int)
    assert win_line[20] == 0 and win_line[39] == 19  # first drawn band
    assert win_line[60] == 20 and win_line[89] == 49  # continues, not LY - WY
    assert win_line[109] == 49 and win_line[110] == 50  # WX=170 lines do not count


VBLANK_WRITER = """
Main:
    di
Frame:
    ld b, 144
.vblank:
    ldh a, [$44]
    cp b
    jr nz, .vblank
InVBlank:                ; LY = 144: line 143 is drawn, the frame has not ended
    ld hl, $FE01
    inc [hl]             ; move sprite 0 right
    ld hl, $9800
    inc [hl]             ; change a map entry
.top:
    ldh a, [$44]
    and a
    jr nz, .top
    jr Frame
"""


def test_vblank_writes_need_the_line_143_snapshot():
    """PyBoy's frame ends after VBlank: OAM/VRAM written in VBlank are not in the picture.

    Rendering from VRAM/OAM copied when line 143 is done (what frame_video holds)
    matches PyBoy; rendering from the memory at the end of the frame does not.
    """
    pyboy = ps.start_pyboy(VBLANK_WRITER, "vblank")
    snapshots: list[np.ndarray] = []
    pyboy.hook_register(
        0,
        assemble(VBLANK_WRITER).symbols["InVBlank"],
        lambda _: snapshots.append(ps.video_row(pyboy)),
        None,
    )
    try:
        rng = np.random.default_rng(11)
        oam = np.zeros(160, dtype=np.uint8)
        oam[:4] = (40, 40, 3, 0)
        ps.poke(pyboy, rng.integers(0, 256, 0x2000, dtype=np.uint8), oam, lcdc=0x93, obp0=0x1B)
        pyboy.tick(3, True)
        for frame in range(4):
            pyboy.tick(1, True)
            latch = ps.latches_from_pyboy(pyboy)
            full, _, _ = ps.render_all(snapshots[-1], latch)
            assert np.array_equal(full[0], ps.screen_shades(pyboy)), f"frame {frame}"
            stale, _, _ = ps.render_all(ps.video_row(pyboy), latch)
            assert not np.array_equal(stale[0], full[0]), "VBlank writes should move the sprite"
    finally:
        pyboy.stop(save=False)
