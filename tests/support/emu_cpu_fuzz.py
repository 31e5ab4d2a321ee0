"""Random straight-line SM83 programs that exercise every legal opcode but HALT.

Every memory operand is pointed at WRAM, HRAM, echo RAM, FEA0-FEFF or the
ROM-only bank register right before the access (never VRAM/OAM/IO, whose
values depend on PPU timing), and the stack pointer is reset before each stack
operation, so the programs are deterministic without any IO timing. Control
flow uses local forward skips, calls to ``ret``/``reti`` stubs and ``ret`` at
every RST vector. IE stays 0, so EI/RETI never lead to an interrupt.

``relocatable=True`` leaves out absolute jumps so the code can be copied to
WRAM and run there (the fetch then goes through the bus, as in PyBoy).
"""

from __future__ import annotations

import random

R8 = ("b", "c", "d", "e", "h", "l", "a")
ALU = ("add a,", "adc a,", "sub a,", "sbc a,", "and a,", "xor a,", "or a,", "cp a,")
CB_SHIFTS = ("rlc", "rrc", "rl", "rr", "sla", "sra", "swap", "srl")
CONDS = ("nz", "z", "nc", "c")
ACC_OPS = ("rlca", "rrca", "rla", "rra", "daa", "cpl", "scf", "ccf", "nop", "di", "ei")

DATA_LO, DATA_HI = 0xC000, 0xC100  # scratch bytes the programs read and write
STACK_LO, STACK_HI = 0xCE00, 0xCF00
RELOC_BASE = 0xD000  # relocatable code is copied here
STUBS_ADDR = 0x3F00
SUBROUTINES = ("SubRet", "SubRetNZ", "SubRetZ", "SubRetNC", "SubRetC", "SubReti")


def _data_addr(rng: random.Random) -> int:
    """A side-effect-free RAM address: WRAM scratch, its echo, HRAM or FEA0-FEFF."""
    kind = rng.randrange(10)
    if kind < 6:
        return rng.randrange(DATA_LO, DATA_HI)
    if kind < 7:
        return rng.randrange(DATA_LO, DATA_HI) + 0x2000  # echo
    if kind < 9:
        return rng.randrange(0xFF80, 0xFFFF)
    return rng.randrange(0xFEA0, 0xFF00)


