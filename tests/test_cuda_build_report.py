"""bench.cuda_build_report: the ptxas report parser and the PTX rewrite it relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cuda_build_report import parse_ptxas, ptx_for_ptxas, readable_name, write_summary
from gbxcule.kernels import CPU_ONLY_KERNEL_MODULES, KERNEL_MODULES

pytestmark = pytest.mark.tooling

KERNELS_DIR = Path(__file__).resolve().parents[1] / "src" / "gbxcule" / "kernels"

# The shape `ptxas -arch=sm_90 -v` prints (CUDA 13.0), two out-of-line funcs and one entry.
PTXAS_OUTPUT = """\
ptxas info    : 154 bytes gmem
ptxas info    : Compiling entry function 'step_kernel_436ab6d7_cuda_kernel_forward' for 'sm_90'
ptxas info    : Function properties for step_kernel_436ab6d7_cuda_kernel_forward
    11760 bytes stack frame, 4362 bytes spill stores, 4144 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 11760 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 75065.617 ms
ptxas info    : Function properties for _ZN65_INTERNAL_00000000_34_wp_gbxcule_kernels_step_7af7873_cu_3f7b2aa510cpu_tick_0EP16Machine_2acb9fdbixi
    0 bytes stack frame, 8216 bytes spill stores, 7572 bytes spill loads
ptxas info    : Function properties for _ZN65_INTERNAL_00000000_34_wp_gbxcule_kernels_step_7af7873_cu_3f7b2aa513bus_read_at_0EP16Machine_2acb9fdbiii
    0 bytes stack frame, 4870 bytes spill stores, 4532 bytes spill loads
"""


def test_parse_ptxas_reads_entry_and_functions() -> None:
    fns = parse_ptxas(PTXAS_OUTPUT)
    assert [f["name"] for f in fns] == ["step_kernel", "cpu_tick", "bus_read_at"]
    entry, tick, read = fns
    assert entry == {
        "kind": "entry",
        "name": "step_kernel",
        "stack_frame": 11760,
        "spill_stores": 4362,
        "spill_loads": 4144,
        "registers": 255,
        "cumulative_stack": 11760,
        "smem": 1024,
    }
    assert tick["kind"] == "function" and "registers" not in tick
    assert (tick["spill_stores"], tick["spill_loads"]) == (8216, 7572)
    assert (read["stack_frame"], read["spill_stores"]) == (0, 4870)


def test_readable_name_keeps_unknown_symbols() -> None:
    assert readable_name("render_shades_kernel_0123abcd_cuda_kernel_forward") == (
        "render_shades_kernel"
    )
    assert readable_name("some_plain_symbol") == "some_plain_symbol"


def test_ptx_for_ptxas_rewrites_version_and_drops_nul() -> None:
    ptx = "//\n.version 9.4\n.target sm_90\n.address_size 64\nret;\n\0"
    fixed = ptx_for_ptxas(ptx, "9.0")
    assert ".version 9.0\n" in fixed and ".version 9.4" not in fixed
    assert not fixed.endswith("\0")
    with pytest.raises(ValueError, match="no .version"):
        ptx_for_ptxas(".target sm_90\n", "9.0")


def test_summary_lists_every_function(tmp_path) -> None:
    row = {
        "module": "gbxcule.kernels.step.step",
        "commit": "abc1234",
        "label": "t",
        "timestamp": 0.0,
        "ptx_build_s": 12.0,
        "ptxas_s": 75.0,
        "functions": parse_ptxas(PTXAS_OUTPUT),
    }
    text = write_summary([row], tmp_path).read_text()
    assert (
        "| step | step_kernel (entry) | 255 | 11760 | 11760 | 4362 | 4144 | 12.0 | 75.0 |" in text
    )
    assert "cpu_tick (function)" in text and "bus_read_at (function)" in text


def test_kernel_modules_lists_every_module_with_a_kernel() -> None:
    """Every kernels module whose Warp module holds a kernel: written with ``@wp.kernel`` or
    built by a factory into that module (kernels/step/step_cuda.py), each either built for sm_90
    or named as CPU-only (kernels/step/step_cpu.py)."""
    import importlib

    import warp as wp

    with_kernels = set()
    for path in KERNELS_DIR.rglob("*.py"):
        if path.stem == "__init__":
            continue
        name = ".".join(
            ("gbxcule", "kernels", *path.relative_to(KERNELS_DIR).with_suffix("").parts)
        )
        module = importlib.import_module(name)
        if any(isinstance(v, wp.Kernel) and v.module.name == name for v in vars(module).values()):
            with_kernels.add(name)
    assert with_kernels == set(KERNEL_MODULES) | set(CPU_ONLY_KERNEL_MODULES)
    assert not set(KERNEL_MODULES) & set(CPU_ONLY_KERNEL_MODULES)


def test_budget_names_every_breach_and_passes_a_row_within_it() -> None:
    from bench.cuda_build_report import check_budget

    row = {"functions": parse_ptxas(PTXAS_OUTPUT)}
    breaches = check_budget(row)
    assert breaches == [
        "step_kernel stack 11760 B > 512 B",
        "step_kernel 255 registers > 128",
        "step_kernel spill stores 4362 B > 1000 B",
        "cpu_tick spill stores 8216 B > 500 B",
        "bus_read_at spill stores 4870 B > 500 B",
    ]
    ok = {
        "functions": [
            {
                "kind": "entry",
                "name": "step_kernel",
                "stack_frame": 512,
                "cumulative_stack": 512,
                "registers": 128,
                "spill_stores": 1000,
                "spill_loads": 0,
            },
            {
                "kind": "function",
                "name": "lcd_sync_outlined",
                "stack_frame": 0,
                "spill_stores": 500,
                "spill_loads": 0,
            },
        ]
    }
    assert check_budget(ok) == []
    # the inlined shape (kernels/step/step.py) is not what the budget is for
    assert check_budget({"module": "gbxcule.kernels.step.step", **row}) == []
    assert check_budget({"module": "gbxcule.kernels.step.step_cuda", **row}) == breaches
    # a module without the step kernel has no budget
    assert (
        check_budget(
            {
                "functions": [
                    {
                        "kind": "entry",
                        "name": "render_full_kernel",
                        "stack_frame": 9999,
                        "spill_stores": 9999,
                    }
                ]
            }
        )
        == []
    )


def test_the_cgb_variant_has_its_own_stack_budget() -> None:
    """The Game Boy Color variant's row (``--cgb``) is held to the same budget with a 640 B
    stack, under its own entry name; the DMG row keeps 512 B."""
    from bench.cuda_build_report import (
        BUDGET_ENTRY_CGB,
        BUDGET_MODULE,
        BUDGET_MODULE_CGB,
        check_budget,
    )

    def row(module: str, name: str, stack: int) -> dict:
        entry = {"kind": "entry", "name": name, "stack_frame": stack, "cumulative_stack": stack,
                 "registers": 128, "spill_stores": 400, "spill_loads": 0}  # fmt: skip
        return {"module": module, "functions": [entry]}

    assert check_budget(row(BUDGET_MODULE_CGB, BUDGET_ENTRY_CGB, 640)) == []
    assert check_budget(row(BUDGET_MODULE_CGB, BUDGET_ENTRY_CGB, 656)) == [
        f"{BUDGET_ENTRY_CGB} stack 656 B > 640 B"
    ]
    assert check_budget(row(BUDGET_MODULE, "step_kernel", 576)) == [
        "step_kernel stack 576 B > 512 B"
    ]
