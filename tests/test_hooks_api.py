"""The hook API: address forms, refusals, views, and hooks off leaving the run unchanged."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.hooks import HookError, hook_table, parse_hook
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.kernels.state import I32_FIELDS
from gbxcule.kernels.step.hooks import (
    HOOK_COUNT,
    HOOK_HITS,
    HOOK_KEYS,
    HOOK_MAP,
    HOOK_MAP_WORDS,
    HOOK_MAX,
    HOOK_ROW,
    HOOK_SS,
    HOOK_STOP,
    HOOK_STOPPED,
    HOOK_WORDS,
)
from gbxcule.kernels.step.step import step_kernel, step_kernel_variant

from .support.hooks_support import banked_rom

pytestmark = pytest.mark.api

SYMS = SymbolTable.parse("00:0150 Main\n02:4000 Far\n00:C000 wRam\n00:FF80 hRam\n")


@pytest.mark.parametrize(
    ("spec", "banks", "want"),
    [
        (0x0150, 4, (0, 0x150)),
        (0x4123, 2, (1, 0x4123)),
        ("02:4000", 4, (2, 0x4000)),
        ("0:0040", 4, (0, 0x40)),
        ("Main", 4, (0, 0x150)),
        ("Far", 4, (2, 0x4000)),
    ],
)
def test_parse_hook_forms(spec, banks, want) -> None:
    assert parse_hook(spec, banks, lambda: SYMS) == want


@pytest.mark.parametrize(
    ("spec", "banks", "match"),
    [
        (0x4000, 4, "give the bank"),
        ("04:4000", 4, "does not exist"),
        ("01:0150", 4, "bank 0"),
        ("wRam", 4, "WRAM hooks are not supported"),
        (0xFF80, 2, "refuses hooks at 0xE000"),
        ("hRam", 2, "refuses"),
        (0x10000, 2, "outside"),
        (1.5, 2, "int address"),
        ("Nope", 2, "not in"),
    ],
)
def test_parse_hook_refusals(spec, banks, match) -> None:
    with pytest.raises((HookError, KeyError), match=match):
        parse_hook(spec, banks, lambda: SYMS)


def test_hook_table_layout() -> None:
    row = np.zeros(HOOK_ROW + HOOK_WORDS, np.int32)  # as a Machine.i32 row
    row[HOOK_ROW:] = hook_table([(0, 0x150), (2, 0x4001)], stop_on_hit=True)
    assert row[HOOK_COUNT] == 2 and row[HOOK_STOP] == 1
    want = np.zeros(HOOK_MAP_WORDS, np.uint32)
    want[0x150 >> 5 & 31] = 1 << (0x150 & 31)
    want[0x4001 >> 5 & 31] |= 1 << (0x4001 & 31)
    assert row[HOOK_MAP : HOOK_MAP + HOOK_MAP_WORDS].view(np.uint32).tolist() == want.tolist()
    assert row[HOOK_KEYS : HOOK_KEYS + 3].tolist() == [0x150, (2 << 16) | 0x4001, 0]
    assert (
        row[HOOK_SS] == row[HOOK_STOPPED] == 0 and not row[HOOK_HITS : HOOK_HITS + HOOK_MAX].any()
    )
    assert HOOK_ROW == len(I32_FIELDS) and HOOK_MAP + HOOK_MAP_WORDS == HOOK_ROW + HOOK_WORDS


def _state(b: WarpVecCpuBackend) -> dict[str, np.ndarray]:
    st = b.capture_state(0)
    return {k: v for k, v in st.items() if not k.startswith("hook")}


def test_backend_views_errors_and_hooks_off(tmp_path: Path) -> None:
    rom = banked_rom(tmp_path)
    actions = np.zeros(2, np.int32)
    with (
        WarpVecCpuBackend(rom, num_envs=2, threads=1, frames_per_step=2) as plain,
        WarpVecCpuBackend(rom, num_envs=2, threads=1, frames_per_step=2) as hooked,
    ):
        with pytest.raises(HookError, match=f"at most {HOOK_MAX}"):
            hooked.set_hooks([0x150 + k for k in range(HOOK_MAX + 1)])
        with pytest.raises(HookError, match="same address"):
            hooked.set_hooks(["Main", 0x150])
        # hooks that never hit (data) and hooks removed leave the run as it was
        hooked.set_hooks(["03:7F00", "01:7000"])
        for _ in range(3):
            plain.step(actions)
            hooked.step(actions)
        assert hooked.hook_hits_torch().shape == (2, 2)
        assert int(hooked.hook_hits_torch().sum()) == 0
        hooked.set_hooks(["Bank1Loop"])
        hooked.step(actions)
        hits = hooked.hook_hits_torch()
        assert hits.shape == (2, 1) and int(hits[0, 0]) > 0
        view = hooked.hook_hits_torch()
        hooked.set_hooks([])
        assert hooked.hooks == [] and hooked.hook_hits_torch().shape == (2, 0)
        assert int(view.sum()) == 0  # the view is the device buffer: zeroed in place
        assert hooked.hook_stopped_torch().tolist() == [0, 0]
        plain.step(actions)
        for _ in range(2):
            plain.step(actions)
            hooked.step(actions)
        # Bank1Loop hits split slices, which moves nothing in this ROM: same state
        a, b = _state(plain), _state(hooked)
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _generated_funcs(module) -> set[str]:
    """The Warp funcs in ``module``'s CPU source in the kernel cache (loaded for block_dim 1,
    as CPU launches are): C++ names ``<func>_<n>``."""
    ident = f"wp_{module.name}_{module.get_module_hash(1).hex()[:7]}"
    (cpp,) = (Path(wp.config.kernel_cache_dir) / ident).glob("*.cpp")
    return set(re.findall(r"^static (?:WP_NOINLINE )?\S+ (\w+)_\d+\(", cpp.read_text(), re.M))


def test_hooked_variant_is_a_module_of_its_own(tmp_path: Path) -> None:
    """The CPU's step module (kernels/step/step_cpu.py) holds only its kernel and generates no
    hook code; building and running the hooked variant neither touches it (no re-hash: Warp
    would reload it if its hash changed) nor adds to it."""
    plain = step_kernel_variant(opcode_dispatch=True).module
    with WarpVecCpuBackend(banked_rom(tmp_path), num_envs=1, threads=1, frames_per_step=1) as b:
        b.step(np.zeros(1, np.int32))
        hasher, execs = plain.hashers[1], dict(plain.execs)
        b.set_hooks(["Bank1Loop"])
        b.step(np.zeros(1, np.int32))
        assert int(b.hook_hits_torch().sum()) > 0
        hooked = b._step_kernel()
        b.set_hooks([])
        b.step(np.zeros(1, np.int32))
        assert b._step_kernel().module is plain
    assert plain.hashers.get(1) is hasher and plain.execs == execs
    assert hooked is step_kernel_variant(hooks=True, opcode_dispatch=True)
    assert step_kernel_variant() is step_kernel
    assert hooked.key == step_kernel.key == "step_kernel" and hooked.module is not plain
    assert list(plain.kernels) == ["step_kernel"]
    hook_funcs = {"hook_at", "hook_reached", "hooks_step_start"}
    assert not hook_funcs & set(plain.functions)
    assert not hook_funcs & _generated_funcs(plain)
    assert {"cpu_tick", "run_frame"} <= _generated_funcs(plain)
    assert hook_funcs <= _generated_funcs(hooked.module)


def test_plain_module_hash_does_not_see_the_hooked_variant() -> None:
    """In a fresh process (no codegen yet, which changes Warp's later re-hashes), the plain
    module hashes the same before and after the hooked variant is built."""
    code = (
        "import warp as wp\n"
        "wp.config.quiet = True\n"
        "from gbxcule.kernels.step.step import step_kernel_variant\n"
        "plain = wp.get_module('gbxcule.kernels.step.step')\n"
        "before = plain.get_module_hash(1)\n"
        "step_kernel_variant(hooks=True)\n"
        "plain.mark_modified()\n"
        "print(before == plain.get_module_hash(1))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "True", out.stdout + out.stderr


def test_interleaved_layout_counts_the_same(tmp_path: Path) -> None:
    """The hook row sits in Machine.i32, which mem_layout="interleaved" lays out [k, N]."""
    rom = banked_rom(tmp_path)
    hits = {}
    for layout in ("env_major", "interleaved"):
        with WarpVecCpuBackend(
            rom, num_envs=3, threads=2, frames_per_step=2, mem_layout=layout
        ) as b:
            b.set_hooks(["01:4000", "Bank2Loop", 0x50, "MainLoop"])
            steps = []
            for _ in range(3):
                b.step(np.zeros(3, np.int32))
                steps.append(b.hook_hits_torch().numpy().copy())
            hits[layout] = np.stack(steps)
    assert (hits["env_major"].sum(axis=(0, 1)) > 0).all()
    np.testing.assert_array_equal(hits["env_major"], hits["interleaved"])
