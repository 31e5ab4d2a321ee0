"""Our boot ROM: its layout, its cache file, and the post-boot state PyBoy reaches with it."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.asm import build_rom, disassemble
from gbxcule.asm.bootrom import BOOT_ROM_SIZE, boot_rom_bytes, boot_rom_path
from gbxcule.backends.pyboy_backend import PyBoySingleBackend, cpu_block, make_pyboy

pytestmark = pytest.mark.l1

# history/postboot.md: the state at PC=0x0100 measured on PyBoy 2.8.1.
POST_BOOT_CPU = {
    "pc": 0x0100,
    "sp": 0xFFFE,
    "a": 0x01,
    "f": 0xB0,
    "b": 0x00,
    "c": 0x13,
    "d": 0x00,
    "e": 0xD8,
    "h": 0x01,
    "l": 0x4D,
    "ime": 0,
    "halted": 0,
    "cycles": 328,
}
POST_BOOT_IO = {
    0xFF00: 0xCF,  # P1
    0xFF01: 0xFF,  # SB
    0xFF02: 0x7E,  # SC
    0xFF04: 0x01,  # DIV (internal counter = 328)
    0xFF05: 0x00,  # TIMA
    0xFF06: 0x00,  # TMA
    0xFF07: 0xF8,  # TAC
    0xFF0F: 0xE1,  # IF
    0xFF40: 0x91,  # LCDC
    0xFF41: 0x84,  # STAT: mode 0, LY=LYC
    0xFF42: 0x00,  # SCY
    0xFF43: 0x00,  # SCX
    0xFF44: 0x00,  # LY
    0xFF45: 0x00,  # LYC
    0xFF46: 0x00,  # DMA
    0xFF47: 0xFC,  # BGP
    0xFF48: 0xFF,  # OBP0
    0xFF49: 0xFF,  # OBP1
    0xFF4A: 0x00,  # WY
    0xFF4B: 0x00,  # WX
}
UNUSED_IO_FF = [0xFF03, *range(0xFF08, 0xFF0F), *range(0xFF4C, 0xFF80)]
# The sound unit as PyBoy's Sound() powers on (our boot ROM writes none of it): the read
# masks over zero registers, NR52 off ($70), FF27-FF2F unmapped, wave RAM $FF.
SOUND_IO = dict(
    zip(range(0xFF10, 0xFF27), bytes.fromhex("803f00ffbfff3f00ffbf7fff9fffbfffff0000bf000070"))
) | {addr: 0xFF for addr in range(0xFF27, 0xFF40)}


def expected_io() -> np.ndarray:
    io = np.zeros(0x80, dtype=np.uint8)
    for addr in UNUSED_IO_FF:
        io[addr - 0xFF00] = 0xFF
    for addr, value in SOUND_IO.items():
        io[addr - 0xFF00] = value
    for addr, value in POST_BOOT_IO.items():
        io[addr - 0xFF00] = value
    return io


@pytest.fixture(scope="module")
def cart() -> bytes:
    return build_rom("Main:\n    jr Main\n", title="BOOTTEST")


def test_layout_ends_with_handover_at_00fc() -> None:
    rom = boot_rom_bytes()
    assert len(rom) == BOOT_ROM_SIZE
    # ld a,$91 / ldh [$40],a / ld a,$01 / ldh [$50],a : the $FF50 write is the last instruction.
    assert rom[0xF8:] == bytes([0x3E, 0x91, 0xE0, 0x40, 0x3E, 0x01, 0xE0, 0x50])
    assert disassemble(rom[:3], origin=0).strip() == "ld sp, $FFFE"


def test_no_sb_no_sound_no_stack_writes() -> None:
    rom = boot_rom_bytes()
    ldh_targets = {rom[i + 1] for i in range(len(rom) - 1) if rom[i] == 0xE0}
    assert 0x01 not in ldh_targets  # SB: PyBoy would record it as serial output
    assert not any(0x10 <= t < 0x40 for t in ldh_targets)
    assert 0xC5 not in rom and 0xCD not in rom  # no push bc / call: HRAM stays zero


def test_path_is_cached_file_with_same_bytes() -> None:
    path = boot_rom_path()
    assert path.read_bytes() == boot_rom_bytes()
    assert boot_rom_path() == path
    assert not [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]


def _state_at_0100(cart: bytes) -> tuple[dict, dict, np.ndarray, dict]:
    pyboy = make_pyboy(cart)
    seen: dict = {}

    def at_entry(_ctx: object) -> None:
        rf = pyboy.register_file
        seen["register_file"] = {"a": rf.A, "f": rf.F, "hl": rf.HL, "sp": rf.SP, "pc": rf.PC}
        seen["cpu"] = cpu_block(pyboy)
        seen["cycles"] = pyboy._cycles()
        seen["io"] = np.asarray(pyboy.memory[0xFF00:0xFF80], dtype=np.uint8)
        seen["ram"] = {
            "vram": pyboy.memory[0x8000:0xA000],
            "wram": pyboy.memory[0xC000:0xE000],
            "oam": pyboy.memory[0xFE00:0xFEA0],
            "hram": pyboy.memory[0xFF80:0x10000],
            "rom0": pyboy.memory[0x0000:0x0100],
        }

    try:
        pyboy.hook_register(0, 0x0100, at_entry, None)
        pyboy.tick(1, False)
        seen["after_boot_frame"] = cpu_block(pyboy)
        pyboy.tick(1, False)
    finally:
        pyboy.stop(save=False)
    return seen["cpu"], seen["register_file"], seen["io"], seen


def test_pyboy_state_at_0100_matches_postboot_doc(cart: bytes) -> None:
    cpu, rf, io, seen = _state_at_0100(cart)
    assert cpu == POST_BOOT_CPU
    assert rf == {"a": 0x01, "f": 0xB0, "hl": 0x014D, "sp": 0xFFFE, "pc": 0x0100}
    assert seen["cycles"] == POST_BOOT_CPU["cycles"]
    diff = [
        f"{0xFF00 + i:04X}: {io[i]:02X} != {e:02X}"
        for i, e in enumerate(expected_io())
        if io[i] != e
    ]
    assert not diff, diff
    ram = seen["ram"]
    assert not any(ram["vram"]) and not any(ram["wram"]) and not any(ram["oam"])
    assert list(ram["hram"]) == [0] * 0x80  # HRAM and IE
    assert bytes(ram["rom0"]) == cart[:0x100], "boot ROM must be unmapped at 0x0100"


def test_boot_frame_ends_when_lcd_switches_on(cart: bytes) -> None:
    _, _, _, seen = _state_at_0100(cart)
    first = seen["after_boot_frame"]
    # PyBoy ends frame 0 right after `ldh [$40], a` at 0x00FA: two instructions (20 cycles) remain.
    assert first["pc"] == 0x00FC
    assert first["cycles"] == POST_BOOT_CPU["cycles"] - 20


def test_backend_reset_is_the_postboot_state(tmp_path, cart: bytes) -> None:
    rom = tmp_path / "cart.gb"
    rom.write_bytes(cart)
    with PyBoySingleBackend(rom, num_envs=1) as backend:
        assert backend.get_cpu_state(0) == POST_BOOT_CPU
        assert np.array_equal(backend.read_memory(0, 0xFF00, 0xFF80), expected_io())
        assert backend.read_memory(0, 0xFFFF, 0x10000)[0] == 0x00
        assert backend.serial_output(0) == b""
