"""Env slices: the envs cut into contiguous ranges, and one kernel launch per range.

A CPU backend splits its N envs into one slice per thread and launches each slice's
kernel from its own thread (Warp's CPU launches run on the calling thread and release
the GIL): slice 0 on the calling thread, which would otherwise only wait, the others
on a pool of worker threads. The step kernels and the pixel renders both launch
through :class:`EnvSlices` (:meth:`~EnvSlices.launch`, or recorded launches replayed
by :meth:`~EnvSlices.replay`), so they split the envs the same way on the same threads.
While a Warp graph is being captured on the device (``wp.ScopedCapture``), every slice
launches from the calling thread: a launch from another thread would run at once
instead of being recorded.

A kernel launched this way sees slice-local env indices: every argument indexed by
env is passed as :class:`PerEnv` (cut to the slice's rows) or :class:`PerSlice` (one
prepared value per slice, e.g. a ``Machine`` view).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

import warp as wp


@dataclass(frozen=True)
class PerEnv:
    """A kernel argument whose first axis is the env: each slice's launch gets rows
    ``[lo, hi)`` of it (``None``, an output that is not wanted, stays ``None``)."""

    array: Any


@dataclass(frozen=True)
class PerSlice:
    """A kernel argument prepared once per slice, in slice order (e.g. ``Machine`` views)."""

    parts: Sequence[Any]


class EnvSlices:
    """Envs ``[0, num_envs)`` in ``parts`` contiguous slices of near-equal size, with a
    worker pool for every slice but the first when there is more than one."""

    def __init__(
        self,
        num_envs: int,
        parts: int = 1,
        block_dim: int | None = None,
        kernel_for: Any = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.block_dim = block_dim  # threads per CUDA block; None: Warp's own (256, or the CPU)
        # the kernel a launch runs for the one asked for: a Game Boy Color machine's variant
        # (kernels/variant.py, cgb_variant), or the kernel itself
        self.kernel_for = kernel_for if kernel_for is not None else (lambda kernel: kernel)
        parts = max(1, min(parts, num_envs))
        bounds = [num_envs * k // parts for k in range(parts + 1)]
        self.ranges: list[tuple[int, int]] = list(zip(bounds[:-1], bounds[1:]))
        self._pool: ThreadPoolExecutor | None = None
        self._loaded: set[Any] = set()  # kernels whose module this object has seen loaded
        if parts > 1:
            self._pool = ThreadPoolExecutor(max_workers=parts - 1, thread_name_prefix="warp-cpu")

    def launch(
        self, kernel: Any, args: Sequence[Any], *, device: Any, dim_tail: tuple[int, ...] = ()
    ) -> None:
        """Launch ``kernel`` over every slice: dim ``(hi - lo, *dim_tail)``, inputs ``args``
        with :class:`PerEnv` / :class:`PerSlice` entries resolved for the slice. Returns
        when every slice's launch has returned."""
        kernel = self.kernel_for(kernel)
        if self._pool is not None and kernel not in self._loaded:
            # Warp loads a module on its first launch; two threads launching it first at
            # once would both load it (one copy is then dropped). Recording a launch
            # loads the module without running it, here on one thread.
            self._launch_one(kernel, args, 0, device, dim_tail, record=True)
            self._loaded.add(kernel)
        self._run(
            [
                partial(self._launch_one, kernel, args, k, device, dim_tail)
                for k in range(len(self.ranges))
            ],
            device,
        )

    def record(
        self, kernel: Any, args: Sequence[Any], *, device: Any, dim_tail: tuple[int, ...] = ()
    ) -> list[Any]:
        """The launches :meth:`launch` would make, recorded (``wp.launch(record_cmd=True)``)
        for :meth:`replay`: for a launch repeated with the same arguments every step, it
        skips Warp's argument packing (~20 us a launch on the CPU)."""
        kernel = self.kernel_for(kernel)
        return [
            self._launch_one(kernel, args, k, device, dim_tail, record=True)
            for k in range(len(self.ranges))
        ]

    def replay(self, recorded: Sequence[Any]) -> None:
        """Run launches from :meth:`record` on their slices' threads; returns when all have."""
        self._run([cmd.launch for cmd in recorded], recorded[0].device)

    def _run(self, jobs: Sequence[Any], device: Any) -> None:
        """One job per slice: job 0 on the calling thread (it would only wait), the others on
        the workers (all on the calling thread while a graph is captured on ``device``);
        returns when all have."""
        if not self.ranges:
            raise RuntimeError("the backend is closed: build a new one to run envs again")
        if self._pool is not None and wp.get_device(device).is_capturing:
            for job in jobs:
                job()
            return
        futures = [self._pool.submit(job) for job in jobs[1:]] if self._pool is not None else []
        try:
            jobs[0]()
        finally:
            for fut in futures:
                fut.result()

    def _launch_one(
        self,
        kernel: Any,
        args: Sequence[Any],
        k: int,
        device: Any,
        dim_tail: tuple[int, ...],
        record: bool = False,
    ) -> Any:
        lo, hi = self.ranges[k]
        inputs = [self._part(arg, k, lo, hi) for arg in args]
        extra = {} if self.block_dim is None else {"block_dim": self.block_dim}
        return wp.launch(
            kernel,
            dim=(hi - lo, *dim_tail),
            inputs=inputs,
            device=device,
            record_cmd=record,
            **extra,
        )

    def _part(self, arg: Any, k: int, lo: int, hi: int) -> Any:
        if isinstance(arg, PerSlice):
            return arg.parts[k]
        if isinstance(arg, PerEnv):
            array = arg.array
            return array if array is None or (lo, hi) == (0, self.num_envs) else array[lo:hi]
        return arg

    def close(self) -> None:
        """Stop the worker threads; later launches raise ``RuntimeError``."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.ranges = []
