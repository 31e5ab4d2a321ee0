"""Shared pieces of the self-checking micro ROMs: memory conventions, serial verdict, tables.

ROM conventions (a ``SelfCheckingRom`` follows them; other suite ROMs may too):

* ``Main`` at $0150 starts with interrupts off and SP = $FFFE (the stack lives in HRAM).
* Result tables are written to WRAM from $C000 (``RESULTS_BASE``); all 8 KiB are theirs.
* HRAM map: $FF80 verdict byte (0 while running, "P" passed, "F" failed), $FF81-$FF82
  address of the first WRAM byte the ROM found wrong, $FF83-$FF8F library scratch,
  $FF90-$FFAF case-engine variables, $FFB0-$FFBF free for the ROM, $FFC0-$FFFE stack.
* When its tests are done the ROM compares every result table with the expected bytes
  Python computed (embedded in ROMX), prints "Passed\\n" or "Failed\\n" over serial,
  writes the verdict byte, clears IE and halts for good.

Python side: ``SelfCheckingRom.check`` reads the same tables through the Backend
protocol and names the first wrong record, so a failure says what went wrong.

Routines every ROM built here contains (callable from ROM code):

* ``LibSerialPutc``  A = byte; sends it (internal clock) and waits for the transfer. Clobbers A.
* ``LibSerialPuts``  HL = zero-terminated string. Clobbers A, HL.
* ``LibTrace``       appends A to the trace at [hTracePtr]; preserves every register and flag.
* ``LibTraceRegs``   appends A, F, B, C, D, E, H, L (8 bytes); preserves everything.
* ``LibCompare``     HL = actual, DE = expected, BC = length (> 0): Z set when equal.
* ``LibLcdOff``      waits for VBlank (LY = 144) and switches the LCD off. Clobbers A.

The case engine (``case_block``) runs a snippet once per (flags-in, input record) pair:
the snippet reads its inputs from ``hIn``/``hFin`` and leaves its outputs in ``hOut``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bench.roms.spec import RomSpec
from gbxcule.asm import build_rom
from gbxcule.asm.routines import db_lines  # the suite ROMs take it from here
from gbxcule.backends.protocol import Backend

RESULTS_BASE = 0xC000
RESULTS_END = 0xE000
HRAM_VERDICT = 0xFF80
HRAM_MISMATCH = 0xFF81
HRAM_TRACE_PTR = 0xFF83
HRAM_IN = 0xFF98  # case engine: current input record (up to 8 bytes)
HRAM_OUT = 0xFFA0  # case engine: the snippet's outputs (up to 8 bytes)
HRAM_CELL = 0xFFA8  # a free byte for [hl] operands
HRAM_SAVE_SP = 0xFFAA  # 2 bytes: where snippets park SP while they borrow it
HRAM_ROM_VARS = 0xFFB0  # 16 bytes the ROM may use freely
STACK_TOP = 0xFFFE
VERDICT_PASSED = ord("P")
VERDICT_FAILED = ord("F")
PASSED = b"Passed\n"
FAILED = b"Failed\n"
MAX_RECORD = 8

HARDWARE_EQUS = f"""
rP1 EQU $FF00
rSB EQU $FF01
rSC EQU $FF02
rDIV EQU $FF04
rTIMA EQU $FF05
rTMA EQU $FF06
rTAC EQU $FF07
rIF EQU $FF0F
rLCDC EQU $FF40
rSTAT EQU $FF41
rLY EQU $FF44
rIE EQU $FFFF
hVerdict EQU ${HRAM_VERDICT:04X}
hMismatch EQU ${HRAM_MISMATCH:04X}
hTracePtr EQU ${HRAM_TRACE_PTR:04X}
hOutPtr EQU $FF85
hRecPtr EQU $FF87
hRecLeft EQU $FF89
hRecStart EQU $FF8A
hRecCount EQU $FF8C
hFinPtr EQU $FF8D
hFinLeft EQU $FF8F
hFin EQU $FF90
hRecSize EQU $FF91
hIn EQU ${HRAM_IN:04X}
hOut EQU ${HRAM_OUT:04X}
hCell EQU ${HRAM_CELL:04X}
hSaveSP EQU ${HRAM_SAVE_SP:04X}
hTmpSP EQU $FFAC
hVars EQU ${HRAM_ROM_VARS:04X}
"""

_ROUTINES = """
LibSerialPuts:
    ld a, [hl+]
    or a
    ret z
    call LibSerialPutc
    jr LibSerialPuts

