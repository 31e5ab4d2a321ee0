"""Debugger-style memory access for the host: one env, through the CPU's bus.

``peek`` (and ``peek_envs``, one launch over every env) reads like PyBoy's ``pyboy.memory[lo:hi]`` (``getitem`` per address, with
its side effects, e.g. a STAT read clears the one-shot mode override) and
``poke`` writes like ``pyboy.memory[addr] = v`` (``setitem``: ROM writes reach the
mapper, IO writes act). Both run on a single thread between steps.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.board.bus import bus_read, bus_write
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})


@wp.kernel
def peek(m: Machine, env: int, lo: int, out: wp.array(dtype=wp.uint8)):
    k = wp.int32(0)
    while k < out.shape[0]:
        out[k] = wp.uint8(bus_read(m, env, (lo + k) & 0xFFFF))
        k += 1


@wp.kernel
def peek_envs(m: Machine, addrs: wp.array(dtype=wp.int32), out: wp.array2d(dtype=wp.uint8)):
    """``out[i, k]``: env ``i``'s byte at ``addrs[k]``, read in that order as ``peek`` reads
    (task reads of the IO registers computed on a read: tasks/memory.py)."""
    i = wp.tid()
    k = wp.int32(0)
    while k < addrs.shape[0]:
        out[i, k] = wp.uint8(bus_read(m, i, addrs[k]))
        k += 1


@wp.kernel
def poke(m: Machine, env: int, addr: int, data: wp.array(dtype=wp.uint8)):
    k = wp.int32(0)
    while k < data.shape[0]:
        bus_write(m, env, (addr + k) & 0xFFFF, int(data[k]))
        k += 1
