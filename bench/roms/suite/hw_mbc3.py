"""MBC3 micro-ROM: 7-bit ROM bank, RAM banks 0-3, RTC register select and latch.

Expectations follow Pan Docs (MBC3): $2000-$3FFF selects ROM bank 1-127 (7 bits,
0 becomes 1); $4000-$5FFF selects RAM bank $00-$03 or RTC register $08-$0C
(S, M, H, DL, DH), each mapped over all of $A000-$BFFF; writing $00 then $01
to $6000-$7FFF latches the clock into the readable registers; $0A/$00 to
$0000-$1FFF enables/disables RAM and RTC.

RTC and determinism. PyBoy's RTC (core/cartridge/rtc.py) counts the CPU's
T-cycles since power-on, but on an access where no cycles passed since the
previous one it adds host wall-clock time instead, and a ``<rom>.rtc`` file
next to the ROM (written by ``PyBoy.stop(save=True)`` for battery carts)
restarts it from saved state plus wall-clock time. Reads return the latched
S/M/H/DL/DH-day-bit, but the DH halt and carry bits live. Writes go to the
live counter. Our emulator drives the RTC from emulated cycles only. So this
ROM never observes a running clock: it sets the halt bit first, writes every
register while halted, latches, and reads back; reads are masked to the
documented bits (S/M $3F, H $1F, DH $C1).
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

ROM_BANKS = 128
RAM_BANKS = 4
RTC_S, RTC_M, RTC_H, RTC_DL, RTC_DH = 0x08, 0x09, 0x0A, 0x0B, 0x0C
RTC_MASK = {RTC_S: 0x3F, RTC_M: 0x3F, RTC_H: 0x1F, RTC_DL: 0xFF, RTC_DH: 0xC1}
RTC_VALUES = {RTC_S: 37, RTC_M: 42, RTC_H: 13, RTC_DL: 0xA5, RTC_DH: 0x41}  # DH: halt + day bit 8
LATCH = mem_write(0x6000, 0x00) + mem_write(0x6000, 0x01)


def _rtcmem_read(reg: int, addr: int = 0xA000) -> str:
    return mem_write(0x4000, reg) + mem_read(addr) + f"    and ${RTC_MASK[reg]:02X}\n"


def _probes() -> list[Probe]:
    probes = [byte_probe("power-on bank at $4000 is 1", mem_read(SIG_ADDR_X), 1)]
    for bank in range(ROM_BANKS):
        addr = (0x2000, 0x2FFF, 0x3FFF)[bank % 3]
        code = mem_write(addr, bank) + mem_read(SIG_ADDR_X)
        probes.append(byte_probe(f"ROM bank {bank} via ${addr:04X}", code, bank or 1))
    for value, want in ((0x80, 1), (0x85, 5), (0xFF, 0x7F)):
        code = mem_write(0x2000, value) + mem_read(SIG_ADDR_X)
        probes.append(byte_probe(f"ROM bank write ${value:02X} keeps 7 bits", code, want))
    probes.append(byte_probe("RAM disabled after power-on reads $FF", mem_read(0xA000), 0xFF))
    fill = mem_write(0x0000, 0x0A)
    for bank in range(RAM_BANKS):
        fill += (
            mem_write(0x4000, bank)
            + mem_write(0xA000, 0x30 + bank)
            + mem_write(0xBFFF, 0x60 + bank)
        )
    probes.append(byte_probe("fill RAM banks 0-3, read the last", fill + mem_read(0xA000), 0x33))
    for bank in range(RAM_BANKS):
        code = mem_write(0x5FFF, bank) + mem_read(0xA000)
        probes.append(byte_probe(f"RAM bank {bank} $A000", code, 0x30 + bank))
        probes.append(byte_probe(f"RAM bank {bank} $BFFF", mem_read(0xBFFF), 0x60 + bank))
    code = mem_write(0x0000, 0x00) + mem_read(0xA000)
    probes.append(byte_probe("$00 to $0000 disables RAM", code, 0xFF))
    code = mem_write(0xA000, 0x99) + mem_write(0x1FFF, 0x0A) + mem_read(0xA000)
    probes.append(byte_probe("disabled write ignored; $0A to $1FFF enables", code, 0x33))

    # Halt first, then write every register while the clock stands still.
    code = mem_write(0x4000, RTC_DH) + mem_write(0xA000, 0x40)
    for reg in (RTC_S, RTC_M, RTC_H, RTC_DL, RTC_DH):
        code += mem_write(0x4000, reg) + mem_write(0xA000, RTC_VALUES[reg])
    code += LATCH + _rtcmem_read(RTC_S)
    probes.append(byte_probe("RTC halted: S after write + latch", code, RTC_VALUES[RTC_S]))
    for reg in (RTC_M, RTC_H, RTC_DL, RTC_DH):
        probes.append(
            byte_probe(f"RTC register ${reg:02X} after latch", _rtcmem_read(reg), RTC_VALUES[reg])
        )
    for addr in (0xB123, 0xBFFF):
        probes.append(
            byte_probe(
                f"RTC DL mapped at ${addr:04X}", _rtcmem_read(RTC_DL, addr), RTC_VALUES[RTC_DL]
            )
        )
    code = mem_write(0x4000, RTC_S) + mem_write(0xA000, 5) + _rtcmem_read(RTC_S)
    probes.append(byte_probe("RTC write without latch: S still reads the latch", code, 37))
    code = mem_write(0x7FFF, 0x01) + _rtcmem_read(RTC_S)
    probes.append(byte_probe("RTC $01 after $01 does not latch", code, 37))
    code = LATCH + _rtcmem_read(RTC_S)
    probes.append(byte_probe("RTC $00,$01 latches the new S", code, 5))
    code = (
        mem_write(0x4000, RTC_M)
        + mem_write(0xBFFF, 59)
        + mem_write(0x6FFF, 0)
        + mem_write(0x7000, 1)
    )
    code += _rtcmem_read(RTC_M)
    probes.append(byte_probe("RTC M written at $BFFF, latched via $6FFF/$7000", code, 59))
    probes.append(byte_probe("RTC S unchanged by M write", _rtcmem_read(RTC_S), 5))
    code = mem_write(0x4000, 2) + mem_read(0xA000)
    probes.append(byte_probe("RAM bank 2 intact after RTC use", code, 0x32))
    return probes


ROMS = [
    hw_spec(
        "hw_mbc3",
        "MBC3+RTC: 7-bit ROM bank 1-127, RAM banks 0-3, RTC select/halt/write/latch (no running clock)",
        lambda: probe_rom(
            "hw_mbc3",
            _probes(),
            epilogue=mem_write(0x2000, 1),  # _lib's expected tables live in ROMX bank 1
            data=bank_signature_sections(range(ROM_BANKS)),
        ),
        cart_type="MBC3+TIMER+RAM+BATTERY",
        rom_banks=ROM_BANKS,
        ram_banks=RAM_BANKS,
        tags=("mbc", "rtc", "hw"),
    ),
]
