"""A compile-time variant of a kernel's whole call graph, with some module globals replaced.

The step kernel's variants (``StepFeatures``: hooks, the GPU shape, the CPU's dispatch)
are built by factories, because what they change lives near the kernel. A difference that
lives in the leaves (the bus, the IO page, the LCD: Game Boy Color hardware, issue #46)
would need every function above a leaf rebuilt too. ``graph_variant`` copies the graph
instead: each gbxcule Warp function the kernel reaches (through the names its code uses
and its closure cells) runs its own Python code again with ``overrides`` among its
globals, so ``if wp.static(NAME):`` blocks compile as the variant's, in a module of its
own. The original kernel, its functions and its module are not touched: their source,
hash and build stay what they were."""

from __future__ import annotations

import functools
import types
from typing import Any

import warp as wp

from gbxcule.core.memory_layout import CGB_BYTES

__all__ = ["cgb_variant", "graph_variant", "machine_kernel"]


def graph_variant(
    kernel: Any, overrides: dict[str, Any], module: str, prefix: str = "gbxcule."
) -> Any:
    """A copy of Warp ``kernel`` and of every Warp function it reaches whose Python
    module starts with ``prefix``, each seeing ``overrides`` among its globals, registered
    in Warp module ``module`` (with the original module's options). Functions of other
    modules (Warp's own) are shared."""
    if not isinstance(kernel, wp.Kernel):
        raise TypeError(f"graph_variant takes a Warp kernel, got {type(kernel).__name__}")
    target = wp.get_module(module)
    wp.set_module_options(dict(kernel.module.options), module=module)
    return _Copier(dict(overrides), target, prefix).copy(kernel)


class _Copier:
    def __init__(self, overrides: dict[str, Any], module: Any, prefix: str) -> None:
        self.overrides = overrides
        self.module = module
        self.prefix = prefix
        self.memo: dict[int, Any] = {}

    def ours(self, value: Any) -> bool:
        func = getattr(value, "func", None)
        return (
            isinstance(value, wp.Function | wp.Kernel)
            and func is not None
            and getattr(func, "__module__", "").startswith(self.prefix)
        )

    def value(self, value: Any) -> Any:
        """``value`` as the variant sees it: a copy of one of our Warp functions, a tuple or
        list of them copied element by element, anything else as it is."""
        if value is _EMPTY:
            return value
        if self.ours(value):
            return self.copy(value)
        if isinstance(value, tuple | list) and any(self.ours(v) for v in value):
            return type(value)(self.value(v) for v in value)
        return value

    def copy(self, obj: Any) -> Any:
        done = self.memo.get(id(obj))
        if done is not None:
            if done is _IN_PROGRESS:
                raise ValueError(f"{obj.key} reaches itself: a Warp call graph has no cycle")
            return done
        self.memo[id(obj)] = _IN_PROGRESS
        f = obj.func
        # the callees first: Warp evaluates wp.static(...) when a function is declared
        names = dict(f.__globals__)
        for name in _global_names(f.__code__):
            if name in names:
                names[name] = self.value(names[name])
        names.update(self.overrides)
        cells = None
        if f.__closure__:  # fresh cells: the variant's never leak into the original
            cells = tuple(_cell(self.value(_contents(c))) for c in f.__closure__)
        code = types.FunctionType(f.__code__, names, f.__name__, f.__defaults__, cells)
        for attr in ("__qualname__", "__module__", "__doc__", "__kwdefaults__"):
            setattr(code, attr, getattr(f, attr))
        code.__annotations__ = dict(f.__annotations__)
        key = f"{f.__module__.replace('.', '_')}__{obj.key}"
        if isinstance(obj, wp.Kernel):
            out = wp.Kernel(code, key=key, module=self.module, options=dict(obj.options))
        else:
            out = wp.Function(
                code,
                key=key,
                namespace="",
                module=self.module,
                scope_locals={},
                doc=obj.doc,
                inline_hint=obj.inline_hint,
            )
        self.memo[id(obj)] = out
        return out


_EMPTY = object()
_IN_PROGRESS = object()


def _cell(contents: Any) -> Any:
    return types.CellType() if contents is _EMPTY else types.CellType(contents)


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _EMPTY


def _global_names(code: types.CodeType) -> set[str]:
    """The global names ``code`` (and any code nested in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


@functools.cache
def cgb_variant(kernel: Any) -> Any:
    """``kernel`` for Game Boy Color machines: its graph with ``CGB`` True (history/cgb.md),
    in a module named after the kernel's, built once a kernel (a CGB variant is its own)."""
    if kernel.module.name.endswith(CGB_SUFFIX):
        return kernel
    return graph_variant(kernel, {"CGB": True}, kernel.module.name + CGB_SUFFIX)


CGB_SUFFIX = ".cgb"  # the CGB variants' Warp modules


def machine_kernel(m: Any, kernel: Any) -> Any:
    """``kernel`` for machine ``m``: its CGB variant on a Game Boy Color machine (whose
    ``Machine.cgb`` rows are full size), else the kernel itself."""
    return cgb_variant(kernel) if m.cgb.shape[1] == CGB_BYTES else kernel
