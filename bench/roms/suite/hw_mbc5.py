"""MBC5 micro-ROMs: 9-bit ROM bank (bank 0 selectable at $4000) and 16 RAM banks.

Expectations follow Pan Docs (MBC5): $2000-$2FFF holds bank bits 0-7,
$3000-$3FFF bit 8 (only bit 0 of the value); the bank at $4000-$7FFF is the
full 9-bit number, 0 included, masked to the ROM size; $4000-$5FFF selects
RAM bank $00-$0F; $0A/$00 to $0000-$1FFF enables/disables RAM (other values
are left untested: Pan Docs and mappers differ on them).

Bank bit 8 needs a 512-bank (8 MiB) image: a 4 MiB ROM has banks 0-255 only.
``hw_mbc5_rom9`` is that image (mostly zero fill, builds in well under a second).
"""

from __future__ import annotations

from bench.roms.suite._hwlib import (
    SIG_ADDR_X,
    Probe,
    bank_sig,
    bank_signature_sections,
    byte_probe,
    hw_spec,
    mem_read,
    mem_write,
    probe_rom,
)

SMALL_ROM_BANKS = 64
RAM_BANKS = 16
BIG_ROM_BANKS = 512


def _small_probes() -> list[Probe]:
    probes = [byte_probe("power-on bank at $4000 is 1", mem_read(SIG_ADDR_X), 1)]
    for bank in range(SMALL_ROM_BANKS):
        addr = (0x2000, 0x2800, 0x2FFF)[bank % 3]
        code = mem_write(addr, bank) + mem_read(SIG_ADDR_X)
        probes.append(byte_probe(f"ROM bank {bank} via ${addr:04X}", code, bank))
    for low, high, want in ((0x45, 0, 0x05), (0x05, 1, 0x05), (0x3F, 1, 0x3F)):
        code = mem_write(0x3000, high) + mem_write(0x2000, low) + mem_read(SIG_ADDR_X)
        probes.append(
            byte_probe(f"bank ${high:X}{low:02X} masked to {SMALL_ROM_BANKS} banks", code, want)
        )
    code = mem_write(0x3000, 0) + mem_write(0x2000, 0) + mem_read(0x4000 + 0x3F01)
    probes.append(byte_probe("bank 0 at $4000: signature high byte", code, bank_sig(0)[1]))
    probes.append(byte_probe("RAM disabled after power-on reads $FF", mem_read(0xA000), 0xFF))
    fill = mem_write(0x0000, 0x0A)
    for bank in range(RAM_BANKS):
        fill += (
            mem_write(0x4000, bank)
            + mem_write(0xA000, 0x20 + bank)
            + mem_write(0xBFFF, 0xE0 - bank)
        )
    probes.append(
        byte_probe(
            "fill RAM banks 0-15, read the last", fill + mem_read(0xA000), 0x20 + RAM_BANKS - 1
        )
    )
    for bank in range(RAM_BANKS):
        addr = (0x4000, 0x5FFF)[bank % 2]
        code = mem_write(addr, bank) + mem_read(0xA000)
        probes.append(
            byte_probe(f"RAM bank {bank} $A000 (select via ${addr:04X})", code, 0x20 + bank)
        )
        probes.append(byte_probe(f"RAM bank {bank} $BFFF", mem_read(0xBFFF), 0xE0 - bank))
    code = mem_write(0x1FFF, 0x00) + mem_read(0xA000)
    probes.append(byte_probe("$00 to $1FFF disables RAM", code, 0xFF))
    code = mem_write(0xA000, 0x77) + mem_write(0x0000, 0x0A) + mem_read(0xA000)
    probes.append(byte_probe("disabled write ignored; $0A re-enables", code, 0x20 + RAM_BANKS - 1))
    return probes


def _big_probes() -> list[Probe]:
    probes = []
    steps = (
        ("$3000=1 $2000=0", [(0x3000, 1), (0x2000, 0)], 0x100),
        ("$2000=$FF keeps bit 8", [(0x2000, 0xFF)], 0x1FF),
        ("$3000=0 clears bit 8", [(0x3000, 0)], 0x0FF),
        ("$3FFF=$03 sets bit 8 (bit 0 only)", [(0x3FFF, 0x03)], 0x1FF),
        ("$2FFF=$55", [(0x2FFF, 0x55)], 0x155),
        ("$3000=$FE clears bit 8 (bit 0 only)", [(0x3000, 0xFE)], 0x055),
        ("$2000=0 selects bank 0", [(0x2000, 0)], 0x000),
        ("$3000=1 with low 0", [(0x3000, 1)], 0x100),
        ("$2000=$AA", [(0x2000, 0xAA)], 0x1AA),
    )
    for label, writes, bank in steps:
        code = "".join(mem_write(a, v) for a, v in writes)
        lo, hi = bank_sig(bank)
        probes.append(byte_probe(f"{label}: bank low byte", code + mem_read(SIG_ADDR_X), lo))
        probes.append(byte_probe(f"{label}: bank high byte", mem_read(SIG_ADDR_X + 1), hi))
    return probes


# _lib's expected tables live in ROMX bank 1: map it back before the verdict.
RESTORE_BANK1 = mem_write(0x3000, 0) + mem_write(0x2000, 1)

ROMS = [
    hw_spec(
        "hw_mbc5",
        "MBC5+RAM 1 MiB: ROM banks 0-63 (bank 0 at $4000), size mask, 16 RAM banks, RAM enable",
        lambda: probe_rom(
            "hw_mbc5",
            _small_probes(),
            epilogue=RESTORE_BANK1,
            data=bank_signature_sections(range(SMALL_ROM_BANKS)),
        ),
        cart_type="MBC5+RAM",
        rom_banks=SMALL_ROM_BANKS,
        ram_banks=RAM_BANKS,
        tags=("mbc", "hw"),
    ),
    hw_spec(
        "hw_mbc5_rom9",
        "MBC5 8 MiB: 9-bit ROM bank number ($3000 bit 8) incl. banks $100-$1FF",
        lambda: probe_rom(
            "hw_mbc5_rom9",
            _big_probes(),
            epilogue=RESTORE_BANK1,
            data=bank_signature_sections(range(BIG_ROM_BANKS)),
        ),
        cart_type="MBC5",
        rom_banks=BIG_ROM_BANKS,
        tags=("mbc", "hw"),
    ),
]
