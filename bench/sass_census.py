"""The step kernel's instruction loop in SASS, counted without a GPU.

``cuobjdump -sass`` (the ``nvidia-cuda-cuobjdump`` wheel, which calls the
``nvidia-cuda-nvdisasm`` wheel's ``nvdisasm``; both in the dev extra) disassembles the
cubin that ``ptxas`` builds in ``bench.cuda_build_report``. A loop is the range from a
backward branch's target to the branch; the *hot loop* is the largest innermost one (a
loop holding no other), which in the step kernel is the instruction loop: the loop with
the fast paths, run once per SM83 instruction (history/performance.md found it by hand
the same way: 2,500 instructions, 4 calls, 207/189 local sites at b7d60d9).

What ``census`` counts in it:

- ``calls``: ``CALL`` sites (each saves what is live around it);
- ``local_loads`` / ``local_stores``: ``LDL`` / ``STL`` sites (spills, call saves);
- ``global_loads`` / ``global_stores``: ``LDG``/``LD`` and ``STG``/``ST`` sites;
- ``descriptor_loads``: global loads of a ``Machine`` array descriptor: a 64-bit load whose
  result is the base address of a later access in the loop (the array's data pointer),
  and every load from the same base register at an immediate offset (the descriptor's
  other fields, strides and shape). With the ``Machine`` as a kernel argument these come
  from the constant bank (``ULDC``/``LDC``/``c[0x0][...]`` operands) and count 0.

These are static sites, not traffic: a site in a branch the loop rarely takes counts as
much as one on every path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

_INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRANCH = re.compile(r"\bBRA(?:\.[A-Z.]+)?\s+(?:0x([0-9a-f]+))")
_ADDRESS = re.compile(r"\[(R\d+)(?:\.64)?(?:\+(?:0x[0-9a-f]+|UR\d+))?\]")
_DEST = re.compile(r"^(?:@!?U?P\w+\s+)?(\S+)\s+(R\d+)\b")
_REGISTER = re.compile(r"\bR(\d+)\b")

Instruction = tuple[int, str]  # byte offset, instruction text without the ';'


def _wheel_bin(name: str) -> str | None:
    try:
        import nvidia  # type: ignore[import-not-found]
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob(f"*/bin/{name}")):
            if candidate.is_file():
                return str(candidate)
    return None


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else the one in an ``nvidia-*`` wheel's ``bin`` (``cuobjdump``,
    ``nvdisasm``): CI has no CUDA toolkit."""
    return shutil.which(name) or _wheel_bin(name)


