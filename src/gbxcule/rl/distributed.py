"""Training across processes, GPUs and machines on ``torch.distributed`` (``torchrun``).

``gbxcule train`` under ``torchrun --nproc-per-node P [--nnodes M ...] -m gbxcule train``
finds torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``)
and joins a process group: gloo for CPU tensors and, where CUDA and NCCL are there,
NCCL for CUDA tensors (``"cpu:gloo,cuda:nccl"``). Each rank owns ``num_envs`` envs on
its own backend and device (``cuda:LOCAL_RANK`` for ``--device cuda``); rank ``r``'s envs
are the global envs ``[r*N, (r+1)*N)``. Everything random is drawn for the global env
index space on every rank from the same seeded generators, and each rank takes its rows
(action noise) or its share (the minibatch permutation), so ``P`` ranks x ``N`` envs
collect and train on the same trajectories and minibatches as 1 process x ``P*N`` envs.

Without torchrun (no ``RANK`` in the environment) :func:`setup` returns a one-rank
context whose collectives are the identity; nothing else changes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import signal
import socket
import time
from dataclasses import dataclass
from typing import Any

import torch

KILL_ENV = "GBXCULE_DEBUG_KILL_RANK_AT"  # "RANK:UPDATE": that rank SIGKILLs itself (tests)


class RankTerminated(RuntimeError):
    """This rank got SIGTERM (torchrun tearing the job down after another rank failed)."""


class RankFailed(RuntimeError):
    """Another rank died; raised in the survivors with the dead ranks named."""

    def __init__(self, ranks: list[int], infos: list[dict], cause: BaseException) -> None:
        who = ", ".join(
            f"rank {r} (pid {infos[r]['pid']} on {infos[r]['host']}, {infos[r]['device']})"
            for r in ranks
        )
        what = who if ranks else "another rank (not on this host, or not yet gone)"
        super().__init__(f"{what} died; seen here as {type(cause).__name__}: {cause}")
        self.ranks = ranks


class WorldSizeMismatch(ValueError):
    pass


@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None  # None: no process group (one process)
    num_envs: int = 0  # envs of this rank (set by :meth:`set_envs`)

    @property
    def active(self) -> bool:
        return self.backend is not None

    @property
    def sharded(self) -> bool:
        return self.active and self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def env_lo(self) -> int:
        return self.rank * self.num_envs

    @property
    def num_envs_global(self) -> int:
        return self.world_size * self.num_envs

    def set_envs(self, num_envs: int) -> None:
        self.num_envs = num_envs

    def device_for(self, device: str) -> torch.device:
        """``cuda`` -> ``cuda:LOCAL_RANK`` (modulo the visible devices) under torchrun."""
        if device == "cuda" and self.active:
            count = max(torch.cuda.device_count(), 1)
            return torch.device(f"cuda:{self.local_rank % count}")
        return torch.device(device if device != "cuda" else "cuda:0")

    # ---- collectives (the identity on one process) -------------------------------------

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank (pickled, over gloo)."""
        if not self.active:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def all_gather(self, obj: Any) -> list[Any]:
        if not self.active:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def any(self, flag: bool) -> bool:
        """True on every rank when it is True on any (the ranks stop together)."""
        if not self.active:
            return flag
        import torch.distributed as dist

        t = torch.tensor([1 if flag else 0], dtype=torch.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def sum_(self, t: torch.Tensor) -> torch.Tensor:
        """In-place all-reduce SUM of a tensor (CPU: gloo, CUDA: NCCL)."""
        if self.active and self.world_size > 1:
            import torch.distributed as dist

            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def gather_envs(self, t: torch.Tensor) -> torch.Tensor:
        """``[T, N]`` per rank -> ``[T, P*N]`` (rank-major envs), on every rank."""
        if not self.sharded:
            return t
        import torch.distributed as dist

        parts = [torch.empty_like(t) for _ in range(self.world_size)]
        dist.all_gather(parts, t.contiguous())
        return torch.cat(parts, dim=1)

    def reduce_grads(self, params: Any) -> None:
        """Sum every parameter's gradient over the ranks, in one flat all-reduce. Issued on
        the current stream (the learner's): NCCL's stream waits for it and it for NCCL."""
        params = [p for p in params if p.requires_grad]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self.sum_(flat)
        offset = 0
        for p in params:
            n = p.numel()
            p.grad = flat[offset : offset + n].view_as(p)
            offset += n

    @contextlib.contextmanager
    def allow_host_sync(self):
        """The sharded learner reads each minibatch's local share size (data-independent but
        variable): one host read per minibatch, allowed under the CUDA sync guard."""
        if not (torch.cuda.is_available() and torch.cuda.get_sync_debug_mode() != 0):
            yield
            return
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode(0)
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous)


