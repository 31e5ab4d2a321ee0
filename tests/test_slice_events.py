"""Every unit's declared event (``Unit.events``) ends the slice it falls in: the step's
slice target is built from the unit list, so a new unit with an event of its own is
honoured by declaring it (kernels/step/slice.py)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.asm import build_rom
from gbxcule.asm.bootrom import boot_rom_bytes
from gbxcule.backends.warp_base import allocate_machine, cart_config, field_view
from gbxcule.kernels.board.ioregs import NEVER
from gbxcule.kernels.state import I64_FIELDS, Machine
from gbxcule.kernels.step.reset import power_on
from gbxcule.kernels.step.slice import EVENT_COLUMNS, slice_target
from gbxcule.kernels.units import UNITS

pytestmark = pytest.mark.l2
wp.set_module_options({"enable_backward": False})

EVENTS = [(unit.name, name) for unit in UNITS for name in unit.events]


@wp.kernel
def targets(m: Machine, out: wp.array(dtype=wp.int64)):
    i = wp.tid()
    out[i] = slice_target(m, i)


def test_the_units_declare_the_events_the_slice_waits_for():
    assert EVENTS == [("timer", "tim_to_irq"), ("serial", "ser_to_irq"),
                      ("lcd", "lcd_to_irq"), ("lcd", "lcd_to_frame")]  # fmt: skip
    assert [I64_FIELDS[c] for c in EVENT_COLUMNS] == [name for _, name in EVENTS]


@pytest.mark.parametrize("unit,event", EVENTS)
def test_each_event_ends_the_slice(unit, event):
    rom = build_rom('SECTION "main", ROM0[$0150]\nMain:\n    jr Main\n')
    _, cart = cart_config(rom)
    m = allocate_machine(
        3, rom=np.frombuffer(rom, np.uint8), boot=np.frombuffer(boot_rom_bytes(), np.uint8),
        cart=cart, device="cpu",
    )  # fmt: skip
    wp.launch(power_on, dim=3, inputs=[m], device="cpu")
    far = 10_000_000  # beyond every event, the sound unit's next sample included
    for _, name in EVENTS:
        field_view(m, name).fill_(far)
    # below the sound unit's first sample target after power-on (88 cycles)
    field_view(m, event).assign(np.array([40, 60, far], dtype=np.int64))
    out = wp.zeros(3, dtype=wp.int64, device="cpu")
    wp.launch(targets, dim=3, inputs=[m, out], device="cpu")
    got = out.numpy()
    assert got[0] == 40 and got[1] == 60, (unit, event, got)
    assert 60 < got[2] < far and NEVER > far  # the next sample
