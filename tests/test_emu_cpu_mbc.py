"""Mapper behaviour the ROM suite does not reach, against PyBoy 2.8.1.

Each test runs straight-line probe code from WRAM (so bank switches under it are
harmless), storing what it reads to $C000+; the results, registers and cycle
count must equal PyBoy's, and a few results are also checked against the
documented PyBoy behaviour directly.
"""

from __future__ import annotations

import pytest

from gbxcule.core.cartridge import (
    GLOBAL_CHECKSUM_OFFSET,
    HEADER_CHECKSUM_OFFSET,
    NINTENDO_LOGO,
    RAM_SIZE_OFFSET,
    global_checksum,
    header_checksum,
)

from .support.emu_cpu_support import (
    assert_same,
    program_rom,
    pyboy_run_to,
    warp_run_to,
    wram_program,
)

pytestmark = pytest.mark.l2

RESULTS = 0xC000
RTC_SECOND = 4194304  # T-cycles


class Probe:
    """Straight-line probe code: register writes and reads logged to RESULTS."""

    def __init__(self) -> None:
        self.lines = [f"ld hl, ${RESULTS:04X}"]
        self.reads = 0

    def write(self, addr: int, value: int) -> Probe:
        self.lines += [f"ld a, ${value:02X}", f"ld [${addr:04X}], a"]
        return self

    def read(self, addr: int) -> Probe:
        self.lines += [f"ld a, [${addr:04X}]", "ld [hl+], a"]
        self.reads += 1
        return self

    def wait_cycles(self, cycles: int) -> Probe:
        """Busy-wait about ``cycles`` T-cycles (28 per loop iteration)."""
        loops = cycles // 28
        while loops > 0:
            chunk = min(loops, 0xFFFF)
            label = f".wait{len(self.lines)}"
            self.lines += [f"ld bc, ${chunk:04X}", f"{label}:", "dec bc", "ld a, b", "or c"]
            self.lines.append(f"jr nz, {label}")
            loops -= chunk
        return self

    def code(self) -> str:
        return "\n".join(line if line.startswith(".") else "    " + line for line in self.lines)


def bank_ids(rom_banks: int, logo_everywhere: bool = False) -> str:
    """Every switchable bank starts with its number (low, high); optionally carries the logo."""
    out = []
    for bank in range(1, rom_banks):
        out.append(
            f'SECTION "id{bank}", ROMX[$4000], BANK[{bank}]\n    db {bank & 0xFF}, {bank >> 8}'
        )
        if logo_everywhere:
            logo = ", ".join(f"${b:02X}" for b in NINTENDO_LOGO)
            out.append(f'SECTION "logo{bank}", ROMX[$4104], BANK[{bank}]\n    db {logo}')
    return "\n" + "\n".join(out) + "\n"


def run_probe(
    probe: Probe,
    label: str,
    *,
    rom_banks: int = 2,
    logo_everywhere: bool = False,
    ram_size_code: int | None = None,
    **build,
) -> list[int]:
    """Run ``probe`` on both emulators; ``ram_size_code`` overrides the header's RAM size."""
    body, extra = wram_program(probe.code())
    extra += bank_ids(rom_banks, logo_everywhere)
    rom, stop = program_rom(body, extra=extra, rom_banks=rom_banks, **build)
    if ram_size_code is not None:
        image = bytearray(rom)
        image[RAM_SIZE_OFFSET] = ram_size_code
        image[HEADER_CHECKSUM_OFFSET] = header_checksum(image)
        gsum = global_checksum(image)
        image[GLOBAL_CHECKSUM_OFFSET : GLOBAL_CHECKSUM_OFFSET + 2] = gsum.to_bytes(2, "big")
        rom = bytes(image)
    ours = warp_run_to(rom, stop)
    assert_same(ours, pyboy_run_to(rom, stop), label)
    return [int(v) for v in ours[(0xC000, 0xE000)][: probe.reads]]


def mbc1_sweep(probe: Probe) -> Probe:
    for mode in (0, 1):
        probe.write(0x6000, mode)
        for reg2 in range(4):
            probe.write(0x4000, reg2)
            for reg1 in (0x00, 0x01, 0x02, 0x0F, 0x10, 0x1F, 0x21):
                probe.write(0x2000, reg1)
                probe.read(0x0000).read(0x4000).read(0x4001)
    return probe.write(0x6000, 0).write(0x4000, 0)  # bank 0 back under the ROM code


def test_mbc1_64_banks_mode1() -> None:
    got = run_probe(mbc1_sweep(Probe()), "mbc1 64 banks", cart_type="MBC1", rom_banks=64)
    # mode 1, BANK2 = 1: the low window shows bank 32 (5-bit shift), BANK1 = 0 reads as 1
    assert got[(1 * 4 + 1) * 21 + 0] == 32
    assert got[(1 * 4 + 1) * 21 + 1] == 33


