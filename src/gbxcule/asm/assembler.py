"""Two-pass SM83 assembler with RGBDS-like syntax.

Pass 1 parses every line, sizes instructions from their operand shapes and
records labels as (section, offset). Sections are then placed (fixed address or
first fit), and pass 2 evaluates operands and emits bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gbxcule.asm.expr import (
    AsmError,
    EvalContext,
    Expr,
    evaluate,
    parse_expr,
    symbols_in,
    tokenize,
)
from gbxcule.core import isa
from gbxcule.core.cartridge import BANK_SIZE


@dataclass(frozen=True)
class Region:
    lo: int
    hi: int  # inclusive
    rom: bool


REGIONS = {
    "ROM0": Region(0x0000, 0x3FFF, True),
    "ROMX": Region(0x4000, 0x7FFF, True),
    "VRAM": Region(0x8000, 0x9FFF, False),
    "SRAM": Region(0xA000, 0xBFFF, False),
    "WRAM0": Region(0xC000, 0xDFFF, False),  # DMG has no WRAM banking: allow all 8 KiB
    "WRAMX": Region(0xD000, 0xDFFF, False),
    "HRAM": Region(0xFF80, 0xFFFE, False),
}
FLOATING_ROM0_START = 0x0150  # keep floating code clear of vectors, entry and header
DEFAULT_SECTION = 'SECTION "code", ROM0[$0150]'


@dataclass
class Section:
    name: str
    kind: str
    bank: int
    start: int | None
    line: int
    size: int = 0
    items: list = field(default_factory=list)  # (offset, line, scope, kind, payload)
    data: bytearray = field(default_factory=bytearray)

    @property
    def region(self) -> Region:
        return REGIONS[self.kind]

    @property
    def base(self) -> int:
        """The section's start address; every section has one once it is placed."""
        assert self.start is not None, f"section {self.name!r} is not placed yet"
        return self.start

    @property
    def end(self) -> int:
        return self.base + self.size  # exclusive

    def file_offset(self, addr: int) -> int:
        """Offset of CPU address ``addr`` (inside this ROM section) in the ROM image."""
        return addr if self.kind == "ROM0" else self.bank * BANK_SIZE + (addr - 0x4000)


@dataclass
class Program:
    sections: list[Section]
    symbols: dict[str, int]  # labels (absolute CPU address) and EQU constants
    label_banks: dict[str, int]

    @property
    def rom_sections(self) -> list[Section]:
        return [s for s in self.sections if s.region.rom and s.size]

    @property
    def rom_banks_used(self) -> int:
        """Smallest bank count holding every ROM section (at least 2)."""
        return max([2] + [s.bank + 1 for s in self.rom_sections])

    def covers(self, lo: int, hi: int) -> bool:
        """True if a ROM0 section puts bytes anywhere in [lo, hi)."""
        return any(s.kind == "ROM0" and s.base < hi and lo < s.end for s in self.rom_sections)

    def image(self, rom_banks: int | None = None, fill: int = 0x00) -> bytearray:
        """ROM image of ``rom_banks`` 16 KiB banks (default: as many as the program uses)."""
        banks = self.rom_banks_used if rom_banks is None else rom_banks
        out = bytearray([fill]) * (banks * BANK_SIZE)
        for s in self.rom_sections:
            if s.bank >= banks:
                raise AsmError(
                    f"section {s.name!r} is in bank {s.bank} but the ROM has only {banks} banks",
                    s.line,
                )
            off = s.file_offset(s.start)
            out[off : off + s.size] = s.data
        return out


_LABEL_RE = re.compile(r"\s*(\.?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)(::?)")
_BARE_LOCAL_RE = re.compile(r"\s*(\.[A-Za-z_]\w*)(?=\s|$)")
_EQU_RE = re.compile(r"\s*(?:DEF\s+)?([A-Za-z_]\w*)\s+(?:EQU\b|=)\s*(.*)$", re.IGNORECASE)
_SECTION_RE = re.compile(
    r'SECTION\s+"([^"]*)"\s*,\s*([A-Za-z0-9]+)\s*(?:\[(.+?)\])?\s*(?:,\s*BANK\s*\[(.+)\])?\s*$',
    re.IGNORECASE,
)
_REGS = frozenset("a b c d e h l af bc de hl sp nz z nc".split())
_MEM_FORMS = {
    "hl": "[hl]",
    "bc": "[bc]",
    "de": "[de]",
    "hl+": "[hl+]",
    "hli": "[hl+]",
    "hl-": "[hl-]",
    "hld": "[hl-]",
    "c": "[c]",
    "$ff00+c": "[c]",
    "0xff00+c": "[c]",
}
_VALUE_SLOTS = frozenset({"n8", "n16", "e8", "s8"})
_ADDR_SLOTS = frozenset({"[n16]", "[n8]"})


