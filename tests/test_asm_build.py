"""build_rom: image size, entry stub, header fields and checksums (checked independently)."""

from __future__ import annotations

import pytest

from gbxcule.asm import build_rom

pytestmark = pytest.mark.tooling

PROGRAM = """
SECTION "main", ROM0[$0150]
Main:
    jr Main
"""

# Pan Docs: RAM size code -> 8 KiB banks.
RAM_CODE = {0: 0x00, 1: 0x02, 4: 0x03, 16: 0x04, 8: 0x05}
CART_CODES = {
    "ROM_ONLY": 0x00,
    "MBC1": 0x01,
    "MBC1+RAM": 0x02,
    "MBC1+RAM+BATTERY": 0x03,
    "MBC2": 0x05,
    "MBC2+BATTERY": 0x06,
    "MBC3+TIMER+BATTERY": 0x0F,
    "MBC3+TIMER+RAM+BATTERY": 0x10,
    "MBC3": 0x11,
    "MBC3+RAM": 0x12,
    "MBC3+RAM+BATTERY": 0x13,
    "MBC5": 0x19,
    "MBC5+RAM": 0x1A,
    "MBC5+RAM+BATTERY": 0x1B,
}


def independent_header_checksum(rom: bytes) -> int:
    value = 0
    for address in range(0x134, 0x14D):
        value = (value - rom[address] - 1) % 256
    return value


def independent_global_checksum(rom: bytes) -> int:
    return sum(b for i, b in enumerate(rom) if i not in (0x14E, 0x14F)) % 0x10000


@pytest.mark.parametrize("cart_type,code", sorted(CART_CODES.items()))
def test_every_cart_type_builds_with_valid_header(cart_type, code):
    has_ram = "RAM" in cart_type.split("+") and not cart_type.startswith("MBC2")
    rom_banks = 2 if cart_type == "ROM_ONLY" else 8
    ram_banks = 4 if has_ram else 0
    rom = build_rom(
        PROGRAM, title="HEADERTEST", cart_type=cart_type, rom_banks=rom_banks, ram_banks=ram_banks
    )
    assert len(rom) == rom_banks * 16 * 1024
    assert rom[0x147] == code
    assert 32 * 1024 << rom[0x148] == len(rom)
    assert rom[0x149] == RAM_CODE[ram_banks]  # MBC2: 0, its RAM is on the chip
    assert rom[0x134:0x144] == b"HEADERTEST".ljust(16, b"\x00")
    assert rom[0x14D] == independent_header_checksum(rom)
    assert rom[0x14E] << 8 | rom[0x14F] == independent_global_checksum(rom)


def test_logo_is_the_pan_docs_bitmap():
    rom = build_rom(PROGRAM)
    pan_docs_dump = """
        CE ED 66 66 CC 0D 00 0B 03 73 00 83 00 0C 00 0D
        00 08 11 1F 88 89 00 0E DC CC 6E E6 DD DD D9 99
        BB BB 67 63 6E 0E EC CC DD DC 99 9F BB B9 33 3E
    """
    assert rom[0x104:0x134] == bytes.fromhex(pan_docs_dump)


@pytest.mark.parametrize("banks,code", [(2, 0), (4, 1), (8, 2), (32, 4), (64, 5), (128, 6)])
def test_rom_size_code_and_image_size(banks, code):
    rom = build_rom(PROGRAM, cart_type="MBC5", rom_banks=banks)
    assert rom[0x148] == code
    assert len(rom) == banks * 0x4000


@pytest.mark.parametrize("banks", [1, 4, 8, 16])
def test_ram_size_codes(banks):
    rom = build_rom(PROGRAM, cart_type="MBC5+RAM", rom_banks=4, ram_banks=banks)
    assert rom[0x149] == RAM_CODE[banks]


def test_entry_stub_jumps_to_0150():
    rom = build_rom(PROGRAM)
    assert rom[0x100:0x104] == bytes([0x00, 0xC3, 0x50, 0x01])
    assert rom[0x150:0x152] == bytes([0x18, 0xFE])


def test_source_entry_section_replaces_the_stub():
    rom = build_rom(
        """
SECTION "entry", ROM0[$0100]
    di
    jp Start
    ds $0150 - @
Start:
    halt
"""
    )
    assert rom[0x100:0x104] == bytes([0xF3, 0xC3, 0x50, 0x01])
    assert rom[0x150] == 0x76
    assert rom[0x104:0x134] != bytes(48)  # header still written over the ds padding


def test_romx_bank_lands_at_its_file_offset():
    rom = build_rom(
        """
SECTION "main", ROM0[$0150]
    ld a, BANK(Data)
SECTION "b5", ROMX[$4123], BANK[5]
Data:
    db $DE, $AD
""",
        cart_type="MBC5",
        rom_banks=8,
    )
    assert rom[0x150:0x152] == bytes([0x3E, 5])
    assert rom[5 * 0x4000 + 0x123 : 5 * 0x4000 + 0x125] == bytes([0xDE, 0xAD])
    assert rom[0x14E] << 8 | rom[0x14F] == independent_global_checksum(rom)
