"""PyBoy oracle backends: construction, reset snapshot, input timing, registers, memory,
serial, shades, the process-pool variant, and the refusals."""

from __future__ import annotations

import io

import numpy as np
import pytest

from gbxcule.asm import build_rom
from gbxcule.backends import pyboy_backend
from gbxcule.backends.protocol import CPU_STATE_KEYS, Backend
from gbxcule.backends.pyboy_backend import (
    PyBoySingleBackend,
    PyBoyVersionError,
    cpu_block,
    make_pyboy,
)
from gbxcule.core.actions import ActionRangeError, ActionShapeError

pytestmark = pytest.mark.api

SPIN = "Main:\n    jr Main\n"

# Every frame: latest joypad state as a JOYPAD_BUTTONS mask (1 = pressed) at $C000 + frame index.
JOYPAD_LOG = """
SECTION "vblank", ROM0[$0040]
    jp VBlank
SECTION "code", ROM0[$0150]
Main:
    di
    xor a
    ldh [$80], a        ; frame index, bumped at every VBlank
    ldh [$0F], a        ; drop the boot's pending VBlank
    ld a, $01
    ldh [$FF], a
    ei
.loop:
    ld a, $20           ; P14 low: d-pad in bits 0-3
    ldh [$00], a
    ldh a, [$00]
    and $0F
    ld b, a
    ld a, $10           ; P15 low: a, b, select, start in bits 0-3
    ldh [$00], a
    ldh a, [$00]
    and $0F
    swap a
    or b
    cpl
    ld b, a
    ldh a, [$80]
    ld l, a
    ld h, $C0
    ld [hl], b
    jr .loop
VBlank:
    push af
    ldh a, [$80]
    inc a
    ldh [$80], a
    pop af
    reti
"""

SERIAL_HI = """
Main:
    ld hl, Text
.next:
    ld a, [hl+]
    and a
    jr z, .done
    ldh [$01], a
    ld a, $81
    ldh [$02], a
.wait:
    ldh a, [$02]
    bit 7, a
    jr nz, .wait
    jr .next
.done:
    jr .done
Text:
    db "Hi!", 10, 0
"""

# Tile 0 rows: colour index 1 in the left half, 0 in the right half; BGP maps 0 -> shade 1, 1 -> 3.
TWO_SHADES = """
Main:
    xor a
    ldh [$40], a
    ld hl, $8000
    ld b, 8
.row:
    ld a, $F0
    ld [hl+], a
    xor a
    ld [hl+], a
    dec b
    jr nz, .row
    ld a, %11011101
    ldh [$47], a
    ld a, $91
    ldh [$40], a
.spin:
    jr .spin
"""

IO_COPY = """
Main:
    ld c, $00
    ld hl, $C000
.copy:
    ldh a, [c]
    ld [hl+], a
    inc c
    bit 7, c
    jr z, .copy
    ei
.spin:
    jr .spin
"""

HALT_FOREVER = """
Main:
    di
    xor a
    ldh [$FF], a
    halt
    nop
.spin:
    jr .spin
"""


@pytest.fixture
def rom_file(tmp_path):
    def make(source: str, **kwargs) -> str:
        path = tmp_path / f"rom{len(list(tmp_path.iterdir()))}.gb"
        path.write_bytes(build_rom(source, **kwargs))
        return str(path)

    return make


def _full_state(pyboy) -> bytes:
    buf = io.BytesIO()
    pyboy.save_state(buf)
    return buf.getvalue()


def test_implements_protocol(rom_file) -> None:
    with PyBoySingleBackend(rom_file(SPIN)) as backend:
        assert isinstance(backend, Backend)
        assert set(backend.get_cpu_state(0)) == set(CPU_STATE_KEYS)
        assert (backend.num_envs, backend.frames_per_step, backend.release_after_frames) == (
            1,
            24,
            8,
        )


def test_reset_snapshot_runs_like_power_on(rom_file) -> None:
    path = rom_file(JOYPAD_LOG)
    continuous = make_pyboy(path)
    continuous.tick(1, True)  # the boot frame, ended by the LCD switch-on
    with PyBoySingleBackend(
        path, frames_per_step=5, release_after_frames=2, action_codec="buttons"
    ) as b:
        for mask in (0, 0x11, 0, 0x80):
            for name in b.codec.buttons(mask):
                continuous.button(name, 2)
            continuous.tick(5, True)
            b.step(np.array([mask]))
            assert _full_state(b.pyboy(0)) == _full_state(continuous)
        b.reset()
        first = _full_state(b.pyboy(0))
        b.step(np.array([0x11]))
        b.reset()
        assert _full_state(b.pyboy(0)) == first
    continuous.stop(save=False)


def _joypad_log(path: str, fps: int, release: int, masks: list[int]) -> list[int]:
    with PyBoySingleBackend(
        path, frames_per_step=fps, release_after_frames=release, action_codec="buttons"
    ) as b:
        for mask in masks:
            b.step(np.array([mask]))
        return b.read_memory(0, 0xC000, 0xC000 + fps * len(masks)).tolist()


