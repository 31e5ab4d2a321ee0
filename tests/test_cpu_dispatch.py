"""The CPU step's dispatch by opcode (kernels/cpu_step.py, ``make_fast_by_opcode``) runs every
base and CB opcode exactly as the field decode does.

The CPU backends' step kernel (kernels/step_cpu.py) hands each base opcode to its own copy
of the fast paths, which clang specializes for that opcode; the instruction tests run
the field decode (``run_instructions``). Here each of 1,024 envs runs one instruction
from ROM, every opcode four times, with its own random registers, operands and cycle
count (HL, BC, DE and SP anywhere in the memory map, so the bus's every region is
reached), once through each, and every per-env array of the two machines must be equal.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.warp_base import field_view, per_env_arrays
from gbxcule.kernels.codegen import step_module_options
from gbxcule.kernels.cpu_regs import load_regs, store_regs
from gbxcule.kernels.cpu_step import make_cpu_step
from gbxcule.kernels.run_cpu import run_instructions
from gbxcule.kernels.state import Machine

from .support.emu_cpu_support import program_rom, warp_machine

pytestmark = pytest.mark.l1

TABLE = 0x0200  # env k's instruction: op, n1, n2 at TABLE + 4k
COPIES = 4  # random states per opcode

step_by_opcode = make_cpu_step(module="unique", by_opcode=True)


# the options of the CPU dispatch's module: its loop over the opcodes unrolled whole
@wp.kernel(module="unique", module_options=step_module_options(opcode_dispatch=True))
def one_instruction_by_opcode(m: Machine):
    i = wp.tid()
    r = load_regs(m, i)
    step_by_opcode(m, i, r)
    store_regs(m, i, r)


def machines_with_random_states(seed: int):
    """Two machines in the same state: env k at its instruction ``k % 256`` with random
    operands, registers, IME and cycle count, boot ROM unmapped."""
    rng = np.random.default_rng(seed)
    n = 256 * COPIES
    rom = bytearray(program_rom("nop")[0])
    ops = np.arange(n) % 256
    for k in range(n):
        rom[TABLE + 4 * k : TABLE + 4 * k + 3] = bytes([ops[k], *rng.integers(0, 256, 2)])
    values = {
        "pc": TABLE + 4 * np.arange(n),
        "sp": rng.integers(0, 0x10000, n),
        "a": rng.integers(0, 256, n),
        "f": rng.integers(0, 16, n) << 4,
        **{r: rng.integers(0, 256, n) for r in "bcdehl"},
        "ime": rng.integers(0, 2, n),
        "cycles": rng.integers(0, 1 << 40, n),
        "boot_on": np.zeros(n),
    }
    machines = [warp_machine(bytes(rom), num_envs=n) for _ in range(2)]
    for m in machines:
        for name, v in values.items():
            view = field_view(m, name)
            view.assign(wp.array(np.asarray(v, dtype=view.dtype), device="cpu"))
    return machines, ops


@pytest.mark.parametrize("seed", [1, 2])
def test_dispatch_by_opcode_equals_the_field_decode(seed):
    (by_fields, by_opcode), ops = machines_with_random_states(seed)
    wp.launch(run_instructions, dim=len(ops), inputs=[by_fields, 1, -1], device="cpu")
    wp.launch(one_instruction_by_opcode, dim=len(ops), inputs=[by_opcode], device="cpu")
    a, b = dict(per_env_arrays(by_fields)), dict(per_env_arrays(by_opcode))
    assert int(field_view(by_fields, "pc").numpy()[0]) != TABLE  # env 0 (NOP) ran
    for name, arr in a.items():
        x, y = arr.numpy(), b[name].numpy()
        if not np.array_equal(x, y):
            env = int(np.argwhere(x != y)[0][0])
            pytest.fail(f"opcode ${ops[env]:02X} (env {env}): {name} differs")
