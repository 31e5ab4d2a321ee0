"""Tokenizer and expression parser/evaluator for the assembler (RGBDS-like syntax).

Expressions parse to small tuples evaluated later against a symbol resolver, so
pass 1 can size instructions before labels have addresses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


class AsmError(Exception):
    """Assembly failed; the message names the source line and the problem."""

    def __init__(self, message: str, line: int | None = None):
        self.line = line
        self.problem = message
        super().__init__(f"line {line}: {message}" if line is not None else message)


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<hex>\$[0-9A-Fa-f_]+|0[xX][0-9A-Fa-f_]+)
  | (?P<bin>0[bB][01_]+)
  | (?P<dec>[0-9][0-9_]*)
  | (?P<char>'(?:\\.|[^'\\])')
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)
  | (?P<op><<|>>|[-+*/%&|^~()@\[\],:!])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "str", "ident", "op"
    text: str
    value: int = 0


def unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        prev_is_value = bool(tokens) and (
            tokens[-1].kind in ("num", "ident") or tokens[-1].text in (")", "@")
        )
        if text[pos] == "%" and not prev_is_value:
            m = re.match(r"%[01_]+", text[pos:])
            if m:
                tokens.append(Token("num", m.group(), int(m.group()[1:].replace("_", ""), 2)))
                pos += m.end()
                continue
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise AsmError(f"unexpected character {text[pos]!r}")
        kind, s = m.lastgroup, m.group()
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "hex":
            digits = s[1:] if s[0] == "$" else s[2:]
            tokens.append(Token("num", s, int(digits.replace("_", ""), 16)))
        elif kind == "bin":
            tokens.append(Token("num", s, int(s[2:].replace("_", ""), 2)))
        elif kind == "dec":
            tokens.append(Token("num", s, int(s.replace("_", ""))))
        elif kind == "char":
            tokens.append(Token("num", s, ord(unescape(s[1:-1]))))
        elif kind == "str":
            tokens.append(Token("str", unescape(s[1:-1])))
        elif kind == "ident":
            tokens.append(Token("ident", s))
        else:
            tokens.append(Token("op", s))
    return tokens


# Binary operators from lowest to highest precedence, as in RGBDS (rgbasm(5)): unlike C,
# & | ^ share one level that binds tighter than + and -, and shifts bind tighter still.
_BINARY_LEVELS: tuple[tuple[str, ...], ...] = (("+", "-"), ("&", "|", "^"), ("<<", ">>"))
_MUL_OPS = ("*", "/", "%")
_FUNCTIONS = ("HIGH", "LOW", "BANK")

Expr = (
    tuple  # ("num", v) | ("sym", name) | ("pc",) | ("un", op, e) | ("bin", op, a, b) | ("fn", f, e)
)


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise AsmError("expression ends unexpectedly")
        self.pos += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok.text != text:
            raise AsmError(f"expected {text!r} in expression, found {tok.text!r}")

    def binary(self, level: int) -> Expr:
        if level == len(_BINARY_LEVELS):
            return self.product()
        left = self.binary(level + 1)
        while (
            (tok := self.peek()) is not None
            and tok.kind == "op"
            and tok.text in _BINARY_LEVELS[level]
        ):
            self.pos += 1
            left = ("bin", tok.text, left, self.binary(level + 1))
        return left

    def product(self) -> Expr:
        left = self.unary()
        while (tok := self.peek()) is not None and tok.kind == "op" and tok.text in _MUL_OPS:
            self.pos += 1
            left = ("bin", tok.text, left, self.unary())
        return left

    def unary(self) -> Expr:
        tok = self.take()
        if tok.kind == "op" and tok.text in ("-", "+", "~", "!"):
            return ("un", tok.text, self.unary())
        if tok.kind == "num":
            return ("num", tok.value)
        if tok.kind == "op" and tok.text == "@":
            return ("pc",)
        if tok.kind == "op" and tok.text == "(":
            inner = self.binary(0)
            self.expect(")")
            return inner
        if tok.kind == "ident":
            nxt = self.peek()
            if tok.text.upper() in _FUNCTIONS and nxt is not None and nxt.text == "(":
                self.pos += 1
                arg = self.binary(0)
                self.expect(")")
                return ("fn", tok.text.upper(), arg)
            return ("sym", tok.text)
        if tok.kind == "str" and len(tok.text) == 1:
            return ("num", ord(tok.text))
        raise AsmError(f"unexpected {tok.text!r} in expression")


def parse_expr(tokens: list[Token]) -> Expr:
    if not tokens:
        raise AsmError("missing expression")
    parser = _Parser(tokens)
    expr = parser.binary(0)
    if parser.pos != len(tokens):
        raise AsmError(f"unexpected {tokens[parser.pos].text!r} after expression")
    return expr


@dataclass
class EvalContext:
    """How to resolve what an expression refers to."""

    symbol: Callable[[str], int]  # value of a (fully qualified) name; raises AsmError if undefined
    bank: Callable[[str], int]  # ROM bank of a label
    pc: int | None = None  # address of the current instruction, for '@'


def evaluate(expr: Expr, ctx: EvalContext) -> int:
    kind = expr[0]
    if kind == "num":
        return expr[1]
    if kind == "sym":
        return ctx.symbol(expr[1])
    if kind == "pc":
        if ctx.pc is None:
            raise AsmError("'@' is not available here")
        return ctx.pc
    if kind == "un":
        v = evaluate(expr[2], ctx)
        return {"-": -v, "+": v, "~": ~v, "!": int(v == 0)}[expr[1]]
    if kind == "fn":
        if expr[1] == "BANK":
            if expr[2][0] != "sym":
                raise AsmError("BANK() takes a label")
            return ctx.bank(expr[2][1])
        v = evaluate(expr[2], ctx)
        return (v >> 8) & 0xFF if expr[1] == "HIGH" else v & 0xFF
    op, a, b = expr[1], evaluate(expr[2], ctx), evaluate(expr[3], ctx)
    if op in ("/", "%") and b == 0:
        raise AsmError("division by zero")
    if op in ("<<", ">>") and b < 0:
        raise AsmError("negative shift count")
    if op == "/":
        return int(a / b)  # truncate toward zero like RGBDS
    if op == "%":
        return a - int(a / b) * b
    return {
        "+": a + b,
        "-": a - b,
        "*": a * b,
        "&": a & b,
        "|": a | b,
        "^": a ^ b,
        "<<": a << b,
        ">>": a >> b,
    }[op]


def symbols_in(expr: Expr) -> list[str]:
    """Names an expression refers to (BANK() arguments included)."""
    if expr[0] == "sym":
        return [expr[1]]
    return [name for part in expr[1:] if isinstance(part, tuple) for name in symbols_in(part)]
