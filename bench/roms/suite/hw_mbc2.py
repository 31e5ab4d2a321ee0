"""MBC2 micro-ROM: 16 ROM banks and the built-in 512 x 4-bit RAM.

Expectations follow Pan Docs (MBC2):

* $0000-$3FFF is one register range; address bit 8 picks the register. Bit 8
  clear: RAM enable ($0A enables, $00 disables). Bit 8 set: ROM bank number,
  low 4 bits, 0 becomes 1.
* RAM is 512 half-bytes at $A000-$A1FF, echoed through $BFFF (only address
  bits 0-8 matter). Only the low nibble is stored; the upper nibble reads as
  1s (PyBoy and the documented open-bus behaviour agree). Disabled RAM reads $FF.
"""

from __future__ import annotations

from bench.roms.suite._hwlib import (
    SIG_ADDR_X,
    Probe,
    bank_signature_sections,
    byte_probe,
    hw_spec,
    mem_read,
    mem_write,
    probe_rom,
)

ROM_BANKS = 16


def _probes() -> list[Probe]:
    probes = [
        byte_probe("power-on bank at $4000 is 1", mem_read(SIG_ADDR_X), 1),
        byte_probe("RAM disabled after power-on reads $FF", mem_read(0xA000), 0xFF),
    ]
    for bank in range(ROM_BANKS):
        code = mem_write(0x2100, bank) + mem_read(SIG_ADDR_X)
        probes.append(byte_probe(f"bank {bank} via $2100", code, bank or 1))
    for addr, value, want in (
        (0x0100, 0x07, 7),
        (0x3FFF, 0x09, 9),
        (0x3300, 0x03, 3),
        (0x2100, 0xF5, 5),
        (0x2100, 0x10, 1),
        (0x0100, 0x03, 3),
    ):
        code = mem_write(addr, value) + mem_read(SIG_ADDR_X)
        probes.append(
            byte_probe(f"${value:02X} to ${addr:04X} (bit 8 set) selects bank", code, want)
        )
    for addr, value in ((0x2000, 0x05), (0x3E00, 0x0C), (0x0000, 0x01)):
        code = mem_write(addr, value) + mem_read(SIG_ADDR_X)
        probes.append(
            byte_probe(f"${value:02X} to ${addr:04X} (bit 8 clear) keeps bank 3", code, 3)
        )
    code = mem_write(0x0000, 0x0A) + mem_write(0xA000, 0x5C) + mem_read(0xA000)
    probes.append(byte_probe("RAM $A000: low nibble stored, upper reads 1s", code, 0xFC))
    code = mem_write(0xA010, 0xA5) + mem_read(0xA010)
    probes.append(byte_probe("RAM $A010: written upper nibble is dropped", code, 0xF5))
    code = mem_write(0xA1FF, 0x03) + mem_read(0xA1FF)
    probes.append(byte_probe("RAM $A1FF read-back", code, 0xF3))
    for addr, want in ((0xA3FF, 0xF3), (0xBFFF, 0xF3), (0xA200, 0xFC), (0xBE00, 0xFC)):
        probes.append(byte_probe(f"RAM echo at ${addr:04X}", mem_read(addr), want))
    code = mem_write(0xB123, 0x07) + mem_read(0xA123)
    probes.append(byte_probe("RAM write via echo $B123 lands at $A123", code, 0xF7))
    code = mem_write(0x0000, 0x00) + mem_read(0xA000)
    probes.append(byte_probe("$00 to $0000 disables RAM", code, 0xFF))
    code = mem_write(0xA000, 0x09) + mem_write(0x3E00, 0x0A) + mem_read(0xA000)
    probes.append(byte_probe("disabled write ignored; $0A to $3E00 enables", code, 0xFC))
    code = mem_write(0x0000, 0x00) + mem_write(0x2100, 0x0A) + mem_read(0xA000)
    probes.append(byte_probe("$0A to $2100 (bit 8 set) does not enable RAM", code, 0xFF))
    probes.append(byte_probe("$0A to $2100 selected bank 10", mem_read(SIG_ADDR_X), 10))
    return probes


ROMS = [
    hw_spec(
        "hw_mbc2",
        "MBC2: bank select by address bit 8, 4-bit bank mask, 512x4-bit RAM with echo and $Fx reads",
        lambda: probe_rom(
            "hw_mbc2",
            _probes(),
            epilogue=mem_write(0x2100, 1),  # _lib's expected tables live in ROMX bank 1
            data=bank_signature_sections(range(ROM_BANKS)),
        ),
        cart_type="MBC2",
        rom_banks=ROM_BANKS,
        tags=("mbc", "hw"),
    ),
]
