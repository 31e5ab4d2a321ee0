"""Cartridge header: the public layout at 0x0100-0x014F of every Game Boy ROM.

``CartridgeHeader.parse(data)`` validates an image and raises ``CartridgeError``
naming the first problem; ``parse(data, strict=False)`` collects every problem
in ``problems`` instead and reports ``supported`` (True only with no problems).
Images shorter than the header always raise.
"""

from __future__ import annotations

from dataclasses import dataclass

BANK_SIZE = 0x4000
RAM_BANK_SIZE = 0x2000
MBC2_RAM_BYTES = 512  # MBC2 carries 512 x 4-bit cells on the chip, header RAM code is 0
HEADER_END = 0x0150

LOGO_OFFSET = 0x0104
TITLE_OFFSET = 0x0134
CGB_FLAG_OFFSET = 0x0143  # bit 7: Color features; $C0: Color only
TITLE_MAX_LEN = 16
CART_TYPE_OFFSET = 0x0147
ROM_SIZE_OFFSET = 0x0148
RAM_SIZE_OFFSET = 0x0149
HEADER_CHECKSUM_OFFSET = 0x014D
GLOBAL_CHECKSUM_OFFSET = 0x014E

NINTENDO_LOGO = bytes.fromhex(
    "CEED6666CC0D000B03730083000C000D"
    "0008111F8889000EDCCC6EE6DDDDD999"
    "BBBB67636E0EECCCDDDC999FBBB9333E"
)


@dataclass(frozen=True)
class CartType:
    code: int
    name: str
    mbc: str  # "none", "mbc1", "mbc2", "mbc3", "mbc5", or the name of an unsupported mapper
    has_ram: bool = False
    has_battery: bool = False
    has_timer: bool = False
    has_rumble: bool = False
    supported: bool = True


def _cart(code: int, name: str, mbc: str, supported: bool = True) -> CartType:
    parts = set(name.split("+"))
    return CartType(
        code=code,
        name=name,
        mbc=mbc,
        has_ram="RAM" in parts or mbc == "mbc2",
        has_battery="BATTERY" in parts,
        has_timer="TIMER" in parts,
        has_rumble="RUMBLE" in parts,
        supported=supported,
    )


CART_TYPES: dict[int, CartType] = {
    c.code: c
    for c in (
        _cart(0x00, "ROM_ONLY", "none"),
        _cart(0x01, "MBC1", "mbc1"),
        _cart(0x02, "MBC1+RAM", "mbc1"),
        _cart(0x03, "MBC1+RAM+BATTERY", "mbc1"),
        _cart(0x05, "MBC2", "mbc2"),
        _cart(0x06, "MBC2+BATTERY", "mbc2"),
        _cart(0x08, "ROM+RAM", "none", supported=False),
        _cart(0x09, "ROM+RAM+BATTERY", "none", supported=False),
        _cart(0x0B, "MMM01", "mmm01", supported=False),
        _cart(0x0C, "MMM01+RAM", "mmm01", supported=False),
        _cart(0x0D, "MMM01+RAM+BATTERY", "mmm01", supported=False),
        _cart(0x0F, "MBC3+TIMER+BATTERY", "mbc3"),
        _cart(0x10, "MBC3+TIMER+RAM+BATTERY", "mbc3"),
        _cart(0x11, "MBC3", "mbc3"),
        _cart(0x12, "MBC3+RAM", "mbc3"),
        _cart(0x13, "MBC3+RAM+BATTERY", "mbc3"),
        _cart(0x19, "MBC5", "mbc5"),
        _cart(0x1A, "MBC5+RAM", "mbc5"),
        _cart(0x1B, "MBC5+RAM+BATTERY", "mbc5"),
        _cart(0x1C, "MBC5+RUMBLE", "mbc5"),
        _cart(0x1D, "MBC5+RUMBLE+RAM", "mbc5"),
        _cart(0x1E, "MBC5+RUMBLE+RAM+BATTERY", "mbc5"),
        _cart(0x20, "MBC6", "mbc6", supported=False),
        _cart(0x22, "MBC7+SENSOR+RUMBLE+RAM+BATTERY", "mbc7", supported=False),
        _cart(0xFC, "POCKET_CAMERA", "camera", supported=False),
        _cart(0xFD, "BANDAI_TAMA5", "tama5", supported=False),
        _cart(0xFE, "HUC3", "huc3", supported=False),
        _cart(0xFF, "HUC1+RAM+BATTERY", "huc1", supported=False),
    )
}
CART_TYPE_BY_NAME: dict[str, CartType] = {c.name: c for c in CART_TYPES.values()}

