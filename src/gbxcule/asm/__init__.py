"""Our SM83 assembler, disassembler and ROM builder (RGBDS-like syntax)."""

from gbxcule.asm.assembler import Program, Section, assemble
from gbxcule.asm.disasm import disassemble, disassemble_one
from gbxcule.asm.expr import AsmError
from gbxcule.asm.header import build_rom, program_rom, write_header

__all__ = [
    "AsmError",
    "Program",
    "Section",
    "assemble",
    "build_rom",
    "disassemble",
    "disassemble_one",
    "program_rom",
    "write_header",
]