def test_mbc1_multicart_shifts_bank2_by_four() -> None:
    got = run_probe(
        mbc1_sweep(Probe()), "mbc1 multicart", cart_type="MBC1", rom_banks=64, logo_everywhere=True
    )
    assert got[(1 * 4 + 1) * 21 + 0] == 16  # mode 1, BANK2 = 1: bank 16 at $0000


def test_mbc1_without_ram_still_has_one_bank() -> None:
    """PyBoy backs a RAM-less MBC1 with one 8 KiB bank: enabled writes read back."""
    probe = Probe().write(0x0000, 0x0A).write(0xA000, 0x5A).write(0xBFFF, 0xA5)
    probe.read(0xA000).read(0xBFFF).write(0x6000, 1).write(0x4000, 3).read(0xA000)
    probe.write(0x0000, 0x00).read(0xA000)
    got = run_probe(probe, "mbc1 no ram", cart_type="MBC1")
    assert got == [0x5A, 0xA5, 0x5A, 0xFF]


def test_mbc3_clock_select_without_timer_reads_zero() -> None:
    probe = Probe().write(0x0000, 0x0A).write(0xA000, 0x11)
    for reg in (0x08, 0x0C, 0x0D, 0x03):
        probe.write(0x4000, reg).write(0xA000, 0x77).read(0xA000)
    got = run_probe(probe, "mbc3 no timer", cart_type="MBC3+RAM", ram_banks=4)
    assert got == [0x00, 0x00, 0x77, 0x77]  # $0D % 4 = bank 1 written, bank 3 written


def test_mbc30_eight_ram_banks() -> None:
    probe = Probe().write(0x0000, 0x0A)
    for bank in range(8):
        probe.write(0x4000, bank).write(0xA123, 0x40 + bank)
    for bank in range(8):
        probe.write(0x4000, bank).read(0xA123)
    # the assembler refuses 8 banks on MBC3; PyBoy treats such a header as MBC30
    got = run_probe(probe, "mbc30", cart_type="MBC3+RAM+BATTERY", ram_banks=4, ram_size_code=0x05)
    assert got == [0x40 + bank for bank in range(8)]


def test_mbc5_ram_bank_wraps_to_ram_size() -> None:
    probe = Probe().write(0x0000, 0x0A)
    for bank in range(4):
        probe.write(0x4000, bank).write(0xA000, 0x10 + bank)
    for sel in (5, 6, 0x0F, 0x13):
        probe.write(0x4000, sel).read(0xA000)
    probe.write(0x0000, 0x1A).read(0xA000)  # MBC5 enables only on exactly $0A
    got = run_probe(probe, "mbc5 ram wrap", cart_type="MBC5+RAM", ram_banks=4)
    assert got == [0x11, 0x12, 0x13, 0x13, 0xFF]


def rtc_set(probe: Probe, sec: int, minute: int, hour: int, day: int, flags: int) -> Probe:
    for reg, value in ((0x08, sec), (0x09, minute), (0x0A, hour), (0x0B, day), (0x0C, flags)):
        probe.write(0x4000, reg).write(0xA000, value)
    return probe


def rtc_latch_and_read(probe: Probe) -> Probe:
    probe.write(0x6000, 0x00).write(0x6000, 0x01)
    for reg in range(0x08, 0x0D):
        probe.write(0x4000, reg).read(0xA000)
    return probe


def test_mbc3_clock_runs_on_emulated_cycles() -> None:
    """Rollover of every field (day 511 -> 0 sets carry), the 6-bit second quirk, halt."""
    probe = Probe().write(0x0000, 0x0A)
    rtc_set(probe, 59, 59, 23, 0xFF, 0x01).wait_cycles(RTC_SECOND + RTC_SECOND // 4)
    rtc_latch_and_read(probe)
    rtc_set(probe, 0x3F, 0x3F, 0x1F, 0x10, 0x00).wait_cycles(RTC_SECOND + RTC_SECOND // 4)
    rtc_latch_and_read(probe)
    rtc_set(probe, 30, 1, 2, 3, 0x40).wait_cycles(RTC_SECOND + RTC_SECOND // 4)
    rtc_latch_and_read(probe)
    got = run_probe(probe, "mbc3 rtc", cart_type="MBC3+TIMER+RAM+BATTERY", ram_banks=1)
    assert got[0:5] == [0, 0, 0, 0, 0x80]
    assert got[5:10] == [0, 0x3F, 0x1F, 0x10, 0x00]
    assert got[10:15] == [30, 1, 2, 3, 0x40]
