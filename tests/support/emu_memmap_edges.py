"""A lockstep program for the memory map's borders (a body for ``emu_timing_programs.program``).

Every address one byte either side of a region border (ROM / VRAM / cart RAM / WRAM /
echo / OAM / unusable / IO / HRAM / IE, and 0xFFFF to 0x0000) is read by ``LD A, [n16]``,
by ``[HL+]`` and ``[HL-]`` across the border, written and read back where a write is
harmless, popped as 16 bits, pushed over as 16 bits and stored to by ``LD [n16], SP``.
Each value read goes to a log at $D000 (DE); the lockstep compares all RAM every frame,
so a read, a write or a byte landing on the wrong side of a border shows as a diff.
The whole table runs with the LCD on, then off.
"""

from __future__ import annotations

# (address, a plain write to it is harmless here: no mapper register, no IO side effect)
EDGES = (
    (0x0000, False),
    (0x7FFF, False),
    (0x8000, True),
    (0x9FFF, True),
    (0xA000, True),
    (0xBFFF, True),
    (0xC000, True),
    (0xDFFF, True),
    (0xE000, True),
    (0xFDFF, True),
    (0xFE00, True),
    (0xFE9F, True),
    (0xFEA0, True),
    (0xFEFF, True),
    (0xFF00, True),
    (0xFF7F, True),
    (0xFF80, True),
    (0xFFFE, True),
    (0xFFFF, True),
)
STACK = 0xDFF0  # Main's; Edges' return address sits just below it
INNER = 0xDFE0  # Edges' own SP between cases, below that return address


def _edge_cases(addr: int, writable: bool, k: int) -> list[str]:
    nxt = (addr + 1) & 0xFFFF
    val = (0x5A + 37 * k) & 0xFF
    out = [
        f"    ld a, [${addr:04X}]",
        "    call Log",
        f"    ld hl, ${addr:04X}",
        "    ld a, [hl+]",  # then the byte past the border
        "    call Log",
        "    ld a, [hl-]",
        "    call Log",
        f"    ld sp, ${addr:04X}",  # 16 bits from the border on
        "    pop bc",
        f"    ld sp, ${INNER:04X}",
        "    ld a, c",
        "    call Log",
        "    ld a, b",
        "    call Log",
    ]
    if writable:
        out += [
            f"    ld a, ${val:02X}",
            f"    ld [${addr:04X}], a",
            f"    ld a, [${addr:04X}]",
            "    call Log",
        ]
    if writable and nxt >= 0x8000:  # not from 0xFFFF into ROM (a mapper register)
        out += [  # a 16-bit push over the border: bytes at addr and addr + 1
            f"    ld bc, ${(val << 8 | (val ^ 0xFF)):04X}",
            f"    ld sp, ${(addr + 2) & 0xFFFF:04X}",
            "    push bc",
            f"    ld sp, ${INNER:04X}",
            f"    ld a, [${addr:04X}]",
            "    call Log",
            f"    ld a, [${nxt:04X}]",
            "    call Log",
            f"    ld sp, ${(0x1234 + k) & 0xFFFF:04X}",
            f"    ld [${addr:04X}], sp",  # LD [n16], SP: low byte at addr, high byte past it
            f"    ld sp, ${INNER:04X}",
            f"    ld a, [${addr:04X}]",
            "    call Log",
            f"    ld a, [${nxt:04X}]",
            "    call Log",
        ]
    return out


def memmap_edges_body() -> str:
    lines = [
        'SECTION "main", ROM0[$0150]',
        "Main:",
        "    di",
        f"    ld sp, ${STACK:04X}",
        "    ld de, $D000",
        "    call Edges",
        ".vblank:",  # the LCD goes off only in VBlank
        "    ldh a, [$44]",
        "    cp 144",
        "    jr nz, .vblank",
        "    ldh a, [$40]",
        "    res 7, a",
        "    ldh [$40], a",
        "    call Edges",
        "    ldh a, [$40]",
        "    set 7, a",
        "    ldh [$40], a",
        ".idle:",
        "    jr .idle",
        "Log:",
        "    ld [de], a",
        "    inc de",
        "    ret",
        "Hook:",
        "    ret",
        "Rst0:",
        "    ret",
        "Edges:",
    ]
    lines.append(f"    ld sp, ${INNER:04X}")
    for k, (addr, writable) in enumerate(EDGES):
        lines += _edge_cases(addr, writable, k)
    lines += [f"    ld sp, ${STACK - 2:04X}", "    ret"]
    return "\n".join(lines) + "\n"
