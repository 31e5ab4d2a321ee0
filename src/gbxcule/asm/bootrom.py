"""Boot ROMs: the three ``boot=`` modes of the backends (see :data:`BOOT_MODES`).

* ``"fast"`` (the default): :data:`BOOT_ROM_SOURCE` below, our own 256-byte boot ROM.
* ``"dmg"``: :data:`DMG_BOOT_ROM_SOURCE` (module ``gbxcule.asm.dmg_boot``), our own boot
  ROM timed to leave a real DMG's post-boot DIV counter and LCD phase.
* ``"pyboy"``: the DMG boot ROM of the installed PyBoy package, read at run time from
  ``pyboy/core/bootrom_dmg.bin`` (never copied into this repository).

The fast boot ROM: both PyBoy (``PyBoy(..., bootrom=boot_rom_path())``) and our emulator run it
from power-on. It writes the documented DMG post-boot register and IO values
(Pan Docs, "Power Up Sequence") and hands over to the cartridge at 0x0100:
``ld a, $01`` at 0x00FC and ``ldh [$50], a`` at 0x00FE, so the write that unmaps
the boot ROM is its last instruction and the next fetch is the cartridge's 0x0100.

What it deliberately does not do:

* No logo scroll, no VRAM/OAM clearing: PyBoy powers on with VRAM, OAM, WRAM
  and HRAM zeroed, and so does our emulator.
* No stack use (SP is loaded once), so HRAM stays all zero.
* No sound register writes: the sound unit stays as it powers on (NR52 $70, off), so a
  game starts from a silent, known APU.
* No SB write: PyBoy records every SB write as serial output.
* No DIV write: the divider keeps counting from power-on, so its internal
  16-bit counter equals the T-cycle count (mod 65536) when the cartridge starts.

The LCD is switched on by the second-to-last instruction pair (0x00F8-0x00FB).
PyBoy ends a frame when the LCD is switched on, so the first ``PyBoy.tick()``
after power-on returns right after that write, with two boot instructions
(20 T-cycles) left. Measured values at PC=0x0100 are in history/postboot.md.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gbxcule.asm.assembler import assemble
from gbxcule.files import cached_file

BOOT_ROM_SIZE = 0x100

BOOT_ROM_SOURCE = """
; gbxcule DMG boot ROM: post-boot state, then hand over to the cartridge.
SECTION "boot", ROM0[$0000]
Boot:
    ld sp, $FFFE
    ld a, $30           ; P1: no button group selected; PyBoy then reads $CF
    ldh [$00], a
    xor a
    ldh [$05], a        ; TIMA
    ldh [$06], a        ; TMA
    ldh [$07], a        ; TAC: timer off (reads $F8)
    ldh [$41], a        ; STAT: no interrupt sources selected
    ldh [$42], a        ; SCY
    ldh [$43], a        ; SCX
    ldh [$45], a        ; LYC
    ldh [$4A], a        ; WY
    ldh [$4B], a        ; WX
    ldh [$FF], a        ; IE
    ld a, $FC
    ldh [$47], a        ; BGP
    ld a, $FF
    ldh [$48], a        ; OBP0
    ldh [$49], a        ; OBP1
    ld a, $01
    ldh [$0F], a        ; IF = VBlank pending (reads $E1)
    ld bc, $0013
    ld de, $00D8
    ld hl, $014D
    add a, $FF          ; $01 + $FF = $00 with Z, H and C set: F = $B0
    jp Handover

SECTION "handover", ROM0[$00F8]
Handover:
    ld a, $91
    ldh [$40], a        ; LCDC: LCD and BG on, tiles at $8000 (PyBoy ends frame 0 here)
    ld a, $01           ; A = $01 post-boot; flags untouched since the add
    ldh [$50], a        ; unmap the boot ROM; the next fetch is the cartridge's $0100
