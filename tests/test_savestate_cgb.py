"""PyBoy 2.8.1 save states of CGB hardware (issue #46, host side): read, written back byte
for byte, continued by PyBoy, and refused where a DMG machine would load them.

The states are made here by PyBoy (``cgb=True``) running ROMs of our own assembler: a
Color cartridge that writes every CGB field the state holds, and a DMG cartridge, whose
LCD the boot ROM downgrades.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import warnings
from pathlib import Path

import pytest

from gbxcule.asm import build_rom
from gbxcule.asm.assembler import AsmError
from gbxcule.core.cartridge import CartridgeHeader
from gbxcule.core.memory_layout import CGB_WRAM_BANK_SIZE as CGB_WRAM_BANK_BYTES
from gbxcule.core.pyboy_state import CGB_WRAM_BYTES
from gbxcule.core.savestate import (
    SavestateError,
    load_pyboy_state,
    load_snapshot,
    rom_sha256,
    save_snapshot,
    write_pyboy_state,
)
from gbxcule.core.state_source import read_state_source

pytestmark = pytest.mark.l1

FIXTURES = Path(__file__).parent / "fixtures" / "states"

BG_PALETTE = bytes((i * 5 + 1) & 0xFF for i in range(64))
OBJ_PALETTE = bytes((i * 11 + 7) & 0xFF for i in range(64))
DMA_DATA = bytes((i * 7 + 3) & 0xFF for i in range(0x900))  # at ROM $2000
HBLANK_SRC, HBLANK_DST, HBLANK_BYTES = 0x2100, 0x9000, 0x800


def _table(label: str, data: bytes) -> str:
    rows = (", ".join(f"${b:02X}" for b in data[i : i + 16]) for i in range(0, len(data), 16))
    return f"{label}:\n" + "".join(f"    db {row}\n" for row in rows)


# With the LCD off: double speed (KEY1 + STOP), both palettes through auto-increment, then
# BCPS $85 / OCPS $03; VRAM bank 1 $8000-$80FF = L ^ $5A; WRAM $C000-$C0FF = L ^ $C3 and
# banks 1-7 $D000-$D0FF = L ^ (bank * $11); SVBK 5; a general-purpose DMA of 32 bytes
# $2000 -> $8800 (bank 0); VBK 1. Then the LCD on and, at LY 140, an HBlank DMA of 128
# blocks $2100 -> $9000 (bank 1), which the frame's end leaves running.
COLOR_PROGRAM = (
    """
SECTION "main", ROM0[$0150]
Main:
    di
.vbl:
    ldh a, [$44]
    cp 144
    jr c, .vbl
    xor a
    ldh [$40], a
    ld a, $01
    ldh [$4D], a
    stop
    ld a, $80
    ldh [$68], a
    ld hl, BgPal
    ld b, 64
.bg:
    ld a, [hl+]
    ldh [$69], a
    dec b
    jr nz, .bg
    ld a, $80
    ldh [$6A], a
    ld hl, ObjPal
    ld b, 64
.obj:
    ld a, [hl+]
    ldh [$6B], a
    dec b
    jr nz, .obj
    ld a, $85
    ldh [$68], a
    ld a, $03
    ldh [$6A], a
    ld a, 1
    ldh [$4F], a
    ld hl, $8000
    ld b, 0
.vram1:
    ld a, l
    xor $5A
    ld [hl+], a
    dec b
    jr nz, .vram1
    ld hl, $C000
    ld b, 0
.bank0:
    ld a, l
    xor $C3
    ld [hl+], a
    dec b
    jr nz, .bank0
    ld c, 1
.bank:
    ld a, c
    ldh [$70], a
    swap a
    or c
    ld d, a
    ld hl, $D000
    ld b, 0