class FuzzProgram:
    def __init__(self, seed: int, length: int, relocatable: bool = False) -> None:
        self.rng = random.Random(seed)
        self.relocatable = relocatable
        self.lines: list[str] = []
        self.labels = 0
        for _ in range(length):
            self.emit_random()
        if not relocatable:
            self.emit_cb_sweep()

    def label(self) -> str:
        self.labels += 1
        return f".L{self.labels}"

    def r8(self) -> str:
        return self.rng.choice(R8)

    def n8(self) -> int:
        return self.rng.randrange(256)

    def point_hl(self) -> None:
        self.lines.append(f"ld hl, ${_data_addr(self.rng):04X}")

    def reset_sp(self) -> None:
        self.lines.append(f"ld sp, ${self.rng.randrange(STACK_LO, STACK_HI):04X}")

    def emit_random(self) -> None:
        rng = self.rng
        kind = rng.randrange(100)
        out = self.lines
        if kind < 10:
            out.append(f"ld {self.r8()}, {self.r8()}")
        elif kind < 14:
            out.append(f"ld {self.r8()}, ${self.n8():02X}")
        elif kind < 26:
            src = rng.choice((*R8, f"${self.n8():02X}"))
            out.append(f"{rng.choice(ALU)} {src}")
        elif kind < 32:
            out.append(f"{rng.choice(('inc', 'dec'))} {self.r8()}")
        elif kind < 36:
            out.append(f"{rng.choice(('inc', 'dec'))} {rng.choice(('bc', 'de', 'hl', 'sp'))}")
        elif kind < 39:
            out.append(f"add hl, {rng.choice(('bc', 'de', 'hl', 'sp'))}")
        elif kind < 42:
            out.append(f"ld {rng.choice(('bc', 'de', 'hl', 'sp'))}, ${rng.randrange(65536):04X}")
        elif kind < 48:
            out.append(rng.choice(ACC_OPS))
        elif kind < 58:
            op = rng.randrange(4)
            reg = self.r8()
            if rng.randrange(4) == 0:
                self.point_hl()
                reg = "[hl]"
            if op == 0:
                out.append(f"{rng.choice(CB_SHIFTS)} {reg}")
            else:
                out.append(f"{('bit', 'res', 'set')[op - 1]} {rng.randrange(8)}, {reg}")
        elif kind < 70:
            self.emit_hl_memory()
        elif kind < 74:
            pair = rng.choice(("bc", "de"))
            out.append(f"ld {pair}, ${_data_addr(rng):04X}")
            out.append(rng.choice((f"ld [{pair}], a", f"ld a, [{pair}]")))
        elif kind < 78:
            self.emit_absolute_memory()
        elif kind < 84:
            self.emit_stack()
        elif kind < 94:
            self.emit_flow()
        else:
            self.emit_sp_arith()

    def emit_cb_sweep(self) -> None:
        """Every CB opcode once, in random order, on random register values."""
        regs = (*R8[:6], "[hl]", "a")
        # PUSH AF / POP BC below need SP in RAM: a random `ld sp, n16` may have left it in
        # ROM, where PyBoy's trace hooks patch instruction starts (it would pop 0xDB)
        self.lines.append(f"ld sp, ${STACK_HI:04X}")
        ops = list(range(256))
        self.rng.shuffle(ops)
        for op in ops:
            group, y, reg = op >> 6, (op >> 3) & 7, regs[op & 7]
            if reg == "[hl]":
                self.point_hl()
            else:
                self.lines.append(f"ld {reg}, ${self.n8():02X}")
            if group == 0:
                self.lines.append(f"{CB_SHIFTS[y]} {reg}")
            else:
                self.lines.append(f"{('bit', 'res', 'set')[group - 1]} {y}, {reg}")
            self.lines += ["push af", "pop bc", "ld a, c", f"ld [${_data_addr(self.rng):04X}], a"]

    def emit_hl_memory(self) -> None:
        rng = self.rng
        self.point_hl()
        choice = rng.randrange(9)
        if choice == 0:
            self.lines.append(f"ld {self.r8()}, [hl]")
        elif choice == 1:
            self.lines.append(f"ld [hl], {self.r8()}")
        elif choice == 2:
            self.lines.append(f"ld [hl], ${self.n8():02X}")
        elif choice == 3:
            self.lines.append(f"{rng.choice(ALU)} [hl]")
        elif choice == 4:
            self.lines.append(f"{rng.choice(('inc', 'dec'))} [hl]")
        else:
            self.lines.append(
                ("ld a, [hl+]", "ld a, [hl-]", "ld [hl+], a", "ld [hl-], a")[choice - 5]
            )

    def emit_absolute_memory(self) -> None:
        rng = self.rng
        choice = rng.randrange(7)
        addr = _data_addr(rng)
        if choice == 0:
            self.lines.append(f"ld [${addr:04X}], a")
        elif choice == 1:
            self.lines.append(f"ld a, [${addr:04X}]")
        elif choice == 2:
            self.lines.append(f"ldh [${rng.randrange(0x80, 0xFF):02X}], a")
        elif choice == 3:
            self.lines.append(f"ldh a, [${rng.randrange(0x80, 0xFF):02X}]")
        elif choice == 4:
            self.lines.append(f"ld c, ${rng.randrange(0x80, 0xFF):02X}")
            self.lines.append(rng.choice(("ldh [c], a", "ldh a, [c]")))
        elif choice == 5:
            self.lines.append(f"ld [${rng.randrange(DATA_LO, DATA_HI - 1):04X}], sp")
        else:
            # ROM-only bank register: even values map bank 0 at 0x4000 in PyBoy
            self.lines.append(f"ld [${rng.randrange(0x2000, 0x4000):04X}], a")
            # read where bank 0 holds no hooked code (PyBoy's hooks patch code bytes)
            window = rng.choice((0x4000, 0x7E00))
            self.lines.append(f"ld a, [${window + rng.randrange(0x150):04X}]")

    def emit_stack(self) -> None:
        rng = self.rng
        self.reset_sp()
        for _ in range(rng.randrange(1, 4)):
            pair = rng.choice(("bc", "de", "hl", "af"))
            self.lines.append(f"{rng.choice(('push', 'pop'))} {pair}")

    def emit_sp_arith(self) -> None:
        rng = self.rng
        self.reset_sp()
        e = rng.randrange(-128, 128)
        if rng.randrange(3) == 0:
            self.lines.append(f"add sp, {e}")
        elif rng.randrange(2):
            self.lines.append(f"ld hl, sp{e:+d}")
        else:
            self.lines.append("ld sp, hl" if rng.randrange(2) else "stop")

    def emit_flow(self) -> None:
        rng = self.rng
        skip = self.label()
        filler = f"ld {self.r8()}, ${self.n8():02X}"
        cond = rng.choice(("", *CONDS))
        cc = f" {cond}," if cond else ""
        # absolute jumps to local labels only when the code runs where it was assembled
        kinds = ("jr", "call", "rst") if self.relocatable else ("jr", "call", "rst", "jp", "jp hl")
        kind = rng.choice(kinds)
        if kind in ("jr", "jp"):
            self.lines += [f"{kind}{cc} {skip}", filler, f"{skip}:"]
        elif kind == "call":
            self.reset_sp()
            self.lines.append(f"call{cc} {rng.choice(SUBROUTINES)}")
        elif kind == "rst":
            self.reset_sp()
            self.lines.append(f"rst ${rng.randrange(8) * 8:02X}")
        else:
            self.lines += [f"ld hl, {skip}", "jp hl", filler, f"{skip}:"]

    def body(self) -> str:
        return "\n".join("    " + line if not line.startswith(".") else line for line in self.lines)


