"""Where the step kernel's registers are live, from ``nvdisasm``'s life ranges, without a GPU.

``ptxas -v`` gives one register count per kernel entry: the most registers any point of
the entry *or of a function it calls out of line* needs, since they share one allocation.
``nvdisasm -lrm count`` (the ``nvidia-cuda-nvdisasm`` wheel) prints beside each
instruction how many registers are live there. ``live_peaks`` reads it per function:

- ``hot_loop``: the most live at any instruction of the entry's instruction loop (the range
  ``bench.sass_census`` finds);
- ``entry``: the most live anywhere in the entry's own code;
- ``functions``: per out-of-line function, the registers live at its first instruction
  (what the calling convention keeps for its callers) and its peak.

Call sites are left out of every peak: at a ``CALL`` the listing counts every register the
callee may use, which measures the convention, not the code. A table-driven decode or any
other change to the loop lowers the entry's count only if the loop is where the count
comes from (history/performance.md, issue #41).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.cuda_build_report import readable_name
from bench.sass_census import find_tool

_LIVE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*//\s*\|\s*(\d+)\s*\|")
_FUNCTION = re.compile(r"^\s*\.type\s+(\S+?),@function")


@dataclass(frozen=True)
class LiveRow:
    function: str  # the symbol, as the listing names it
    offset: int
    text: str
    live: int


def live_listing(cubin: Path) -> str:
    """``nvdisasm -lrm count`` of ``cubin``; raises ``FileNotFoundError`` without nvdisasm."""
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm is None:
        raise FileNotFoundError("nvdisasm not found (the dev extra's nvidia-cuda-nvdisasm wheel)")
    proc = subprocess.run(
        [nvdisasm, "-lrm", "count", "-c", str(cubin)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nvdisasm failed on {cubin}: {proc.stderr[-2000:]}")
    return proc.stdout


def parse_live(text: str) -> list[LiveRow]:
    """Every instruction of the listing with the function it belongs to and its live count."""
    rows = []
    function = ""
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            function = m.group(1)
            continue
        m = _LIVE.search(line)
        if m:
            rows.append(LiveRow(function, int(m.group(1), 16), m.group(2), int(m.group(3))))
    return rows


def _name(symbol: str) -> str:
    """A function's Python name: the part after the entry's ``$`` prefix, demangled."""
    return readable_name(symbol.rsplit("$", 1)[-1]) if symbol else "?"


def live_peaks(rows: list[LiveRow], loop: tuple[int, int] | None) -> dict:
    """``{"hot_loop": n, "entry": n, "functions": {name: {"at_entry": n, "peak": n}}}``;
    the entry is the listing's first function. Call sites are not counted."""
    counted = [r for r in rows if not r.text.lstrip("@!P0123456789 ").startswith("CALL")]
    entry = rows[0].function if rows else ""
    own = [r for r in counted if r.function == entry]
    out: dict = {
        "entry": max((r.live for r in own), default=0),
        "hot_loop": None,
        "functions": {},
    }
    if loop is not None:
        out["hot_loop"] = max((r.live for r in own if loop[0] <= r.offset <= loop[1]), default=0)
    firsts: dict[str, int] = {}
    for r in rows:
        if r.function != entry:
            firsts.setdefault(r.function, r.live)
    for r in counted:
        if r.function == entry:
            continue
        fn = out["functions"].setdefault(
            _name(r.function), {"at_entry": firsts[r.function], "peak": 0}
        )
        fn["peak"] = max(fn["peak"], r.live)
    return out
