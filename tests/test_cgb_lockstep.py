"""L3: the CGB variant in lockstep with PyBoy 2.8.1's Game Boy Color mode, frame by frame
from power-on through PyBoy's CGB boot ROM (tests/support/cgb_support.py): registers and
cycles, the IO page, WRAM bank 0 and every bank at D000, both VRAM banks.

The register program writes and reads back every CGB register (palette RAM through both
index registers with auto-increment and its wrap, VBK, SVBK with all eight values, KEY0/KEY1,
OPRI, FF72-FF75, PCM12/34, the unmapped ones), logging each read to WRAM bank 0; run on a
Colour cartridge and on a DMG one, whose gates differ (PyBoy's ``cgb_mode``). The timing
programs are the DMG lockstep's own (LCD, STAT, timer, serial, OAM DMA, VRAM locks),
built as Colour cartridges: CGB hardware's mode 3 and 0 lengths and its early VBlank STAT.
"""

from __future__ import annotations

import pytest

from gbxcule.asm import build_rom

from .support import emu_timing_programs as timing
from .support import sound_programs as sound
from .support.cgb_support import SHAPES, colour, lockstep

pytestmark = pytest.mark.l3


def _register_program() -> str:
    lines = ['SECTION "main", ROM0[$0150]', "Main:", "    ld hl, $C000"]

    def write(reg: int, value: int) -> None:
        lines.append(f"    ld a, ${value & 0xFF:02X}\n    ldh [${reg:02X}], a")

    def read(reg: int) -> None:
        lines.append(f"    ldh a, [${reg:02X}]\n    ld [hl+], a")

    def read_at(addr: int) -> None:
        lines.append(f"    ld a, [${addr:04X}]\n    ld [hl+], a")

    write(0x68, 0x80)  # BCPS: index 0, auto-increment
    for k in range(64):
        write(0x69, k * 3 + 1)
    read(0x68)
    for k in range(0, 64, 5):
        write(0x68, k)
        read(0x69)
    write(0x6A, 0x82)  # OCPS: index 1, auto-increment
    for k in range(10):
        write(0x6B, 0xF0 - k)
    read(0x6A)
    for k in range(12):
        write(0x6A, k)
        read(0x6B)
    for start in (0xBF, 0xFF):  # the increment past the end: $C0 and $80
        write(0x68, start)
        write(0x69, 0x66)
        read(0x68)
    write(0x4F, 1)
    read(0x4F)
    for k in range(8):
        lines.append(f"    ld a, ${0x40 + k:02X}\n    ld [${0x8000 + k:04X}], a")
    write(0x4F, 0)
    read(0x4F)
    for k in range(8):
        read_at(0x8000 + k)
        lines.append(f"    ld a, ${0x90 + k:02X}\n    ld [${0x8000 + k:04X}], a")
    write(0x4F, 1)
    for k in range(8):
        read_at(0x8000 + k)
    for bank in range(8):
        write(0x70, bank)
        lines.append(f"    ld a, ${0x11 * bank + 3:02X}\n    ld [$D000], a")
        lines.append(f"    ld a, ${0xF0 - bank:02X}\n    ld [$DFFF], a")
    for bank in range(8):
        write(0x70, bank)
        read(0x70)
        for addr in (0xD000, 0xDFFF, 0xF000, 0xC000):
            read_at(addr)
    write(0x70, 3)
    write(0x4D, 0x01)
    for reg, value in ((0x4C, 0x04), (0x6C, 0x00), (0x72, 0x5A), (0x74, 0xA5), (0x75, 0x00)):
        write(reg, value)
    for reg in (0x4C, 0x4D, 0x4E, 0x51, 0x55, 0x56, 0x6C, 0x72, 0x74, 0x75, 0x76, 0x77, 0x7F):
        read(reg)
    lines.append(".halt:\n    jr .halt")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("flag", [0x80, 0x00], ids=["colour cartridge", "dmg cartridge"])
def test_every_cgb_register_and_bank(flag, shape):
    step, problems = lockstep(build_rom(_register_program(), cgb_flag=flag), 70, shape)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