def disassemble(cubin: Path) -> str:
    """``cuobjdump -sass`` of ``cubin``; raises ``FileNotFoundError`` without the tools."""
    cuobjdump = find_tool("cuobjdump")
    nvdisasm = find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        raise FileNotFoundError(
            "cuobjdump and nvdisasm not found (the CUDA toolkit, or the dev extra's "
            "nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels)"
        )
    env = dict(os.environ)
    env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(
        [cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump failed on {cubin}: {proc.stderr[-2000:]}")
    return proc.stdout


def parse_sass(text: str) -> list[Instruction]:
    """Every instruction of the listing, in address order."""
    return [(int(m.group(1), 16), m.group(2)) for m in map(_INSTR.search, text.splitlines()) if m]


def loops(instructions: list[Instruction]) -> list[tuple[int, int]]:
    """(first, last) byte offsets of each loop: a branch back to ``first`` at ``last``."""
    out = []
    for offset, text in instructions:
        m = _BRANCH.search(text)
        if m and int(m.group(1), 16) <= offset:
            out.append((int(m.group(1), 16), offset))
    return sorted(set(out))


def innermost(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The loops that hold no other loop."""

    def holds(a: tuple[int, int], b: tuple[int, int]) -> bool:
        return a != b and a[0] <= b[0] and b[1] <= a[1]

    return [r for r in ranges if not any(holds(r, other) for other in ranges)]


def _opcode(text: str) -> str:
    m = _DEST.match(text)
    if m:
        return m.group(1)
    words = text.split()
    return words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0]


def _is_load(op: str, text: str) -> bool:
    """A load from global or generic memory (``LDG``, ``LD``); not ``LDL``/``LDS``/``LDC``."""
    return op.startswith("LDG") or op == "LD" or op.startswith("LD.")


def _is_store(op: str) -> bool:
    return op.startswith("STG") or op == "ST" or op.startswith("ST.")


def _registers(text: str) -> list[int]:
    return [int(r) for r in _REGISTER.findall(text)]


def descriptor_loads(body: list[Instruction]) -> int:
    """Loads in ``body`` that fetch a ``Machine`` array descriptor (the module's docstring):
    64-bit loads whose value reaches the base of a later access through register arithmetic
    (followed in address order), and every load from the same base registers as those."""
    origins: dict[int, set[int]] = {}  # register -> the 64-bit loads its value derives from
    pointer_loads: set[int] = set()
    bases: dict[int, int] = {}  # load index -> its address base register
    for k, (_, text) in enumerate(body):
        op = _opcode(text)
        addr = _ADDRESS.search(text)
        base = int(addr.group(1)[1:]) if addr else None
        if base is not None and (op.startswith(("LD", "ST", "ATOM", "RED"))):
            pointer_loads |= origins.get(base, set())
        dest_match = _DEST.match(text)
        if dest_match is None:
            continue
        dest = int(dest_match.group(2)[1:])
        wide = ".64" in op or ".WIDE" in op or ".128" in op
        targets = (dest, dest + 1) if wide else (dest,)
        if _is_load(op, text):
            if base is not None:
                bases[k] = base
            derived = {k} if ".64" in op else set()
        else:
            tail = text[dest_match.end() :]
            derived = set().union(*(origins.get(r, set()) for r in _registers(tail)))
        for t in targets:
            if derived:
                origins[t] = derived
            else:
                origins.pop(t, None)
    struct_bases = {bases[k] for k in pointer_loads if k in bases}
    return sum(1 for k, base in bases.items() if base in struct_bases)


@dataclass(frozen=True)
class LoopCensus:
    first: int  # byte offset of the loop's head
    last: int  # byte offset of its backward branch
    instructions: int
    calls: int
    local_loads: int
    local_stores: int
    global_loads: int
    global_stores: int
    descriptor_loads: int

    @property
    def local_sites(self) -> int:
        return self.local_loads + self.local_stores

    def as_dict(self) -> dict:
        return {**asdict(self), "local_sites": self.local_sites}


def census(instructions: list[Instruction], loop: tuple[int, int]) -> LoopCensus:
    body = [(o, t) for o, t in instructions if loop[0] <= o <= loop[1]]
    ops = [(_opcode(t), t) for _, t in body]
    return LoopCensus(
        first=loop[0],
        last=loop[1],
        instructions=len(body),
        calls=sum(1 for op, _ in ops if op.startswith("CALL")),
        local_loads=sum(1 for op, _ in ops if op.startswith("LDL")),
        local_stores=sum(1 for op, _ in ops if op.startswith("STL")),
        global_loads=sum(1 for op, t in ops if _is_load(op, t)),
        global_stores=sum(1 for op, _ in ops if _is_store(op)),
        descriptor_loads=descriptor_loads(body),
    )


def hot_loop(instructions: list[Instruction]) -> LoopCensus | None:
    """The census of the largest innermost loop, or ``None`` for code with no loop."""
    inner = innermost(loops(instructions))
    if not inner:
        return None
    sizes = {r: sum(1 for o, _ in instructions if r[0] <= o <= r[1]) for r in inner}
    return census(instructions, max(inner, key=lambda r: (sizes[r], -r[0])))


def hot_loop_of_cubin(cubin: Path) -> LoopCensus | None:
    return hot_loop(parse_sass(disassemble(cubin)))