LibSerialPutc:
    ldh [rSB], a
    ld a, $81
    ldh [rSC], a
.wait:
    ldh a, [rSC]
    bit 7, a
    jr nz, .wait
    ret

LibTrace:
    push hl
    push af
    ldh a, [hTracePtr]
    ld l, a
    ldh a, [hTracePtr + 1]
    ld h, a
    pop af
    ld [hl+], a
    push af
    ld a, l
    ldh [hTracePtr], a
    ld a, h
    ldh [hTracePtr + 1], a
    pop af
    pop hl
    ret

LibTraceRegs:
    push hl
    push af
    call LibTrace
    push af
    pop hl
    ld a, l
    call LibTrace
    ld a, b
    call LibTrace
    ld a, c
    call LibTrace
    ld a, d
    call LibTrace
    ld a, e
    call LibTrace
    pop af
    pop hl
    push af
    ld a, h
    call LibTrace
    ld a, l
    call LibTrace
    pop af
    ret

LibLcdOff:
    ldh a, [rLCDC]
    bit 7, a
    ret z
.wait:
    ldh a, [rLY]
    cp 144
    jr nz, .wait
    xor a
    ldh [rLCDC], a
    ret

LibCompare:
.loop:
    ld a, [de]
    cp [hl]
    jr nz, .diff
    inc de
    inc hl
    dec bc
    ld a, b
    or c
    jr nz, .loop
    ret
.diff:
    ld a, l
    ldh [hMismatch], a
    ld a, h
    ldh [hMismatch + 1], a
    ret

; Case engine. CaseBegin: HL = input records, A = record count (0 = 256), C = record
; size, DE = flags-in list, B = its length. Loads the first case.
CaseBegin:
    ldh [hRecCount], a
    ld a, l
    ldh [hRecStart], a
    ld a, h
    ldh [hRecStart + 1], a
    ld a, c
    ldh [hRecSize], a
    ld a, e
    ldh [hFinPtr], a
    ld a, d
    ldh [hFinPtr + 1], a
    ld a, b
    ldh [hFinLeft], a
    jr CaseLoadFin

; CaseNext: advance to the next case; Z when every case has run.
CaseNext:
    ldh a, [hRecSize]
    ld c, a
    ldh a, [hRecPtr]
    add a, c
    ldh [hRecPtr], a
    ldh a, [hRecPtr + 1]
    adc a, 0
    ldh [hRecPtr + 1], a
    ldh a, [hRecLeft]
    dec a
    ldh [hRecLeft], a
    jr nz, CaseLoadRecord
    ldh a, [hFinPtr]
    add a, 1
    ldh [hFinPtr], a
    ldh a, [hFinPtr + 1]
    adc a, 0
    ldh [hFinPtr + 1], a
    ldh a, [hFinLeft]
    dec a
    ldh [hFinLeft], a
    ret z
CaseLoadFin:
    ldh a, [hFinPtr]
    ld l, a
    ldh a, [hFinPtr + 1]
    ld h, a
    ld a, [hl]
    ldh [hFin], a
    ldh a, [hRecStart]
    ldh [hRecPtr], a
    ldh a, [hRecStart + 1]
    ldh [hRecPtr + 1], a
    ldh a, [hRecCount]
    ldh [hRecLeft], a
CaseLoadRecord:
    ldh a, [hRecPtr]
    ld l, a
    ldh a, [hRecPtr + 1]
    ld h, a
    ldh a, [hRecSize]
    ld b, a
    ld c, LOW(hIn)
.copy:
    ld a, [hl+]
    ldh [c], a
    inc c
    dec b
    jr nz, .copy
    or $FF
    ret

