"""The address map and the per-env RAM layout shared by every backend, kernel and view.

Each env owns one contiguous row of ``MEM_BASE_BYTES + cart_ram_bytes`` bytes in
``Machine.mem`` (shape ``[N, row_bytes]``). The regions below sit at fixed
offsets in that row; cart RAM follows at ``CART_RAM_OFF`` and is sized from the
cartridge header. The ROM is never per env: one shared copy lives in
``Machine.rom``. ``SPANS`` names each span of the CPU's address space with its row
offset: the one map the rest of the package derives its tables from.
"""

from __future__ import annotations

from dataclasses import dataclass

VRAM_OFF = 0x0000  # 0x8000-0x9FFF, 8 KiB
VRAM_SIZE = 0x2000
WRAM_OFF = 0x2000  # 0xC000-0xDFFF, 8 KiB (echo 0xE000-0xFDFF maps here)
WRAM_SIZE = 0x2000
OAM_OFF = 0x4000  # 0xFE00-0xFE9F, 160 bytes
OAM_SIZE = 0xA0
IO_OFF = 0x40A0  # 0xFF00-0xFF7F, raw register backing store
IO_SIZE = 0x80
HRAM_OFF = 0x4120  # 0xFF80-0xFFFE, 127 bytes
HRAM_SIZE = 0x7F
IE_OFF = 0x419F  # 0xFFFF
UNUSABLE_OFF = 0x41A0  # 0xFEA0-0xFEFF: PyBoy keeps it as plain RAM
UNUSABLE_SIZE = 0x60
CART_RAM_OFF = 0x4200  # cart RAM (0xA000-0xBFFF, banked), length from the header
MEM_BASE_BYTES = CART_RAM_OFF


# A Game Boy Color machine's WRAM banks 2-7 extend its ``mem`` row past the cart RAM
# (``CGB_WRAMX_EXTRA`` bytes, bank k at ``row width - CGB_WRAMX_EXTRA + (k - 2) * 0x1000``);
# bank 1 stays at D000's own offset. An SVBK write copies nothing: the CGB variant's WRAM
# accesses pick the bank (kernels/board/memmap.py, ``wram_at``), and so do the host's
# readers (the task gathers, the save-state mappings).
CGB_WRAM_BANK_SIZE = 0x1000
CGB_WRAMX = (0xD000, 0xE000)  # the switchable WRAM bank (SVBK 1-7) on CGB hardware
CGB_WRAM_BANKS = 7
CGB_WRAMX_EXTRA = (CGB_WRAM_BANKS - 1) * CGB_WRAM_BANK_SIZE  # banks 2-7 in the mem row


def wramx_bank_offset(row_width: int, bank: int) -> int:
    """Row offset of WRAM bank ``bank``'s first byte (at D000) in a CGB machine's row."""
    if bank == 1:
        return WRAM_OFF + CGB_WRAM_BANK_SIZE
    return row_width - CGB_WRAMX_EXTRA + (bank - 2) * CGB_WRAM_BANK_SIZE


# A Game Boy Color machine's other state (``Machine.cgb``, one row per env; a DMG machine's
# row is a few unused bytes). ``mem`` holds the VRAM bank VBK selects: a VBK write
# exchanges its bytes with this row's other bank.
CGB_VRAM_OTHER_OFF = 0x0000  # the VRAM bank VBK does not select, 8 KiB
CGB_BG_PALETTES_OFF = 0x2000  # 32 little-endian words: BG palettes 0-7, colours 0-3
CGB_OBJ_PALETTES_OFF = 0x2040  # 32 words: object palettes
CGB_HDMA_OFF = 0x2080  # HDMA's source and destination (u16 each, little-endian), active flag
CGB_SPEED_OFF = 0x2085  # 1 in double speed (PyBoy's double_speed; KEY1's bit 7 only toggles)
CGB_BYTES = 0x2088
DMG_CGB_BYTES = 4  # a DMG machine's Machine.cgb row (whole words: the start-state cache)