.fill:
    ld a, l
    xor d
    ld [hl+], a
    dec b
    jr nz, .fill
    inc c
    ld a, c
    cp 8
    jr nz, .bank
    ld a, 5
    ldh [$70], a
    xor a
    ldh [$4F], a
    ld a, $20
    ldh [$51], a
    xor a
    ldh [$52], a
    ld a, $08
    ldh [$53], a
    xor a
    ldh [$54], a
    ld a, $01
    ldh [$55], a
    ld a, 1
    ldh [$4F], a
    ld a, $91
    ldh [$40], a
.ly:
    ldh a, [$44]
    cp 140
    jr nz, .ly
    ld a, $21
    ldh [$51], a
    xor a
    ldh [$52], a
    ld a, $10
    ldh [$53], a
    xor a
    ldh [$54], a
    ld a, $FF
    ldh [$55], a
.end:
    jr .end

SECTION "palettes", ROM0[$1000]
"""
    + _table("BgPal", BG_PALETTE)
    + _table("ObjPal", OBJ_PALETTE)
    + 'SECTION "dma", ROM0[$2000]\n'
    + _table("DmaData", DMA_DATA)
)

# $C000-$DFFF = L ^ H, then a loop: on CGB hardware in DMG mode $D000 is WRAM bank 1.
DMG_PROGRAM = """
SECTION "main", ROM0[$0150]
Main:
    ld hl, $C000
    ld bc, $2000
.fill:
    ld a, l
    xor h
    ld [hl+], a
    dec bc
    ld a, b
    or c
    jr nz, .fill
.end:
    jr .end
"""


def _pyboy(rom: bytes):
    with warnings.catch_warnings():  # pysdl2 announces its bundled SDL2 on import
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        from pyboy import PyBoy

    return PyBoy(io.BytesIO(rom), window="null", cgb=True, sound_emulated=True)


def _save(pyboy) -> bytes:
    buf = io.BytesIO()
    pyboy.save_state(buf)
    return buf.getvalue()


@functools.cache
def color_rom() -> bytes:
    return build_rom(COLOR_PROGRAM, title="CGBSTATE", cgb_flag=0x80)


@functools.cache
def dmg_rom() -> bytes:
    return build_rom(DMG_PROGRAM, title="DMGONCGB")


@functools.cache
def color_run() -> tuple[bytes, bytes]:
    """PyBoy's state at the first frame end with the HBlank DMA running, and 10 frames on."""
    pyboy = _pyboy(color_rom())
    try:
        for _ in range(200):
            pyboy.tick(1, False)
            if not pyboy.memory[0xFF55] & 0x80:  # FF55 bit 7 clear: HBlank DMA active
                break
        else:
            raise AssertionError("the HBlank DMA never ran")
        saved = _save(pyboy)
        pyboy.tick(10, False)
        return saved, _save(pyboy)
    finally:
        pyboy.stop(save=False)


@functools.cache
def dmg_cart_state() -> bytes:
    pyboy = _pyboy(dmg_rom())
    try:
        pyboy.tick(120, False)  # the boot ROM (about 64 frames) and the fill
        return _save(pyboy)
    finally:
        pyboy.stop(save=False)


def _case(which: str) -> tuple[bytes, bytes]:
    """(state, ROM): a Color cartridge's, or a DMG cartridge's on CGB hardware."""
    return (color_run()[0], color_rom()) if which == "color" else (dmg_cart_state(), dmg_rom())


def _words(data: bytes) -> list[int]:
    return [data[i] | data[i + 1] << 8 for i in range(0, len(data), 2)]


def test_the_color_rom_header_marks_a_color_cartridge():
    rom = color_rom()
    assert rom[0x143] == 0x80 and CartridgeHeader.parse(rom).cgb_enhanced
    with pytest.raises(AsmError, match="cgb_flag"):
        build_rom(DMG_PROGRAM, cgb_flag=0x40)


