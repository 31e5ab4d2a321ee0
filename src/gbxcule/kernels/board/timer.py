"""DIV/TIMA/TMA/TAC as PyBoy 2.8.1 models them.

A 16-bit divider counter advances one per T-cycle (DIV is its high byte). TIMA
increments on each falling edge of the counter bit TAC selects (while TAC bit 2
is set). On overflow TIMA takes TMA and a reload sequence starts: 4 cycles in
state 1 (TIMA reads 0), then the timer interrupt is raised and 4 cycles in
state 2 (TIMA writes ignored). ``timer_sync`` brings the unit up to a cycle count
in one jump per event (PyBoy steps cycle by cycle through reloads; the result is
the same), and records the distance to the next TIMA overflow (or the pending
interrupt) in ``tim_to_irq`` for the run loop's cycle target. Writes do not
refresh that distance: PyBoy only recomputes it on a sync that advances time.

``timer_power_on`` sets PyBoy's ``Timer()`` values; ``timer_from_pyboy`` /
``timer_to_pyboy`` (host side, at the end) map PyBoy's timer block of a save state.
"""

from __future__ import annotations

import warp as wp

from gbxcule.core.pyboy_state import TimerState
from gbxcule.kernels.board.ioregs import INT_TIMER, NEVER, TAC, TIMA, TMA, host_io, reg, set_reg
from gbxcule.kernels.state import (
    TIM_COUNTER,
    TIM_LAST,
    TIM_RELOAD,
    TIM_RELOAD_LEFT,
    TIM_TO_IRQ,
    Machine,
    MachineState,
    Unit,
    put_fields,
)

wp.set_module_options({"enable_backward": False})

RELOAD_CYCLES = wp.constant(4)


@wp.func
def timer_bit(tac: int) -> int:
    """Divider-counter bit whose falling edge clocks TIMA: 512, 8, 32, 128 for TAC 0..3."""
    return 1 << (3 + 2 * ((tac - 1) & 3))


@wp.func
def timer_period_shift(tac: int) -> wp.int64:
    """log2 of the TIMA period (``2 * timer_bit``) in counter cycles: 10, 4, 6, 8 for TAC 0..3.

    Edge counts divide by the period with a shift: the same floor division, without a
    64-bit divide on every sync.
    """
    return wp.int64(4 + 2 * ((tac - 1) & 3))


@wp.func
def increase_tima(m: wp.ref[Machine], i: int):
    i32 = m.i32
    tima = reg(m, i, TIMA) + 1
    if tima > 0xFF:
        tima = reg(m, i, TMA)
        i32[i, TIM_RELOAD] = 1
        i32[i, TIM_RELOAD_LEFT] = RELOAD_CYCLES
    set_reg(m, i, TIMA, tima)


@wp.func
def cycles_to_overflow(m: wp.ref[Machine], i: int, tac: int) -> wp.int64:
    """Distance from the current counter to the edge that overflows TIMA."""
    period = 2 * timer_bit(tac)
    counter = m.i32[i, TIM_COUNTER]
    next_edge = ((counter & ~(period - 1)) + period) - counter
    return wp.int64(next_edge) + wp.int64(0xFF - reg(m, i, TIMA)) * wp.int64(period)


@wp.func
def timer_sync(m: wp.ref[Machine], i: int, cycles: wp.int64) -> int:
    """Advance the timer to ``cycles``; returns INT_TIMER when the interrupt is raised."""
    i32 = m.i32
    i64 = m.i64
    delta = cycles - i64[i, TIM_LAST]
    if delta == wp.int64(0):
        return 0
    i64[i, TIM_LAST] = cycles
    tac = reg(m, i, TAC)
    enabled = (tac & 4) != 0
    counter = i32[i, TIM_COUNTER]
    if i32[i, TIM_RELOAD] == 0 and not enabled:  # the divider alone (timer off)
        i32[i, TIM_COUNTER] = int((wp.int64(counter) + delta) & wp.int64(0xFFFF))
        i64[i, TIM_TO_IRQ] = NEVER
        return 0
    period = 2 * timer_bit(tac)
    period64 = wp.int64(period)
    shift = timer_period_shift(tac)
    if i32[i, TIM_RELOAD] == 0:
        end = wp.int64(counter) + delta
        edges = (end >> shift) - (wp.int64(counter) >> shift)
        tima = reg(m, i, TIMA)
        if wp.int64(tima) + edges <= wp.int64(0xFF):
            set_reg(m, i, TIMA, tima + int(edges))
            i32[i, TIM_COUNTER] = int(end & wp.int64(0xFFFF))
            i64[i, TIM_TO_IRQ] = cycles_to_overflow(m, i, tac)
            return 0

    # A reload is under way or TIMA overflows during this sync: go event by event.
    raised = wp.int32(0)
    left = delta
    while left > wp.int64(0):
        counter = i32[i, TIM_COUNTER]
        state = i32[i, TIM_RELOAD]
        to_edge = wp.int64(period - (counter & (period - 1)))
        if state == 0:
            # Only TIMA edges until the overflow: jump straight to it (or to the end).
            tima = reg(m, i, TIMA)
            to_overflow = to_edge + wp.int64(0xFF - tima) * period64
            if not enabled or to_overflow > left:
                edges = wp.int64(0)
                if enabled:
                    edges = ((wp.int64(counter) + left) >> shift) - (wp.int64(counter) >> shift)
                set_reg(m, i, TIMA, tima + int(edges))
                i32[i, TIM_COUNTER] = int((wp.int64(counter) + left) & wp.int64(0xFFFF))
                left = wp.int64(0)
            else:
                set_reg(m, i, TIMA, 0xFF)
                i32[i, TIM_COUNTER] = int((wp.int64(counter) + to_overflow) & wp.int64(0xFFFF))
                increase_tima(m, i)
                left = left - to_overflow
        else:
            # Reload in progress: per cycle, the reload countdown runs before the counter moves.
            step = wp.int64(i32[i, TIM_RELOAD_LEFT])
            if left < step:
                step = left
            if enabled and to_edge < step:
                step = to_edge
            i32[i, TIM_RELOAD_LEFT] = i32[i, TIM_RELOAD_LEFT] - int(step)
            if i32[i, TIM_RELOAD_LEFT] == 0:
                if state == 1:
                    i32[i, TIM_RELOAD] = 2
                    i32[i, TIM_RELOAD_LEFT] = RELOAD_CYCLES
                    raised = INT_TIMER
                else:
                    i32[i, TIM_RELOAD] = 0
            i32[i, TIM_COUNTER] = int((wp.int64(counter) + step) & wp.int64(0xFFFF))
            if enabled and step == to_edge:
                increase_tima(m, i)
            left = left - step

    if enabled:
        to_irq = cycles_to_overflow(m, i, tac)
        if i32[i, TIM_RELOAD] == 1 and wp.int64(i32[i, TIM_RELOAD_LEFT]) < to_irq:
            to_irq = wp.int64(i32[i, TIM_RELOAD_LEFT])
        i64[i, TIM_TO_IRQ] = to_irq
    else:
        i64[i, TIM_TO_IRQ] = NEVER
    return raised