; CaseStore: C = output size; appends hOut[0..C) at [hOutPtr].
CaseStore:
    ldh a, [hOutPtr]
    ld l, a
    ldh a, [hOutPtr + 1]
    ld h, a
    ld b, c
    ld c, LOW(hOut)
.copy:
    ldh a, [c]
    ld [hl+], a
    inc c
    dec b
    jr nz, .copy
    ld a, l
    ldh [hOutPtr], a
    ld a, h
    ldh [hOutPtr + 1], a
    ret
"""


def set_pointer(var: str, addr: int) -> str:
    """Asm storing the 16-bit ``addr`` into the HRAM variable ``var`` (clobbers A)."""
    return (
        f"    ld a, ${addr & 0xFF:02X}\n    ldh [{var}], a\n"
        f"    ld a, ${addr >> 8:02X}\n    ldh [{var} + 1], a\n"
    )


def trace_start(addr: int) -> str:
    """Asm pointing ``LibTrace`` at ``addr`` (clobbers A)."""
    return set_pointer("hTracePtr", addr)


def set_flags(pair: str = "de") -> str:
    """Asm loading F from ``hFin`` through ``pair`` ("bc" or "de"); A gets junk."""
    hi_reg, lo_reg = pair[0], pair[1]
    return f"    ldh a, [hFin]\n    ld {lo_reg}, a\n    push {hi_reg}{lo_reg}\n    pop af\n"


@dataclass(frozen=True)
class CaseRun:
    """One case-engine block: ``snippet`` runs for every flags-in x record pair.

    Outputs land in the order ``for f in fins: for rec in records``; each case
    writes ``out_size`` bytes from ``hOut``.
    """

    label: str  # unique, asm-safe
    snippet: str
    records: tuple[bytes, ...]
    fins: tuple[int, ...]
    out_size: int
    model: Callable[[bytes, int], bytes] | None = None  # (record, flags in) -> outputs
    what: str = ""  # what the snippet does, for failure messages

    def __post_init__(self) -> None:
        sizes = {len(r) for r in self.records}
        if len(sizes) != 1 or not 1 <= next(iter(sizes)) <= MAX_RECORD:
            raise ValueError(f"{self.label}: records must share one size in 1..{MAX_RECORD}")
        if not 1 <= len(self.records) <= 256 or not 1 <= len(self.fins) <= 255:
            raise ValueError(f"{self.label}: 1..256 records and 1..255 flag values allowed")
        if not 1 <= self.out_size <= MAX_RECORD:
            raise ValueError(f"{self.label}: out_size must be 1..{MAX_RECORD}")

    @property
    def output_size(self) -> int:
        return len(self.records) * len(self.fins) * self.out_size

    def cases(self) -> list[tuple[int, bytes]]:
        """(flags in, record) in the order the engine runs them."""
        return [(f, r) for f in self.fins for r in self.records]

    def expected(self) -> bytes:
        if self.model is None:
            raise ValueError(f"{self.label}: no model to compute the expected outputs")
        out = b"".join(bytes(self.model(r, f)) for f, r in self.cases())
        if len(out) != self.output_size:
            raise ValueError(f"{self.label}: model outputs are not {self.out_size} bytes each")
        return out


def runs_table(label: str, addr: int, runs: Sequence[CaseRun]) -> ResultTable:
    """One ResultTable over the packed outputs of ``runs`` (each needs a model)."""
    sizes = {run.out_size for run in runs}
    if len(sizes) != 1:
        raise ValueError(f"table {label}: runs must share one out_size")
    described = [(run, f, r) for run in runs for f, r in run.cases()]

    def describe(i: int) -> str:
        run, f, r = described[i]
        return f"{run.what or run.label} with input {r.hex(' ')}, F in ${f:02X}"

    return ResultTable(label, addr, b"".join(run.expected() for run in runs), sizes.pop(), describe)


def case_runs_source(runs: Sequence[CaseRun], out_addr: int) -> tuple[str, str]:
    """(code, data) running ``runs`` in order, outputs packed from ``out_addr``."""
    code = [set_pointer("hOutPtr", out_addr)]
    data: dict[bytes, str] = {}
    blobs = []
    for run in runs:
        recs = b"".join(run.records)
        fins = bytes(run.fins)
        for blob in (recs, fins):
            if blob not in data:
                data[blob] = f"CaseData{len(data)}"
                blobs.append(f"{data[blob]}:\n{db_lines(blob)}")
        code.append(
            f"{run.label}:\n"
            f"    ld hl, {data[recs]}\n"
            f"    ld a, {len(run.records) & 0xFF}\n"
            f"    ld c, {len(run.records[0])}\n"
            f"    ld de, {data[fins]}\n"
            f"    ld b, {len(run.fins)}\n"
            "    call CaseBegin\n"
            ".loop:\n"
            f"{run.snippet}"
            f"    ld c, {run.out_size}\n"
            "    call CaseStore\n"
            "    call CaseNext\n"
            "    jp nz, .loop\n"
        )
    return "".join(code), 'SECTION "case_data", ROMX\n' + "\n".join(blobs) + "\n"


def _default_describe(index: int) -> str:
    return f"record {index}"


@dataclass(frozen=True)
class ResultTable:
    """A WRAM table the ROM fills and Python knows byte for byte."""

    label: str  # asm-safe, unique in the ROM
    addr: int
    expected: bytes
    record_size: int = 1
    describe: Callable[[int], str] = _default_describe  # record index -> what it holds

    def __post_init__(self) -> None:
        if not self.expected or len(self.expected) % self.record_size:
            raise ValueError(f"table {self.label}: size must be a positive multiple of the record")
        if not (RESULTS_BASE <= self.addr and self.addr + len(self.expected) <= RESULTS_END):
            raise ValueError(
                f"table {self.label}: ${self.addr:04X}+{len(self.expected)} not in WRAM"
            )

    def first_mismatch(self, got: bytes) -> str | None:
        """None when ``got`` is right, else a message naming the first wrong record."""
        if got == self.expected:
            return None
        size = self.record_size
        bad = [
            i for i in range(0, len(got), size) if got[i : i + size] != self.expected[i : i + size]
        ]
        i = bad[0]
        return (
            f"table {self.label}: {len(bad)} of {len(got) // size} records wrong; first "
            f"{self.describe(i // size)} at ${self.addr + i:04X}: got {got[i : i + size].hex(' ')}, "
            f"expected {self.expected[i : i + size].hex(' ')}"
        )


@dataclass(frozen=True)
class SelfCheckingRom:
    """A ROM whose ``body`` fills ``tables`` and then checks them itself (see module doc)."""

    name: str
    body: str
    tables: tuple[ResultTable, ...]
    routines: str = ""  # extra ROM0 code after the body (subroutines)
    vectors: Mapping[int, str] = field(default_factory=dict)  # $00-$60: code at that vector
    data: str = ""  # extra sections (e.g. from case_runs_source)

    def source(self) -> str:
        vec = [
            f'SECTION "vector_{addr:02X}", ROM0[${addr:04X}]\n{code}\n'
            for addr, code in sorted(self.vectors.items())
        ]
        compares = "".join(
            f"    ld hl, ${t.addr:04X}\n    ld de, LibExpected{i}\n"
            f"    ld bc, {len(t.expected)}\n    call LibCompare\n    jp nz, LibFailed\n"
            for i, t in enumerate(self.tables)
        )
        expected = "".join(
            f'SECTION "expected_{i}", ROMX\nLibExpected{i}:\n{db_lines(t.expected)}\n'
            for i, t in enumerate(self.tables)
        )
        return f"""{HARDWARE_EQUS}
{"".join(vec)}
SECTION "main", ROM0[$0150]
Main:
    di
    ld sp, ${STACK_TOP:04X}
    xor a
    ldh [hVerdict], a
{self.body}
LibFinish:
    di
{compares}
    ld hl, LibStrPassed
    call LibSerialPuts
    ld a, {VERDICT_PASSED}
    jr LibStop
