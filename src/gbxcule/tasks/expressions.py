"""Predicates written as text: ``terminated``, ``truncated`` and a swarm's ``reached`` in a
task file that runs no code.

    r["over"] != 0
    r["lives"] < r.prev["lives"] or r.steps >= 500
    r["map"] != r.start["map"] and not (r["hp"] == 0)
    max(r["x"], r["y"]) > 100

The text is parsed with Python's own grammar (``ast.parse``: parsing runs nothing) and
then only this is accepted, each node turned into a Torch operation on the reads:

* ``r[NAME]``, ``r.prev[NAME]``, ``r.start[NAME]`` (a read by its name, a string literal;
  the names are checked against the task's reads when the task loads) and ``r.steps``;
* int, float and bool literals (ints within int64);
* ``+ - * / // %``, ``& | ^ ~ << >>``, comparisons (chains too), ``and or not``,
  ``X if C else Y``;
* the calls ``abs``, ``min`` and ``max``, positional arguments only.

No other name, no other attribute, no other call, no string but a read's name: a task
file's predicate can compute over the reads and nothing else. ``and`` / ``or`` / ``not``
act element-wise (each env its own truth value), a non-zero number counts as true, and the
result is a bool tensor ``[N]``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import torch

MAX_LENGTH = 2000  # characters: a predicate is a line or two, not a program
INT64 = (-(1 << 63), (1 << 63) - 1)
READ_VIEWS = {"prev", "start"}  # r.prev[...], r.start[...]
CALLS = ("abs", "min", "max")

Value = Any  # a Tensor [N] or a Python number (a constant, folded when the task loads)
Node = Callable[[Any], Value]  # ReadValues -> Value


class ExpressionError(ValueError):
    """A predicate's text that is not an expression over the reads; the message says why."""


def _tensor_min(a: Value, b: Value) -> Value:
    return torch.where(torch.as_tensor(a <= b), a, b)


def _tensor_max(a: Value, b: Value) -> Value:
    return torch.where(torch.as_tensor(a >= b), a, b)


def _truth(x: Value) -> Value:
    if isinstance(x, torch.Tensor):
        return x if x.dtype == torch.bool else x != 0
    return bool(x)


def _and(a: Value, b: Value) -> Value:
    a, b = _truth(a), _truth(b)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        return a and b
    return torch.logical_and(torch.as_tensor(a), torch.as_tensor(b))


def _or(a: Value, b: Value) -> Value:
    a, b = _truth(a), _truth(b)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        return a or b
    return torch.logical_or(torch.as_tensor(a), torch.as_tensor(b))


def _not(a: Value) -> Value:
    a = _truth(a)
    return torch.logical_not(a) if isinstance(a, torch.Tensor) else not a


def _where(cond: Value, a: Value, b: Value) -> Value:
    cond = _truth(cond)
    if not isinstance(cond, torch.Tensor):
        return a if cond else b
    return torch.where(cond, a, b)


