"""Task files that run no code: a :class:`~gbxcule.tasks.task.Task` written as TOML (or the
same keys as JSON), read as data.

    # task.toml
    name = "puzzle-score"
    rom = "puzzle.gb"                       # relative to this file; "bundled:quest"
    starts = ["level1.state", "level2.state"]
    actions = ["left", "right", "down", "a", "b", "noop"]   # "a hold=2 frames=60" too
    terminated = "r['over'] != 0"           # an expression (expressions.py)
    max_steps = 2000

    [reads]
    score = { type = "BCD", at = 0xC0A0, size = 3 }
    over = { type = "U8", at = 0xC0B0 }
    lives = { type = "U8", at = "wLives" }  # a .sym symbol

    [reward]
    score = { type = "Progress", read = "score", weight = 0.01 }
    time = { type = "StepCost", weight = -0.001 }

Every field of ``Task`` has its key, of the same name and meaning: ``description``,
``frames_per_step``, ``release_after_frames``, ``sticky_actions``, ``noop_max``,
``truncated``, ``features`` (a table read -> scale, or a list of reads),
``[swarm]`` (``reached`` an expression, ``every``) and ``[step_end]`` (``at``, then
``changes = true``, ``equals`` or ``not_equals``, ``mask``, ``min_frames``). A read is a
table with ``type`` (``U8 U16 U24 S8 S16 BCD Digits BitCount Bit Lookup``), ``at`` (an
address or a symbol; in JSON ``"0xC0A0"`` is an address) and that type's own keys; a
term is a table with ``type`` (``Progress Increase Decrease Delta Changed StepCost
Novelty``), ``read`` (or ``keys`` for Novelty), ``weight``, ``clip = [lo, hi]``, or just
a read's name (its ``Progress``). A key that is not one of these is refused, naming the
keys there are; so is a value of the wrong type.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gbxcule.core.step_end import StepEnd, StepEndError
from gbxcule.tasks import reads as R
from gbxcule.tasks import terms as T
from gbxcule.tasks.task import Swarm, Task, TaskError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # pyright: ignore[reportMissingImports]

TASK_FILE_SUFFIXES = (".toml", ".json")
MAX_TASK_FILE_BYTES = 1 << 20

TOP_KEYS = {
    "name": str,
    "description": str,
    "rom": str,
    "starts": list,
    "actions": (str, list),
    "reads": dict,
    "reward": dict,
    "terminated": str,
    "truncated": str,
    "max_steps": int,
    "frames_per_step": int,
    "release_after_frames": int,
    "sticky_actions": (int, float),
    "noop_max": int,
    "features": (dict, list),
    "swarm": dict,
    "step_end": dict,
}
REQUIRED = ("name", "reads", "reward")

_INTEGERS = {"U8": (1, False), "U16": (2, False), "U24": (3, False), "S8": (1, True),
             "S16": (2, True)}  # fmt: skip
READ_KEYS: dict[str, dict[str, Any]] = {
    **{t: {"at": (int, str), "endian": str, "bank": int} for t in _INTEGERS},
    "BCD": {"at": (int, str), "size": int, "endian": str, "bank": int},
    "Digits": {"at": (int, str), "size": int, "offset": int, "blank": list, "bank": int},
    "BitCount": {"at": (int, str), "size": int, "bank": int},
    "Bit": {"at": (int, str), "bit": int, "bank": int},
    "Lookup": {"source": dict, "table": dict, "default": int},
}
TERM_TYPES: dict[str, type[T.Term]] = {k.__name__: k for k in T.TERM_KINDS}
TERM_KEYS: dict[str, dict[str, Any]] = {
    **{t: {"read": str, "weight": (int, float), "clip": list} for t in TERM_TYPES},
    "StepCost": {"weight": (int, float), "clip": list},
    "Novelty": {"keys": list, "weight": (int, float), "clip": list, "bits": int},
}
SWARM_KEYS = {"reached": str, "every": int}
STEP_END_KEYS = {"at": (int, str), "changes": bool, "equals": int, "not_equals": int,
                 "mask": int, "min_frames": int}  # fmt: skip


def _type_name(kind: Any) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if kinds == (int, float):
        return "a number"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "a table"}  # fmt: skip
    return " or ".join(names[k] for k in kinds)


def _check_keys(where: str, table: dict[str, Any], allowed: dict[str, Any]) -> None:
    """``where``: the table's path in the file ("" at the top)."""
    for key, value in table.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, list(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TaskError(
                f"unknown key {key!r}{hint} {f'in {where}' if where else 'at the top'}; the "
                f"keys there are {', '.join(allowed)}"
            )
        kind = allowed[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        is_bool = isinstance(value, bool)
        if (is_bool and bool not in kinds) or not isinstance(value, kinds):
            name = f"{where}.{key}" if where else key
            raise TaskError(f"{name} must be {_type_name(kind)}, got {value!r}")


def _address(where: str, value: Any) -> int | str:
    """An address (int), or a symbol; in JSON a ``"0x..."`` string is an address."""
    if isinstance(value, str) and value[:2].lower() == "0x":
        try:
            return int(value, 16)
        except ValueError:
            raise TaskError(f"{where}: {value!r} is not a hex address") from None
    return value


def _typed_table(
    where: str, spec: Any, keys: dict[str, dict[str, Any]], what: str, shape: str
) -> tuple[str, dict[str, Any]]:
    """A read's or a term's table: its ``type`` (one of ``keys``) and the other keys, each
    checked by name and type. ``shape``: what the entry must be, ``what``: the kind."""
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise TaskError(f"{where} must be {shape} ({', '.join(keys)}), e.g. " + _EXAMPLES[what]
                        + "; got " + repr(spec))  # fmt: skip
    kind = spec["type"]
    if kind not in keys:
        raise TaskError(f"{where}.type {kind!r} is not a {what} type ({', '.join(keys)})")
    body = {k: v for k, v in spec.items() if k != "type"}
    _check_keys(where, body, keys[kind])
    return kind, body


_EXAMPLES = {
    "read": '{ type = "U8", at = 0xC0A0 }',
    "term": '{ type = "Progress", read = "score", weight = 0.1 }',
}


def _read(where: str, spec: Any) -> R.Read:
    kind, body = _typed_table(where, spec, READ_KEYS, "read", "a table with a type")
    if kind != "Lookup" and "at" not in body:
        raise TaskError(f"{where} needs at: an address (0xC0A0) or a symbol")
    try:
        return _build_read(where, kind, body)
    except (R.ReadError, TypeError) as exc:
        raise TaskError(f"{where}: {exc}") from None


def _build_read(where: str, kind: str, body: dict[str, Any]) -> R.Read:
    if kind == "Lookup":
        if "source" not in body or "table" not in body:
            raise TaskError(f"{where} (Lookup) needs source (a read table) and table")
        table = {}
        for key, value in body["table"].items():
            try:
                table[int(key, 0)] = value
            except ValueError:
                raise TaskError(f"{where}.table: key {key!r} is not an integer") from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise TaskError(f"{where}.table[{key}] must be an integer, got {value!r}")
        source = _read(f"{where}.source", body["source"])
        return R.Lookup(source, table, body.get("default", 0))
    at = _address(f"{where}.at", body.pop("at"))
    if kind in _INTEGERS:
        size, signed = _INTEGERS[kind]
        return R.Unsigned(at, size, body.get("endian", "little"), signed, bank=body.get("bank"))
    if "blank" in body:
        body["blank"] = tuple(body["blank"])
    cls: Callable[..., R.Read] = {"BCD": R.BCD, "Digits": R.Digits, "BitCount": R.BitCount,
                                  "Bit": R.BitRead}[kind]  # fmt: skip
    return cls(at, **body)


def _term(where: str, spec: Any) -> T.Term:
    if isinstance(spec, str):
        return T.Progress(spec)
    shape = "a read's name or a table with a type"
    kind, body = _typed_table(where, spec, TERM_KEYS, "term", shape)
    if "clip" in body:
        clip = body["clip"]
        if len(clip) != 2 or not all(
            isinstance(c, (int, float)) and not isinstance(c, bool) for c in clip
        ):
            raise TaskError(f"{where}.clip must be [lo, hi], two numbers; got {clip!r}")
        body["clip"] = tuple(clip)
    if "keys" in body:
        body["keys"] = tuple(body["keys"])
    try:
        return TERM_TYPES[kind](**body)
    except (T.TermError, TypeError) as exc:
        raise TaskError(f"{where}: {exc}") from None


def task_from_data(data: Any, *, where: str = "task file") -> Task:
    """The :class:`Task` a parsed task file (module doc) describes; errors start with
    ``where``. Paths stay as written (the loader sets the folder they start from)."""
    try:
        return _task(data)
    except TaskError as exc:
        raise TaskError(f"{where}: {exc}") from None


def _task(data: Any) -> Task:
    if not isinstance(data, dict):
        raise TaskError(f"it must hold a table of keys ({', '.join(TOP_KEYS)})")
    _check_keys("", data, TOP_KEYS)
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise TaskError(f"it needs {', '.join(missing)}")
    fields = {k: v for k, v in data.items() if k not in ("reads", "reward", "swarm", "step_end")}
    fields["reads"] = {k: _read(f"reads.{k}", v) for k, v in data["reads"].items()}
    fields["reward"] = {k: _term(f"reward.{k}", v) for k, v in data["reward"].items()}
    if "swarm" in data:
        _check_keys("swarm", data["swarm"], SWARM_KEYS)
        if "reached" not in data["swarm"]:
            raise TaskError("swarm needs reached: an expression over the reads")
        fields["swarm"] = Swarm(**data["swarm"])
    if "step_end" in data:
        body = dict(data["step_end"])
        _check_keys("step_end", body, STEP_END_KEYS)
        if "at" not in body:
            raise TaskError("step_end needs at: an address or a symbol")
        body["where"] = _address("step_end.at", body.pop("at"))
        try:
            fields["step_end"] = StepEnd(**body)
        except StepEndError as exc:
            raise TaskError(f"step_end: {exc}") from None
    for key in ("starts", "features", "actions"):
        value = data.get(key)
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise TaskError(f"{key} must list strings, got {value!r}")
    return Task(**fields)


def parse_task_file(path: Path) -> Any:
    """The parsed contents of a ``.toml`` or ``.json`` task file."""
    size = path.stat().st_size
    if size > MAX_TASK_FILE_BYTES:
        raise TaskError(f"task file {path} is {size:,} bytes; a task file is at most 1 MiB")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"task file {path} is not UTF-8 text") from None
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise TaskError(f"task file {path} is not valid {kind}: {exc}") from None


def read_task_file(path: str | Path) -> Task:
    """The task in a ``.toml`` / ``.json`` file (no ``base_dir``; :func:`load_task` sets it)."""
    path = Path(path)
    return task_from_data(parse_task_file(path), where=str(path))


_INTEGER_TYPES = {v: k for k, v in _INTEGERS.items()}  # (size, signed) -> type name


class _Address(int):
    """An address, written in hex."""


def _at(where: int | str) -> Any:
    return _Address(where) if isinstance(where, int) else where


def _toml_value(value: Any) -> str:
    if isinstance(value, _Address):
        return f"0x{value:04X}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    raise TaskError(f"{value!r} has no TOML form")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _read_data(name: str, read: R.Read) -> dict[str, Any]:
    at = _at(read.where)
    out: dict[str, Any] = {}
    if isinstance(read, R.Lookup):
        table = {str(k): v for k, v in read.table}
        return {"type": "Lookup", "source": _read_data(name, read.source), "table": table,
                "default": read.default}  # fmt: skip
    if isinstance(read, R.Unsigned):
        kind = _INTEGER_TYPES.get((read.size, read.signed))
        if kind is None:
            raise TaskError(f"read {name!r}: a {read.size}-byte integer has no task-file type")
        out = {"type": kind, "at": at}
        if read.endian != "little":
            out["endian"] = read.endian
    elif isinstance(read, R.BCD):
        out = {"type": "BCD", "at": at, "size": read.size}
        if read.endian != "big":
            out["endian"] = read.endian
    elif isinstance(read, R.Digits):
        out = {"type": "Digits", "at": at, "size": read.size, "offset": read.offset}
        if read.blank:
            out["blank"] = list(read.blank)
    elif isinstance(read, R.BitCount):
        out = {"type": "BitCount", "at": at, "size": read.size}
    elif isinstance(read, R.BitRead):
        out = {"type": "Bit", "at": at, "bit": read.bit}
    else:
        raise TaskError(f"read {name!r} ({type(read).__name__}) has no task-file type")
    if read.bank is not None:
        out["bank"] = read.bank
    return out


def _term_data(name: str, term: T.Term) -> dict[str, Any]:
    kind = type(term).__name__
    if kind not in TERM_TYPES:
        raise TaskError(f"reward term {name!r} ({kind}) has no task-file type")
    out: dict[str, Any] = {"type": kind}
    if isinstance(term, T.Novelty):
        out["keys"] = list(term.keys)
        if term.bits != 16:
            out["bits"] = term.bits
    elif not isinstance(term, T.StepCost):
        out["read"] = term.read
    out["weight"] = term.weight
    if term.clip is not None:
        out["clip"] = list(term.clip)
    return out


def _predicate_text(key: str, fn: Any) -> str:
    from gbxcule.tasks.expressions import Expression

    if isinstance(fn, Expression):
        return fn.text
    raise TaskError(
        f"{key} is Python code ({getattr(fn, '__name__', type(fn).__name__)}), which a task "
        "file cannot hold: write it as an expression string (terminated=\"r['lives'] == 0\")"
    )


def task_to_toml(task: Task) -> str:
    """``task`` as a TOML task file (module doc) that loads back to the same task; its
    predicates must be expressions (a lambda is code, and is refused naming it)."""
    from gbxcule.games import bundled_name

    top: dict[str, Any] = {"name": task.name}
    if task.description:
        top["description"] = task.description
    if task.rom is not None:
        top["rom"] = str(task.rom) if bundled_name(task.rom) else Path(task.rom).as_posix()
    if task.starts:
        top["starts"] = [p if isinstance(p, str) else Path(p).as_posix() for p in task.starts]
    top["actions"] = task.actions if isinstance(task.actions, str) else list(task.actions)
    for key in ("terminated", "truncated"):
        if getattr(task, key) is not None:
            top[key] = _predicate_text(key, getattr(task, key))
    defaults = {"max_steps": 1000, "frames_per_step": 24, "release_after_frames": 8,
                "sticky_actions": 0.0, "noop_max": 0}  # fmt: skip
    for key, default in defaults.items():
        if getattr(task, key) != default or key == "max_steps":
            top[key] = getattr(task, key)
    if task.features:
        top["features"] = dict(task.features)
    lines = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in top.items()]
    lines += ["", "[reads]"]
    lines += [f"{_toml_key(k)} = {_toml_value(_read_data(k, r))}" for k, r in task.reads.items()]
    lines += ["", "[reward]"]
    lines += [f"{_toml_key(k)} = {_toml_value(_term_data(k, t))}" for k, t in task.terms.items()]
    if task.swarm is not None:
        reached = _predicate_text("swarm.reached", task.swarm.reached)
        lines += ["", "[swarm]", f"reached = {_toml_value(reached)}", f"every = {task.swarm.every}"]
    if task.step_end is not None:
        end = task.step_end
        lines += ["", "[step_end]", f"at = {_toml_value(_at(end.where))}"]
        if end.changes:
            lines.append("changes = true")
        else:
            lines.append(f"{'equals' if end.equals is not None else 'not_equals'} = {end.value}")
        if end.mask != 0xFF:
            lines.append(f"mask = {end.mask}")
        if end.min_frames != 1:
            lines.append(f"min_frames = {end.min_frames}")
    text = "\n".join(lines) + "\n"
    task_from_data(tomllib.loads(text), where="the exported task")  # it loads back
    return text
