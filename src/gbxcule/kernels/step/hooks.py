"""Event hooks: PyBoy 2.8.1's ``hook_register`` on ROM addresses, counted per env.

PyBoy installs a hook by patching the ROM byte at (bank, addr) with its breakpoint
opcode 0xDB. What follows from that, and what ``step.py`` reproduces:

* **BRK**: when the CPU *fetches* the patched byte (its ROM bank mapped: bank 0 at
  0x0000-0x3FFF with MBC1's low bank 0 and the boot ROM unmapped, ``ROM_BANK`` at
  0x4000-0x7FFF), it bails out of the slice without executing anything (no cycles,
  PC unchanged; but, as after any opcode, an EI countdown ticks) and sets
  ``breakpoint_singlestep`` (our ``HOOK_SS``). The slice ends as any bail does: the
  units are synced to the CPU's cycle count.
* **reached**: after every slice that ends with ``HOOK_SS`` set, PyBoy looks up the PC
  in its hook table (``breakpoint_reached``: bank 0 below 0x4000, ``ROM_BANK`` above,
  with no low-bank test). A hook there is a **hit**: the callback runs (we count it in
  column ``HOOK_HITS + k``), and ``HOOK_SS`` stays set; no hook there clears ``HOOK_SS``.
* **single step**: while ``HOOK_SS`` is set a slice is 4 cycles long (``cpu_tick``
  with target 4, even while halted), with the hook it starts at un-patched: it checks
  interrupts, then executes the hooked instruction (or dispatches an interrupt, or
  stays halted), then syncs the units: one instruction per slice.

Consequences, all as PyBoy counts them: an instruction reached twice is counted twice
(a loop); a hooked instruction pre-empted by an interrupt in its single-step slice is
counted again when the CPU comes back to it; a hook on an interrupt vector counts each
dispatch; a hooked HALT is counted once per 4-cycle slice while the CPU stays halted on
it (PyBoy keeps PC on the HALT). Hooks also change the slicing (a slice ends at every
hit), which can move an interrupt dispatch, exactly as it does in PyBoy.

Where PyBoy has no answer: when a frame ends in a single-step slice with the PC still on
a hook (typically a hooked HALT the game waits for VBlank in), PyBoy 2.8.1's ``tick``
never returns (it calls the hook back forever). We count that hit once, end the frame,
and go on single-stepping in the next one.

All of it lives in each env's row of ``Machine.i32``, in ``HOOK_WORDS`` columns past the
named ones (``I32_FIELDS``): the hook table (count, stop flag, the keys
``bank << 16 | addr`` and a 1024-bit map of ``addr & 1023`` that rejects most fetches with
one load; the same in every row), ``HOOK_SS``, the last step's stop flag and hit counts. It is not emulator state: PyBoy's save states do not carry
``breakpoint_singlestep`` either, and capture, restore, start states and ``reset()`` only
see the named columns. Not a ``Machine`` field of its own: one more array in the struct
made the plain step kernel 3.3 % slower on the CPU (history/ecosystem.md), with the same
code.

Only the hooked variant of the step kernel (``kernels/step/step.py``, ``make_step_kernel``)
calls these funcs (its ``cpu_run_fast`` too: ``hook_maybe`` before each instruction it
runs from ROM); the plain kernel, launched while no hook is set, never reads the row.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.address_map import ROM_END
from gbxcule.kernels.state import BOOT_ON, I32_FIELDS, ROM_BANK, ROM_BANK_LOW, Machine

wp.set_module_options({"enable_backward": False})

HOOK_MAX = 32  # hooks per backend
# The hook row: columns of ``Machine.i32`` from HOOK_ROW (past the named ones).
HOOK_ROW = len(I32_FIELDS)
HOOK_SS = HOOK_ROW  # PyBoy's breakpoint_singlestep: 1 while the CPU steps past a hook
HOOK_STOPPED = HOOK_ROW + 1  # 1 when this env's last step ended at a hit (stop_on_hit)
HOOK_COUNT = HOOK_ROW + 2  # hooks registered
HOOK_STOP = HOOK_ROW + 3  # 1 = stop_on_hit
HOOK_KEYS = HOOK_ROW + 4  # HOOK_KEYS + k: bank << 16 | addr of hook k
HOOK_HITS = HOOK_KEYS + HOOK_MAX  # HOOK_HITS + k: hits of hook k in this env's last step
# HOOK_MAP + w, bit b: some hook's address has (addr & 1023) == 32 * w + b (a filter: most
# fetches are rejected by one load and a bit test)
HOOK_MAP = HOOK_HITS + HOOK_MAX
HOOK_MAP_WORDS = 32
HOOK_WORDS = HOOK_MAP + HOOK_MAP_WORDS - HOOK_ROW
HOOK_ROM_END = ROM_END  # hooks are on ROM addresses only

HIT_NONE = wp.constant(-1)


@wp.func(inline=True)
def hook_maybe(i32: wp.array2d(dtype=wp.int32), i: int, pc: int) -> int:
    """1 when a hook may sit at ``pc`` (``HOOK_MAP``); 0 for certain none."""
    return (i32[i, HOOK_MAP + ((pc >> 5) & 31)] >> (pc & 31)) & 1


@wp.func
def hook_at(m: wp.ref[Machine], i: int, pc: int, fetch: int) -> int:
    """The index of the hook at ``pc`` in the bank mapped there, or -1.

    ``fetch`` = 1: as the CPU's fetch sees the patched byte (bank 0 below 0x4000 only with
    MBC1's low bank 0 and the boot ROM unmapped); 0: as PyBoy's ``breakpoint_reached``
    looks it up (bank 0 below 0x4000)."""
    i32 = m.i32
    if pc >= HOOK_ROM_END or hook_maybe(i32, i, pc) == 0:
        return HIT_NONE
    bank = wp.int32(0)
    if pc >= 0x4000:
        bank = i32[i, ROM_BANK]
    elif fetch != 0 and (i32[i, ROM_BANK_LOW] != 0 or (pc < 0x100 and i32[i, BOOT_ON] != 0)):
        return HIT_NONE
    key = (bank << 16) | pc
    out = HIT_NONE
    k = wp.int32(0)
    count = i32[i, HOOK_COUNT]
    while out < 0 and k < count:
        if i32[i, HOOK_KEYS + k] == key:
            out = k
        k = k + 1
    return out


@wp.func
def hook_reached(m: wp.ref[Machine], i: int, pc: int) -> int:
    """PyBoy's ``breakpoint_reached`` after a slice that ended single-stepping: a hook at
    ``pc`` is a hit (counted; with ``stop_on_hit`` the env's step stops there: returns 1
    and sets ``HOOK_STOPPED``); none clears ``HOOK_SS``."""
    k = hook_at(m, i, pc, 0)
    i32 = m.i32
    if k < 0:
        i32[i, HOOK_SS] = 0
        return 0
    i32[i, HOOK_HITS + k] = i32[i, HOOK_HITS + k] + 1
    stop = i32[i, HOOK_STOP]
    i32[i, HOOK_STOPPED] = stop
    return stop


@wp.func
def hooks_step_start(m: wp.ref[Machine], i: int):
    """The start of a hooked step: this step's hit counts and stop flag to 0."""
    i32 = m.i32
    i32[i, HOOK_STOPPED] = 0
    for k in range(i32[i, HOOK_COUNT]):
        i32[i, HOOK_HITS + k] = 0