def test_press_at_frame_0_release_at_frame_release_after_frames(rom_file) -> None:
    path = rom_file(JOYPAD_LOG)
    log = _joypad_log(path, 4, 2, [0x01, 0x90, 0x00, 0x08])
    assert log == [0x01, 0x01, 0, 0, 0x90, 0x90, 0, 0, 0, 0, 0, 0, 0x08, 0x08, 0, 0]


def test_release_equal_to_frames_per_step_holds_through_the_step(rom_file) -> None:
    path = rom_file(JOYPAD_LOG)
    log = _joypad_log(path, 3, 3, [0x01, 0x01, 0x02, 0x00])
    assert log == [0x01] * 6 + [0x02] * 3 + [0] * 3


def test_serial_output_accumulates_and_resets(rom_file) -> None:
    with PyBoySingleBackend(rom_file(SERIAL_HI), frames_per_step=1, release_after_frames=1) as b:
        for _ in range(3):
            b.step(np.array([0]))
        assert b.serial_output(0) == b"Hi!\n"
        b.reset()
        assert b.serial_output(0) == b""
        b.step(np.array([0]))
        assert b.serial_output(0) == b"Hi!\n"


def test_frame_shades_are_palette_indices_not_colour_ranks(rom_file) -> None:
    with PyBoySingleBackend(rom_file(TWO_SHADES), frames_per_step=2, release_after_frames=1) as b:
        b.step(np.array([0]))
        b.step(np.array([0]))
        shades = b.frame_shades(0)
    assert shades.shape == (144, 160) and shades.dtype == np.uint8
    expected = np.where(np.arange(160) % 8 < 4, 3, 1).astype(np.uint8)
    assert np.array_equal(shades, np.broadcast_to(expected, (144, 160)))


def test_shades_refuse_unknown_colours() -> None:
    rgba = np.zeros((144, 160, 4), dtype=np.uint8)
    rgba[0, 0, :3] = (0x12, 0x12, 0x12)
    with pytest.raises(RuntimeError, match="outside SHADE_RGB"):
        pyboy_backend.shades_from_rgba(rgba)
    rgba[0, 0, :3] = (0xAA, 0x55, 0xAA)
    with pytest.raises(RuntimeError, match="outside SHADE_RGB"):
        pyboy_backend.shades_from_rgba(rgba)


def test_read_memory_io_matches_what_the_cpu_read(rom_file) -> None:
    with PyBoySingleBackend(rom_file(IO_COPY), frames_per_step=1, release_after_frames=1) as b:
        b.step(np.array([0]))
        seen_by_cpu = b.read_memory(0, 0xC000, 0xC080)
        ours = b.read_memory(0, 0xFF00, 0xFF80)
    moving = {0x04, 0x0F, 0x41, 0x44}  # DIV, IF, STAT, LY change after the copy
    diff = [i for i in range(0x80) if i not in moving and seen_by_cpu[i] != ours[i]]
    assert not diff, [
        f"FF{i:02X}: cpu {seen_by_cpu[i]:02X} read_memory {ours[i]:02X}" for i in diff
    ]
    assert ours[0x40] == 0x91 and ours[0x47] == 0xFC


def test_cpu_state_ime_halted_cycles(rom_file) -> None:
    with PyBoySingleBackend(rom_file(HALT_FOREVER), frames_per_step=1, release_after_frames=1) as b:
        b.step(np.array([0]))
        state = b.get_cpu_state(0)
        pyboy = b.pyboy(0)
        rf = pyboy.register_file
        assert state["halted"] == 1 and state["ime"] == 0
        assert state["cycles"] == pyboy._cycles()
        assert (state["pc"], state["sp"], state["a"], state["f"]) == (rf.PC, rf.SP, rf.A, rf.F)
        assert (state["h"] << 8 | state["l"]) == rf.HL
    with PyBoySingleBackend(rom_file(IO_COPY), frames_per_step=1, release_after_frames=1) as b:
        b.step(np.array([0]))
        assert cpu_block(b.pyboy(0))["ime"] == 1


def test_write_memory_then_read(rom_file) -> None:
    with PyBoySingleBackend(rom_file(SPIN)) as b:
        b.write_memory(0, 0xC100, b"\x01\x02\x03")
        b.write_memory(0, 0xC103, 0x44)
        b.write_memory(0, 0xFF80, np.array([9, 8], dtype=np.uint8))
        assert b.read_memory(0, 0xC100, 0xC104).tolist() == [1, 2, 3, 0x44]
        assert b.read_memory(0, 0xFF80, 0xFF82).tolist() == [9, 8]
        with pytest.raises(ValueError, match="0..255"):
            b.write_memory(0, 0xC000, 300)
        with pytest.raises(TypeError, match="integer data"):
            b.write_memory(0, 0xC000, np.array([1.5]))


