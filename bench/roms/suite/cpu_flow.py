"""Stack and control-flow micro ROM: PUSH/POP, JP/JR/CALL/RET (every condition taken and
not taken), RST to all 8 vectors, JP HL, RETI; the paths taken are traced into WRAM.

Conditional step k traces ``k | $80`` on its taken path and ``k`` on the other, so the
trace shows which way every branch went; Python decides with ``condition_holds``.
Any path that must never run traces ``TRAP``.
"""

from __future__ import annotations

from bench.roms.suite._lib import STACK_TOP, SelfCheckingRom, TraceBuilder, rom_spec
from bench.roms.suite.cpu_model import FLAG_C, FLAG_Z, condition_holds
from gbxcule.core.isa import CONDITIONS

TRAP = 0xEE
RST_BASE = 0xF0  # rst $n*8 traces RST_BASE + n
# For each condition: flags making it true and false, other flags opposite where possible.
FLAG_CASES = {
    "nz": (0xF0 & ~FLAG_Z, FLAG_Z),
    "z": (FLAG_Z, 0xF0 & ~FLAG_Z),
    "nc": (0xF0 & ~FLAG_C, FLAG_C),
    "c": (FLAG_C, 0xF0 & ~FLAG_C),
}


def _set_f(f: int) -> str:
    return f"    ld hl, ${f:04X}\n    push hl\n    pop af\n"


def _trace(v: int) -> str:
    return f"    ld a, ${v:02X}\n    call LibTrace\n"


def _branch_steps(t: TraceBuilder) -> None:
    k = 1
    for kind in ("jp", "jr", "call", "ret"):
        for cc in CONDITIONS:
            for f in FLAG_CASES[cc]:
                taken = condition_holds(cc, f)
                what = f"{kind} {cc} with F=${f:02X}"
                if kind == "jp":
                    asm = (
                        _set_f(f)
                        + f"    jp {cc}, .taken\n"
                        + _trace(k)
                        + "    jp .next\n.taken:\n"
                        + _trace(k | 0x80)
                        + ".next:\n"
                    )
                    expected = [k | 0x80] if taken else [k]
                elif kind == "jr":  # backward conditional jump
                    asm = (
                        "    jr .setup\n.back:\n"
                        + _trace(k | 0x80)
                        + "    jr .next\n.setup:\n"
                        + _set_f(f)
                        + f"    jr {cc}, .back\n"
                        + _trace(k)
                        + ".next:\n"
                    )
                    expected = [k | 0x80] if taken else [k]
                elif kind == "call":
                    asm = _set_f(f) + f"    ld a, ${k | 0x80:02X}\n    call {cc}, LibTrace\n"
                    asm += _trace(k)
                    expected = [k | 0x80, k] if taken else [k]
                else:
                    asm = (
                        _set_f(f)
                        + "    call .sub\n"
                        + _trace(k | 0x40)
                        + "    jr .next\n.sub:\n"
                        + f"    ret {cc}\n"
                        + _trace(k)
                        + "    ret\n.next:\n"
                    )
                    expected = [k | 0x40] if taken else [k, k | 0x40]
                t.step(what, asm, expected)
                k += 1


def _unconditional_steps(t: TraceBuilder) -> None:
    t.step("jp nn", "    jp .to\n" + _trace(TRAP) + ".to:\n" + _trace(0x50), [0x50])
    t.step(
        "jr forward and backward",
        "    jr .fwd\n.bwd:\n"
        + _trace(0x52)
        + "    jr .out\n.fwd:\n"
        + _trace(0x51)
        + "    jr .bwd\n.out:\n",
        [0x51, 0x52],
    )
    t.step("jp hl", "    ld hl, .to\n    jp hl\n" + _trace(TRAP) + ".to:\n" + _trace(0x53), [0x53])
    t.step(
        "nested call / ret",
        "    call FlowOuter\n" + _trace(0x57),
        [0x54, 0x55, 0x56, 0x57],
    )
    for n in range(8):
        t.step(
            f"rst ${n * 8:02X}",
            f"    rst ${n * 8:02X}\n" + _trace(0x60 + n),
            [RST_BASE + n, 0x60 + n],
        )


