"""PyBoyVecMpBackend: ``num_envs`` PyBoy oracles spread over worker processes (spawn).

Each worker runs a :class:`PyBoySingleBackend` over a contiguous slice of the
envs and answers commands over a pipe, so every env behaves exactly as it does
in-process (same construction, reset snapshot and input timing); only the
stepping runs in parallel. Errors raised in a worker (bad env, bad range) are
re-raised in the caller with their original type.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.asm.bootrom import check_boot
from gbxcule.backends.checks import (
    check_env,
    check_positive_int,
    check_seed,
    check_step_config,
    read_rom,
    resolve_machine,
)
from gbxcule.backends.host_training import HostTrainingMixin, host_actions
from gbxcule.backends.pyboy_backend import (
    SOUND_IO_RANGE,
    PyBoySingleBackend,
    require_pyboy_version,
)
from gbxcule.core.actions import get_codec, validate_actions
from gbxcule.core.symbols import SymbolTable, symbols_beside

_COMMANDS = frozenset(
    {
        "reset",
        "step",
        "get_cpu_state",
        "save_state",
        "read_memory",
        "write_memory",
        "serial_output",
        "frame_shades",
        "frame_rgb",
        "read_wram_bank",
        "load_state",
        "set_step_end",
        "step_frames",
    }
)
_JOIN_SECONDS = 10.0


class WorkerError(RuntimeError):
    """A worker process failed in a way that has no better exception type."""


def _worker_main(conn: Any, rom_path: str, kwargs: dict[str, Any]) -> None:
    try:
        backend = PyBoySingleBackend(rom_path, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - report any start-up failure to the parent
        _send_error(conn, exc)
        return
    conn.send(("ok", None))
    try:
        while True:
            try:
                cmd, args = conn.recv()
            except EOFError:
                break
            if cmd == "close":
                break
            try:
                if cmd not in _COMMANDS:
                    raise WorkerError(f"unknown worker command {cmd!r}")
                conn.send(("ok", getattr(backend, cmd)(*args)))
            except Exception as exc:  # noqa: BLE001 - forwarded to the parent
                _send_error(conn, exc)
    finally:
        backend.close()
        conn.close()


def _send_error(conn: Any, exc: BaseException) -> None:
    try:
        conn.send(("err", exc))
    except Exception:  # noqa: BLE001 - unpicklable exception: send its text
        conn.send(("err", WorkerError(f"{type(exc).__name__}: {exc}")))


def _shutdown(procs: list[Any], conns: list[Any]) -> None:
    for conn in conns:
        try:
            conn.send(("close", ()))
        except (OSError, BrokenPipeError):
            pass
    for proc in procs:
        proc.join(_JOIN_SECONDS)
        if proc.is_alive():
            proc.terminate()
            proc.join(_JOIN_SECONDS)
    for conn in conns:
        conn.close()


class PyBoyVecMpBackend(HostTrainingMixin):
    """Same protocol as :class:`PyBoySingleBackend`, envs split over ``num_workers`` processes."""

    name = "pyboy-mp"

    def __init__(
        self,
        rom_path: str | Path,
        *,
        num_envs: int = 1,
        frames_per_step: int = 24,
        release_after_frames: int | None = None,
        action_codec: str = "pokemonred_puffer_v1",
        render: bool = True,
        num_workers: int | None = None,
        allow_bad_logo: bool = False,
        boot: str | None = None,
        stock: bool = False,
        sound_emulated: bool | None = None,
        cgb: bool | None = None,
    ) -> None:
        """``boot``, ``stock``, ``sound_emulated``, ``cgb``: as :class:`PyBoySingleBackend`'s."""
        require_pyboy_version()
        if boot is not None:
            check_boot(boot)
        rom = read_rom(rom_path, allow_bad_logo=allow_bad_logo, allow_cgb_only=True)
        self.cgb, self.boot = resolve_machine(cgb, boot or ("pyboy" if stock else None), rom)
        self.stock = bool(stock)
        self.sound_emulated = True if sound_emulated is None else bool(sound_emulated)
        self.lockstep_ignore = () if self.sound_emulated else (SOUND_IO_RANGE,)
        release_after_frames = check_step_config(num_envs, frames_per_step, release_after_frames)
        self.codec = get_codec(action_codec)
        self.step_end: Any = None
        if not self.cgb:  # refuse here, not in every worker
            read_rom(rom_path, allow_bad_logo=allow_bad_logo)
        if num_workers is None:
            num_workers = min(num_envs, os.cpu_count() or 1)
        num_workers = min(check_positive_int("num_workers", num_workers), num_envs)
        self.rom_path = Path(rom_path)
        self.num_envs = num_envs
        self.frames_per_step = frames_per_step
        self.release_after_frames = release_after_frames
        self.render = bool(render)
        self.num_workers = num_workers
        # Contiguous slices: worker w owns envs [bounds[w], bounds[w + 1]).
        self._bounds = np.linspace(0, num_envs, num_workers + 1).round().astype(int).tolist()

        ctx = mp.get_context("spawn")
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        for w in range(num_workers):
            parent, child = ctx.Pipe()
            kwargs = {
                "num_envs": self._bounds[w + 1] - self._bounds[w],
                "frames_per_step": frames_per_step,
                "release_after_frames": release_after_frames,
                "action_codec": self.codec.name,
                "render": self.render,
                "allow_bad_logo": allow_bad_logo,
                "boot": self.boot,
                "stock": self.stock,
                "sound_emulated": self.sound_emulated,
                "cgb": self.cgb,
            }
            proc = ctx.Process(
                target=_worker_main, args=(child, str(rom_path), kwargs), daemon=True
            )
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        self._finalizer = weakref.finalize(self, _shutdown, self._procs, self._conns)
        self._init_host_training()
        try:
            self._gather(range(num_workers))
        except BaseException:
            self.close()
            raise

    @functools.cached_property
    def symbols(self) -> SymbolTable:
        """The ``.sym`` file beside the ROM: task reads by symbol, as on the Warp backends."""
        return symbols_beside(self.rom_path)

    def _gather(self, workers: Any) -> list[Any]:
        results, error = [], None
        for w in workers:
            try:
                status, payload = self._conns[w].recv()
            except EOFError:
                status, payload = "err", WorkerError(f"PyBoy worker {w} exited unexpectedly")
            if status == "err" and error is None:
                error = payload
            results.append(payload)
        if error is not None:
            raise error
        return results

    def _call_env(self, env: int, cmd: str, *args: Any) -> Any:
        env = check_env(env, self.num_envs)
        w = int(np.searchsorted(self._bounds, env, side="right")) - 1
        self._conns[w].send((cmd, (env - self._bounds[w], *args)))
        return self._gather([w])[0]

    def reset(self, seed: int | None = None) -> None:
        seed = check_seed(seed)
        for conn in self._conns:
            conn.send(("reset", (seed,)))
        self._gather(range(self.num_workers))

    def step(self, actions: Any) -> None:
        acts = validate_actions(host_actions(actions), self.num_envs, self.codec)
        for w, conn in enumerate(self._conns):
            conn.send(("step", (acts[self._bounds[w] : self._bounds[w + 1]],)))
        self._gather(range(self.num_workers))

    def set_step_end(self, end: Any) -> None:
        """:meth:`PyBoySingleBackend.set_step_end` in every worker."""
        for conn in self._conns:
            conn.send(("set_step_end", (end,)))
        self._gather(range(self.num_workers))
        self.step_end = end

    def step_frames(self) -> np.ndarray:
        """int64 ``[N]``: the frames each env's last step ran."""
        for conn in self._conns:
            conn.send(("step_frames", ()))
        return np.concatenate(self._gather(range(self.num_workers)))

    def load_state(self, source: Any, envs: Any = None) -> None:
        """Reset ``envs`` (default: all) and load a PyBoy ``.state`` or our snapshot into
        them (:meth:`PyBoySingleBackend.load_state`); a path is read here, once."""
        data = Path(source).read_bytes() if isinstance(source, (str, Path)) else source
        ids = range(self.num_envs) if envs is None else [check_env(e, self.num_envs) for e in envs]
        per_worker: dict[int, list[int]] = {}
        for env in ids:
            w = int(np.searchsorted(self._bounds, env, side="right")) - 1
            per_worker.setdefault(w, []).append(env - self._bounds[w])
        for w, local in per_worker.items():
            self._conns[w].send(("load_state", (data, local)))
        self._gather(list(per_worker))

    def save_state(self, env: int) -> bytes:
        return self._call_env(env, "save_state")

    def get_cpu_state(self, env: int) -> dict[str, int]:
        return self._call_env(env, "get_cpu_state")

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        return self._call_env(env, "read_memory", lo, hi)

    def write_memory(self, env: int, addr: int, data: bytes | np.ndarray | int) -> None:
        self._call_env(env, "write_memory", addr, data)

    def serial_output(self, env: int) -> bytes:
        return self._call_env(env, "serial_output")

    def frame_shades(self, env: int) -> np.ndarray:
        return self._call_env(env, "frame_shades")

    def frame_rgb(self, env: int) -> np.ndarray:
        return self._call_env(env, "frame_rgb")

    def read_wram_bank(self, env: int, bank: int, lo: int, hi: int) -> np.ndarray:
        return self._call_env(env, "read_wram_bank", bank, lo, hi)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> PyBoyVecMpBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