def _build_index() -> dict[str, list[isa.Instruction]]:
    index: dict[str, list[isa.Instruction]] = {}
    for ins in isa.BASE + isa.CB:
        if not ins.illegal and ins.mnemonic != "prefix":
            index.setdefault(ins.mnemonic, []).append(ins)
    return index


INDEX = _build_index()


def _unquoted(text: str):
    """Yield (index, char, outside_quotes) for each char, honouring backslash escapes."""
    quote, escaped = None, False
    for i, ch in enumerate(text):
        if quote:
            yield i, ch, False
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            yield i, ch, False
        else:
            yield i, ch, True


def strip_comment(line: str) -> str:
    for i, ch, outside in _unquoted(line):
        if outside and ch == ";":
            return line[:i]
    return line


def split_operands(text: str) -> list[str]:
    """Split on commas outside brackets, parentheses and quotes."""
    parts, depth, cur = [], 0, []
    for _, ch, outside in _unquoted(text):
        if outside and ch in "([":
            depth += 1
        elif outside and ch in ")]":
            depth -= 1
        elif outside and ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    last = "".join(cur).strip()
    if last or parts:
        parts.append(last)
    if any(not p for p in parts):
        raise AsmError("empty operand")
    return parts


@dataclass
class Operand:
    slots: frozenset[str]  # pattern tokens this operand can fill
    expr: Expr | None = None
    text: str = ""


def classify(text: str) -> Operand:
    op = _classify(text)
    for name in symbols_in(op.expr) if op.expr is not None else ():
        if name.lower() in _REGS:
            raise AsmError(f"bad operand {text!r}: register {name.lower()!r} used in an expression")
    return op


def _classify(text: str) -> Operand:
    low = re.sub(r"\s+", "", text.lower())
    if low in _REGS:
        return Operand(frozenset({low}), text=text)
    if low.startswith("[") and low.endswith("]"):
        inner = low[1:-1]
        if inner in _MEM_FORMS:
            return Operand(frozenset({_MEM_FORMS[inner]}), text=text)
        return Operand(_ADDR_SLOTS, parse_expr(tokenize(text.strip()[1:-1])), text)
    m = re.fullmatch(r"sp\s*([+-])(.+)", text.strip(), re.IGNORECASE)
    if m:
        expr = parse_expr(tokenize(m.group(2)))
        return Operand(frozenset({"sp+s8"}), expr if m.group(1) == "+" else ("un", "-", expr), text)
    return Operand(_VALUE_SLOTS, parse_expr(tokenize(text)), text)


def _literal_value(token: str) -> int | None:
    """Value of a literal pattern token (bit index or rst vector), else None."""
    if token.isdigit():
        return int(token)
    if token.startswith("$"):
        return int(token[1:], 16)
    return None


