"""Power-on state: each unit's ``<unit>_power_on``, as PyBoy's constructors leave it.

``power_on`` expects every per-env array (``mem`` included) to be zero already:
PyBoy powers on with RAM, VRAM, OAM and HRAM zeroed, and so do we. Each unit sets its
own nonzero columns and IO registers (and restates some zeros) in its own file: the CPU
at PC=0 (``cpu_state.py``), the boot ROM mapped (``bus.py``), banks as PyBoy's MBCs
start (``mbc.py``), the timer, serial port, LCD and renderer, OAM DMA, joypad and sound unit.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.apu import apu_power_on
from gbxcule.kernels.bus import bus_power_on
from gbxcule.kernels.cpu_state import cpu_power_on
from gbxcule.kernels.dma import dma_power_on
from gbxcule.kernels.joypad import joypad_power_on
from gbxcule.kernels.mbc import mbc_power_on
from gbxcule.kernels.ppu import lcd_power_on
from gbxcule.kernels.serial import serial_power_on
from gbxcule.kernels.state import Machine
from gbxcule.kernels.timer import timer_power_on

wp.set_module_options({"enable_backward": False})


@wp.kernel
def power_on(m: Machine):
    i = wp.tid()
    cpu_power_on(m, i)
    bus_power_on(m, i)
    mbc_power_on(m, i)
    timer_power_on(m, i)
    serial_power_on(m, i)
    lcd_power_on(m, i)
    dma_power_on(m, i)
    joypad_power_on(m, i)
    apu_power_on(m, i)
