"""SM83 disassembler producing text our assembler accepts (RGBDS spelling)."""

from __future__ import annotations

from gbxcule.core import isa

DEFAULT_ORIGIN = 0x0150  # where the assembler's implicit section starts


def _signed(byte: int) -> int:
    return byte - 0x100 if byte & 0x80 else byte


def _format_operand(token: str, raw: bytes, addr: int, length: int) -> str:
    if token == "n8":
        return f"${raw[0]:02X}"
    if token == "n16":
        return f"${int.from_bytes(raw[:2], 'little'):04X}"
    if token == "[n16]":
        return f"[${int.from_bytes(raw[:2], 'little'):04X}]"
    if token == "[n8]":
        return f"[${0xFF00 + raw[0]:04X}]"
    if token == "e8":
        return f"${(addr + length + _signed(raw[0])) & 0xFFFF:04X}"
    if token == "s8":
        return str(_signed(raw[0]))
    if token == "sp+s8":
        off = _signed(raw[0])
        return f"sp{off:+d}"
    return token


def disassemble_one(data: bytes, offset: int = 0, addr: int | None = None) -> tuple[str, int]:
    """Decode the instruction at ``data[offset]`` (CPU address ``addr``, default ``offset``).

    Returns ``(text, length)``. Illegal opcodes and instructions cut short by the
    end of ``data`` come back as ``db`` lines of one byte.
    """
    pc = offset if addr is None else addr
    op = data[offset]
    if op == isa.CB_PREFIX:
        if offset + 1 >= len(data):
            return f"db ${op:02X}", 1
        ins = isa.CB[data[offset + 1]]
    else:
        ins = isa.BASE[op]
    if ins.illegal or offset + ins.length > len(data):
        return f"db ${op:02X}", 1
    imm_start = 2 if ins.prefixed else 1
    raw = bytes(data[offset + imm_start : offset + ins.length])
    operands = [_format_operand(t, raw, pc, ins.length) for t in ins.operands]
    text = f"{ins.mnemonic} {', '.join(operands)}" if operands else ins.mnemonic
    return text, ins.length


def disassemble(data: bytes, origin: int = DEFAULT_ORIGIN, *, addresses: bool = False) -> str:
    """Disassemble ``data`` loaded at ``origin``; one instruction per line.

    ``jr`` targets are written as absolute addresses, so the text assembles back
    to the same bytes when placed at ``origin`` (the assembler's default section
    starts at $0150, the default origin). ``addresses=True`` appends a
    ``; $ADDR: bytes`` comment to each line.
    """
    lines = []
    offset = 0
    while offset < len(data):
        text, length = disassemble_one(data, offset, origin + offset)
        if addresses:
            hexbytes = " ".join(f"{b:02X}" for b in data[offset : offset + length])
            text = f"{text:<24}; ${origin + offset:04X}: {hexbytes}"
        lines.append(f"    {text}")
        offset += length
    return "\n".join(lines) + ("\n" if lines else "")
