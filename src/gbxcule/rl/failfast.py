"""Fail fast: checks on the hot tensors, and a bundle under ``failures/`` when a run fails.

:func:`check_tensor` refuses a tensor of the wrong device, shape or dtype (with its name);
:class:`NonFiniteError` is raised by the engine when the update's losses or logits were
not finite. :func:`write_failure_bundle` writes ``failures/<ts>__update<u>__<kind>/`` with
``traceback.txt``, ``error.json``, ``config.json``, ``tensors.pt`` (small slices of
obs/actions/logits/losses) and ``repro.sh``, every file atomically; the caller then exits
non-zero naming the folder.
"""

from __future__ import annotations

import datetime as _dt
import io
import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from gbxcule.rl import schemas
from gbxcule.rl.experiment import fsync_dir, write_bytes_durable, write_json


class FailFastError(RuntimeError):
    """A hot tensor broke a contract (device, shape, dtype, finiteness)."""


class NonFiniteError(FailFastError):
    pass


def check_tensor(
    name: str,
    t: torch.Tensor,
    *,
    shape: tuple[int, ...] | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise FailFastError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if dtype is not None and t.dtype != dtype:
        raise FailFastError(f"{name}: dtype {t.dtype}, expected {dtype}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise FailFastError(f"{name}: shape {tuple(t.shape)}, expected {tuple(shape)}")
    if device is not None and t.device.type != torch.device(device).type:
        raise FailFastError(f"{name}: on {t.device}, expected {device}")
    return t


def check_finite(name: str, t: torch.Tensor) -> None:
    """Host check (reads the tensor): every value finite."""
    if not bool(torch.isfinite(t).all()):
        raise NonFiniteError(f"{name} is not finite: {t.detach().cpu().flatten()[:8].tolist()}")


def _slice(t: Any, n: int = 2) -> Any:
    if isinstance(t, torch.Tensor):
        return t.detach()[:n].to("cpu").clone()
    return t


def write_failure_bundle(
    run_dir: str | Path,
    exc: BaseException,
    *,
    update: int,
    config: dict[str, Any],
    tensors: dict[str, Any] | None = None,
    argv: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write the bundle for ``exc`` and return its folder (``extra``: more ``error.json``
    fields, e.g. the rank that wrote it and the ranks that died)."""
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    final = Path(run_dir) / "failures" / f"{ts}__update{update:06d}__{type(exc).__name__}"
    folder = final.parent / f".{final.name}.creating"  # renamed whole when complete
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    write_bytes_durable(folder / "traceback.txt", tb.encode())
    write_json(
        folder / "error.json",
        {
            "schema": schemas.FAILURE_SCHEMA,
            "type": type(exc).__name__,
            "message": str(exc),
            "update": update,
            "run_dir": str(run_dir),
            **(extra or {}),
        },
    )
    write_json(folder / "config.json", config)
    buf = io.BytesIO()
    torch.save({k: _slice(v) for k, v in (tensors or {}).items()}, buf)
    write_bytes_durable(folder / "tensors.pt", buf.getvalue())
    argv = (
        argv
        if argv is not None
        else [sys.executable, "-m", "gbxcule", "train", "--resume", str(run_dir)]
    )
    script = (
        "#!/bin/sh\n"
        f"# Reproduce: {type(exc).__name__} at update {update} of {run_dir}\n"
        "# (resumes from the last checkpoint with the run's own config.json)\n"
        f"exec {' '.join(shlex.quote(a) for a in argv)}\n"
    )
    path = write_bytes_durable(folder / "repro.sh", script.encode())
    path.chmod(0o755)
    os.rename(folder, final)
    fsync_dir(final.parent)
    return final