def _hdma_program() -> str:
    """General-purpose and HBlank HDMA: copies to both VRAM banks from WRAM and ROM, an
    HBlank transfer polled to its end (how many polls: its timing), one stopped, one
    relengthened, one started with the LCD off, one across a HALT; each VRAM byte read
    back into the log."""
    lines = ['SECTION "main", ROM0[$0150]', "Main:"]

    def w(reg: int, value: int) -> None:
        lines.append(f"    ld a, ${value & 0xFF:02X}\n    ldh [${reg:02X}], a")

    def log(reg: int) -> None:
        lines.append(f"    ldh a, [${reg:02X}]\n    ld [hl+], a")

    def log_bytes(addr: int, n: int) -> None:
        for k in range(n):
            lines.append(f"    ld a, [${addr + k:04X}]\n    ld [hl+], a")

    def source(addr: int, dst: int) -> None:
        w(0x51, addr >> 8)
        w(0x52, addr & 0xFF)
        w(0x53, dst >> 8)
        w(0x54, dst & 0xFF)

    def poll(label: str) -> None:  # polls FF55 until $FF, counting the polls in BC
        lines.append(
            f"    ld bc, 0\n{label}:\n    inc bc\n    ldh a, [$55]\n    cp $FF\n"
            f"    jr nz, {label}\n    ld a, b\n    ld [hl+], a\n    ld a, c\n    ld [hl+], a"
        )
        log(0x44)

    lines.append("    ld hl, $C100\n    ld b, 0\n.fill:\n    ld a, b\n    xor $5A\n"
                 "    ld [hl+], a\n    inc b\n    jr nz, .fill")  # fmt: skip
    lines.append("    ld hl, $C800")  # the log
    source(0xC100, 0x8000)
    w(0x55, 0x03)  # general purpose, 4 blocks
    log(0x55)
    log_bytes(0x8000, 8)
    log_bytes(0x803C, 4)
    w(0x4F, 1)
    source(0x0200, 0x9000)  # from ROM, to bank 1
    w(0x55, 0x01)
    log_bytes(0x9000, 8)
    w(0x4F, 0)
    source(0xC180, 0x8800)
    w(0x55, 0x87)  # HBlank, 8 blocks
    log(0x55)
    poll(".p1")
    log_bytes(0x8800, 4)
    log_bytes(0x887C, 4)
    source(0xC100, 0x8A00)
    w(0x55, 0x9F)
    lines.append("    ld b, 40\n.d1:\n    dec b\n    jr nz, .d1")
    log(0x55)
    w(0x55, 0x00)  # stop it
    log(0x55)
    log(0x51)
    w(0x55, 0x83)  # a new one: 4 blocks from where it stopped
    w(0x55, 0x81)  # relengthened while it runs: 2 more
    log(0x55)
    poll(".p2")
    log_bytes(0x8A00, 4)
    lines.append(".vb:\n    ldh a, [$44]\n    cp 145\n    jr nz, .vb")
    w(0x40, 0x11)  # LCD off in VBlank
    source(0xC140, 0x8C00)
    w(0x55, 0x82)  # HBlank with the LCD off: one block at once
    log(0x55)
    log_bytes(0x8C00, 4)
    w(0x40, 0x91)
    poll(".p3")
    log_bytes(0x8C20, 4)
    source(0xC1C0, 0x8E00)
    w(0xFF, 0x01)  # IE: VBlank; IME stays off, HALT wakes on it
    w(0x0F, 0x00)
    w(0x55, 0x85)
    lines.append("    halt\n    nop")
    log(0x55)
    poll(".p4")
    log_bytes(0x8E50, 4)
    lines.append(".halt:\n    jr .halt")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shape", SHAPES)
def test_hdma_general_purpose_and_hblank(shape):
    step, problems = lockstep(build_rom(_hdma_program(), cgb_flag=0x80), 80, shape)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


TIMING = {
    "stat_rotate": timing.STAT_ROTATE,
    "lcd_toggle": timing.LCD_TOGGLE,
    "timer_halt": timing.TIMER_HALT,
    "vram_lock": timing.VRAM_LOCK,
    "serial": timing.SERIAL,
}


DOUBLE_SPEED = (
    "Main:\n    ld a, $01\n    ldh [$4D], a\n    stop\n    ldh a, [$4D]\n    ldh [$F0], a\n"
)


SHAPE_SPEEDS = [(shape, speed) for shape in SHAPES for speed in ("single", "double")]


@pytest.mark.parametrize(("shape", "speed"), SHAPE_SPEEDS)
@pytest.mark.parametrize("name", sorted(TIMING))
def test_timing_programs_on_cgb_hardware(name, shape, speed):
    """Each program as a Colour cartridge, as written and switched to double speed first
    (KEY1, STOP): the LCD and the sound unit then count half the CPU's cycles."""
    body = TIMING[name]
    if speed == "double":
        body = body.replace("Main:\n", DOUBLE_SPEED, 1)
    rom = build_rom(timing.FRAME + body, cgb_flag=0x80)
    step, problems = lockstep(rom, 110, shape)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


BOOT = 66  # frames PyBoy's CGB boot ROM takes, and one more


