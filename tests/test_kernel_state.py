"""kernels/state.py: the column blocks and env_view (one env of the Machine as env 0)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import warp as wp

from gbxcule.asm import build_rom
from gbxcule.backends.warp_base import (
    allocate_machine,
    cart_config,
    field_view,
    per_env_arrays,
    rom_code_words,
)
from gbxcule.kernels import state
from gbxcule.kernels.state import CYCLES, PC, ROM_CODE_PAD, Machine, env_view

pytestmark = pytest.mark.l1

wp.set_module_options({"enable_backward": False})

NUM_ENVS = 5
TARGET = 3


@wp.kernel
def mark_one_env(m: Machine, env: int):
    e = env_view(m, env)
    e.i32[0, PC] = 0x1234
    e.i64[0, CYCLES] = wp.int64(1) << wp.int64(40)
    e.mem[0, 7] = wp.uint8(0xAB)
    e.rtc[0, 2] = wp.int64(-5)
    e.serial_buf[0, 1] = wp.uint8(9)
    e.joy_rel_mask[0, 3] = 17
    e.joy_rel_wait[0, 4] = 18
    e.line_latch[0, 143, 1] = wp.uint8(0x5A)
    e.frame_video[0, 11] = wp.uint8(0x66)


def test_env_view_sets_every_machine_field():
    source = inspect.getsource(state.env_view)
    missing = [name for name in Machine.vars if f"v.{name} = m.{name}" not in source]
    assert not missing, f"env_view does not carry Machine fields {missing}"


def mbc3_machine(layout: str):
    """NUM_ENVS envs of an MBC3+TIMER cart (every per-env block allocated) in ``layout``."""
    rom = build_rom('SECTION "main", ROM0[$0150]\n.l:\n    jr .l\n', cart_type="MBC3+TIMER+BATTERY")
    _, cart = cart_config(rom)
    return allocate_machine(
        NUM_ENVS,
        rom=np.frombuffer(rom, dtype=np.uint8),
        boot=np.zeros(0x100, dtype=np.uint8),
        cart=cart,
        device="cpu",
        mem_layout=layout,
    )


@pytest.mark.parametrize("layout", ["env_major", "interleaved"])
def test_env_view_writes_reach_only_that_env(layout):
    m = mbc3_machine(layout)
    wp.launch(mark_one_env, dim=1, inputs=[m, TARGET], device="cpu")
    expected = {
        "pc": ((), 0x1234),
        "cycles": ((), 1 << 40),
        "mem": ((7,), 0xAB),
        "rtc": ((2,), -5),
        "serial_buf": ((1,), 9),
        "joy_rel_mask": ((3,), 17),
        "joy_rel_wait": ((4,), 18),
        "line_latch": ((143, 1), 0x5A),
        "frame_video": ((11,), 0x66),
    }
    for name, arr in per_env_arrays(m):
        values = arr.numpy()
        want = np.zeros_like(values)
        if name in expected:
            where, value = expected[name]
            want[(TARGET, *where)] = value
        assert np.array_equal(values, want), f"{layout}: {name}"
    assert int(field_view(m, "pc").numpy()[TARGET]) == 0x1234


def test_rom_code_packs_three_bytes_little_endian():
    rom = np.array([0x01, 0x02, 0x03, 0xFE, 0xFF], dtype=np.uint8)
    words = rom_code_words(rom)
    assert words.dtype == np.int32 and len(words) == ROM_CODE_PAD + len(rom)
    packed = [0x030201, 0xFE0302, 0xFFFE03, 0x00FFFE, 0x0000FF]
    assert words.tolist() == [packed[0]] * ROM_CODE_PAD + packed
    image = build_rom('SECTION "main", ROM0[$0150]\n    ld hl, $BEEF\n')
    arr = np.frombuffer(image, dtype=np.uint8)
    m = allocate_machine(
        1, rom=arr, boot=np.zeros(256, np.uint8), cart=cart_config(image)[1], device="cpu"
    )
    assert m.rom_code.numpy()[ROM_CODE_PAD + 0x150] == 0xBEEF21  # LD HL,n16 = $21, then $EF $BE


def test_interleaved_layout_puts_the_env_axis_last_in_every_block():
    """mem_layout="interleaved" (the CUDA default) lays every per-env block out with
    neighbouring envs next to each other, so the lanes of a warp reading one field or
    address read one line (issue #41); env_major keeps each env's row contiguous."""
    arrays = {}
    for layout in ("env_major", "interleaved"):
        m = mbc3_machine(layout)
        arrays[layout] = {
            name: getattr(m, name)
            for name, var in Machine.vars.items()
            if hasattr(var.type, "ndim") and var.type.ndim >= 2
        }
    assert {"mem", "i32", "i64", "apu", "rtc", "line_latch", "video_log"} <= set(
        arrays["interleaved"]
    )
    for name, arr in arrays["interleaved"].items():
        item = wp.types.type_size_in_bytes(arr.dtype)
        assert arr.strides[0] == item, f"{name}: env stride {arr.strides[0]} B, item {item} B"
        assert arr.shape == arrays["env_major"][name].shape, name
    for name, arr in arrays["env_major"].items():
        assert arr.strides[-1] == wp.types.type_size_in_bytes(arr.dtype), name