def _stack_steps(t: TraceBuilder) -> None:
    # push af/bc/de/hl, pop them into other pairs: AF<-HL, BC<-DE, DE<-BC, HL<-AF.
    asm = (
        "    ld hl, $A5B0\n    push hl\n    pop af\n"
        "    ld bc, $1234\n    ld de, $5678\n    ld hl, $9ABC\n"
        "    push af\n    push bc\n    push de\n    push hl\n"
        "    ld [hTmpSP], sp\n"
        "    ldh a, [hTmpSP]\n    call LibTrace\n    ldh a, [hTmpSP + 1]\n    call LibTrace\n"
        "    pop af\n    pop bc\n    pop de\n    pop hl\n    call LibTraceRegs\n"
    )
    sp = STACK_TOP - 8
    # AF <- $9ABC (F keeps only its high nibble), BC <- $5678, DE <- $1234, HL <- $A5B0
    t.step(
        "push all pairs, pop crossed",
        asm,
        [sp & 0xFF, sp >> 8, 0x9A, 0xB0, 0x56, 0x78, 0x12, 0x34, 0xA5, 0xB0],
    )
    for value in (0x12FF, 0x340F, 0x5680):
        hi, lo = value >> 8, value & 0xFF
        t.step(
            f"pop af from ${value:04X} masks F",
            f"    ld bc, ${value:04X}\n    push bc\n    pop af\n    push af\n    pop de\n"
            "    ld a, d\n    call LibTrace\n    ld a, e\n    call LibTrace\n",
            [hi, lo & 0xF0],
        )
    # push writes the high byte at SP-1 and the low byte at SP-2 (read both before any call).
    t.step(
        "push byte order",
        "    ld bc, $BEEF\n    push bc\n    pop bc\n"
        f"    ld a, [${STACK_TOP - 2:04X}]\n    ld d, a\n    ld a, [${STACK_TOP - 1:04X}]\n"
        "    ld e, a\n    ld a, d\n    call LibTrace\n    ld a, e\n    call LibTrace\n",
        [0xEF, 0xBE],
    )


def _reti_step(t: TraceBuilder) -> None:
    # RETI returns like RET (it also sets IME; IE is 0 here so nothing is dispatched).
    t.step(
        "reti returns",
        "    call .sub\n"
        + _trace(0x59)
        + "    jr .out\n.sub:\n"
        + _trace(0x58)
        + "    reti\n.out:\n    di\n",
        [0x58, 0x59],
    )
    t.step(
        "stack balanced at the end",
        "    ld [hTmpSP], sp\n    ldh a, [hTmpSP]\n    call LibTrace\n    ldh a, [hTmpSP + 1]\n    call LibTrace\n",
        [STACK_TOP & 0xFF, STACK_TOP >> 8],
    )


ROUTINES = (
    "FlowOuter:\n"
    + _trace(0x54)
    + "    call FlowInner\n"
    + _trace(0x56)
    + "    ret\nFlowInner:\n"
    + _trace(0x55)
    + "    ret\nRstCommon:\n    call LibTrace\n    ret\n"
)


def _plan() -> SelfCheckingRom:
    t = TraceBuilder("flow")
    t.step("clear IE", "    xor a\n    ldh [rIE], a\n", [])
    _branch_steps(t)
    _unconditional_steps(t)
    _stack_steps(t)
    _reti_step(t)
    vectors = {n * 8: f"    ld a, ${RST_BASE + n:02X}\n    jp RstCommon\n" for n in range(8)}
    return SelfCheckingRom("flow", t.body(), (t.table(),), routines=ROUTINES, vectors=vectors)


ROMS = [
    rom_spec(
        "flow",
        "PUSH/POP, JP/JR/CALL/RET every condition taken+not, RST x8, JP HL, RETI -> path trace",
        _plan,
        steps=20,
    )
]
