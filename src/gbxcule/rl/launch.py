"""Ranks on one machine with nothing listening beyond it: ``gbxcule train --nproc P``.

``torchrun`` serves its rendezvous store from its agent on every interface (``*:PORT``),
whatever ``--master-addr`` says: on a shared host anyone who can reach the port can
write into the job's store. A single-machine job needs no network, so this launcher
serves the store itself from a socket it binds to ``127.0.0.1`` (handed to ``TCPStore``
as ``master_listen_fd``) and starts ``P`` ranks of ``gbxcule train`` with torchrun's
environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR=127.0.0.1``, ...),
told to use that store as torchrun's workers use their agent's
(``TORCHELASTIC_USE_AGENT_STORE``), with gloo's and NCCL's sockets on loopback too.

A rank that fails takes the others down (SIGTERM, then SIGKILL after a grace), as
torchrun does; so does Ctrl-C or a SIGTERM to the launcher. The exit code is the first
failed rank's (128 + the signal when stopped).
"""

from __future__ import annotations

import datetime as _dt
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

LOOPBACK = "127.0.0.1"
GRACE_S = 30.0  # a rank told to stop writes its failure bundle first


def loopback_store(world_size: int, timeout_s: float = 300.0) -> tuple[Any, tuple[str, int]]:
    """A ``TCPStore`` server for ``world_size`` clients on a socket bound to loopback only,
    and the address it listens on (the store owns the socket and closes it when freed)."""
    import torch.distributed as dist

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((LOOPBACK, 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    store = dist.TCPStore(  # pyright: ignore[reportPrivateImportUsage]
        LOOPBACK,
        port,
        world_size,
        is_master=True,
        timeout=_dt.timedelta(seconds=timeout_s),
        wait_for_workers=False,
        master_listen_fd=sock.fileno(),
    )
    address = sock.getsockname()
    sock.detach()  # the store's now
    return store, address


def rank_env(rank: int, nproc: int, port: int) -> dict[str, str]:
    """The environment torchrun would give rank ``rank``, on loopback."""
    return {
        **os.environ,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "WORLD_SIZE": str(nproc),
        "LOCAL_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": LOOPBACK,
        "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",  # connect to our store; none starts its own
        "TORCHELASTIC_RESTART_COUNT": "0",
        "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo"),
        "NCCL_SOCKET_IFNAME": os.environ.get("NCCL_SOCKET_IFNAME", "lo"),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }


def run_local_ranks(nproc: int, argv: list[str], *, timeout_s: float = 300.0) -> int:
    """Run ``python -m gbxcule ARGV`` as ``nproc`` ranks of one job on this machine (module
    doc); the exit code: 0, or the first failed rank's."""
    store, (_, port) = loopback_store(nproc, timeout_s)
    cmd = [sys.executable, "-m", "gbxcule", *argv]
    procs = [subprocess.Popen(cmd, env=rank_env(r, nproc, port)) for r in range(nproc)]
    failed: int | None = None
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = [c for c in codes if c not in (None, 0)]
            if bad:
                failed = bad[0]
                break
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.1)
    except (KeyboardInterrupt, _Stopped) as exc:  # Ctrl-C or SIGTERM: every rank stops
        failed = 128 + (exc.signum if isinstance(exc, _Stopped) else signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop(procs)
        del store
    return failed if failed is not None else 1


class _Stopped(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _raise_stopped(signum: int, frame: Any) -> None:
    raise _Stopped(signum)


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM (once: a rank's teardown signal, ``distributed.install_sigterm``) to the ranks
    still running, SIGKILL to any left after the grace."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + GRACE_S
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
