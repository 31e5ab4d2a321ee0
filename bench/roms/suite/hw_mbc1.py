"""MBC1 micro-ROMs: ROM banking (5+2 bit registers, the 00->01 rule, mode 1) and RAM.

Every ROM bank carries a signature at offset $3F00 (byte 0 = bank number), so
reading $7F00 tells which bank sits at $4000-$7FFF and reading $3F00 which
bank sits at $0000-$3FFF. Expectations follow Pan Docs (MBC1):

* $2000-$3FFF: 5-bit BANK1 register; a 5-bit value of 0 becomes 1 *before*
  the bank number is masked to the ROM size, so on a 2 MiB ROM banks $20,
  $40, $60 read as $21, $41, $61 and on a 64 KiB ROM writing $04 maps bank 0.
* $4000-$5FFF: 2-bit BANK2 register; bank at $4000 = BANK2 << 5 | BANK1.
* $6000-$7FFF: mode (bit 0). Mode 1 also applies BANK2 to $0000-$3FFF
  (bank BANK2 << 5) and to the RAM bank; mode 0 uses bank 0 and RAM bank 0.
* $0000-$1FFF: RAM enable iff the low nibble is $A; disabled RAM reads $FF and
  ignores writes.
"""

from __future__ import annotations

from bench.roms.suite._hwlib import (
    SCRATCH,
    SIG_ADDR_0,
    SIG_ADDR_X,
    Probe,
    bank_signature_sections,
    byte_probe,
    hw_spec,
    mem_read,
    mem_write,
    probe_rom,
)

LOW_READER = SCRATCH + 0x800  # WRAM copy of HwLowRead (code at $0000-$3FFF may be banked out)


# Runs from WRAM: with B = BANK2, switches to mode 1, reads [HL], and restores
# mode 0 and BANK2 = 0. Position independent. In mode 1 with BANK2 != 0 the bank
# at $0000-$3FFF changes under any code running there, hence the WRAM copy.
LOW_READER_BLOB = """
SECTION "mbc1_low_reader", ROM0
HwLowReadBlob:
    ld a, 1
    ld [$6000], a
    ld a, b
    ld [$4000], a
    ld a, [hl]
    ld c, a
    xor a
    ld [$4000], a
    ld [$6000], a
    ld a, c
    ret
HwLowReadBlobEnd:
"""

LOW_READER_SETUP = f"""
    ld hl, HwLowReadBlob
    ld de, ${LOW_READER:04X}
    ld b, HwLowReadBlobEnd - HwLowReadBlob
    call HwCopy
"""


def _rom_probes(rom_banks: int) -> list[Probe]:
    """BANK1 x BANK2 sweep, register masks, ranges and mode 1 on a large ROM."""
    probes = [
        byte_probe("power-on bank at $4000 is 1", mem_read(SIG_ADDR_X), 1),
        byte_probe("bank 0 at $0000 in mode 0", mem_read(SIG_ADDR_0), 0),
    ]
    bank1_addrs = (0x2000, 0x2ABC, 0x3FFF)
    bank2_addrs = (0x4000, 0x5123, 0x5FFF)
    for bank2 in range(4):
        for bank1 in range(32):
            n = bank2 * 32 + bank1
            code = (
                mem_write(bank2_addrs[n % 3], bank2)
                + mem_write(bank1_addrs[n % 3], bank1)
                + mem_read(SIG_ADDR_X)
            )
            want = ((bank2 << 5) | (bank1 or 1)) % rom_banks
            probes.append(byte_probe(f"BANK2={bank2} BANK1=${bank1:02X}", code, want))
    reset = mem_write(0x4000, 0)
    for value, want in ((0xE3, 3), (0xE0, 1), (0x40, 1), (0x3F, 0x1F)):
        code = reset + mem_write(0x2000, value) + mem_read(SIG_ADDR_X)
        probes.append(byte_probe(f"BANK1 write ${value:02X} keeps 5 bits", code, want))
    code = mem_write(0x2000, 2) + mem_write(0x4000, 0xFD) + mem_read(SIG_ADDR_X)
    probes.append(byte_probe("BANK2 write $FD keeps 2 bits", code, 0x22 % rom_banks))
    for bank2 in range(4):
        code = f"    ld b, {bank2}\n    ld hl, ${SIG_ADDR_0:04X}\n    call ${LOW_READER:04X}\n"
        want = (bank2 << 5) % rom_banks
        probes.append(byte_probe(f"mode 1 BANK2={bank2}: bank at $0000", code, want))
    code = mem_write(0x4000, 2) + mem_read(SIG_ADDR_0) + "    push af\n" + reset + "    pop af\n"
    probes.append(byte_probe("mode 0 BANK2=2: bank at $0000 stays 0", code, 0))
    code = (
        mem_write(0x2000, 5)
        + f"    ld b, 3\n    ld hl, ${SIG_ADDR_X:04X}\n    call ${LOW_READER:04X}\n"
    )
    probes.append(byte_probe("mode 1 BANK2=3 BANK1=5: bank at $4000", code, 0x65 % rom_banks))
    return probes


