"""kernels/variant.py: a variant of a kernel's whole call graph sees its overrides in every
function it reaches, and leaves the original kernel and its module as they were."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.kernels.variant import graph_variant

from .support.variant_graph import top

pytestmark = pytest.mark.tooling


def _run(kernel) -> tuple[list[int], list[int]]:
    a = wp.array(np.arange(3), dtype=int, device="cpu")
    b = wp.array(np.arange(3), dtype=int, device="cpu")
    wp.launch(kernel, dim=3, inputs=[a, b], device="cpu")
    return a.numpy().tolist(), b.numpy().tolist()


def test_the_variant_sees_the_override_through_calls_closures_and_tuples():
    kernel = top.make_kernel(3)
    plain = _run(kernel)
    # a = (x * 2) * 3 + 1 + 2; b = x + 2
    assert plain == ([3, 9, 15], [2, 3, 4])
    variant = graph_variant(kernel, {"CGB": True}, "gbxcule_test_variant", prefix="tests.")
    # leaf adds 100 (a: x * 2 * 3 + 600), other.same_name gives 20 and leaf.same_name
    # still 1: the two functions of one name keep apart
    assert _run(variant) == ([621, 627, 633], [120, 121, 122])
    assert _run(kernel) == plain  # the original untouched after the variant was built


def test_the_original_module_is_not_rebuilt_and_the_variant_has_its_own():
    kernel = top.make_kernel(5)
    _run(kernel)
    before = kernel.module.hash_module()
    variant = graph_variant(kernel, {"CGB": True}, "gbxcule_test_variant_b", prefix="tests.")
    _run(variant)
    assert kernel.module.hash_module() == before
    assert variant.module is not kernel.module
    assert variant.module.name == "gbxcule_test_variant_b"


def test_a_variant_of_no_kernel_is_refused():
    with pytest.raises(TypeError, match="takes a Warp kernel"):
        graph_variant(top.mid, {"CGB": True}, "x")


def test_a_variant_of_the_step_kernel_steps_as_the_step_kernel():
    """The real graph (factories, closures, structs, the units) copies whole: with an
    override no code reads, the variant's machine equals the plain kernel's after 10
    frames of a sound program (sound, timer, LCD, interrupts, the bus)."""
    import gbxcule.kernels.step.step as step_module

    from .support.emu_timing_support import warp_boot, warp_step
    from .support.sound_programs import random_sound_program

    rom = random_sound_program(3)
    plain = step_module.step_kernel
    variant = graph_variant(plain, {"VARIANT_PROBE": True}, "gbxcule_test_step_variant")
    machines = []
    try:
        for kernel in (plain, variant):
            step_module.step_kernel = kernel
            m = warp_boot(rom)
            for _ in range(10):
                warp_step(m, [0], 1, 1)
            machines.append([m.mem.numpy(), m.i32.numpy(), m.i64.numpy(), m.apu.numpy()])
    finally:
        step_module.step_kernel = plain
    assert variant.module.name == "gbxcule_test_step_variant"
    for ours, theirs in zip(*machines):
        assert np.array_equal(ours, theirs)
    assert int(machines[0][1].sum()) != 0  # the machine ran


def test_a_cgb_variant_is_its_own_cgb_variant():
    """Launch paths that map every kernel through ``cgb_variant`` (EnvSlices on a CGB
    machine) may be handed a variant already: it is returned, not copied again."""
    from gbxcule.kernels.ppu.render_cgb import render_cgb_kernels
    from gbxcule.kernels.variant import cgb_variant

    full, down = render_cgb_kernels()
    assert cgb_variant(full) is full and cgb_variant(down) is down
    assert full.module.name.endswith(".cgb") and not full.module.name.endswith(".cgb.cgb")
