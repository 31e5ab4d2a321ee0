"""Build full ROM images: assembled program + entry stub + cartridge header."""

from __future__ import annotations

from gbxcule.asm.assembler import AsmError, Program, assemble
from gbxcule.core.cartridge import (
    CART_TYPE_BY_NAME,
    CART_TYPE_OFFSET,
    CGB_FLAG_OFFSET,
    GLOBAL_CHECKSUM_OFFSET,
    HEADER_CHECKSUM_OFFSET,
    HEADER_END,
    LOGO_OFFSET,
    NINTENDO_LOGO,
    RAM_SIZE_OFFSET,
    ROM_SIZE_OFFSET,
    TITLE_MAX_LEN,
    TITLE_OFFSET,
    CartridgeError,
    global_checksum,
    header_checksum,
    ram_size_code,
    rom_size_code,
)
from gbxcule.core.dmg import POST_BOOT_PC

ENTRY = POST_BOOT_PC  # where the boot ROM hands over
ENTRY_STUB = bytes([0x00, 0xC3, 0x50, 0x01])  # nop; jp $0150
# Largest ROM / RAM bank counts each mapper can address.
MAX_ROM_BANKS = {"none": 2, "mbc1": 128, "mbc2": 16, "mbc3": 128, "mbc5": 512}
MAX_RAM_BANKS = {"none": 0, "mbc1": 4, "mbc2": 0, "mbc3": 4, "mbc5": 16}
CGB_FLAGS = (0x00, 0x80, 0xC0)  # DMG, Color-enhanced, Color only


def write_header(
    image: bytearray,
    *,
    title: str,
    cart_type: str,
    rom_banks: int,
    ram_banks: int,
    cgb_flag: int = 0,
) -> None:
    """Fill 0x0104-0x014F of ``image`` in place and then both checksums.

    ``cgb_flag`` is the byte at 0x0143 (the title's last): 0x80 marks a Color-enhanced
    cartridge, 0xC0 a Color-only one; a title then has at most 15 characters.
    """
    ctype = CART_TYPE_BY_NAME.get(cart_type)
    if ctype is None or not ctype.supported:
        names = ", ".join(n for n, c in CART_TYPE_BY_NAME.items() if c.supported)
        raise AsmError(f"unsupported cart_type {cart_type!r} (use one of {names})")
    if len(title) > TITLE_MAX_LEN or not all(0x20 <= ord(ch) < 0x7F for ch in title):
        raise AsmError(f"title must be at most {TITLE_MAX_LEN} printable ASCII chars: {title!r}")
    if cgb_flag not in CGB_FLAGS:
        raise AsmError(f"cgb_flag must be $00, $80 or $C0, not ${cgb_flag:02X}")
    if cgb_flag and len(title) == TITLE_MAX_LEN:
        raise AsmError(
            f"a Color cartridge's title has at most {TITLE_MAX_LEN - 1} chars: {title!r}"
        )
    if rom_banks > MAX_ROM_BANKS[ctype.mbc] or (ctype.mbc == "none" and rom_banks != 2):
        raise AsmError(f"{cart_type} cannot address {rom_banks} ROM banks")
    if ctype.mbc == "mbc2" and ram_banks:
        raise AsmError("MBC2 has built-in RAM: ram_banks must be 0")
    if ctype.has_ram and ctype.mbc != "mbc2" and ram_banks == 0:
        raise AsmError(f"{cart_type} has RAM: pass ram_banks (1, 4, 8 or 16)")
    if not ctype.has_ram and ram_banks:
        raise AsmError(f"{cart_type} has no RAM but ram_banks={ram_banks}")
    if ram_banks > MAX_RAM_BANKS[ctype.mbc]:
        raise AsmError(f"{cart_type} cannot address {ram_banks} RAM banks")
    try:
        rom_code, ram_code = rom_size_code(rom_banks), ram_size_code(ram_banks)
    except CartridgeError as e:
        raise AsmError(str(e)) from None
    image[LOGO_OFFSET : LOGO_OFFSET + len(NINTENDO_LOGO)] = NINTENDO_LOGO
    image[TITLE_OFFSET : TITLE_OFFSET + TITLE_MAX_LEN] = title.encode("ascii").ljust(
        TITLE_MAX_LEN, b"\x00"
    )
    if cgb_flag:
        image[CGB_FLAG_OFFSET] = cgb_flag
    image[0x0144:0x0147] = b"\x00\x00\x00"  # new licensee, SGB flag
    image[CART_TYPE_OFFSET] = ctype.code
    image[ROM_SIZE_OFFSET] = rom_code
    image[RAM_SIZE_OFFSET] = ram_code
    image[0x014A:0x014D] = b"\x01\x00\x00"  # destination (overseas), old licensee, version
    image[HEADER_CHECKSUM_OFFSET] = header_checksum(image)
    image[GLOBAL_CHECKSUM_OFFSET : GLOBAL_CHECKSUM_OFFSET + 2] = b"\x00\x00"
    image[GLOBAL_CHECKSUM_OFFSET : GLOBAL_CHECKSUM_OFFSET + 2] = global_checksum(image).to_bytes(
        2, "big"
    )


def build_rom(
    source: str,
    *,
    title: str = "GBXCULE",
    cart_type: str = "ROM_ONLY",
    rom_banks: int = 2,
    ram_banks: int = 0,
    cgb_flag: int = 0,
) -> bytes:
    """Assemble ``source`` into a complete ``rom_banks`` * 16 KiB cartridge image.

    Emits ``nop; jp $0150`` at $0100 unless the source places code there. Source
    bytes inside the header area $0104-$014F must be zero (e.g. ``ds`` padding).
    ``cgb_flag`` (0x0143): see :func:`write_header`.
    """
    return program_rom(
        assemble(source),
        title=title,
        cart_type=cart_type,
        rom_banks=rom_banks,
        ram_banks=ram_banks,
        cgb_flag=cgb_flag,
    )


def program_rom(
    program: Program,
    *,
    title: str = "GBXCULE",
    cart_type: str = "ROM_ONLY",
    rom_banks: int = 2,
    ram_banks: int = 0,
    cgb_flag: int = 0,
) -> bytes:
    """:func:`build_rom` of an assembled ``program`` (whose labels a ``.sym`` file may list)."""
    if program.rom_banks_used > rom_banks:
        raise AsmError(f"program uses {program.rom_banks_used} ROM banks but rom_banks={rom_banks}")
    image = program.image(rom_banks)
    for sec in program.rom_sections:
        if sec.kind != "ROM0":
            continue
        lo, hi = max(sec.base, LOGO_OFFSET), min(sec.end, HEADER_END)
        if lo < hi and any(sec.data[lo - sec.base : hi - sec.base]):
            raise AsmError(
                f"section {sec.name!r} puts data in the cartridge header area $0104-$014F",
                sec.line,
            )
    if not program.covers(ENTRY, ENTRY + len(ENTRY_STUB)):
        image[ENTRY : ENTRY + len(ENTRY_STUB)] = ENTRY_STUB
    write_header(
        image,
        title=title,
        cart_type=cart_type,
        rom_banks=rom_banks,
        ram_banks=ram_banks,
        cgb_flag=cgb_flag,
    )
    return bytes(image)
