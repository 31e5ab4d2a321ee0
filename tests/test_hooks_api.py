"""The hook API: address forms, refusals, views, and hooks off leaving the run unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gbxcule.backends.hooks import HookError, hook_table, parse_hook
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.kernels.hooks import (
    HOOK_BLOOM,
    HOOK_COUNT,
    HOOK_HITS,
    HOOK_KEYS,
    HOOK_MAX,
    HOOK_SS,
    HOOK_STOP,
    HOOK_STOPPED,
    HOOK_WORDS,
)

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
    row = hook_table([(0, 0x150), (2, 0x4001)], stop_on_hit=True)
    assert row.shape == (HOOK_WORDS,)
    assert row[HOOK_COUNT] == 2 and row[HOOK_STOP] == 1
    assert row[HOOK_BLOOM] == (1 << (0x150 & 31)) | (1 << 1)
    assert row[HOOK_KEYS : HOOK_KEYS + 3].tolist() == [0x150, (2 << 16) | 0x4001, 0]
    assert row[HOOK_SS] == row[HOOK_STOPPED] == 0 and not row[HOOK_HITS:].any()


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