def _ram_probes(rom_banks: int, ram_banks: int) -> list[Probe]:
    """RAM enable rules, mode 1 RAM banking, and bank masking on a small ROM."""
    probes = [byte_probe("RAM disabled after power-on reads $FF", mem_read(0xA000), 0xFF)]
    # Power-on RAM contents are undefined: zero $A001 of the last bank (read later).
    last = ram_banks - 1
    code = (
        mem_write(0x0000, 0x0A)
        + mem_write(0x6000, 1)
        + mem_write(0x4000, last)
        + mem_write(0xA001, 0)
    )
    code += mem_write(0x4000, 0) + mem_write(0x6000, 0)
    code += mem_write(0xA000, 0x11) + mem_write(0xBFFF, 0x22) + mem_read(0xA000)
    probes.append(byte_probe("enabled RAM $A000 read-back", code, 0x11))
    probes.append(byte_probe("enabled RAM $BFFF read-back", mem_read(0xBFFF), 0x22))
    for addr, value, enabled in (
        (0x0000, 0x00, False),
        (0x1FFF, 0xFA, True),
        (0x0800, 0x0B, False),
        (0x0123, 0x1A, True),
        (0x1000, 0xA0, False),
    ):
        code = mem_write(addr, value) + mem_read(0xA000)
        state = "enables" if enabled else "disables"
        probes.append(
            byte_probe(f"${value:02X} to ${addr:04X} {state} RAM", code, 0x11 if enabled else 0xFF)
        )
    code = mem_write(0xA000, 0x77) + mem_write(0x0000, 0x0A) + mem_read(0xA000)
    probes.append(byte_probe("writes to disabled RAM are ignored", code, 0x11))
    fill = mem_write(0x6000, 1)
    for bank in range(ram_banks):
        fill += (
            mem_write(0x4000, bank)
            + mem_write(0xA000, 0x40 + bank)
            + mem_write(0xBFFF, 0x80 + bank)
        )
    probes.append(
        byte_probe(
            "mode 1: fill every RAM bank, read the last", fill + mem_read(0xA000), 0x40 + last
        )
    )
    for bank in range(ram_banks):
        probes.append(
            byte_probe(
                f"mode 1 RAM bank {bank} $A000",
                mem_write(0x4000, bank) + mem_read(0xA000),
                0x40 + bank,
            )
        )
        probes.append(byte_probe(f"mode 1 RAM bank {bank} $BFFF", mem_read(0xBFFF), 0x80 + bank))
    code = (
        mem_write(0x6000, 0) + mem_write(0x4000, last) + mem_write(0xA001, 0x5A) + mem_read(0xA000)
    )
    probes.append(byte_probe(f"mode 0 BANK2={last}: RAM bank 0", code, 0x40))
    code = mem_write(0x6000, 1) + mem_write(0x4000, 0) + mem_read(0xA001)
    probes.append(byte_probe("mode 0 write landed in RAM bank 0", code, 0x5A))
    code = mem_write(0x4000, last) + mem_read(0xA001)
    probes.append(byte_probe(f"mode 0 write left RAM bank {last} alone", code, 0))
    code = mem_write(0x4000, 2) + mem_write(0x7FFF, 0x03) + mem_read(0xA000)
    probes.append(byte_probe("$03 to $7FFF selects mode 1 (RAM bank 2)", code, 0x42))
    code = mem_write(0x6000, 0xFE) + mem_read(0xA000)
    probes.append(byte_probe("$FE to $6000 selects mode 0 (RAM bank 0)", code, 0x40))
    code = mem_write(0x4000, 0) + mem_write(0x6000, 0)
    for value in (0x00, 0x01, 0x04, 0x05, 0x06, 0x07, 0x10, 0x1F, 0x20, 0x03):
        want = (value & 0x1F or 1) % rom_banks
        probes.append(
            byte_probe(
                f"{rom_banks}-bank ROM: BANK1 ${value:02X} maps bank {want}",
                code + mem_write(0x2000, value) + mem_read(SIG_ADDR_X),
                want,
            )
        )
        code = ""
    return probes


ROM_BANKS = 128  # 2 MiB: every BANK2 value reaches its own banks
RAM_ROM_BANKS = 4
RAM_BANKS = 4

# _lib's expected tables live in ROMX bank 1: map it back before the verdict.
RESTORE_BANK1 = mem_write(0x6000, 0) + mem_write(0x4000, 0) + mem_write(0x2000, 1)

ROMS = [
    hw_spec(
        "hw_mbc1_rom",
        "MBC1 2 MiB: BANK1xBANK2 sweep incl. $20/$40/$60->+1, register masks, mode 1 low bank",
        lambda: probe_rom(
            "hw_mbc1_rom",
            _rom_probes(ROM_BANKS),
            setup=LOW_READER_SETUP,
            epilogue=RESTORE_BANK1,
            data=LOW_READER_BLOB + bank_signature_sections(range(ROM_BANKS)),
        ),
        cart_type="MBC1",
        rom_banks=ROM_BANKS,
        tags=("mbc", "hw"),
    ),
    hw_spec(
        "hw_mbc1_ram",
        "MBC1+RAM: enable nibble rule, disabled reads $FF, mode 1 RAM banks, small-ROM bank mask",
        lambda: probe_rom(
            "hw_mbc1_ram",
            _ram_probes(RAM_ROM_BANKS, RAM_BANKS),
            epilogue=RESTORE_BANK1,
            data=bank_signature_sections(range(RAM_ROM_BANKS)),
        ),
        cart_type="MBC1+RAM",
        rom_banks=RAM_ROM_BANKS,
        ram_banks=RAM_BANKS,
        tags=("mbc", "hw"),
    ),
]
