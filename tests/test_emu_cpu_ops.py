"""Every SM83 opcode against PyBoy 2.8.1: registers, cycle count and RAM at a stop label.

Random programs (tests/support/emu_cpu_fuzz.py) run on PyBoy and on our CPU
(kernels/cpu/run_cpu.py, no IO timing) from power-on through the boot ROM; both
stop when PC reaches ``Done``. Exhaustive tables cover DAA and the ALU flags.
"""

from __future__ import annotations

import pytest

from gbxcule.core.isa import BASE, CB, CB_PREFIX, ILLEGAL_OPCODES

from .support.emu_cpu_fuzz import STUBS_ADDR, fuzz_source, relocated_source
from .support.emu_cpu_support import (
    assert_same_trace,
    instruction_starts,
    program_rom,
    pyboy_trace,
    run_both,
    warp_run_to,
    warp_trace,
)

pytestmark = pytest.mark.l1

FUZZ_SEEDS = (1, 2, 3, 4)
FUZZ_LENGTH = 1500
RELOC_LENGTH = 700
HALT = 0x76


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_random_program_from_rom(seed: int) -> None:
    """Registers (F included) and cycles after every instruction, then RAM at the end."""
    body, extra = fuzz_source(seed, FUZZ_LENGTH)
    rom, stop = program_rom(body, extra=extra)
    addrs = instruction_starts(rom, 0x150, stop)
    assert_same_trace(warp_trace(rom, addrs, stop), pyboy_trace(rom, addrs, stop), f"seed {seed}")
    run_both(body, f"fuzz seed {seed}", extra=extra)


@pytest.mark.parametrize("seed", FUZZ_SEEDS[:2])
def test_random_program_from_wram(seed: int) -> None:
    """Code copied to WRAM: every fetch goes through the bus (PyBoy's getitem path)."""
    body, extra = relocated_source(seed, RELOC_LENGTH)
    run_both(body, f"relocated fuzz seed {seed}", extra=extra)


def test_fuzz_programs_cover_every_legal_opcode() -> None:
    """The random programs above contain every legal opcode but HALT, and every CB opcode."""
    base: set[int] = set()
    cb: set[int] = set()
    for seed in FUZZ_SEEDS:
        body, extra = fuzz_source(seed, FUZZ_LENGTH)
        rom, stop = program_rom(body, extra=extra)
        for lo, hi in ((0x150, stop), (STUBS_ADDR, STUBS_ADDR + 16)):
            pc = lo
            while pc < hi:
                op = rom[pc]
                base.add(op)
                if op == CB_PREFIX:
                    cb.add(rom[pc + 1])
                    pc += 2
                else:
                    pc += BASE[op].length
    missing = set(range(256)) - base - set(ILLEGAL_OPCODES) - {HALT}
    assert not missing, f"opcodes never generated: {sorted(hex(op) for op in missing)}"
    assert len(cb) == len(CB), f"CB opcodes never generated: {sorted(set(range(256)) - cb)}"


def test_daa_every_input() -> None:
    """DAA on every A with every N/H/C combination; results and flags stored to WRAM."""
    body = """
    ld hl, $C000
    ld de, $0000        ; d = A under test, e = flag combination index 0..7
.loop:
    ld a, e
    swap a
    sla a               ; index bits -> C, H, N flags (bits 4, 5, 6)
    ld c, a
    ld b, d
    push bc
    pop af              ; A = d, F = flags
    daa
    push af
    pop bc
    ld [hl], b
    inc hl
    ld [hl], c
    inc hl
    inc d
    jr nz, .loop
    inc e
    ld a, e
    cp 8
    jr nz, .loop
"""
    run_both(body, "daa table")


def test_alu_flag_table() -> None:
    """The 8 ALU ops with both carry-in values on 256 operand pairs: A and F to $C000-$DFFF."""
    ops = ("add", "adc", "sub", "sbc", "and", "xor", "or", "cp")
    cases = "\n".join(
        f"""    scf
    {"ccf" if carry == 0 else "nop"}
    ld a, b
    {op} a, c
    push af
    pop de
    ld a, d
    ld [hl+], a
    ld a, e
    ld [hl+], a"""
        for op in ops
        for carry in (0, 1)
    )
    body = f"""
    ld hl, $C000
    ld b, $00           ; first operand: $00, $11, ... $FF
.outer:
    ld c, $00           ; second operand, same steps
.inner:
{cases}
    ld a, c
    add a, $11
    ld c, a
    jp nc, .inner
    ld a, b
    add a, $11
    ld b, a
    jp nc, .outer
"""
    run_both(body, "alu table")


def test_illegal_opcode_locks_the_env() -> None:
    for op in sorted(ILLEGAL_OPCODES):
        rom, stop = program_rom(f"    ld a, $42\n    db ${op:02X}\n    ld a, $43")
        got = warp_run_to(rom, stop, max_instructions=10_000)
        assert got["locked"] == 0x100 | op, f"opcode {op:#04x}: locked={got['locked']:#x}"
        assert got["a"] == 0x42 and got["pc"] == 0x152, f"opcode {op:#04x} ran on: {got}"