STUBS = """
SECTION "rst_vectors", ROM0[$0000]
    ret
    ds 7
    ret
    ds 7
    ret
    ds 7
    ret
    ds 7
    ret
    ds 7
    ret
    ds 7
    ret
    ds 7
    ret
SECTION "stubs", ROM0[$3F00]  ; = STUBS_ADDR
SubRet:
    ret
SubRetNZ:
    ret nz
    ret
SubRetZ:
    ret z
    ret
SubRetNC:
    ret nc
    ret
SubRetC:
    ret c
    ret
SubReti:
    reti
SECTION "bank1", ROMX[$4000], BANK[1]
"""


def setup_lines(seed: int) -> str:
    rng = random.Random(seed ^ 0x5A5A)
    regs = [f"    ld {p}, ${rng.randrange(65536):04X}" for p in ("bc", "de", "hl")]
    return "\n".join(
        [
            f"    ld sp, ${STACK_HI:04X}",
            f"    ld bc, ${rng.randrange(65536):04X}",
            "    push bc",
            "    pop af",
            *regs,
        ]
    )


def bank1_data(seed: int) -> str:
    rng = random.Random(seed ^ 0xB1)
    rows = [", ".join(f"${rng.randrange(256):02X}" for _ in range(16)) for _ in range(1024)]
    return "\n".join(f"    db {row}" for row in rows)


def fuzz_source(seed: int, length: int) -> tuple[str, str]:
    """(body, extra sections) for ``program_rom``: random code run in place from ROM."""
    prog = FuzzProgram(seed, length)
    return setup_lines(seed) + "\n" + prog.body(), STUBS + bank1_data(seed)


def relocated_source(seed: int, length: int) -> tuple[str, str]:
    """(body, extra): copies relocatable random code to WRAM, runs it there, returns to ROM."""
    prog = FuzzProgram(seed, length, relocatable=True)
    body = "\n".join(
        [
            "    ld hl, RelocStart",
            f"    ld de, ${RELOC_BASE:04X}",
            "    ld bc, RelocEnd - RelocStart",
            ".copy:",
            "    ld a, [hl+]",
            "    ld [de], a",
            "    inc de",
            "    dec bc",
            "    ld a, b",
            "    or c",
            "    jr nz, .copy",
            setup_lines(seed),
            f"    jp ${RELOC_BASE:04X}",
            "Back:",
        ]
    )
    extra = (
        STUBS
        + bank1_data(seed)
        + '\nSECTION "reloc", ROM0[$1000]\nRelocStart:\n'
        + prog.body()
        + "\n    jp Back\nRelocEnd:\n"
    )
    return body, extra
