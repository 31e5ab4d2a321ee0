"""Power-on state: the CPU at PC=0 with the boot ROM mapped, banks as PyBoy's MBCs start.

``power_on`` expects every per-env array (``mem`` included) to be zero already:
PyBoy powers on with RAM, VRAM, OAM and HRAM zeroed, and so do we. It sets the
few nonzero CPU/MBC values and calls the IO units' ``power_on_timing``.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.io import power_on_timing
from gbxcule.kernels.state import Machine

wp.set_module_options({"enable_backward": False})


@wp.func
def cpu_power_on(m: wp.ref[Machine], i: int):
    m.pc[i] = 0
    m.boot_on[i] = 1
    m.rom_bank[i] = 1
    m.rom_bank_low[i] = 0
    m.mbc_reg1[i] = 1


@wp.kernel
def power_on(m: Machine):
    i = wp.tid()
    cpu_power_on(m, i)
    power_on_timing(m, i)
