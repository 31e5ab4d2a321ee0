"""A run directory: ``<utc-ts>__<algo>__<rom-id>__<tag>/``.

* ``meta.json``: run id, schema versions, ROM/start-state paths and sha256, env settings,
  algo, git commit and dirty flag, platform and versions, CUDA and GPU, world size.
* ``config.json``: the whole :class:`~gbxcule.rl.schemas.TrainConfig`.
* ``task.py`` and ``task.json``: a copy of the task's file and where it came from
  (``gbxcule.tasks.load``); eval, resume and L4 load the task from there.
* ``metrics.jsonl``: one record per update. Appended a whole line at a time, flushed
  and fsynced; on resume :meth:`Run.trim_metrics` keeps only complete, parseable lines
  with an update index below the checkpoint's (a torn last line or records of updates
  the checkpoint does not hold are dropped) and rewrites the file atomically, so the
  update index stays continuous without duplicates.
* ``checkpoints/``: ``latest.pt`` after every update and ``update_XXXXXX.pt`` every K.
* ``failures/``: fail-fast bundles (:mod:`gbxcule.rl.failfast`).

Every other file is written atomically: temp file, fsync, rename, fsync of the folder.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import math
import os
import pickle
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from gbxcule.files import checkout_root, write_atomic
from gbxcule.rl import schemas
from gbxcule.rl.schemas import TrainConfig


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_durable(path: str | Path, data: bytes) -> Path:
    """:func:`gbxcule.files.write_atomic`, then fsync the folder so the rename survives."""
    path = write_atomic(path, data)
    fsync_dir(path.parent)
    return path


def write_json(path: str | Path, obj: Any) -> Path:
    return write_bytes_durable(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """One whole line, flushed and fsynced (a crash can tear only this last line)."""
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The complete records of a JSONL file (a torn last line is skipped)."""
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def sha256_file(path: str | Path | None) -> str | None:
    if path is None:
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def git_info() -> dict[str, Any]:
    root = checkout_root()
    if root is None:
        return {"commit": None, "dirty": None}
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout
        return {"commit": commit or None, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def build_meta(cfg: TrainConfig, run_id: str, rom: Path, starts: list[str], task: Any) -> dict:
    import warp as wp

    cuda = torch.cuda.is_available()
    return {
        "schema": schemas.META_SCHEMA,
        "run_id": run_id,
        "schemas": {
            "meta": schemas.META_SCHEMA,
            "config": schemas.CONFIG_SCHEMA,
            "metrics": schemas.METRICS_SCHEMA,
            "checkpoint": schemas.CHECKPOINT_SCHEMA,
            "failure": schemas.FAILURE_SCHEMA,
        },
        "task": cfg.task,
        "task_name": task.name,
        "rom": {"path": str(rom), "sha256": sha256_file(rom)},
        "starts": [{"path": p, "sha256": sha256_file(p)} for p in starts],
        "num_envs": cfg.num_envs,
        "frames_per_step": task.frames_per_step,
        "release_after_frames": task.release_after_frames,
        "stack": cfg.stack,
        "obs_format": cfg.obs_format,
        "action_codec": task.action_codec,
        "algo": schemas.ALGO,
        "algo_version": schemas.ALGO_VERSION,
        "mode": cfg.mode,
        "git": git_info(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "warp": wp.config.version,
        "cuda_available": cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "device": cfg.device,
        "world_size": cfg.world_size,
    }


def run_name(cfg: TrainConfig, rom: Path) -> str:
    ts = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    sha = (sha256_file(rom) or "")[:8]
    rom_id = f"{rom.stem}-{sha}".replace("__", "_")
    tag = cfg.tag.replace("/", "-").replace("__", "_")
    return f"{ts}__{schemas.ALGO}__{rom_id}__{tag}"


WRITER_LOCK = "writer.lock"


class RunInputError(ValueError):
    """A run opened on files it did not train on (another ROM or start state)."""


def check_run_inputs(run: Run, cfg: TrainConfig, task: Any, own_starts: bool = True) -> None:
    """Refuse to evaluate, resume or compare ``run`` on a ROM or start states other than
    the ones it trained on (their sha256 in ``meta.json``), naming both; ``own_starts``:
    the run's own start pool is used (not held-out states). Files are hashed, never
    parsed, before they match: a path edited into the run's config reveals nothing."""
    meta = run.meta()
    _check_file("ROM", task.rom_path(cfg.rom), meta.get("rom"), run)
    if not own_starts or "starts" not in meta:
        return
    paths = task.start_paths(cfg.state)
    trained = meta["starts"]
    if len(paths) != len(trained):
        raise RunInputError(
            f"{run.path.name} trained from {len(trained)} start state(s) and its task and "
            f"config now name {len(paths)}: {[str(p) for p in paths]}"
        )
    for path, record in zip(paths, trained, strict=True):
        _check_file("start state", path, record, run)


def _check_file(what: str, path: Path, record: dict | None, run: Run) -> None:
    if record is None or record.get("sha256") is None:  # a run from before runs recorded it
        return
    want = record["sha256"]
    got = sha256_file(path) if Path(path).is_file() else None
    if got != want:
        now = "missing" if got is None else f"sha256 {got[:16]}"
        raise RunInputError(
            f"{what} {path} ({now}) is not the {what} {run.path.name} trained on "
            f"({record['path']}, sha256 {want[:16]})"
        )


class RunBusyError(ValueError):
    """A run another process is writing (its ``writer.lock`` is held)."""


class Run:
    """An open run directory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.run_id = self.path.name

    @classmethod
    def create(
        cls,
        out: str | Path,
        cfg: TrainConfig,
        rom: Path,
        starts: list[str],
        task: Any,
        meta_extra: dict[str, Any] | None = None,
    ) -> Run:
        """A new run of ``task`` (a loaded :class:`~gbxcule.tasks.Task`: its file is kept
        as ``task.py``) under ``out``."""
        from gbxcule.tasks import save_run_task

        final = Path(out) / run_name(cfg, rom)
        if final.exists():
            raise FileExistsError(f"run directory exists: {final}")
        # Built under a hidden name and renamed whole: a reader never sees a half-made run.
        path = final.parent / f".{final.name}.creating"
        path.mkdir(parents=True)
        try:
            (path / "checkpoints").mkdir()
            (path / "failures").mkdir()
            write_json(path / "config.json", cfg.to_json())
            meta = build_meta(cfg, final.name, rom, starts, task)
            meta["task_file"] = save_run_task(task, path)
            meta.update(meta_extra or {})  # distributed: world size, ranks' devices and envs
            write_json(path / "meta.json", meta)
            (path / "metrics.jsonl").touch()
            fsync_dir(path)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)  # nothing half-made stays behind
            raise
        os.rename(path, final)
        fsync_dir(final.parent)
        return cls(final)

    @classmethod
    def open(cls, path: str | Path) -> Run:
        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"not a run directory (no config.json): {path}")
        return cls(path)

    def hold_writer(self) -> Any:
        """Take this run's writer lock (``writer.lock``, an advisory ``flock`` the system
        drops when the process ends, ``kill -9`` included) and return the open file that
        holds it: close it to let go. A second writer is refused naming the first.
        (Without ``fcntl``, on Windows, nothing is locked.)"""
        try:
            import fcntl
        except ImportError:
            return None
        f = open(self.path / WRITER_LOCK, "a+")  # noqa: SIM115 - held until the run ends
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            who = f.read().strip() or "another process"
            f.close()
            raise RunBusyError(
                f"{self.path} is being written by {who}: one writer per run (wait for it, "
                "or stop it, then resume)"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"process {os.getpid()} on {platform.node()}\n")
        f.flush()
        return f

    def remove_stale_temp_files(self) -> list[Path]:
        """Delete temp files a killed writer left (``.<name>.<random>`` of ``write_atomic``);
        nothing ever reads them, this only keeps the folder clean. Call only when no
        other process writes to this run."""
        stale = [p for p in self.path.rglob(".*") if p.is_file()]
        for p in stale:
            p.unlink(missing_ok=True)
        return stale

    def config(self) -> TrainConfig:
        return TrainConfig.from_json(read_json(self.path / "config.json"))

    def meta(self) -> dict:
        return read_json(self.path / "meta.json")

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    def append_metrics(self, record: dict[str, Any]) -> None:
        append_jsonl(self.metrics_path, record)

    def metrics(self) -> list[dict[str, Any]]:
        return read_jsonl(self.metrics_path)

    def trim_metrics(self, next_update: int) -> int:
        """Keep the complete records of updates ``< next_update`` (rewritten atomically)."""
        keep = [r for r in self.metrics() if r.get("update", next_update) < next_update]
        data = b"".join((json.dumps(r, sort_keys=True) + "\n").encode() for r in keep)
        write_bytes_durable(self.metrics_path, data)
        return len(keep)

    # ---- checkpoints ------------------------------------------------------------------

    def latest_checkpoint(self) -> Path | None:
        p = self.path / "checkpoints" / "latest.pt"
        return p if p.is_file() else None

    def save_checkpoint(
        self, state: dict[str, Any], every: int, keep: int = 0, score: float | None = None
    ) -> Path:
        """``latest.pt``; ``update_XXXXXX.pt`` every ``every`` updates, the ``keep`` newest
        kept (0: all); ``best.pt`` whenever ``score`` (the running mean return) beats the
        best so far (``best.json`` says which update and its score)."""
        state = {"schema": schemas.CHECKPOINT_SCHEMA, "run_id": self.run_id, **state}
        buf = io.BytesIO()
        torch.save(state, buf)
        data = buf.getvalue()
        folder = self.path / "checkpoints"
        done = state["update"]  # updates completed
        if every > 0 and done % every == 0:
            write_bytes_durable(folder / f"update_{done:06d}.pt", data)
            if keep > 0:
                for old in sorted(folder.glob("update_*.pt"))[:-keep]:
                    old.unlink()
        if score is not None and math.isfinite(score) and score > self._best_score():
            write_bytes_durable(folder / "best.pt", data)
            write_json(folder / "best.json", {"update": done, "episode_return_recent": score})
        return write_bytes_durable(folder / "latest.pt", data)

    def _best_score(self) -> float:
        best = self.path / "checkpoints" / "best.json"
        return float(read_json(best)["episode_return_recent"]) if best.is_file() else -math.inf


class CheckpointError(ValueError):
    """A checkpoint that cannot be read (cut short, corrupt, not ours, or holding code)."""


def _allowed_globals() -> list[Any]:
    """What a checkpoint may hold besides tensors and plain data: NumPy arrays (start
    states) and their dtypes. Nothing callable."""
    import numpy as np

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # NumPy 1.x
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    kinds = (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
             np.uint64, np.int64, np.float32, np.float64)  # fmt: skip
    return [_reconstruct, np.ndarray, np.dtype, *{type(np.dtype(k)) for k in kinds}]


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def load_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict[str, Any]:
    """A checkpoint file, or a run directory's ``checkpoints/latest.pt``.

    Loaded with ``weights_only=True``: tensors, plain data and NumPy arrays only, so a
    checkpoint someone shares cannot run code when it is opened (the run's ``task.py``
    is code, and says so: ``gbxcule.tasks.load``). A file cut short or corrupt raises
    :class:`CheckpointError` naming it."""
    path = Path(path)
    if path.is_dir():
        latest = path / "checkpoints" / "latest.pt"
        if not latest.is_file():
            raise FileNotFoundError(f"no checkpoint in {path} (checkpoints/latest.pt missing)")
        path = latest
    if path.is_file() and path.stat().st_size == 0:
        raise CheckpointError(f"{path}: not a complete checkpoint (an empty file)")
    try:
        with torch.serialization.safe_globals(_allowed_globals()):
            state = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            f"{path}: refused: it holds Python objects a checkpoint of ours never does "
            f"(loading it could run code): {_first_line(exc)}"
        ) from exc
    except (RuntimeError, EOFError, OSError) as exc:
        raise CheckpointError(
            f"{path}: not a complete checkpoint (cut short or corrupt): {_first_line(exc)}"
        ) from exc
    if not isinstance(state, dict) or state.get("schema") != schemas.CHECKPOINT_SCHEMA:
        got = state.get("schema") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(f"{path}: checkpoint schema {got!r} is not ours")
    for name, tensor in (state.get("model") or {}).items():
        if torch.is_tensor(tensor) and tensor.is_floating_point() and not tensor.isfinite().all():
            raise CheckpointError(f"{path}: the policy's {name} holds NaN or infinite values")
    return state


def newest_valid_checkpoint(
    run_dir: str | Path, map_location: Any = "cpu"
) -> tuple[Path, dict[str, Any], list[str]]:
    """The newest checkpoint of a run that loads: ``latest.pt``, else the ``update_*.pt``
    files newest first. Returns (path, state, the problems of the ones skipped); raises
    :class:`CheckpointError` when none loads."""
    folder = Path(run_dir) / "checkpoints"
    candidates = [folder / "latest.pt", *sorted(folder.glob("update_*.pt"), reverse=True)]
    problems = []
    for path in candidates:
        if not path.is_file():
            continue
        try:
            return path, load_checkpoint(path, map_location), problems
        except CheckpointError as exc:
            problems.append(str(exc))
    if not problems:
        raise FileNotFoundError(f"no checkpoint in {run_dir} (checkpoints/*.pt)")
    raise CheckpointError(f"no checkpoint of {run_dir} loads: {'; '.join(problems)}")