# RAM size code -> number of 8 KiB banks (code 1 is listed by Pan Docs as unused: 2 KiB).
RAM_BANKS_BY_CODE = {0x00: 0, 0x02: 1, 0x03: 4, 0x04: 16, 0x05: 8}
RAM_CODE_BY_BANKS = {banks: code for code, banks in RAM_BANKS_BY_CODE.items()}
MAX_ROM_SIZE_CODE = 8  # 8 MiB, 512 banks


BAD_LOGO_HINT = (
    " (PyBoy runs such ROMs, as ROM hacks often need: pass allow_bad_logo=True to the "
    "backend, or --allow-bad-logo on the command line, to run it the same way)"
)
CHECKSUM_HINT = " (PyBoy refuses it too: fix byte 0x014D)"
CGB_ONLY_HINT = (
    ": on a DMG machine (cgb=False) such a game shows only its own refusal screen; run it "
    "on a Game Boy Color machine (cgb=True, or leave cgb unset: the header decides)"
)


def colour_cartridge(rom: bytes) -> bool:
    """PyBoy's rule for ``cgb=None``: a Game Boy Color machine when header byte 0x143 has
    bit 7 set (Colour-enhanced $80 and Colour-only $C0 alike)."""
    return len(rom) > CGB_FLAG_OFFSET and bool(rom[CGB_FLAG_OFFSET] & 0x80)


class CartridgeError(ValueError):
    """The image is not a cartridge we can run; the message names the problem."""


def rom_size_code(banks: int) -> int:
    """Header ROM size code for ``banks`` 16 KiB banks (a power of two, 2..512)."""
    for code in range(MAX_ROM_SIZE_CODE + 1):
        if 2 << code == banks:
            return code
    raise CartridgeError(f"ROM bank count must be a power of two from 2 to 512, got {banks}")


def ram_size_code(banks: int) -> int:
    """Header RAM size code for ``banks`` 8 KiB banks (0, 1, 4, 8 or 16)."""
    if banks not in RAM_CODE_BY_BANKS:
        raise CartridgeError(f"RAM bank count must be one of 0, 1, 4, 8, 16, got {banks}")
    return RAM_CODE_BY_BANKS[banks]


def header_checksum(data: bytes | bytearray) -> int:
    """The byte stored at 0x014D: computed over 0x0134-0x014C."""
    x = 0
    for b in data[TITLE_OFFSET:HEADER_CHECKSUM_OFFSET]:
        x = (x - b - 1) & 0xFF
    return x


def with_cgb_flag(rom: bytes, flag: int) -> bytes:
    """``rom`` with header byte 0x143 set to ``flag`` (and the header checksum redone):
    $80 Colour-enhanced, $C0 Colour only, 0 neither."""
    data = bytearray(rom)
    data[CGB_FLAG_OFFSET] = flag
    data[HEADER_CHECKSUM_OFFSET] = header_checksum(data)
    return bytes(data)


def global_checksum(data: bytes | bytearray) -> int:
    """The big-endian word at 0x014E: sum of every byte except those two."""
    total = sum(data) - data[GLOBAL_CHECKSUM_OFFSET] - data[GLOBAL_CHECKSUM_OFFSET + 1]
    return total & 0xFFFF


