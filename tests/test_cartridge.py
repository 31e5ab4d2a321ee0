"""Cartridge header parsing and validation."""

from __future__ import annotations

import pytest

from gbxcule.asm import build_rom
from gbxcule.core.cartridge import CartridgeError, CartridgeHeader, header_checksum

pytestmark = pytest.mark.l1

PROGRAM = "Main:\n    jr Main\n"


def with_bytes(rom: bytes, fixes: dict[int, int], *, fix_checksum: bool = True) -> bytes:
    out = bytearray(rom)
    for address, value in fixes.items():
        out[address] = value
    if fix_checksum:
        out[0x14D] = header_checksum(out)
    return bytes(out)


def test_parses_a_built_rom_only_cart():
    header = CartridgeHeader.parse(build_rom(PROGRAM, title="PARSE ME"))
    assert header.title == "PARSE ME"
    assert (header.cart_type, header.cart_type_name, header.mbc) == (0x00, "ROM_ONLY", "none")
    assert (header.rom_banks, header.rom_bytes, header.ram_banks, header.ram_bytes) == (
        2,
        0x8000,
        0,
        0,
    )
    assert header.logo_ok and header.header_checksum_ok and header.global_checksum_ok
    assert header.supported and header.problems == ()


@pytest.mark.parametrize(
    "cart_type,rom_banks,ram_banks,mbc,ram_bytes,battery,timer",
    [
        ("MBC1+RAM+BATTERY", 64, 4, "mbc1", 4 * 8192, True, False),
        ("MBC2+BATTERY", 16, 0, "mbc2", 512, True, False),
        ("MBC3+TIMER+RAM+BATTERY", 64, 4, "mbc3", 4 * 8192, True, True),
        ("MBC3+TIMER+BATTERY", 4, 0, "mbc3", 0, True, True),
        ("MBC3", 4, 0, "mbc3", 0, False, False),
        ("MBC5+RAM", 512, 16, "mbc5", 16 * 8192, False, False),
    ],
)
def test_mbc_fields(cart_type, rom_banks, ram_banks, mbc, ram_bytes, battery, timer):
    rom = build_rom(PROGRAM, cart_type=cart_type, rom_banks=rom_banks, ram_banks=ram_banks)
    header = CartridgeHeader.parse(rom)
    assert header.cart_type_name == cart_type
    assert header.mbc == mbc
    assert header.rom_banks == rom_banks
    assert header.ram_bytes == ram_bytes
    assert (header.has_battery, header.has_timer) == (battery, timer)
    assert header.supported


def test_mbc5_rumble_types_are_supported():
    rom = with_bytes(build_rom(PROGRAM, cart_type="MBC5", rom_banks=4), {0x147: 0x1E, 0x149: 3})
    header = CartridgeHeader.parse(rom)
    assert header.cart_type_name == "MBC5+RUMBLE+RAM+BATTERY"
    assert header.has_rumble and header.has_battery and header.ram_banks == 4


def test_truncated_image():
    with pytest.raises(CartridgeError, match="truncated: 100 bytes"):
        CartridgeHeader.parse(bytes(100))
    with pytest.raises(CartridgeError, match="truncated"):
        CartridgeHeader.parse(bytes(0x14F), strict=False)


def test_bad_logo():
    rom = with_bytes(build_rom(PROGRAM), {0x110: 0xFF})
    with pytest.raises(CartridgeError, match="Nintendo logo"):
        CartridgeHeader.parse(rom)


def test_bad_header_checksum():
    rom = build_rom(PROGRAM)
    bad = with_bytes(rom, {0x14D: rom[0x14D] ^ 1}, fix_checksum=False)
    with pytest.raises(CartridgeError, match=r"header checksum mismatch: stored \$.., computed \$"):
        CartridgeHeader.parse(bad)


def test_unknown_and_unsupported_cart_types():
    rom = build_rom(PROGRAM)
    with pytest.raises(CartridgeError, match=r"unknown cartridge type \$42"):
        CartridgeHeader.parse(with_bytes(rom, {0x147: 0x42}))
    with pytest.raises(CartridgeError, match=r"unsupported cartridge type \$20 \(MBC6\)"):
        CartridgeHeader.parse(with_bytes(rom, {0x147: 0x20}))
    with pytest.raises(CartridgeError, match=r"unsupported cartridge type \$FC"):
        CartridgeHeader.parse(with_bytes(rom, {0x147: 0xFC}))


def test_rom_size_mismatch_and_unknown_codes():
    rom = build_rom(PROGRAM, cart_type="MBC1", rom_banks=4)
    with pytest.raises(CartridgeError, match=r"ROM size mismatch: header code \$01 says 4 banks"):
        CartridgeHeader.parse(rom[: 2 * 0x4000])
    with pytest.raises(CartridgeError, match=r"unknown ROM size code \$52"):
        CartridgeHeader.parse(with_bytes(rom, {0x148: 0x52}))
    with pytest.raises(CartridgeError, match=r"unknown RAM size code \$07"):
        CartridgeHeader.parse(with_bytes(rom, {0x149: 0x07}))


def test_non_strict_collects_every_problem():
    rom = build_rom(PROGRAM)
    bad = with_bytes(rom, {0x104: 0, 0x147: 0x22}, fix_checksum=False)
    header = CartridgeHeader.parse(bad[:0x4000], strict=False)
    assert not header.supported
    assert len(header.problems) == 4  # logo, checksum, cart type, size
    assert header.mbc == "mbc7"
    assert not header.logo_ok and not header.header_checksum_ok


def test_global_checksum_is_reported_but_not_fatal():
    rom = bytearray(build_rom(PROGRAM))
    rom[0x3000] ^= 0xFF
    header = CartridgeHeader.parse(bytes(rom))
    assert header.supported
    assert not header.global_checksum_ok


def test_title_stops_at_cgb_flag():
    rom = with_bytes(build_rom(PROGRAM, title="ABCDEFGHIJKLMNO"), {0x143: 0x80})
    assert CartridgeHeader.parse(rom, strict=False).title == "ABCDEFGHIJKLMNO"