@pytest.mark.parametrize("name", sorted(sound.PROBES))
def test_sound_probes_on_cgb_hardware(name):
    """The sound unit on CGB hardware: wave RAM reads and writes the byte channel 3 plays
    (no one-cycle window), a retrigger restarts it from frame 1 without corrupting it,
    power-off clears the length timers and takes no NRx1 write, and NR52's power-on skips
    a sequencer edge within 8192 cycles of a DIV write or a power-off; envelopes clock on
    sequencer step 0 and an NRx2 write to a playing channel glitches its volume. The sound
    unit's saved state is compared every 4 frames too."""
    step, problems = lockstep(colour(sound.sound_probe(name)), BOOT + 44, sound=4)
    assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("seed", range(2))
def test_random_sound_programs_on_cgb_hardware(seed):
    for rom, frames in (
        (sound.random_sound_program(seed), BOOT + 44),
        (sound.random_wave_program(seed), BOOT + 20),
        (sound.random_wave_access_program(seed), BOOT + 8),
    ):
        step, problems = lockstep(colour(rom), frames, sound=4)
        assert step < 0, f"frame {step}:\n  " + "\n  ".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 30))
def test_random_sound_programs_on_cgb_hardware_more(seed):
    test_random_sound_programs_on_cgb_hardware(seed)


def _state_program() -> str:
    """Double speed, palettes, VRAM bank 1 selected, WRAM bank 5, then forever: an HBlank
    HDMA of 64 blocks restarted when done, VBK and SVBK flipped, counters in both banks,
    LY and FF55 logged: whatever frame a state is saved at, every CGB part is in use."""
    lines = ['SECTION "main", ROM0[$0150]', "Main:", DOUBLE_SPEED.split("\n", 1)[1]]

    def w(reg: int, value: int) -> None:
        lines.append(f"    ld a, ${value & 0xFF:02X}\n    ldh [${reg:02X}], a")

    w(0x68, 0x80)
    for k in range(64):
        w(0x69, 0x3F + 5 * k)
    w(0x6A, 0x84)
    w(0x4F, 1)
    w(0x70, 5)
    lines.append("    ld hl, $C400\n.loop:")
    for reg, value in ((0x51, 0xD0), (0x52, 0x00), (0x53, 0x88), (0x54, 0x00), (0x55, 0xBF)):
        w(reg, value)
    lines.append(
        ".wait:\n    ldh a, [$44]\n    ld [hl+], a\n    ldh a, [$55]\n    ld [hl+], a\n"
        "    ld a, h\n    and $03\n    or $C4\n    ld h, a\n"
        "    ld a, [$D123]\n    inc a\n    ld [$D123], a\n    ld [$8123], a\n"
        "    ldh a, [$55]\n    cp $FF\n    jr nz, .wait\n"
        "    ldh a, [$4F]\n    xor $01\n    ldh [$4F], a\n"
        "    ldh a, [$70]\n    xor $06\n    ldh [$70], a\n"
        "    ld a, [$C3FF]\n    inc a\n    ld [$C3FF], a\n    ldh [$6B], a\n"
        "    jr .loop"
    )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("saved_at", [BOOT + 2, BOOT + 5])
def test_a_pyboy_cgb_state_loads_and_runs_on_in_lockstep(saved_at):
    """A PyBoy ``cgb=True`` save state (double speed, an HBlank HDMA running, both banks in
    use) loaded into a CGB machine (backends/savestate_bridge.py, kernels/board/cgb.py's
    load) runs on as PyBoy does after loading the same file."""
    import io as bytes_io

    from gbxcule.backends.machine_state import capture_env, restore_env
    from gbxcule.backends.savestate_bridge import env_state_from_pyboy
    from gbxcule.backends.warp_base import cart_config
    from gbxcule.core.savestate import load_pyboy_state

    from .support.cgb_support import cgb_frame, cgb_machine, diff, pyboy_cgb

    rom = build_rom(_state_program(), cgb_flag=0x80)
    source = pyboy_cgb(rom)
    source.tick(saved_at, False)
    buf = bytes_io.BytesIO()
    source.save_state(buf)
    source.stop(save=False)
    state = load_pyboy_state(buf.getvalue(), rom)
    assert state.double_speed and state.hdma.transfer_active
    pyboy = pyboy_cgb(rom)
    pyboy.load_state(bytes_io.BytesIO(buf.getvalue()))
    m = cgb_machine(rom)
    _, cart = cart_config(rom)
    restore_env(m, 0, env_state_from_pyboy(state, capture_env(m, 0), cart))
    after = 0
    try:
        problems = diff(pyboy, m)
        while not problems and after < 12:
            pyboy.tick(1, False)
            cgb_frame(m)
            after += 1
            problems = diff(pyboy, m)
    finally:
        pyboy.stop(save=False)
    assert not problems, f"frame {after} after the load:\n  " + "\n  ".join(problems)