def test_refusals(rom_file, tmp_path, monkeypatch) -> None:
    with pytest.raises(FileNotFoundError, match="ROM file not found"):
        PyBoySingleBackend(tmp_path / "missing.gb")
    short = tmp_path / "short.gb"
    short.write_bytes(b"\x00" * 16)
    with pytest.raises(ValueError, match="too short"):
        PyBoySingleBackend(short)
    path = rom_file(SPIN)
    with pytest.raises(ValueError, match="release_after_frames"):
        PyBoySingleBackend(path, frames_per_step=4, release_after_frames=5)
    with pytest.raises(ValueError, match="release_after_frames"):
        PyBoySingleBackend(path, frames_per_step=4, release_after_frames=0)
    with pytest.raises(ValueError, match="num_envs"):
        PyBoySingleBackend(path, num_envs=0)
    with pytest.raises(ValueError, match="unknown action codec"):
        PyBoySingleBackend(path, action_codec="gamepad")
    with PyBoySingleBackend(path, num_envs=2, render=False) as b:
        with pytest.raises(IndexError, match="env 2 out of range"):
            b.get_cpu_state(2)
        with pytest.raises(IndexError):
            b.read_memory(-1, 0xC000, 0xC001)
        with pytest.raises(ValueError, match="memory range"):
            b.read_memory(0, 0xC000, 0xC000)
        with pytest.raises(ActionShapeError):
            b.step(np.array([0]))
        with pytest.raises(ActionRangeError):
            b.step(np.array([0, 9]))
        with pytest.raises(RuntimeError, match="render=True"):
            b.frame_shades(0)
    monkeypatch.setattr(pyboy_backend.metadata, "version", lambda _name: "2.9.0")
    with pytest.raises(PyBoyVersionError, match="pinned to pyboy==2.8.1.*2.9.0"):
        PyBoySingleBackend(path)


def test_mp_backend_matches_single(rom_file) -> None:
    from gbxcule.backends.pyboy_mp import PyBoyVecMpBackend

    path = rom_file(JOYPAD_LOG)
    kwargs = {"num_envs": 3, "frames_per_step": 3, "release_after_frames": 2}
    actions = np.array([[0, 4, 6], [1, 1, 2], [5, 3, 0]])
    mp_backend = PyBoyVecMpBackend(path, num_workers=2, **kwargs)
    try:
        assert isinstance(mp_backend, Backend) and mp_backend.name == "pyboy-mp"
        with PyBoySingleBackend(path, **kwargs) as single:
            for step_actions in actions:
                mp_backend.step(step_actions)
                single.step(step_actions)
            for env in range(3):
                assert mp_backend.get_cpu_state(env) == single.get_cpu_state(env)
                assert np.array_equal(
                    mp_backend.read_memory(env, 0x8000, 0x10000),
                    single.read_memory(env, 0x8000, 0x10000),
                )
                assert np.array_equal(mp_backend.frame_shades(env), single.frame_shades(env))
                assert mp_backend.serial_output(env) == single.serial_output(env)
        with pytest.raises(IndexError, match="env 3 out of range"):
            mp_backend.get_cpu_state(3)
        with pytest.raises(ValueError, match="memory range"):
            mp_backend.read_memory(2, 0xD000, 0xC000)
        with pytest.raises(ActionRangeError):
            mp_backend.step(np.array([0, 0, 7]))
        mp_backend.write_memory(2, 0xC0F0, 0x5A)
        assert mp_backend.read_memory(2, 0xC0F0, 0xC0F1)[0] == 0x5A
        mp_backend.reset()
        assert mp_backend.get_cpu_state(1)["pc"] == 0x0100
    finally:
        mp_backend.close()
    assert not any(p.is_alive() for p in mp_backend._procs)


@pytest.mark.parametrize(
    "title", ["2048", "TETRIS", "SUPER MARIOLAND", "POKEMON RED", "KIRBY DREAM LAN", "DMGTRIS"]
)
def test_oracle_runs_no_game_wrapper_and_stays_silent(tmp_path, capfd, title) -> None:
    """PyBoy would pick a game wrapper by title; ours runs the generic one, prints nothing,
    and the cartridge still reads as built (title and header checksum)."""
    rom = build_rom(
        'SECTION "m", ROM0[$0150]\nMain:\n    ld a, [$0134]\n    ld [$C000], a\n    jr Main\n',
        title=title,
    )
    path = tmp_path / "game.gb"
    path.write_bytes(rom)
    capfd.readouterr()
    with PyBoySingleBackend(path, frames_per_step=2, release_after_frames=1) as b:
        b.reset()
        for _ in range(3):
            b.step([0])
        assert type(b.pyboy(0).game_wrapper).__name__ == "PyBoyGameWrapper"
        assert bytes(b.read_memory(0, 0x134, 0x150)) == rom[0x134:0x150]
        assert b.read_memory(0, 0xC000, 0xC001)[0] == rom[0x134]
    out, err = capfd.readouterr()
    assert out == "" and err == ""