LibFailed:
    ld hl, LibStrFailed
    call LibSerialPuts
    ld a, {VERDICT_FAILED}
LibStop:
    ldh [hVerdict], a
    xor a
    ldh [rIE], a
.halt:
    halt
    nop
    jr .halt
LibStrPassed:
    db "Passed", 10, 0
LibStrFailed:
    db "Failed", 10, 0
{_ROUTINES}
{self.routines}
{self.data}
{expected}
"""

    def __post_init__(self) -> None:
        for addr in self.vectors:
            if addr % 8 or not 0 <= addr <= 0x60:
                raise ValueError(f"{self.name}: ${addr:02X} is not an RST/interrupt vector")

    def build(self) -> bytes:
        return build_rom(self.source(), title=self.name.upper()[:16])

    def check(self, backend: Backend, env: int) -> None:
        """Raise AssertionError naming the first wrong record (see module doc)."""
        verdict = int(backend.read_memory(env, HRAM_VERDICT, HRAM_VERDICT + 1)[0])
        if verdict not in (VERDICT_PASSED, VERDICT_FAILED):
            raise AssertionError(
                f"{self.name}: ROM did not finish (verdict byte ${HRAM_VERDICT:04X} = ${verdict:02X})"
            )
        for t in self.tables:
            got = bytes(backend.read_memory(env, t.addr, t.addr + len(t.expected)))
            problem = t.first_mismatch(got)
            if problem:
                raise AssertionError(f"{self.name}: {problem}")
        if verdict != VERDICT_PASSED:
            lo, hi = backend.read_memory(env, HRAM_MISMATCH, HRAM_MISMATCH + 2)
            raise AssertionError(
                f"{self.name}: tables are right but the ROM reported failure "
                f"(its first mismatch at ${int(hi) << 8 | int(lo):04X})"
            )
        serial = bytes(backend.serial_output(env))
        if serial != PASSED:
            raise AssertionError(f"{self.name}: serial output {serial!r}, expected {PASSED!r}")


_PLANS: dict[str, Callable[[], SelfCheckingRom]] = {}


def self_checking_rom(name: str) -> SelfCheckingRom:
    """The SelfCheckingRom behind the suite ROM ``name`` (built by ``rom_spec``)."""
    if name not in _PLANS:
        raise KeyError(f"no self-checking ROM named {name!r} (is its suite module imported?)")
    return _PLANS[name]()


def rom_spec(
    name: str,
    description: str,
    plan: Callable[[], SelfCheckingRom],
    *,
    steps: int,
    tags: tuple[str, ...] = ("cpu",),
) -> RomSpec:
    """A RomSpec built from ``plan`` (computed once, on first use)."""
    cached = _PLANS[name] = functools.cache(plan)

    def build() -> bytes:
        return cached().build()

    def check(backend: Backend, env: int) -> None:
        cached().check(backend, env)

    return RomSpec(
        name=name, description=description, build=build, check=check, steps=steps, tags=tags
    )


class TraceBuilder:
    """A body of steps that append bytes to one trace table through ``LibTrace``.

    Each step is asm under its own global label (so ``.local`` labels are per step)
    plus the bytes Python expects it to append; a wrong byte is reported with the
    step that should have written it.
    """

    def __init__(self, label: str, addr: int = RESULTS_BASE) -> None:
        self.label = label
        self.addr = addr
        self._asm: list[str] = [trace_start(addr)]
        self._expected = bytearray()
        self._owner: list[str] = []

    def step(self, what: str, asm: str, expected: bytes | Sequence[int]) -> None:
        data = bytes(expected)
        self._asm.append(f"{self.label}Step{len(self._asm)}:  ; {what}\n{asm}")
        self._owner += [f"byte {k} of step '{what}'" for k in range(len(data))]
        self._expected += data

    def body(self) -> str:
        return "".join(self._asm)

    def table(self) -> ResultTable:
        owner = list(self._owner)
        return ResultTable(self.label, self.addr, bytes(self._expected), 1, lambda i: owner[i])
