"""Power-on state: the CPU at PC=0 with the boot ROM mapped, banks as PyBoy's MBCs start.

``power_on`` expects every per-env array (``mem`` included) to be zero already:
PyBoy powers on with RAM, VRAM, OAM and HRAM zeroed, and so do we. It sets the
few nonzero CPU/MBC values and calls the IO units' ``power_on_timing``.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.io import power_on_timing
from gbxcule.kernels.state import BOOT_ON, MBC_REG1, PC, ROM_BANK, ROM_BANK_LOW, Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_power_on(m: wp.ref[Machine], i: int):
    m.i32[i, PC] = 0
    m.i32[i, BOOT_ON] = 1
    m.i32[i, ROM_BANK] = 1
    m.i32[i, ROM_BANK_LOW] = 0
    m.i32[i, MBC_REG1] = 1


@wp.kernel
def power_on(m: Machine):
    i = wp.tid()
    cpu_power_on(m, i)
    power_on_timing(m, i)