def test_a_cgb_state_reads_what_the_program_wrote():
    state = load_pyboy_state(color_run()[0], color_rom())
    assert (state.cgb, state.key1, state.double_speed) == (1, 0x80, 1)  # switched by STOP
    lcd = state.lcd
    assert (lcd.cgb, lcd.downgraded_to_dmg) == (1, 0)
    assert lcd.speed_shift == state.sound.speed_shift == 1
    assert lcd.bcpd.tolist() == _words(BG_PALETTE)
    assert lcd.ocpd.tolist() == _words(OBJ_PALETTE)
    assert dataclasses.astuple(lcd.bcps) == (0x85, 1, 2, 1)  # value, auto_inc, index, hl
    assert dataclasses.astuple(lcd.ocps) == (0x03, 0, 1, 1)
    assert lcd.vbk == 1
    assert lcd.vram1[:0x100].tolist() == [i ^ 0x5A for i in range(0x100)]
    assert lcd.vram[0x800:0x820].tobytes() == DMA_DATA[:0x20]  # the general-purpose DMA
    wram = state.memory.wram
    assert wram.size == CGB_WRAM_BYTES and state.wram_select == 5
    assert wram[:0x100].tolist() == [i ^ 0xC3 for i in range(0x100)]
    for bank in range(1, 8):
        start = bank * CGB_WRAM_BANK_BYTES
        assert wram[start : start + 0x100].tolist() == [i ^ bank * 0x11 for i in range(0x100)]


def test_a_cgb_state_reads_the_running_hblank_dma():
    state = load_pyboy_state(color_run()[0], color_rom())
    hdma = state.hdma
    done = hdma.curr_src - HBLANK_SRC
    assert hdma.transfer_active == 1 and 0 < done < HBLANK_BYTES and done % 16 == 0
    assert hdma.curr_dst == HBLANK_DST + done
    assert hdma.hdma5 == (HBLANK_BYTES - done) // 16 - 1  # blocks left - 1, bit 7 clear
    assert (hdma.hdma1, hdma.hdma2) == divmod(hdma.curr_src, 0x100)
    assert (hdma.hdma3, hdma.hdma4) == divmod(hdma.curr_dst, 0x100)
    assert state.lcd.vram1[0x1000 : 0x1000 + done].tobytes() == DMA_DATA[0x100 : 0x100 + done]


@pytest.mark.parametrize("which", ["color", "dmg_cart"])
def test_a_cgb_state_is_written_back_byte_for_byte(which):
    data, rom = _case(which)
    state = load_pyboy_state(data, rom)
    assert write_pyboy_state(state, rom=rom) == data
    assert write_pyboy_state(state) == data  # the cartridge shape kept from the read
    snapshot = save_snapshot(state, rom_sha256(rom))
    assert write_pyboy_state(load_snapshot(snapshot, rom_sha256(rom))) == data


def test_pyboy_continues_from_our_file_as_from_its_own():
    saved, later = color_run()
    state = load_pyboy_state(saved, color_rom())
    pyboy = _pyboy(color_rom())
    try:
        pyboy.load_state(io.BytesIO(write_pyboy_state(state)))
        pyboy.tick(10, False)
        ours = _save(pyboy)
    finally:
        pyboy.stop(save=False)
    assert ours == later
    after = load_pyboy_state(ours, color_rom())
    assert after.hdma.transfer_active == 0 and after.hdma.hdma5 == 0xFF
    assert after.lcd.vram1[0x1000:0x1800].tobytes() == DMA_DATA[0x100:0x900]


def test_a_dmg_cartridge_on_cgb_hardware():
    state = load_pyboy_state(dmg_cart_state(), dmg_rom())
    assert state.cgb == 1 and state.key0 == 0x04  # the boot ROM's KEY0: DMG mode
    assert (state.lcd.cgb, state.lcd.downgraded_to_dmg) == (0, 1)  # so no CGB tail
    assert not state.lcd.vram1.any()
    assert state.memory.wram.size == CGB_WRAM_BYTES
    expected = [(a & 0xFF) ^ (a >> 8) for a in range(0xC000, 0xE000)]
    assert state.memory.wram[:0x2000].tolist() == expected  # banks 0 and 1
    assert not state.memory.wram[0x2000:].any()


