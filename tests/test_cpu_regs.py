"""kernels/cpu/cpu_regs.py: the registers as ``cpu_step`` holds them (B-L packed in two ints).

The layout is a contract between ``load_regs``/``store_regs`` and the accessors; every
CPU test runs through it, and these pin it where a wrong shift or mask would first show.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.asm import build_rom
from gbxcule.backends.warp_base import allocate_machine, cart_config, field_view
from gbxcule.kernels.cpu.cpu_regs import (
    CpuRegs,
    get_r8,
    get_r16,
    load_regs,
    reg_hl,
    set_bcdehl,
    set_r8,
    set_r16,
    store_regs,
)
from gbxcule.kernels.state import Machine

pytestmark = pytest.mark.l1

wp.set_module_options({"enable_backward": False})

# B C D E H L as opcodes number them (0-5), then A and F
START = {"b": 0x12, "c": 0x34, "d": 0xD6, "e": 0x78, "h": 0x9A, "l": 0xBC, "a": 0xDE, "f": 0xF0}


@wp.kernel
def accessors(out: wp.array(dtype=wp.int32)):
    r = CpuRegs()
    r.a = 0xDE
    r.f = 0xF0
    r.sp = 0xFFFE
    set_bcdehl(r, 0x12, 0x34, 0xD6, 0x78, 0x9A, 0xBC)  # D: bit 31 of bcde
    for k in range(8):
        out[k] = get_r8(r, k)  # 6 ([HL]) reads A
    for p in range(4):
        out[8 + p] = get_r16(r, p)
    out[12] = reg_hl(r)
    set_r8(r, 3, 0x1E5)  # E: only the byte is kept
    set_r8(r, 6, 0x11)  # [HL]: no register
    set_r8(r, -1, 0x22)  # none
    set_r8(r, 7, 0x33)
    for k in range(8):
        out[13 + k] = get_r8(r, k)
    set_r16(r, 1, 0x1BEEF)  # DE: only 16 bits are kept
    set_r16(r, 3, 0xC000)
    set_r16(r, 4, 0xABCD)  # AF: F's low nibble reads as 0
    set_r16(r, 5, 0x4242)  # none
    for k in range(8):
        out[21 + k] = get_r8(r, k)
    out[29] = r.sp
    out[30] = r.f


def test_packed_registers_read_and_write_one_register_each():
    out = wp.zeros(31, dtype=wp.int32, device="cpu")
    wp.launch(accessors, dim=1, inputs=[out], device="cpu")
    v = out.numpy().tolist()
    b, c, d, e, h, l, a = 0x12, 0x34, 0xD6, 0x78, 0x9A, 0xBC, 0xDE  # noqa: E741
    assert v[0:8] == [b, c, d, e, h, l, a, a]
    assert v[8:13] == [b << 8 | c, d << 8 | e, h << 8 | l, 0xFFFE, h << 8 | l]
    assert v[13:21] == [b, c, d, 0xE5, h, l, 0x33, 0x33]
    assert v[21:29] == [b, c, 0xBE, 0xEF, h, l, 0xAB, 0xAB]
    assert v[29:31] == [0xC000, 0xC0]


@wp.kernel
def round_trip(m: Machine):
    r = load_regs(m, 0)
    set_r8(r, 0, get_r8(r, 0) + 1)  # B
    set_r8(r, 5, get_r8(r, 5) ^ 0xFF)  # L
    store_regs(m, 0, r)


def test_load_and_store_keep_every_register_column():
    image = build_rom('SECTION "main", ROM0[$0150]\n.l:\n    jr .l\n')
    m = allocate_machine(
        1,
        rom=np.frombuffer(image, dtype=np.uint8),
        boot=np.zeros(0x100, dtype=np.uint8),
        cart=cart_config(image)[1],
        device="cpu",
    )
    for name, value in START.items():
        field_view(m, name).assign(np.array([value], dtype=np.int32))
    wp.launch(round_trip, dim=1, inputs=[m], device="cpu")
    got = {name: int(field_view(m, name).numpy()[0]) for name in START}
    assert got == {**START, "b": 0x13, "l": 0xBC ^ 0xFF}
