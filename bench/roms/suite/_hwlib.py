"""Probe programs and MBC helpers for the hardware micro-ROMs (``hw_*.py``).

Built on ``_lib.SelfCheckingRom`` (verdict byte, WRAM result tables, serial
"Passed"/"Failed"): a probe program runs a list of probes in order; each probe
leaves its observed bytes in one result table at ``RESULTS_BASE``, probe after
probe, and the check names the probe whose bytes are wrong.

``_lib`` keeps its expected tables in ROMX bank 1, so a ROM that switches
banks must pass an ``epilogue`` that maps bank 1 back at $4000 before the
verdict. HRAM $FFB0-$FFBF (``_lib.HRAM_ROM_VARS``) is where the DMA routine
lives; scratch data goes to WRAM $D000 and above.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench.roms.spec import RomSpec
from bench.roms.suite._lib import RESULTS_BASE, ResultTable, SelfCheckingRom
from gbxcule.asm import build_rom
from gbxcule.backends.protocol import Backend

SCRATCH = 0xD000  # WRAM the ROMs may use freely (result tables stay below)

# Routines the hw ROMs add to _lib's (ROM0).
HW_ROUTINES = """
; Copies B bytes from [HL] to [DE] (B = 0 copies 256). Clobbers A, B, DE, HL.
HwCopy:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, HwCopy
    ret
"""


@dataclass(frozen=True)
class Probe:
    """One observation: ``code`` runs, then ``len(expected)`` bytes land in WRAM.

    A byte probe's code leaves the observed byte in A. A block probe's code is
    entered with HL = its WRAM destination and must write every byte itself.
    Each probe's code starts under its own global label, so local labels
    (``.wait``) inside one probe never clash with another's.
    """

    label: str
    code: str
    expected: bytes
    block: bool = False


def byte_probe(label: str, code: str, expected: int) -> Probe:
    if not 0 <= expected <= 0xFF:
        raise ValueError(f"probe {label!r}: expected byte out of range: {expected}")
    return Probe(label, code, bytes([expected]))


def block_probe(label: str, code: str, expected: bytes) -> Probe:
    if not expected:
        raise ValueError(f"block probe {label!r} expects no bytes")
    return Probe(label, code, bytes(expected), block=True)


def probe_rom(
    name: str,
    probes: Sequence[Probe],
    *,
    setup: str = "",
    epilogue: str = "",
    routines: str = "",
    vectors: Mapping[int, str] | None = None,
    data: str = "",
) -> SelfCheckingRom:
    """A self-checking ROM running ``setup``, every probe, then ``epilogue``."""
    if not probes:
        raise ValueError(f"{name}: a probe program needs at least one probe")
    body = [setup]
    labels: list[str] = []
    addr = RESULTS_BASE
    for i, p in enumerate(probes):
        body.append(f"HwProbe{i}:  ; {p.label}")
        if p.block:
            body.append(f"    ld hl, ${addr:04X}\n{p.code}")
        else:
            body.append(f"{p.code}    ld [${addr:04X}], a")
        labels += (
            [p.label]
            if len(p.expected) == 1
            else [f"{p.label} +{k}" for k in range(len(p.expected))]
        )
        addr += len(p.expected)
    body.append(epilogue)
    table = ResultTable(
        "probes",
        RESULTS_BASE,
        b"".join(p.expected for p in probes),
        describe=lambda i: f"probe byte {i} ({labels[i]})",
    )
    return SelfCheckingRom(
        name=name,
        body="\n".join(body) + "\n",
        tables=(table,),
        routines=HW_ROUTINES + routines,
        vectors=dict(vectors or {}),
        data=data,
    )


class _SerialAfterPrefix:
    """A backend view whose serial output starts after ``prefix`` (already verified)."""

    def __init__(self, backend: Backend, prefix: bytes) -> None:
        self._backend = backend
        self._prefix = prefix

    def read_memory(self, env: int, lo: int, hi: int):
        return self._backend.read_memory(env, lo, hi)

    def serial_output(self, env: int) -> bytes:
        return bytes(self._backend.serial_output(env))[len(self._prefix) :]


def hw_spec(
    name: str,
    description: str,
    plan: Callable[[], SelfCheckingRom],
    *,
    cart_type: str = "ROM_ONLY",
    rom_banks: int = 2,
    ram_banks: int = 0,
    steps: int = 30,
    serial_prefix: bytes = b"",
    extra_check: Callable[[Backend, int], None] | None = None,
    inputs: tuple[int, ...] | None = None,
    frames_per_step: int = 1,
    release_after_frames: int = 1,
    tags: tuple[str, ...] = ("hw",),
    cgb_flag: int = 0,
) -> RomSpec:
    """A RomSpec for a hw ROM: ``plan`` (computed once) built with the given cartridge.

    The check is ``SelfCheckingRom.check``; ``serial_prefix`` is what the ROM
    sends before its verdict and must match exactly; ``extra_check`` runs after.
    """
    cached = functools.cache(plan)

    def build() -> bytes:
        rom = cached()
        return build_rom(
            rom.source(),
            title=name.upper().replace("_", "")[:16],
            cart_type=cart_type,
            rom_banks=rom_banks,
            ram_banks=ram_banks,
            cgb_flag=cgb_flag,
        )

    def check(backend: Backend, env: int) -> None:
        if serial_prefix:
            serial = bytes(backend.serial_output(env))
            if not serial.startswith(serial_prefix):
                raise AssertionError(
                    f"{name}: serial output {serial!r} does not start with {serial_prefix!r}"
                )
            cached().check(_SerialAfterPrefix(backend, serial_prefix), env)  # type: ignore[arg-type]
        else:
            cached().check(backend, env)
        if extra_check is not None:
            extra_check(backend, env)

    return RomSpec(
        name=name,
        description=description,
        build=build,
        check=check,
        steps=steps,
        frames_per_step=frames_per_step,
        release_after_frames=release_after_frames,
        inputs=inputs,
        tags=tags,
    )


def mem_write(addr: int, value: int) -> str:
    """Asm writing ``value`` to ``addr`` (through A)."""
    return f"    ld a, ${value:02X}\n    ld [${addr:04X}], a\n"


def mem_read(addr: int) -> str:
    """Asm loading A from ``addr``."""
    return f"    ld a, [${addr:04X}]\n"


SIG_ADDR_X = 0x7F00  # a bank's signature seen through $4000-$7FFF
SIG_ADDR_0 = 0x3F00  # ... and through $0000-$3FFF


def bank_sig(bank: int) -> bytes:
    """Signature of ROM bank ``bank``: its number's low byte, then $B0 | bit 8."""
    return bytes([bank & 0xFF, 0xB0 | bank >> 8])


def bank_signature_sections(banks: Iterable[int]) -> str:
    """Sections putting ``bank_sig(bank)`` at offset $3F00 of every listed bank.

    Mapped at $4000-$7FFF the signature sits at $7F00; mapped at $0000-$3FFF
    (MBC1 mode 1) it sits at $3F00. Bank 0 is included when listed.
    """
    out = []
    for bank in banks:
        data = ", ".join(f"${b:02X}" for b in bank_sig(bank))
        if bank == 0:
            out.append(f'SECTION "hw_sig_0", ROM0[$3F00]\n    db {data}')
        else:
            out.append(f'SECTION "hw_sig_{bank}", ROMX[$7F00], BANK[{bank}]\n    db {data}')
    return "\n".join(out) + "\n"