BINARY: dict[type, Callable[[Value, Value], Value]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
}
UNARY: dict[type, Callable[[Value], Value]] = {
    ast.USub: lambda a: -a,
    ast.UAdd: lambda a: +a,
    ast.Invert: lambda a: ~a,
    ast.Not: _not,
}
COMPARE: dict[type, Callable[[Value, Value], Value]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


class _Const:
    """A value known when the task loads (folded: no constant is computed per step)."""

    def __init__(self, value: int | float | bool) -> None:
        if isinstance(value, int) and not isinstance(value, bool):
            if not INT64[0] <= value <= INT64[1]:
                raise ExpressionError(f"the number {value} does not fit int64")
        self.value = value

    def __call__(self, r: Any) -> Value:
        return self.value


def _apply(fn: Callable[..., Value], *args: Node) -> Node:
    """``fn`` over the children's values; folded now when every child is a constant."""
    if all(isinstance(a, _Const) for a in args):
        values = [a.value for a in args]  # type: ignore[attr-defined]
        if fn is BINARY[ast.LShift] and not 0 <= values[1] <= 63:
            raise ExpressionError(f"a shift by {values[1]} (0..63 with int64)")
        try:
            out = fn(*values)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise ExpressionError(f"{type(exc).__name__}: {exc}") from None
        return _Const(out.item() if isinstance(out, torch.Tensor) else out)
    if len(args) == 1:
        (a,) = args
        return lambda r: fn(a(r))
    if len(args) == 2:
        a, b = args
        return lambda r: fn(a(r), b(r))
    return lambda r: fn(*(a(r) for a in args))


class _Compiler:
    def __init__(self, text: str) -> None:
        self.text = text
        self.reads: set[str] = set()

    def refuse(self, node: ast.AST, what: str) -> ExpressionError:
        col = getattr(node, "col_offset", None)
        at = f" at column {col + 1}" if col is not None else ""
        return ExpressionError(f"{what}{at} of {self.text!r}")

    def build(self, node: ast.AST) -> Node:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return _Const(node.value)
            raise self.refuse(node, f"the constant {node.value!r} (numbers only)")
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            return _apply(BINARY[type(node.op)], self.build(node.left), self.build(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            return _apply(UNARY[type(node.op)], self.build(node.operand))
        if isinstance(node, ast.BoolOp):
            fn = _and if isinstance(node.op, ast.And) else _or
            out = self.build(node.values[0])
            for value in node.values[1:]:
                out = _apply(fn, out, self.build(value))
            return out
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return _apply(
                _where, self.build(node.test), self.build(node.body), self.build(node.orelse)
            )
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.read(node)
        if isinstance(node, ast.Attribute) and self.is_r(node.value) and node.attr == "steps":
            return lambda r: r.steps
        if isinstance(node, ast.Attribute):
            raise self.refuse(node, f"the attribute .{node.attr} (only r.steps, r.prev[...], "
                              "r.start[...])")  # fmt: skip
        if isinstance(node, ast.Name):
            raise self.refuse(node, f"the name {node.id!r} (a read is r['{node.id}'])")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            raise self.refuse(node, "** (powers are not allowed: write the number)")
        raise self.refuse(node, f"{type(node).__name__} (not an expression over the reads)")

    @staticmethod
    def is_r(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == "r"

    def compare(self, node: ast.Compare) -> Node:
        left = self.build(node.left)
        out: Node | None = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            if type(op) not in COMPARE:
                raise self.refuse(node, f"the comparison {type(op).__name__} (== != < <= > >=)")
            right = self.build(right_node)
            part = _apply(COMPARE[type(op)], left, right)
            out = part if out is None else _apply(_and, out, part)
            left = right
        assert out is not None
        return out

    def call(self, node: ast.Call) -> Node:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in CALLS:
            raise self.refuse(
                node, f"a call of {ast.unparse(node.func)} (calls: {', '.join(CALLS)})"
            )
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.refuse(node, f"{name}() with keyword or * arguments")
        args = [self.build(a) for a in node.args]
        if name == "abs":
            if len(args) != 1:
                raise self.refuse(node, f"abs() of {len(args)} arguments (it takes one)")
            return _apply(abs, args[0])
        if len(args) < 2:
            raise self.refuse(node, f"{name}() of {len(args)} argument(s) (it takes two or more)")
        fn = _tensor_min if name == "min" else _tensor_max
        out = args[0]
        for arg in args[1:]:
            out = _apply(fn, out, arg)
        return out

    def read(self, node: ast.Subscript) -> Node:
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise self.refuse(node, "a subscript that is not a read's name in quotes")
        name = key.value
        target = node.value
        if self.is_r(target):
            self.reads.add(name)
            return lambda r: r[name]
        if (
            isinstance(target, ast.Attribute)
            and self.is_r(target.value)
            and target.attr in READ_VIEWS
        ):
            self.reads.add(name)
            view = target.attr
            return lambda r: getattr(r, view)[name]
        raise self.refuse(node, f"{ast.unparse(target)}[...] (reads: r[...], r.prev[...], "
                          "r.start[...])")  # fmt: skip


class Expression:
    """A predicate over the reads from its text (module doc): called with a task's
    :class:`~gbxcule.tasks.runtime.ReadValues`, it returns a bool tensor ``[N]``."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise ExpressionError(f"a predicate's text must be a string, got {text!r}")
        if not text.strip():
            raise ExpressionError("a predicate's text is empty")
        if len(text) > MAX_LENGTH:
            raise ExpressionError(f"a predicate of {len(text)} characters (at most {MAX_LENGTH})")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"{text!r} is not an expression: {exc.msg}") from None
        except (RecursionError, MemoryError, ValueError):
            raise ExpressionError(f"{text[:60]!r}... nests too deeply to parse") from None
        compiler = _Compiler(text)
        try:
            self._node = compiler.build(tree.body)
        except RecursionError:
            raise ExpressionError(f"{text[:60]!r}... nests too deeply") from None
        self.text = text
        self.reads = frozenset(compiler.reads)

    def __call__(self, r: Any) -> torch.Tensor:
        out = _truth(self._node(r))
        steps = r.steps
        if not isinstance(out, torch.Tensor):
            return torch.full(steps.shape, bool(out), dtype=torch.bool, device=steps.device)
        return out.expand(steps.shape) if out.dim() == 0 else out

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)