@wp.func
def timer_write_div(m: wp.ref[Machine], i: int):
    """Any DIV write clears the counter; a falling clock bit clocks TIMA once."""
    i32 = m.i32
    tac = reg(m, i, TAC)
    if (tac & 4) != 0 and (i32[i, TIM_COUNTER] & timer_bit(tac)) != 0:
        increase_tima(m, i)
    i32[i, TIM_COUNTER] = 0


@wp.func
def timer_write_tima(m: wp.ref[Machine], i: int, value: int):
    if m.i32[i, TIM_RELOAD] != 2:
        set_reg(m, i, TIMA, value)


@wp.func
def timer_write_tma(m: wp.ref[Machine], i: int, value: int):
    set_reg(m, i, TMA, value)
    if m.i32[i, TIM_RELOAD] != 0:
        set_reg(m, i, TIMA, value)


@wp.func
def timer_write_tac(m: wp.ref[Machine], i: int, value: int):
    tac = reg(m, i, TAC)
    counter = m.i32[i, TIM_COUNTER]
    if (tac & 4) != 0 and (counter & timer_bit(tac)) != 0:
        if (value & 4) == 0 or (counter & timer_bit(value)) == 0:
            increase_tima(m, i)
    set_reg(m, i, TAC, value & 7)


@wp.func
def timer_read_tima(m: wp.ref[Machine], i: int) -> int:
    if m.i32[i, TIM_RELOAD] == 1:
        return 0
    return reg(m, i, TIMA)


@wp.func
def timer_read_div(m: wp.ref[Machine], i: int) -> int:
    return m.i32[i, TIM_COUNTER] >> 8


@wp.func
def timer_power_on(m: wp.ref[Machine], i: int):
    """PyBoy's ``Timer()``: counter, reload state, last sync and distance all 0.

    DIV/TIMA/TMA/TAC are 0 too: the IO page is zero at power-on.
    """
    i32 = m.i32
    i64 = m.i64
    i32[i, TIM_COUNTER] = 0
    i32[i, TIM_RELOAD] = 0
    i32[i, TIM_RELOAD_LEFT] = 0
    i64[i, TIM_LAST] = wp.int64(0)
    i64[i, TIM_TO_IRQ] = wp.int64(0)


# ---- PyBoy save state (host side) ------------------------------------------------------

TIMER_UNSAVED: frozenset[str] = frozenset()  # PyBoy's Timer saves all of its state


def timer_from_pyboy(timer: TimerState, st: MachineState) -> None:
    """Load PyBoy's timer block into the host state ``st`` (PyBoy's ``Timer.load_state``)."""
    io = host_io(st)
    io[TIMA] = timer.tima
    io[TMA] = timer.tma
    io[TAC] = timer.tac & 7
    put_fields(
        st,
        {
            "tim_counter": timer.div_counter & 0xFFFF,
            "tim_reload": timer.tima_reload_state,
            "tim_reload_left": timer.tima_counter,
            "tim_last": timer.last_cycles,
            "tim_to_irq": timer.cycles_to_interrupt,
        },
    )


def timer_to_pyboy(st: MachineState) -> TimerState:
    """PyBoy's timer block for the host state ``st`` (DIV is the counter's high byte)."""
    io = host_io(st)
    counter = int(st["tim_counter"])
    return TimerState(
        div=counter >> 8,
        tima=int(io[TIMA]),
        div_counter=counter,
        tima_counter=int(st["tim_reload_left"]),
        tma=int(io[TMA]),
        tac=int(io[TAC]),
        tima_reload_state=int(st["tim_reload"]),
        last_cycles=int(st["tim_last"]),
        cycles_to_interrupt=int(st["tim_to_irq"]),
    )


TIMER = Unit(
    "timer",
    timer_power_on,
    load=lambda state, st, cart: timer_from_pyboy(state.timer, st),
    save=lambda st, cart, layout: {"timer": timer_to_pyboy(st)},
    unsaved=TIMER_UNSAVED,
    events=("tim_to_irq",),
)