def row_bytes(cart_ram_bytes: int) -> int:
    """Bytes of one env's row for a cartridge with ``cart_ram_bytes`` of RAM."""
    if cart_ram_bytes < 0:
        raise ValueError(f"cart_ram_bytes must be >= 0, got {cart_ram_bytes}")
    return MEM_BASE_BYTES + cart_ram_bytes


@dataclass(frozen=True)
class Span:
    """One span ``[lo, hi)`` of the CPU's address space and where an env keeps its bytes.

    ``row``: offset of ``lo``'s byte in the env's row (``None``: not kept per env, the
    ROM); ``banked``: the CPU sees one bank of several here (``row`` is bank 0's);
    ``plain``: RAM the game uses whose bytes read back as written, with no side effect
    (what a task reads, a step end watches and a RAM view shows); ``mirror``: the span
    whose bytes this one shows (echo RAM)."""

    key: str
    name: str
    lo: int
    hi: int
    row: int | None
    banked: bool = False
    plain: bool = False
    mirror: str | None = None

    @property
    def size(self) -> int:
        return self.hi - self.lo

    def row_at(self, addr: int) -> int:
        """Offset of ``addr``'s byte in the env's row (bank 0's where the span is banked)."""
        if self.row is None:
            raise ValueError(f"{self.name} is not kept per env")
        return self.row + addr - self.lo

    def holds(self, addr: int, size: int = 1) -> bool:
        """Whether bytes ``[addr, addr + size)`` all lie in this span."""
        return self.lo <= addr and addr + size <= self.hi


# The DMG's address map, in address order, covering 0x0000-0xFFFF once: every table of
# spans elsewhere (RAM views, task reads, step ends, lockstep regions, hooks) derives
# from it.
SPANS: tuple[Span, ...] = (
    Span("rom0", "ROM bank 0", 0x0000, 0x4000, None),
    Span("romx", "switchable ROM", 0x4000, 0x8000, None, banked=True),
    Span("vram", "VRAM", 0x8000, 0xA000, VRAM_OFF, plain=True),
    Span("cartram", "cart RAM", 0xA000, 0xC000, CART_RAM_OFF, banked=True, plain=True),
    Span("wram", "WRAM", 0xC000, 0xE000, WRAM_OFF, plain=True),
    Span("echo", "echo RAM", 0xE000, 0xFE00, WRAM_OFF, plain=True, mirror="wram"),
    Span("oam", "OAM", 0xFE00, 0xFEA0, OAM_OFF, plain=True),
    Span("unusable", "unusable memory", 0xFEA0, 0xFF00, UNUSABLE_OFF),
    Span("io", "IO registers", 0xFF00, 0xFF80, IO_OFF),
    Span("hram", "HRAM", 0xFF80, 0xFFFF, HRAM_OFF, plain=True),
    Span("ie", "IE", 0xFFFF, 0x10000, IE_OFF),
)
SPAN = {s.key: s for s in SPANS}
# plain RAM the CPU cannot bank away: one fixed row offset per address
FIXED_RAM: tuple[Span, ...] = tuple(s for s in SPANS if s.plain and not s.banked)


def span_at(addr: int) -> Span:
    """The span holding CPU address ``addr`` (0x0000-0xFFFF)."""
    for s in SPANS:
        if s.lo <= addr < s.hi:
            return s
    raise ValueError(f"address {addr:#x} is outside 0x0000-0xFFFF")


def fixed_row_offset(addr: int, size: int = 1) -> int | None:
    """Row offset of ``size`` bytes at ``addr`` when they lie in one span of
    ``FIXED_RAM``; else ``None``."""
    for s in FIXED_RAM:
        if s.holds(addr, size):
            return s.row_at(addr)
    return None


def is_io(addr: int) -> bool:
    """An IO register (0xFF00-0xFF7F) or IE (0xFFFF): bytes whose reads the bus computes."""
    return SPAN["io"].lo <= addr < SPAN["io"].hi or addr == SPAN["ie"].lo


def spans_text(spans: tuple[Span, ...]) -> str:
    """``"VRAM 0x8000-0x9fff, ..."`` for messages."""
    return ", ".join(f"{s.name} {s.lo:#06x}-{s.hi - 1:#06x}" for s in spans)
