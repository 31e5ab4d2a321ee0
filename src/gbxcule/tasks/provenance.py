"""Which ROM a start state belongs to: a sidecar beside the state (``start.state`` ->
``start.state.json``) holding the ROM's sha256 and the state's own.

A PyBoy ``.state`` does not record the game that saved it; loading checks only the
cartridge layout. States made by ``gbxcule states`` carry a sidecar, so a task refuses a
state of another game (another ROM), whatever its layout, naming both ROMs; a state with
no sidecar (or one that describes another file) is loaded with one warning a process.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gbxcule.files import write_atomic
from gbxcule.tasks.task import TaskError

SIDECAR_SCHEMA = "gbxcule.state-sidecar/1"
SIDECAR_SUFFIX = ".json"


def sidecar_path(state: str | Path) -> Path:
    state = Path(state)
    return state.with_name(state.name + SIDECAR_SUFFIX)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_state(state: str | Path, data: bytes, rom: bytes, rom_name: str, **info: Any) -> Path:
    """``data`` (a PyBoy state) into ``state`` with its sidecar, both atomically."""
    state = Path(state)
    record = {
        "schema": SIDECAR_SCHEMA,
        "rom_sha256": sha256_bytes(rom),
        "rom_name": rom_name,
        "state_sha256": sha256_bytes(data),
        **info,
    }
    write_atomic(state, data)
    write_atomic(sidecar_path(state), (json.dumps(record, indent=2) + "\n").encode())
    return state


def read_sidecar(state: str | Path, data: bytes) -> dict[str, Any] | None:
    """The sidecar of ``state`` whose ``data`` it describes, else None (none, unreadable,
    or written for another file)."""
    path = sidecar_path(state)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != SIDECAR_SCHEMA:
        return None
    if record.get("state_sha256") != sha256_bytes(data):
        return None
    return record


def check_state_rom(state: str | Path, data: bytes, rom: bytes, rom_name: str) -> bool:
    """True when ``state``'s sidecar proves it belongs to ``rom``; False when it has none;
    a ``TaskError`` naming both ROMs when it belongs to another."""
    record = read_sidecar(state, data)
    if record is None:
        return False
    if record.get("rom_sha256") != sha256_bytes(rom):
        raise TaskError(
            f"start state {state} was made on {record.get('rom_name', 'another ROM')} (sha256 "
            f"{str(record.get('rom_sha256'))[:16]}), not on {rom_name} (sha256 "
            f"{sha256_bytes(rom)[:16]}): a state of another game or ROM revision"
        )
    return True
