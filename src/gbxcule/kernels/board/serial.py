"""Serial port as PyBoy 2.8.1 models it with no link cable.

SB always reads $FF after a write (nothing answers), but every byte written to
SB is recorded as output (``serial_buf``/``serial_len``, PyBoy's serial buffer).
Writing SC with bit 0 set (internal clock) schedules the end of a transfer
1024 cycles later (8 bits at 8192 Hz); if bit 7 was set too, the transfer then
clears SC bit 7 and raises the serial interrupt at the first sync at or past
that cycle. External-clock transfers never finish. SC reads with bits 1-6 set.

``serial_power_on`` sets PyBoy's ``Serial()`` values; ``serial_from_pyboy`` /
``serial_to_pyboy`` (host side) map PyBoy's serial block of a save state.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.pyboy_state import SerialState
from gbxcule.kernels.board.ioregs import (
    INT_SERIAL,
    MAX_CYCLES,
    NEVER,
    SB,
    SC,
    host_io,
    reg,
    set_reg,
)
from gbxcule.kernels.state import (
    SER_ACTIVE,
    SER_LAST,
    SER_TARGET,
    SER_TO_IRQ,
    SERIAL_LEN,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

CGB = False  # True in the CGB variant (kernels/variant.py)

SERIAL_CAP = 1024  # default bytes of output kept per env (a ring; serial_len counts all)
TRANSFER_CYCLES = wp.constant(wp.int64(8 * 128))


@wp.func
def serial_sync(m: wp.ref[Machine], i: int, cycles: wp.int64) -> int:
    """Advance the port to ``cycles``; returns INT_SERIAL when a transfer completes."""
    i32 = m.i32
    i64 = m.i64
    if cycles == i64[i, SER_LAST]:
        return 0
    i64[i, SER_LAST] = cycles
    irq = 0
    if i32[i, SER_ACTIVE] != 0 and cycles >= i64[i, SER_TARGET]:
        set_reg(m, i, SC, reg(m, i, SC) & 0x7F)
        i32[i, SER_ACTIVE] = 0
        i64[i, SER_TARGET] = NEVER
        irq = INT_SERIAL
    if i32[i, SER_ACTIVE] != 0:
        i64[i, SER_TO_IRQ] = i64[i, SER_TARGET] - cycles
    else:
        i64[i, SER_TO_IRQ] = NEVER
    return irq


@wp.func
def sb_write(m: wp.ref[Machine], i: int, value: int):
    i32 = m.i32
    cap = m.serial_buf.shape[1]
    n = i32[i, SERIAL_LEN]
    if cap > 0:
        m.serial_buf[i, n % cap] = wp.uint8(value & 0xFF)
    i32[i, SERIAL_LEN] = n + 1
    set_reg(m, i, SB, 0xFF)


@wp.func
def sc_write(m: wp.ref[Machine], i: int, value: int):
    i32 = m.i32
    i64 = m.i64
    sc = (value | 0x7E) & 0xFF
    if wp.static(CGB):  # a Colour cartridge on CGB hardware keeps bit 1 (it does nothing)
        if m.cgb_mode != 0:
            sc = (value | 0x7C) & 0xFF
    set_reg(m, i, SC, sc)
    if (sc & 1) != 0:
        i32[i, SER_ACTIVE] = (sc >> 7) & 1
        i64[i, SER_TARGET] = i64[i, SER_LAST] + TRANSFER_CYCLES
        i64[i, SER_TO_IRQ] = TRANSFER_CYCLES
    else:
        i32[i, SER_ACTIVE] = 0
        i64[i, SER_TARGET] = NEVER
        i64[i, SER_TO_IRQ] = NEVER


# ---- PyBoy save state (host side) ------------------------------------------------------

SERIAL_UNSAVED = frozenset({"serial_buf", "serial_len"})  # our output record
PYBOY_TRANSFER_ENABLED = 0x80  # PyBoy keeps SC & 0x80 as the serial "enabled" flag


def serial_from_pyboy(serial: SerialState, st: MachineState) -> None:
    """Load PyBoy's serial block into the host state ``st`` (PyBoy's ``Serial.load_state``).

    PyBoy's ``clock`` counts serial-clock units from ``last_cycles`` on; we keep the end of
    the transfer as a cycle count."""
    io = host_io(st)
    io[SB] = serial.sb
    io[SC] = serial.sc
    target = MAX_CYCLES
    if serial.clock_target < MAX_CYCLES:
        target = serial.clock_target - serial.clock + serial.last_cycles
    put_fields(
        st,
        {
            "ser_active": int(bool(serial.transfer_enabled)),
            "ser_last": serial.last_cycles,
            "ser_to_irq": serial.cycles_to_interrupt,
            "ser_target": target,
        },
    )


def serial_to_pyboy(st: MachineState) -> SerialState:
    """PyBoy's serial block for the host state ``st`` (its clock = the last sync)."""
    io = host_io(st)
    ser_last = int(st["ser_last"])
    return SerialState(
        sb=int(io[SB]),
        sc=int(io[SC]),
        transfer_enabled=PYBOY_TRANSFER_ENABLED if int(st["ser_active"]) else 0,
        internal_clock=int(io[SC]) & 1,
        last_cycles=ser_last,
        cycles_to_interrupt=int(st["ser_to_irq"]),
        clock=ser_last,
        clock_target=int(st["ser_target"]),
    )


def serial_bytes(buf, length: int) -> bytes:
    """Bytes of one env's ring ``buf`` (numpy uint8 [cap]) in send order, oldest kept first."""
    cap = int(buf.shape[0])
    if length < 0:
        raise ValueError(f"serial length must be >= 0, got {length}")
    if length <= cap:
        return bytes(buf[:length])
    start = length % cap
    return bytes(buf[start:]) + bytes(buf[:start])


@wp.func
def serial_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``Serial(cgb_mode)``: SB $FF, SC $7E ($7C for a Colour cartridge on CGB
    hardware), no transfer scheduled."""
    i32 = m.i32
    i64 = m.i64
    set_reg(m, i, SB, 0xFF)
    set_reg(m, i, SC, 0x7E)
    if wp.static(CGB):
        if m.cgb_mode != 0:
            set_reg(m, i, SC, 0x7C)
    i64[i, SER_LAST] = wp.int64(0)
    i64[i, SER_TARGET] = NEVER
    i64[i, SER_TO_IRQ] = wp.int64(0)
    i32[i, SER_ACTIVE] = 0
    i32[i, SERIAL_LEN] = 0


SERIAL = Unit(
    "serial",
    serial_power_on,
    load=lambda state, st, cart: serial_from_pyboy(state.serial, st),
    save=lambda st, cart, layout: {"serial": serial_to_pyboy(st)},
    unsaved=SERIAL_UNSAVED,
    arrays={"serial_buf": (SERIAL_CAP,)},
    events=("ser_to_irq",),
)