@dataclass(frozen=True)
class CartridgeHeader:
    title: str
    cart_type: int
    cart_type_name: str
    mbc: str
    rom_size_code: int
    rom_banks: int
    ram_size_code: int
    ram_banks: int
    ram_bytes: int  # bytes of cartridge RAM, MBC2's built-in 512 included
    has_battery: bool
    has_timer: bool
    has_rumble: bool
    logo_ok: bool
    header_checksum_ok: bool
    global_checksum_ok: bool  # hardware ignores it, so it never makes a cart unsupported
    problems: tuple[str, ...]
    cgb_flag: int = 0  # the byte at 0x0143

    @property
    def cgb_enhanced(self) -> bool:
        """Color features a DMG runs without (flag $80): run here, and on the PyBoy oracle,
        in DMG mode (a stock ``PyBoy(rom)`` would pick Color mode)."""
        return self.cgb_flag & 0xC0 == 0x80

    @property
    def supported(self) -> bool:
        return not self.problems

    @property
    def rom_bytes(self) -> int:
        return self.rom_banks * BANK_SIZE

    @classmethod
    def parse(
        cls,
        data: bytes | bytearray,
        *,
        strict: bool = True,
        allow_bad_logo: bool = False,
        allow_cgb_only: bool = False,
    ) -> CartridgeHeader:
        """The header of ``data``; ``strict`` raises on the first problem. A wrong Nintendo
        logo (ROM hacks have one; PyBoy runs them) is a problem unless ``allow_bad_logo``,
        and its message names that override; a wrong header checksum always is (PyBoy
        refuses to load such a ROM); a Game Boy Color only game is, unless
        ``allow_cgb_only`` (a Game Boy Color machine runs it)."""
        if len(data) < HEADER_END:
            raise CartridgeError(
                f"image is truncated: {len(data)} bytes, a header needs at least {HEADER_END}"
            )
        problems: list[str] = []
        logo_ok = bytes(data[LOGO_OFFSET : LOGO_OFFSET + len(NINTENDO_LOGO)]) == NINTENDO_LOGO
        if not logo_ok and not allow_bad_logo:
            problems.append(f"Nintendo logo at 0x0104-0x0133 does not match{BAD_LOGO_HINT}")

        stored_hc = data[HEADER_CHECKSUM_OFFSET]
        computed_hc = header_checksum(data)
        if stored_hc != computed_hc:
            problems.append(
                f"header checksum mismatch: stored ${stored_hc:02X}, computed ${computed_hc:02X}"
                + CHECKSUM_HINT
            )
        stored_gc = data[GLOBAL_CHECKSUM_OFFSET] << 8 | data[GLOBAL_CHECKSUM_OFFSET + 1]

        code = data[CART_TYPE_OFFSET]
        ctype = CART_TYPES.get(code)
        if ctype is None:
            problems.append(f"unknown cartridge type ${code:02X}")
            ctype = CartType(code, f"UNKNOWN_{code:02X}", "unknown", supported=False)
        elif not ctype.supported:
            problems.append(f"unsupported cartridge type ${code:02X} ({ctype.name})")

        rom_code = data[ROM_SIZE_OFFSET]
        rom_banks = 2 << rom_code if rom_code <= MAX_ROM_SIZE_CODE else 0
        if rom_banks == 0:
            problems.append(f"unknown ROM size code ${rom_code:02X}")
        elif len(data) != rom_banks * BANK_SIZE:
            problems.append(
                f"ROM size mismatch: header code ${rom_code:02X} says {rom_banks} banks "
                f"({rom_banks * BANK_SIZE} bytes), image has {len(data)} bytes"
            )

        cgb_flag = data[CGB_FLAG_OFFSET]
        if cgb_flag & 0xC0 == 0xC0 and not allow_cgb_only:
            problems.append(f"Game Boy Color only (${cgb_flag:02X} at 0x0143){CGB_ONLY_HINT}")

        ram_code = data[RAM_SIZE_OFFSET]
        ram_banks = RAM_BANKS_BY_CODE.get(ram_code)
        if ram_banks is None:
            problems.append(f"unknown RAM size code ${ram_code:02X}")
            ram_banks = 0
        if ctype.mbc == "mbc2":
            ram_banks, ram_bytes = 1, MBC2_RAM_BYTES
        else:
            ram_bytes = ram_banks * RAM_BANK_SIZE

        if strict and problems:
            raise CartridgeError(problems[0])
        title = ""
        for b in data[TITLE_OFFSET : TITLE_OFFSET + TITLE_MAX_LEN]:
            if b == 0 or b >= 0x80:  # padding, or the CGB flag at 0x0143
                break
            title += chr(b) if 0x20 <= b < 0x7F else "?"
        return cls(
            title=title,
            cart_type=code,
            cart_type_name=ctype.name,
            mbc=ctype.mbc,
            rom_size_code=rom_code,
            rom_banks=rom_banks,
            ram_size_code=ram_code,
            ram_banks=ram_banks,
            ram_bytes=ram_bytes,
            has_battery=ctype.has_battery,
            has_timer=ctype.has_timer,
            has_rumble=ctype.has_rumble,
            logo_ok=logo_ok,
            header_checksum_ok=stored_hc == computed_hc,
            global_checksum_ok=stored_gc == global_checksum(data),
            problems=tuple(problems),
            cgb_flag=cgb_flag,
        )
