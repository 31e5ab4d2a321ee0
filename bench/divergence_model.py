"""The lockstep model of bench/divergence.py: traced units -> warps -> issue slots.

Pure NumPy (no Warp), so tests/test_divergence.py checks it on hand-made traces.

A trace row is one env's codes in order (bench/divergence_trace.py writes them): an
instruction ``route << 9 | bin``, or a frame-loop kind (``FRAME`` ... ``HALT_SLICE``).
``fold`` makes each ``SYNC`` (a slice's unit sync) a flag on the unit before it: the
sync is a branch inside that pass of the loop, not a pass of its own. A warp then runs
one pass per lane per round; at each round its live lanes split into groups by path id
(``path_ids``), plus one group if any of them syncs, and the warp issues once per group.

Where lanes wait for each other (``MODELS``):
- ``free``: nowhere until the step ends; round ``t`` runs every lane's ``t``-th pass.
- ``frame``: at the start of each frame (the kernel's frame loop): frame ``f`` of the
  warp starts when its last lane has finished frame ``f - 1``.
- ``slice``: also at each pass of ``run_frame``'s loop, whose body is a branch: the
  warp runs the lanes in quiet HALT (``halt_through_lcd``'s loop) and then the lanes
  running instructions (``cpu_tick``'s loop), each as long as its longest lane, as a GPU
  does when it reconverges at the end of each branch and loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WARP = 32
ROUTE_GENERAL = 0  # cpu_general: decode, reads, the exec_* group, writes
ROUTE_FAST = 1  # cpu_fast: register-only base opcodes
ROUTE_FAST_MEM = 2  # cpu_fast_mem: loads, stores, stack ops
ROUTE_FAST_CB = 3  # cpu_fast_cb: CB opcodes on registers
ROUTES = ("general", "fast", "fast-mem", "fast-cb")

FRAME = 2048
SLICE = 2049
DISPATCH = 2050
SYNC = 2051
HALT_LCD = 2052
HALT_END = 2053
HALT_SLICE = 2054
N_CODES = 2055
KINDS = {
    FRAME: "frame",
    SLICE: "slice",
    DISPATCH: "dispatch",
    SYNC: "sync",
    HALT_LCD: "halt-lcd",
    HALT_END: "halt-end",
    HALT_SLICE: "halt-slice",
}
# route / handler / opcode: the paths of the step as traced; hot-route / hot-handler: the
# GPU shape since issue #41, whose instruction loop (kernels/cpu/cpu_step.py, cpu_hot_loop) runs
# the register, memory and CB fast paths as one path (by route), or by the opcode's x/z
# branch whichever fast path takes it (by handler); the general route is the same.
GRANULARITIES = ("route", "handler", "opcode", "hot-route", "hot-handler")
MODELS = ("free", "frame", "slice")
# the slice model on traces whose quiet-HALT passes are collapsed: each run of
# halt_through_lcd's passes one unit, as a closed-form HALT would run it (issue #41, item 3)
CLOSED_HALT = "slice/closed-halt"


def general_group(b: int) -> str:
    """The ``exec_*`` group ``cpu_general`` runs opcode bin ``b`` through (kernels/cpu/cpu.py)."""
    if b >= 256:
        return "cb"
    x, z = b >> 6, b & 7
    if x == 0:
        return "x0-pairs" if z < 4 else "x0-r8"
    if x == 3 and z < 4:
        return "x3-flow"
    if x == 3 and z != 6:
        return "x3-calls"
    return "ld-alu"


def path_key(code: int, fast: bool, granularity: str) -> tuple:
    """The path of trace ``code`` at ``granularity`` (a key; ``path_ids`` numbers them).
    ``fast`` = False: every instruction on the general route (``cpu_fast_paths`` off)."""
    if code >= FRAME:
        return ("kind", code)
    route, b = (code >> 9, code & 511) if fast else (ROUTE_GENERAL, code & 511)
    if granularity.startswith("hot-") and route != ROUTE_GENERAL:
        if granularity == "hot-route":
            return ("route", "hot")
        if b >= 256:
            return ("hot", "cb", (b - 256) >> 6)
        x, z = b >> 6, b & 7
        return ("hot", x, int(z == 6)) if x in (1, 2) else ("hot", x, z)
    granularity = granularity.removeprefix("hot-")
    if granularity == "route":
        return ("route", route)
    if granularity == "opcode":
        return ("op", route, b)
    if route == ROUTE_GENERAL:
        return ("general", general_group(b))
    if b >= 256:  # cpu_fast_cb: cb_op by the CB opcode's x
        return ("cb", (b - 256) >> 6)
    x, z = b >> 6, b & 7
    if x == 1:  # cpu_fast and cpu_fast_mem split x = 1 on [HL] or not
        return (route, 1, int(z == 6))
    if x == 2:
        return (route, 2)
    return (route, x, z)  # x = 0 and x = 3 branch on z


def valid_codes() -> list[int]:
    """The codes a trace holds: CB bins on the general or fast CB route, base bins on the
    general, fast or fast memory route, the frame-loop kinds."""
    out = list(KINDS)
    for code in range(FRAME):
        route, cb = code >> 9, (code & 511) >= 256
        if route == ROUTE_GENERAL or cb == (route == ROUTE_FAST_CB):
            out.append(code)
    return sorted(out)


def path_ids(fast: bool, granularity: str) -> np.ndarray:
    """Lookup table: code + 1 -> path id (0, 1, ...); -1 for no unit (code -1)."""
    ids: dict[tuple, int] = {}
    lut = np.full(N_CODES + 1, -1, dtype=np.int16)
    for code in valid_codes():
        lut[code + 1] = ids.setdefault(path_key(code, fast, granularity), len(ids))
    return lut


@dataclass
class Lockstep:
    """Sums over warps (and steps): lane-units, rounds, issue slots."""

    units: int = 0
    rounds: int = 0
    slots: int = 0

    def add(self, other: Lockstep) -> None:
        self.units += other.units
        self.rounds += other.rounds
        self.slots += other.slots

    @property
    def active(self) -> float:
        """Lanes doing work per issued pass, over the warp's 32."""
        return self.units / (WARP * self.slots) if self.slots else 1.0

    @property
    def occupancy(self) -> float:
        """Live lanes per round, over 32 (the rest finished early or wait)."""
        return self.units / (WARP * self.rounds) if self.rounds else 1.0

    @property
    def path(self) -> float:
        """Rounds per issue slot: 1.0 when every round's live lanes share one path."""
        return self.rounds / self.slots if self.slots else 1.0


