"""The ``loop-*`` ROMs: one copy loop (``ld a,[hl+]; add a,b; <op>; ld [de],a; inc de;
dec b; jr nz``) on an MBC1 cartridge, differing in one access each, so the difference of
their ns per instruction prices that access (``bench.cpu_profile``); ``loop-wram-code``
runs ``loop-wram``'s loop from WRAM, pricing code fetched outside ROM."""

from __future__ import annotations

# name -> (source address, destination address, the third instruction of the loop)
LOOP_VARIANTS = {
    "loop-wram": ("$C000", "$C100", "xor $5A"),  # bench/busy_rom.py's copy loop
    "loop-rom0": ("$0000", "$C100", "xor $5A"),  # reads from ROM bank 0
    "loop-romx": ("$4000", "$C100", "xor $5A"),  # reads from the switchable bank
    "loop-io": ("$C000", "$C100", "ldh a, [$44]"),  # an LY read instead of the XOR
    "loop-vram": ("$C000", "$9800", "xor $5A"),  # writes to the BG map
    "loop-mbc": ("$C000", "$2000", "xor $5A"),  # writes to the MBC1 bank register
    "loop-wram-code": ("$C000", "$C100", "xor $5A", True),  # loop-wram's loop run from WRAM
}


def loop_source(src: str, dst: str, op: str, in_wram: bool = False) -> str:
    """The copy loop; ``in_wram``: copied to $D000 first and run from there (code fetched
    through the bus, as games run routines they copy to RAM)."""
    loop = f"""
Loop:
    ld hl, {src}
    ld de, {dst}
    ld b, 0
.copy:
    ld a, [hl+]
    add a, b
    {op}
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    jr Loop
LoopEnd:
"""
    if not in_wram:
        return f'SECTION "main", ROM0[$0150]\nMain:\n{loop}'
    return f"""
SECTION "main", ROM0[$0150]
Main:
    ld hl, Loop
    ld de, $D000
    ld c, LoopEnd - Loop
.move:
    ld a, [hl+]
    ld [de], a
    inc de
    dec c
    jr nz, .move
    jp $D000
{loop}"""


def loop_rom_path(name: str) -> str:
    """The ``loop-*`` ROM ``name`` (``LOOP_VARIANTS``) as a file, assembled when needed."""
    from bench.game_rom import OUT_DIR
    from gbxcule.asm import build_rom
    from gbxcule.files import write_atomic

    data = build_rom(loop_source(*LOOP_VARIANTS[name]), cart_type="MBC1", rom_banks=4)
    path = OUT_DIR / f"{name}.gb"
    if not path.is_file() or path.read_bytes() != data:
        write_atomic(path, data)
    return str(path)