"""


@functools.lru_cache(maxsize=1)
def boot_rom_bytes() -> bytes:
    """The 256-byte boot ROM image."""
    program = assemble(BOOT_ROM_SOURCE)
    image = bytes(program.image()[:BOOT_ROM_SIZE])
    end = max(s.end for s in program.rom_sections)
    if end != BOOT_ROM_SIZE:
        raise AssertionError(f"boot ROM must end exactly at $0100, ends at ${end:04X}")
    return image


@functools.lru_cache(maxsize=1)
def boot_rom_path() -> Path:
    """A file holding :func:`boot_rom_bytes`, in a cache dir keyed by its hash (written atomically)."""
    return cached_file(boot_rom_bytes(), "gbxcule-bootrom", "dmg_boot", ".bin")


# ---- boot modes ---------------------------------------------------------------------------

BOOT_MODES = ("fast", "dmg", "pyboy")
DEFAULT_BOOT = "fast"
# Frames (PyBoy ``tick()``s) a boot may take before the reset gives up: the fast boot hands
# over in frame 1, the dmg boot in frame 3, PyBoy's boot ROM (logo scroll) in frame 65.
BOOT_MAX_FRAMES = {"fast": 4, "dmg": 8, "pyboy": 128}
PYBOY_BOOT_ROM_NAME = "bootrom_dmg.bin"
PYBOY_CGB_BOOT_ROM_NAME = "bootrom_cgb.bin"


class BootRomError(RuntimeError):
    """A boot ROM cannot be had (PyBoy's is missing or malformed)."""


def check_boot(boot: str) -> str:
    """``boot`` if it names a boot mode, else a ``ValueError`` naming the modes."""
    if boot not in BOOT_MODES:
        raise ValueError(f"boot must be one of {', '.join(map(repr, BOOT_MODES))}, got {boot!r}")
    return boot


def pyboy_boot_rom_path(cgb: bool = False) -> Path:
    """``pyboy/core/bootrom_dmg.bin`` (``cgb``: ``bootrom_cgb.bin``, PyBoy's own Game Boy
    Color boot ROM) of the installed PyBoy, located without importing it."""
    import importlib.util

    which = "CGB" if cgb else "DMG"
    spec = importlib.util.find_spec("pyboy")
    if spec is None or not spec.submodule_search_locations:
        raise BootRomError(
            f"PyBoy's {which} boot ROM is read from the installed pyboy package, but pyboy is "
            "not installed"
        )
    name = PYBOY_CGB_BOOT_ROM_NAME if cgb else PYBOY_BOOT_ROM_NAME
    path = Path(next(iter(spec.submodule_search_locations))) / "core" / name
    if not path.is_file():
        raise BootRomError(
            f"PyBoy's {which} boot ROM is needed, but {path} is missing from the installed "
            "pyboy package"
        )
    return path


@functools.lru_cache(maxsize=2)
def pyboy_boot_rom_bytes(cgb: bool = False) -> bytes:
    """PyBoy's own DMG (``cgb``: CGB) boot ROM, read from the installed package (256 bytes)."""
    path = pyboy_boot_rom_path(cgb)
    data = path.read_bytes()
    if len(data) != BOOT_ROM_SIZE:
        raise BootRomError(f"{path} has {len(data)} bytes; PyBoy's boot ROMs have {BOOT_ROM_SIZE}")
    return data


def boot_image(boot: str) -> bytes:
    """The 256-byte boot ROM image of boot mode ``boot``."""
    from gbxcule.asm.dmg_boot import dmg_boot_rom_bytes

    images = {"fast": boot_rom_bytes, "dmg": dmg_boot_rom_bytes, "pyboy": pyboy_boot_rom_bytes}
    return images[check_boot(boot)]()


def boot_file(boot: str) -> Path:
    """A file holding :func:`boot_image` (PyBoy's own file for ``"pyboy"``), for ``PyBoy(bootrom=)``."""
    if check_boot(boot) == "pyboy":
        return pyboy_boot_rom_path()
    if boot == "fast":
        return boot_rom_path()
    return cached_file(boot_image(boot), "gbxcule-bootrom", f"{boot}_boot", ".bin")