def fold(row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One env's codes -> (positions in ``row`` of its units, which of them sync after)."""
    is_sync = row == SYNC
    keep = np.flatnonzero(~is_sync)
    syncs = np.zeros(keep.size, dtype=bool)
    before = np.cumsum(~is_sync) - 1  # the unit at or before each position
    syncs[before[is_sync]] = True
    return keep, syncs


def collapse_halt(units: np.ndarray) -> np.ndarray:
    """Positions of ``units`` (one env's folded codes) kept when each run of quiet-HALT
    passes (``HALT_LCD``) is one unit: the first of each run, and every other unit."""
    prev = np.concatenate(([-1], units[:-1]))
    return np.flatnonzero(~((units == HALT_LCD) & (prev == HALT_LCD)))


def segment_keys(units: np.ndarray, model: str) -> np.ndarray:
    """A nondecreasing key per unit (folded codes of one env): lanes of a warp wait for each
    other at every new key (``MODELS``); keys order the warp's segments."""
    if model == "free":
        return np.zeros(units.size, dtype=np.int64)
    frame = np.cumsum(units == FRAME) - 1
    if model == "frame":
        return frame.astype(np.int64)
    if model != "slice":
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    prev = np.concatenate(([-1], units[:-1]))
    tick = (units == SLICE) | (units == DISPATCH)  # cpu_tick's entry
    start = tick | ((units == HALT_LCD) & (prev != HALT_LCD))  # or halt_through_lcd's
    n = np.cumsum(start)  # passes of run_frame's loop so far, this one included
    first = np.flatnonzero(units == FRAME)
    j = n - np.repeat(n[first], np.diff(np.append(first, units.size)))  # pass in the frame
    kind = np.where(j == 0, 0, _last_branch(start, tick))
    return (frame.astype(np.int64) << 40) | (j.astype(np.int64) << 2) | kind


def _last_branch(start: np.ndarray, tick: np.ndarray) -> np.ndarray:
    """For each unit, the branch of the last pass started at or before it: 1 halt, 2 tick."""
    idx = np.maximum.accumulate(np.where(start, np.arange(start.size), -1))
    return np.where(idx < 0, 0, np.where(tick[np.maximum(idx, 0)], 2, 1))


def layout(keys: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """The lanes of one warp, each unit's ``segment_keys``: (each unit's round, rounds).
    A segment lasts as long as its longest lane; lanes without it skip it."""
    runs = [np.unique(k, return_index=True, return_counts=True) for k in keys]
    every = np.unique(np.concatenate([r[0] for r in runs])) if runs else np.zeros(0, np.int64)
    width = np.zeros(every.size, dtype=np.int64)
    for uk, _, counts in runs:
        np.maximum.at(width, np.searchsorted(every, uk), counts)
    offset = np.cumsum(width) - width
    rounds = []
    for k, (uk, first, counts) in zip(keys, runs):
        seg = np.repeat(np.arange(uk.size), counts)  # each unit's segment in this lane
        pos = np.arange(k.size) - first[seg]
        rounds.append(offset[np.searchsorted(every, uk)][seg] + pos)
    return rounds, int(width.sum())


def groups_per_round(ids: np.ndarray) -> np.ndarray:
    """``ids``: [lanes, rounds] path ids, -1 where a lane has no unit. The number of
    distinct ids among the live lanes of each round (0 where none is live)."""
    if ids.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    if int(ids.max()) < 64:  # one bit per path id, OR-ed over the lanes
        bits = np.where(
            ids >= 0, np.left_shift(np.uint64(1), np.maximum(ids, 0).astype(np.uint64)), 0
        )
        return np.bitwise_count(np.bitwise_or.reduce(bits.astype(np.uint64), axis=0))
    s = np.sort(ids.T, axis=1)
    groups = 1 + np.count_nonzero(s[:, 1:] != s[:, :-1], axis=1)
    return groups - (s[:, 0] < 0)


def lockstep(ids: np.ndarray, syncs: np.ndarray) -> Lockstep:
    """One warp laid out in rounds: ``ids`` [lanes <= 32, rounds] path ids (-1: no unit),
    ``syncs`` [lanes, rounds] the units followed by a unit sync."""
    groups = groups_per_round(ids) + syncs.any(axis=0)
    units = int(np.count_nonzero(ids >= 0))
    return Lockstep(units=units, rounds=ids.shape[1], slots=int(groups.sum()))


def warp_lockstep(
    codes: list[list[np.ndarray]], syncs: list[np.ndarray], keys: list[np.ndarray], luts: list
) -> list[Lockstep]:
    """One warp: ``codes[k]`` its lanes' folded codes for lookup table ``luts[k]``
    (``path_ids``), ``syncs`` their sync flags, ``keys`` their ``segment_keys`` -> one
    ``Lockstep`` per table."""
    rounds, width = layout(keys)
    lanes = len(keys)
    sync_grid = np.zeros((lanes, width), dtype=bool)
    for lane, (r, s) in enumerate(zip(rounds, syncs)):
        sync_grid[lane, r] = s
    out = []
    for lane_codes, lut in zip(codes, luts):
        ids = np.full((lanes, width), -1, dtype=np.int16)
        for lane, (r, c) in enumerate(zip(rounds, lane_codes)):
            ids[lane, r] = lut[c.astype(np.int32) + 1]
        out.append(lockstep(ids, sync_grid))
    return out
