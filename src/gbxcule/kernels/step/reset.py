"""Power-on state: each unit's ``<unit>_power_on`` (``kernels/units.py``), as PyBoy's
constructors leave it.

``power_on`` expects every per-env array (``mem`` included) to be zero already:
PyBoy powers on with RAM, VRAM, OAM and HRAM zeroed, and so do we. Each unit sets its
own nonzero columns and IO registers (and restates some zeros) in its own file: the CPU
at PC=0 (``cpu_state.py``), the boot ROM mapped (``bus.py``), banks as PyBoy's MBCs
start (``mbc.py``), the timer, serial port, LCD and renderer, OAM DMA, joypad and sound unit.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.state import Machine
from gbxcule.kernels.units import POWER_ON_UNITS

wp.set_module_options({"enable_backward": False})


@wp.kernel
def power_on(m: Machine):
    i = wp.tid()
    wp.static(POWER_ON_UNITS)(m, i)  # kernels/units.py: each unit's <unit>_power_on