class Assembler:
    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.section: Section | None = None
        self.labels: dict[str, tuple[Section, int, int]] = {}  # name -> (section, offset, line)
        self.constants: dict[str, tuple[Expr, str, int]] = {}  # name -> (expr, scope, line)
        self.constant_values: dict[str, int] = {}
        self.evaluating: set[str] = set()
        self.scope = ""

    # ---- names -------------------------------------------------------------------------
    def qualify(self, name: str, scope: str) -> str:
        return scope + name if name.startswith(".") else name

    def define(self, name: str, line: int) -> None:
        prev = self.labels.get(name) or self.constants.get(name)
        if prev is not None:
            raise AsmError(f"duplicate symbol {name!r} (first defined on line {prev[2]})", line)

    def constant(self, name: str) -> int:
        if name in self.constant_values:
            return self.constant_values[name]
        if name in self.evaluating:
            raise AsmError(f"constant {name!r} is defined in terms of itself")
        expr, scope, line = self.constants[name]
        self.evaluating.add(name)
        try:
            value = evaluate(expr, self.context(scope, None, labels=True))
        except AsmError as e:
            raise AsmError(f"in {name} EQU: {e.problem}", line) from None
        finally:
            self.evaluating.discard(name)
        self.constant_values[name] = value
        return value

    def context(self, scope: str, pc: int | None, labels: bool) -> EvalContext:
        def symbol(name: str) -> int:
            full = self.qualify(name, scope)
            if full in self.constants:
                return self.constant(full)
            if full in self.labels:
                if not labels:
                    raise AsmError(f"{full!r} is a label; a constant is needed here")
                sec, off, _ = self.labels[full]
                return sec.base + off
            raise AsmError(f"undefined symbol {full!r}")

        def bank(name: str) -> int:
            full = self.qualify(name, scope)
            if full not in self.labels:
                raise AsmError(f"BANK() needs a label, {full!r} is not one")
            sec = self.labels[full][0]
            return sec.bank if sec.region.rom else 0

        return EvalContext(symbol, bank, pc)

    # ---- pass 1 ------------------------------------------------------------------------
    def pass1(self, source: str) -> None:
        for lineno, raw in enumerate(source.splitlines(), start=1):
            try:
                self.parse_line(strip_comment(raw), lineno)
            except AsmError as e:
                if e.line is not None:
                    raise
                raise AsmError(e.problem, lineno) from None

    def parse_line(self, text: str, lineno: int) -> None:
        if not text.strip():
            return
        m = _EQU_RE.match(text)
        if m and m.group(1).lower() not in INDEX:
            name = m.group(1)
            self.define(name, lineno)
            self.constants[name] = (parse_expr(tokenize(m.group(2))), self.scope, lineno)
            return
        m = _LABEL_RE.match(text) or _BARE_LOCAL_RE.match(text)
        if m:
            self.add_label(m.group(1), lineno)
            text = text[m.end() :]
            if not text.strip():
                return
        stmt = text.strip()
        head, _, rest = stmt.partition(" ")
        keyword = head.lower()
        if keyword == "section":
            self.open_section(stmt, lineno)
        elif keyword in ("db", "dw", "ds"):
            self.add_data(keyword, rest, lineno)
        else:
            self.add_instruction(keyword, rest, lineno)

    def current(self, lineno: int) -> Section:
        if self.section is None:
            self.open_section(DEFAULT_SECTION, lineno)
        assert self.section is not None
        return self.section

    def add_label(self, name: str, lineno: int) -> None:
        if name.startswith("."):
            full = self.scope + name
        else:
            full = name
            self.scope = name.split(".")[0]
        self.define(full, lineno)
        sec = self.current(lineno)
        self.labels[full] = (sec, sec.size, lineno)

    def open_section(self, stmt: str, lineno: int) -> None:
        m = _SECTION_RE.match(stmt)
        if not m:
            raise AsmError(f"malformed SECTION directive: {stmt!r}")
        name, kind = m.group(1), m.group(2).upper()
        if kind not in REGIONS:
            raise AsmError(f"unknown section type {m.group(2)!r} (use one of {', '.join(REGIONS)})")
        if any(s.name == name for s in self.sections):
            raise AsmError(f"duplicate section name {name!r}")
        ctx = self.context(self.scope, None, labels=False)
        start = evaluate(parse_expr(tokenize(m.group(3))), ctx) if m.group(3) else None
        region = REGIONS[kind]
        if start is not None and not region.lo <= start <= region.hi:
            raise AsmError(
                f"section {name!r} address ${start:04X} is outside {kind} "
                f"(${region.lo:04X}-${region.hi:04X})"
            )
        if m.group(4) is not None:
            if kind != "ROMX":
                raise AsmError(f"BANK[] is only allowed on ROMX sections, not {kind}")
            bank = evaluate(parse_expr(tokenize(m.group(4))), ctx)
            if not 1 <= bank <= 511:
                raise AsmError(f"ROMX bank must be 1..511, got {bank}")
        else:
            bank = 1 if kind == "ROMX" else 0
        self.section = Section(name, kind, bank, start, lineno)
        self.sections.append(self.section)

    def add_data(self, keyword: str, rest: str, lineno: int) -> None:
        sec = self.current(lineno)
        args = split_operands(rest)
        if keyword == "ds":
            if not 1 <= len(args) <= 2:
                raise AsmError("ds takes a size and an optional fill byte")
            pc = None if sec.start is None else sec.start + sec.size
            ctx = self.context(self.scope, pc, labels=False)
            count = evaluate(parse_expr(tokenize(args[0])), ctx)
            if count < 0:
                raise AsmError(f"ds size must not be negative, got {count}")
            fill = parse_expr(tokenize(args[1])) if len(args) == 2 else ("num", 0)
            sec.items.append((sec.size, lineno, self.scope, "ds", (count, fill)))
            sec.size += count
            return
        if not sec.region.rom:
            raise AsmError(f"{keyword} puts data in {sec.kind} section {sec.name!r}; use ds there")
        if not args:
            raise AsmError(f"{keyword} needs at least one value")
        values: list = []
        size = 0
        for arg in args:
            toks = tokenize(arg)
            if keyword == "db" and len(toks) == 1 and toks[0].kind == "str":
                data = toks[0].text.encode("latin-1", errors="strict")
                values.append(data)
                size += len(data)
            else:
                values.append(parse_expr(toks))
                size += 1 if keyword == "db" else 2
        sec.items.append((sec.size, lineno, self.scope, keyword, values))
        sec.size += size

    def add_instruction(self, mnemonic: str, rest: str, lineno: int) -> None:
        sec = self.current(lineno)
        if not sec.region.rom:
            raise AsmError(f"instruction in {sec.kind} section {sec.name!r} (only ds is allowed)")
        operands = [classify(t) for t in split_operands(rest)] if rest.strip() else []
        ins, exprs = self.match(mnemonic, operands)
        sec.items.append((sec.size, lineno, self.scope, "ins", (ins, exprs)))
        sec.size += ins.length

    def match(
        self, mnemonic: str, operands: list[Operand]
    ) -> tuple[isa.Instruction, list[tuple[str, Expr]]]:
        slots = [op.slots for op in operands]
        if mnemonic in ("ldi", "ldd"):
            inc = "[hl+]" if mnemonic == "ldi" else "[hl-]"
            slots = [frozenset({inc}) if s == {"[hl]"} else s for s in slots]
            mnemonic = "ld"
        if mnemonic == "ld" and any(s == {"[c]"} for s in slots):
            mnemonic = "ldh"
        if mnemonic == "jp" and slots == [{"[hl]"}]:
            slots = [frozenset({"hl"})]
        if mnemonic in isa.ALU_OPS and len(slots) == 1:
            slots = [frozenset({"a"})] + slots
            operands = [Operand(frozenset({"a"}), text="a")] + operands
        if mnemonic not in INDEX:
            raise AsmError(f"unknown mnemonic {mnemonic!r}")
        for ins in INDEX[mnemonic]:
            if len(ins.operands) != len(slots):
                continue
            exprs: list[tuple[str, Expr]] = []
            for token, slot, op in zip(ins.operands, slots, operands):
                literal = _literal_value(token)
                if literal is not None and op.expr is not None and slot == _VALUE_SLOTS:
                    value = self.constant_operand(op.expr, mnemonic)
                    if value != literal:
                        break
                elif token not in slot:
                    break
                elif op.expr is not None:
                    exprs.append((token, op.expr))
            else:
                return ins, exprs
        shown = ", ".join(op.text for op in operands)
        raise AsmError(f"bad operands for {mnemonic!r}: {shown!r}")

    def constant_operand(self, expr: Expr, mnemonic: str) -> int:
        try:
            return evaluate(expr, self.context(self.scope, None, labels=False))
        except AsmError as e:
            raise AsmError(f"{mnemonic} operand must be a constant: {e.problem}") from None

    # ---- placement ---------------------------------------------------------------------
    def place(self) -> None:
        for sec in self.sections:
            if sec.start is not None:
                self.check_fits(sec)
        for sec in self.sections:
            if sec.start is None:
                sec.start = self.first_fit(sec)
        spaces: dict[tuple[bool, int], list[Section]] = {}
        for sec in self.sections:
            if sec.size:
                spaces.setdefault((sec.region.rom, sec.bank), []).append(sec)
        for group in spaces.values():
            group.sort(key=lambda s: s.base)
            for a, b in zip(group, group[1:]):
                if b.base < a.end:
                    raise AsmError(
                        f"section {b.name!r} (${b.start:04X}-${b.end - 1:04X}) overlaps section "
                        f"{a.name!r} (${a.start:04X}-${a.end - 1:04X}, line {a.line})",
                        b.line,
                    )

    def check_fits(self, sec: Section) -> None:
        if sec.end - 1 > sec.region.hi:
            raise AsmError(
                f"section {sec.name!r} overflows {sec.kind}: ${sec.start:04X} + {sec.size} bytes "
                f"ends past ${sec.region.hi:04X}",
                sec.line,
            )

    def first_fit(self, sec: Section) -> int:
        lo = FLOATING_ROM0_START if sec.kind == "ROM0" else sec.region.lo
        taken = sorted(
            (s.start, s.end)
            for s in self.sections
            if s.start is not None and s.region.rom == sec.region.rom and s.bank == sec.bank
        )
        addr = lo
        for start, end in taken:
            if addr + sec.size <= start:
                break
            addr = max(addr, end)
        if addr + sec.size - 1 > sec.region.hi:
            raise AsmError(
                f"no room for section {sec.name!r} ({sec.size} bytes) in {sec.kind}", sec.line
            )
        return addr

    # ---- pass 2 ------------------------------------------------------------------------
    def pass2(self) -> None:
        for sec in self.sections:
            sec.data = bytearray()
            for offset, lineno, scope, kind, payload in sec.items:
                pc = sec.start + offset
                try:
                    sec.data += self.emit(kind, payload, self.context(scope, pc, labels=True), pc)
                except AsmError as e:
                    raise AsmError(e.problem, e.line or lineno) from None

    def emit(self, kind: str, payload, ctx: EvalContext, pc: int) -> bytes:
        if kind == "ds":
            count, fill = payload
            return bytes([fit(evaluate(fill, ctx), 8, "ds fill")]) * count
        if kind == "db":
            out = bytearray()
            for v in payload:
                out += v if isinstance(v, bytes) else bytes([fit(evaluate(v, ctx), 8, "db")])
            return bytes(out)
        if kind == "dw":
            return b"".join(fit(evaluate(v, ctx), 16, "dw").to_bytes(2, "little") for v in payload)
        ins, exprs = payload
        out = bytearray([isa.CB_PREFIX, ins.opcode] if ins.prefixed else [ins.opcode])
        for token, expr in exprs:
            value = evaluate(expr, ctx)
            if token == "n16":
                out += fit(value, 16, ins.mnemonic).to_bytes(2, "little")
            elif token == "[n16]":
                out += fit_unsigned(value, 0xFFFF, "address").to_bytes(2, "little")
            elif token == "[n8]":
                if 0xFF00 <= value <= 0xFFFF:
                    value -= 0xFF00
                out.append(fit_unsigned(value, 0xFF, "ldh address (use $FF00-$FFFF)"))
            elif token == "e8":
                offset = value - (pc + 2)
                if not -128 <= offset <= 127:
                    raise AsmError(
                        f"jr target ${value & 0xFFFF:04X} out of range (offset {offset})"
                    )
                out.append(offset & 0xFF)
            elif token in ("s8", "sp+s8"):
                if not -128 <= value <= 127:
                    raise AsmError(f"signed offset {value} out of range -128..127")
                out.append(value & 0xFF)
            else:  # n8
                out.append(fit(value, 8, ins.mnemonic))
        out += bytes(ins.length - len(out))  # stop's padding byte
        return bytes(out)

    def finish(self) -> Program:
        symbols: dict[str, int] = {}
        banks: dict[str, int] = {}
        for name, (sec, off, _) in self.labels.items():
            symbols[name] = sec.base + off
            banks[name] = sec.bank if sec.region.rom else 0
        for name in self.constants:
            symbols[name] = self.constant(name)
        return Program(self.sections, symbols, banks)


def fit(value: int, bits: int, what: str) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
    if not lo <= value <= hi:
        raise AsmError(f"value {value} out of range for {what} ({bits}-bit: {lo}..{hi})")
    return value & hi


def fit_unsigned(value: int, hi: int, what: str) -> int:
    if not 0 <= value <= hi:
        raise AsmError(f"value {value} out of range for {what} (0..{hi})")
    return value


def assemble(source: str) -> Program:
    """Assemble ``source``; raises ``AsmError`` naming the line and the problem."""
    asm = Assembler()
    asm.pass1(source)
    asm.place()
    asm.pass2()
    return asm.finish()
