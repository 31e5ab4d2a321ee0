"""What a small benchmark writes: its rows as ``results.jsonl`` and its table as
``summary.md`` (both atomically), the table also printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gbxcule.files import write_atomic


def write_report(out: Path, rows: list[dict[str, Any]], lines: list[str]) -> str:
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "results.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    text = "\n".join(lines) + "\n"
    write_atomic(out / "summary.md", text.encode())
    print(text)
    return text