def setup(timeout_s: float = 300.0) -> DistContext:
    """Join torchrun's process group (or return the one-process context)."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return DistContext()
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    backend = "gloo"
    if torch.cuda.is_available() and dist.is_nccl_available():
        backend = "cpu:gloo,cuda:nccl"
        torch.cuda.set_device(local % torch.cuda.device_count())
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=_dt.timedelta(seconds=timeout_s))
    return DistContext(rank=rank, world_size=world, local_rank=local, backend=backend)


def teardown(ctx: DistContext, finished: bool = False) -> None:
    """Leave the process group. ``finished`` (every rank got to the end): wait for the
    others first, so no rank destroys its group and exits while a peer still uses it (a
    rank 1 aborted at exit that way, once, under CI's load: "terminate called without an
    active exception"). Not on an error path, where a peer may never arrive."""
    if ctx.active:
        import torch.distributed as dist

        if dist.is_initialized():
            if finished:
                dist.barrier()
            dist.destroy_process_group()


def rank_info(ctx: DistContext, device: torch.device, num_envs: int) -> dict[str, Any]:
    return {
        "rank": ctx.rank,
        "local_rank": ctx.local_rank,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "device": str(device),
        "num_envs": num_envs,
        "env_range": [ctx.rank * num_envs, (ctx.rank + 1) * num_envs],
    }


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:  # a dead child not yet reaped by torchrun's agent is a zombie
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def dead_ranks(ctx: DistContext, infos: list[dict]) -> list[int]:
    """The ranks on this host whose process is gone (other hosts cannot be seen from here)."""
    host = socket.gethostname()
    return [
        i["rank"]
        for i in infos
        if i["rank"] != ctx.rank and i["host"] == host and _gone(int(i["pid"]))
    ]


def classify_failure(
    ctx: DistContext, infos: list[dict], exc: BaseException
) -> tuple[BaseException, bool]:
    """``(error to report, whether this rank writes the bundle)``. A peer's death (a dead
    process on this host, a broken collective, torchrun's SIGTERM) becomes
    :class:`RankFailed` naming it, written by the lowest surviving rank; a non-finite
    loss (all ranks see the same reduced stats) by rank 0; any other error by its rank."""
    if not ctx.sharded:
        return exc, True
    from gbxcule.rl.failfast import NonFiniteError

    if isinstance(exc, NonFiniteError):
        return exc, ctx.is_main
    peer = isinstance(exc, RankTerminated) or _is_comm_error(exc)
    dead: list[int] = []
    if peer:  # give torchrun a moment to reap the dead process (it shows as a zombie)
        for _ in range(20):
            dead = dead_ranks(ctx, infos)
            if dead:
                break
            time.sleep(0.1)
    else:
        dead = dead_ranks(ctx, infos)
    if not dead and not peer:
        return exc, True
    alive_below = [r for r in range(ctx.rank) if r not in dead]
    return RankFailed(dead, infos, exc), not alive_below


def _is_comm_error(exc: BaseException) -> bool:
    import torch.distributed as dist

    kinds = tuple(
        k for k in (getattr(dist, "DistError", None), getattr(dist, "DistBackendError", None)) if k
    )
    if kinds and isinstance(exc, kinds):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        s in text for s in ("gloo", "nccl", "connection", "timed out", "peer")
    )


def install_sigterm(ctx: DistContext) -> None:
    """Under torchrun, SIGTERM (the agent stopping the job) raises :class:`RankTerminated`
    in the training loop, so the survivors write the bundle before they exit."""
    if not ctx.sharded:
        return

    def _raise(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: a second would cut
        raise RankTerminated(f"rank {ctx.rank} got signal {signum} (job teardown)")  # the bundle

    signal.signal(signal.SIGTERM, _raise)


def ignore_sigterm(ctx: DistContext) -> None:
    """While the bundle is written: a second SIGTERM must not cut it short (torchrun
    SIGKILLs after its grace period if the rank does not exit)."""
    if ctx.sharded:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def maybe_kill_self(ctx: DistContext, update: int) -> None:
    """Fault injection for the tests: ``GBXCULE_DEBUG_KILL_RANK_AT=R:U`` makes rank ``R``
    SIGKILL itself at the start of update ``U`` (an environment variable, not a config
    field, so ``--resume`` does not inherit it)."""
    spec = os.environ.get(KILL_ENV)
    if not spec:
        return
    r, u = (int(x) for x in spec.split(":"))
    if r == ctx.rank and u == update:
        os.kill(os.getpid(), signal.SIGKILL)


def check_world_size(saved: int, ctx: DistContext, what: str) -> None:
    if int(saved) != ctx.world_size:
        raise WorldSizeMismatch(
            f"{what} was trained with world size {saved}; this job has world size "
            f"{ctx.world_size}: resume it with the same number of ranks (torchrun "
            f"--nproc-per-node/--nnodes giving {saved} processes), or start a new run"
        )
