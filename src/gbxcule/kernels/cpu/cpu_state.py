"""The SM83 CPU's state between instructions: its power-on values and its PyBoy mapping.

The instruction semantics live in ``cpu.py`` / ``cpu_fast.py`` / ``cpu_regs.py`` and the
interrupt check in ``interrupts.py``; this file keeps what PyBoy's ``CPU`` keeps in its
``__init__``, ``save_state`` and ``load_state``: the registers, IME, its EI delay, HALT,
the queued-interrupt flag and the cycle counter (with IF and IE, which PyBoy's CPU saves).

* ``cpu_power_on(m, i)``: PyBoy's ``CPU()``: every register 0, PC 0, nothing pending.
* ``cpu_from_pyboy`` / ``cpu_to_pyboy`` (host side): PyBoy's CPU block <-> a host
  :data:`~gbxcule.kernels.state.MachineState`. ``halted_during_ei`` is not saved (PyBoy
  restarts with it false: loading keeps ours), nor are ``locked`` and ``access_offset``.

Why a file of its own: ``cpu.py`` and its helpers are the instruction engine, and
``interrupts.py`` the check-and-dispatch that imports the whole bus; this state is what
both share, and the save-state bridge can import it without either.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.memory_layout import IE_OFF
from gbxcule.core.pyboy_state import CpuState
from gbxcule.kernels.board.ioregs import IF, host_io
from gbxcule.kernels.state import (
    HALT_EI,
    IME_DELAY,
    INT_QUEUED,
    PC,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_power_on(m: wp.ref[Machine], i: int):
    """PC 0, no EI delay, no HALT-after-EI, no queued interrupt (registers, IME, HALT,
    cycles, IF and IE are 0: every column and the IO page start at 0)."""
    i32 = m.i32
    i32[i, PC] = 0
    i32[i, IME_DELAY] = 0
    i32[i, HALT_EI] = 0
    i32[i, INT_QUEUED] = 0


# ---- PyBoy save state (host side) ------------------------------------------------------

CPU_UNSAVED = frozenset({"halt_ei", "locked", "access_offset"})
CPU_REGS = ("a", "f", "b", "c", "d", "e", "sp", "pc")  # CpuState fields stored as they are


def cpu_from_pyboy(cpu: CpuState, st: MachineState) -> None:
    """Load PyBoy's CPU block (registers, IME and its delay, HALT, queued interrupt, cycle
    counter, IF, IE) into the host state ``st`` (PyBoy's ``CPU.load_state``)."""
    st["mem"][IE_OFF] = cpu.ie
    host_io(st)[IF] = cpu.if_ & 0x1F
    put_fields(st, {name: getattr(cpu, name) for name in CPU_REGS})
    put_fields(
        st,
        {
            "h": cpu.hl >> 8,
            "l": cpu.hl & 0xFF,
            "ime": int(bool(cpu.ime)),
            "ime_delay": cpu.ime_delay,
            "halted": int(bool(cpu.halted)),
            "int_queued": int(bool(cpu.interrupt_queued)),
            "cycles": cpu.cycles,
        },
    )


def cpu_to_pyboy(st: MachineState) -> CpuState:
    """PyBoy's CPU block for the host state ``st`` (never STOPped: we do not emulate STOP)."""
    return CpuState(
        **{name: int(st[name]) for name in CPU_REGS},
        hl=int(st["h"]) << 8 | int(st["l"]),
        ime=int(st["ime"]),
        ime_delay=int(st["ime_delay"]),
        halted=int(st["halted"]),
        stopped=0,
        ie=int(st["mem"][IE_OFF]),
        interrupt_queued=int(st["int_queued"]),
        if_=int(host_io(st)[IF]),
        cycles=int(st["cycles"]),
    )


CPU = Unit(
    "cpu",
    cpu_power_on,
    load=lambda state, st, cart: cpu_from_pyboy(state.cpu, st),
    save=lambda st, cart, layout: {"cpu": cpu_to_pyboy(st)},
    unsaved=CPU_UNSAVED,
)