@pytest.mark.parametrize("which", ["color", "dmg_cart"])
def test_a_cgb_state_is_refused_where_a_dmg_machine_would_load_it(which, tmp_path, capsys):
    from gbxcule.backends.savestate_bridge import env_state_from_pyboy
    from gbxcule.cli import main

    data, rom = _case(which)
    with pytest.raises(SavestateError, match="Game Boy Color save state.*issue #46"):
        read_state_source(data, rom)  # every backend's load_state and start states
    with pytest.raises(SavestateError, match="Game Boy Color save state"):
        base, cart = _dmg_machine_state(rom)
        env_state_from_pyboy(load_pyboy_state(data, rom), base, cart)
    (tmp_path / "game.gb").write_bytes(rom)
    (tmp_path / "start.state").write_bytes(data)
    args = [str(tmp_path / "game.gb"), "--from", str(tmp_path / "start.state"), "--no-sheet"]
    assert main(["states", *args, "--out", str(tmp_path)]) == 2
    assert "start.state: a Game Boy Color save state" in capsys.readouterr().err


def _dmg_machine_state(rom: bytes, cgb: bool = False):
    """A one-env machine's host state for ``rom`` (a DMG machine unless ``cgb``)."""
    import numpy as np

    from gbxcule.backends.machine_state import capture_env
    from gbxcule.backends.warp_base import allocate_machine, cart_config

    _, cart = cart_config(rom)
    m = allocate_machine(
        1, rom=np.frombuffer(rom, np.uint8), boot=np.zeros(256, np.uint8), cart=cart,
        device="cpu", cgb=cgb,
    )  # fmt: skip
    return capture_env(m, 0), cart


def test_a_dmg_state_is_refused_by_a_cgb_machine():
    from gbxcule.backends.savestate_bridge import env_state_from_pyboy

    data, rom = _case("color")
    state = load_pyboy_state(data, rom)
    state.cgb = 0
    state.lcd.cgb = state.lcd.downgraded_to_dmg = state.lcd.speed_shift = 0
    state.double_speed = 0
    base, cart = _dmg_machine_state(rom, cgb=True)
    with pytest.raises(SavestateError, match="a DMG save state: this machine is a Game Boy"):
        env_state_from_pyboy(state, base, cart)


# Header (6), HDMA (10), CPU (27), OAM DMA (12), then the LCD block's DMG part.
VRAM1_OFFSET = 6 + 10 + 27 + 12 + 0x2000 + 0xA0 + 12 + 144 * 5 + 32


@pytest.mark.parametrize(
    ("cut", "what"),
    [
        (13, "hdma.curr_src"),
        (VRAM1_OFFSET + 0x1000, "lcd.vram1"),
        (VRAM1_OFFSET + 0x2000 + 1 + 4 + 10, "lcd.bcpd"),
        (-1, "sgb.border_palettes"),
    ],
)
def test_a_truncated_cgb_state_names_what_was_cut(cut, what):
    data = color_run()[0]
    with pytest.raises(SavestateError, match=rf"truncated save state: {what} needs"):
        load_pyboy_state(data[:cut], color_rom())


@pytest.mark.parametrize("name", ["pyboy-1.5.5-v8", "pyboy-2.4.1-v12", "pyboy-2.7.0-v15"])
def test_cgb_states_of_older_versions_are_refused(name):
    data = bytearray(gzip.decompress((FIXTURES / f"{name}.state.gz").read_bytes()))
    data[4] = 1  # header before v29: version, bootrom, key1, double_speed, cgb
    message = f"^a CGB-hardware save state of version {data[0]}: only version 29"
    with pytest.raises(SavestateError, match=message):
        load_pyboy_state(bytes(data))


def test_lcd_flags_that_disagree_with_the_header_are_refused():
    state = load_pyboy_state(color_run()[0], color_rom())
    with pytest.raises(SavestateError, match="exactly one is set"):
        write_pyboy_state(dataclasses.replace(state, lcd=dataclasses.replace(state.lcd, cgb=0)))
    with pytest.raises(SavestateError, match="header says DMG"):
        write_pyboy_state(dataclasses.replace(state, cgb=0))
