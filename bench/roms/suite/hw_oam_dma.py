"""OAM DMA micro-ROM: 160-byte transfers from ROM0, a switched ROMX bank, WRAM and cart RAM.

Each transfer follows the game idiom (Pan Docs, OAM DMA): the routine that
writes $FF46 and waits 160 M-cycles (40 x ``dec a; jr nz``) runs from HRAM,
because on DMG the CPU can only reach HRAM while the DMA runs. OAM is cleared
before every transfer and read back (LCD off, so OAM is always readable) into
WRAM after it; every source has its own byte pattern, so a stale OAM, a wrong
source page or a wrong ROM bank shows up as wrong bytes.
"""

from __future__ import annotations

from bench.roms.suite._hwlib import SCRATCH, Probe, block_probe, hw_spec, mem_write, probe_rom
from bench.roms.suite._lib import HRAM_ROM_VARS, db_lines

OAM_BYTES = 160
DMA_ROUTINE = HRAM_ROM_VARS  # HRAM: the only memory the CPU can reach during DMA
WRAM_SRC = SCRATCH + 0x100
ROM0_SRC = 0x1000
ROMX_SRC = 0x5000
ROMX_BANK = 5
DECOY_BANK = 1


def _pattern_rom0(i: int) -> int:
    return (i * 5 + 0x11) & 0xFF


def _pattern_romx(bank: int, i: int) -> int:
    return ((i * 11 + 0x3C) ^ (bank * 0x24)) & 0xFF


def _pattern_wram(i: int) -> int:
    return i ^ 0xC3


def _pattern_cart_ram(i: int) -> int:
    return (((i & 0x0F) << 4) | (i >> 4)) ^ 0x96


def _pattern(fn) -> bytes:
    return bytes(fn(i) for i in range(OAM_BYTES))


ROUTINES = f"""
; Copied to HRAM: start the DMA from page A, wait 160 M-cycles, return.
HwDmaBlob:
    ldh [$46], a
    ld a, 40
.wait:
    dec a
    jr nz, .wait
    ret
HwDmaBlobEnd:

; Clears OAM, runs the HRAM DMA routine with A = source page, and copies OAM to
; the WRAM destination on the stack's top (pushed by the probe).
HwDmaAndReadBack:
    push af
    ld hl, $FE00
    ld b, {OAM_BYTES}
    xor a
.clear:
    ld [hl+], a
    dec b
    jr nz, .clear
    pop af
    call ${DMA_ROUTINE:04X}
    pop bc              ; return address
    pop de              ; WRAM destination
    push bc
    ld hl, $FE00
    ld b, {OAM_BYTES}
    jp HwCopy
"""

DATA = f"""
SECTION "dma_src_rom0", ROM0[${ROM0_SRC:04X}]
{db_lines(_pattern(_pattern_rom0))}

SECTION "dma_src_bank{ROMX_BANK}", ROMX[${ROMX_SRC:04X}], BANK[{ROMX_BANK}]
{db_lines(_pattern(lambda i: _pattern_romx(ROMX_BANK, i)))}

SECTION "dma_src_bank{DECOY_BANK}", ROMX[${ROMX_SRC:04X}], BANK[{DECOY_BANK}]
{db_lines(_pattern(lambda i: _pattern_romx(DECOY_BANK, i)))}
"""

SETUP = f"""
    call LibLcdOff
    ld hl, HwDmaBlob
    ld de, ${DMA_ROUTINE:04X}
    ld b, HwDmaBlobEnd - HwDmaBlob
    call HwCopy
    ld hl, ${WRAM_SRC:04X}
    ld b, 0
.wram_fill:
    ld a, b
    xor $C3
    ld [hl+], a
    inc b
    ld a, b
    cp {OAM_BYTES}
    jr nz, .wram_fill
    ld a, $0A
    ld [$0000], a       ; enable cart RAM
    ld hl, $A000
    ld b, 0
.cart_fill:
    ld a, b
    swap a
    xor $96
    ld [hl+], a
    inc b
    ld a, b
    cp {OAM_BYTES}
    jr nz, .cart_fill
"""


def _dma_probe(label: str, page: int, expected: bytes, bank: int | None = None) -> Probe:
    select = f"    ld a, {bank}\n    ld [$2000], a\n" if bank is not None else ""
    code = f"    push hl\n{select}    ld a, ${page:02X}\n    call HwDmaAndReadBack\n"
    return block_probe(label, code, expected)


PROBES = [
    _dma_probe("DMA from ROM0 $1000", ROM0_SRC >> 8, _pattern(_pattern_rom0)),
    _dma_probe(
        f"DMA from ROMX bank {ROMX_BANK} $5000",
        ROMX_SRC >> 8,
        _pattern(lambda i: _pattern_romx(ROMX_BANK, i)),
        bank=ROMX_BANK,
    ),
    _dma_probe(
        f"DMA from ROMX bank {DECOY_BANK} $5000",
        ROMX_SRC >> 8,
        _pattern(lambda i: _pattern_romx(DECOY_BANK, i)),
        bank=DECOY_BANK,
    ),
    _dma_probe("DMA from WRAM $D100", WRAM_SRC >> 8, _pattern(_pattern_wram)),
    _dma_probe("DMA from cart RAM $A000", 0xA0, _pattern(_pattern_cart_ram)),
]

ROMS = [
    hw_spec(
        "hw_oam_dma",
        "OAM DMA via HRAM routine from ROM0, ROMX bank 5 vs 1, WRAM, cart RAM; 160-byte read-back",
        lambda: probe_rom(
            "hw_oam_dma",
            PROBES,
            setup=SETUP,
            epilogue=mem_write(0x2000, 1),  # _lib's expected tables live in ROMX bank 1
            routines=ROUTINES,
            data=DATA,
        ),
        cart_type="MBC1+RAM",
        rom_banks=8,
        ram_banks=1,
        tags=("dma", "mbc", "hw"),
    ),
]
