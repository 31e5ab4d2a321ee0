"""The emulator state as one Warp struct: structure-of-arrays, one row per env.

Per-env scalars are 1-D arrays indexed by env id ``i``; per-env RAM is the
2-D ``mem`` array laid out as ``gbxcule.core.memory_layout`` says; the ROM is
one shared copy. Every kernel and ``@wp.func`` takes the ``Machine`` and an
env index, and touches only that env's slots (pure functions of their arrays).

Field ownership while the emulator is being built (append fields in your
section only, never rewrite the file wholesale):
  CPU/bus/MBC section  -> kernels/cpu.py, kernels/bus.py, kernels/mbc.py
  IO/timing section    -> kernels/timer.py, ppu.py, interrupts.py, dma.py,
                          joypad.py, serial.py, step.py
  pixels section       -> kernels/render*.py
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.struct
class Machine:
    # ---- shared, read-only -------------------------------------------------
    rom: wp.array(dtype=wp.uint8)  # one copy of the cartridge ROM for all envs
    boot: wp.array(dtype=wp.uint8)  # 256-byte boot ROM mapped at 0x0000 until FF50 is written
    # ---- per-env RAM: [N, row_bytes], see core/memory_layout.py -----------
    mem: wp.array2d(dtype=wp.uint8)

    # ---- CPU/bus/MBC section ----------------------------------------------
    pc: wp.array(dtype=wp.int32)
    sp: wp.array(dtype=wp.int32)
    a: wp.array(dtype=wp.int32)
    f: wp.array(dtype=wp.int32)
    b: wp.array(dtype=wp.int32)
    c: wp.array(dtype=wp.int32)
    d: wp.array(dtype=wp.int32)
    e: wp.array(dtype=wp.int32)
    h: wp.array(dtype=wp.int32)
    l: wp.array(dtype=wp.int32)  # noqa: E741
    ime: wp.array(dtype=wp.int32)
    halted: wp.array(dtype=wp.int32)
    cycles: wp.array(dtype=wp.int64)  # T-cycles since reset
    locked: wp.array(dtype=wp.int32)  # 0, or 0x100 | illegal opcode that locked the env

    # ---- IO/timing section --------------------------------------------------

    # ---- pixels section -----------------------------------------------------
    # [N, 144, LATCH_FIELDS] registers per line of the step's last frame; written by
    # ppu.py, read by render.py; field indices in gbxcule.core.pixels (LATCH_*).
    line_latch: wp.array3d(dtype=wp.uint8)
