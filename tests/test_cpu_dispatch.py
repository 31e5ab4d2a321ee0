"""The CPU step's dispatch by opcode (kernels/cpu/cpu_step.py, ``make_fast_by_opcode``) and the
GPU shape's step (``make_cpu_step(out_of_line=True)``) run every base and CB opcode
exactly as the field decode does.

The CPU backends' step kernel (kernels/step/step_cpu.py) hands each base opcode to its own copy
of the fast paths, which clang specializes for that opcode; the instruction tests run
the field decode (``run_instructions``). Here each of 1,024 envs runs one instruction
from ROM, every opcode four times, with its own random registers, operands and cycle
count (HL, BC, DE and SP anywhere in the memory map, half of them one byte either side
of a region's edge, so the bus's every region and every border is reached), over random
VRAM, WRAM, OAM and HRAM, once through each, and every per-env array of the two machines
must be equal.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from gbxcule.backends.warp_base import field_view, per_env_arrays
from gbxcule.core import memory_layout as layout
from gbxcule.kernels.codegen import step_module_options
from gbxcule.kernels.cpu.cpu_regs import load_regs, store_regs
from gbxcule.kernels.cpu.cpu_step import make_cpu_step
from gbxcule.kernels.cpu.run_cpu import run_instructions
from gbxcule.kernels.state import Machine

from .support.emu_cpu_support import program_rom, warp_machine

pytestmark = pytest.mark.l1

TABLE = 0x0200  # env k's instruction: op, n1, n2 at TABLE + 4k
COPIES = 4  # random states per opcode

step_by_opcode = make_cpu_step(module="unique", by_opcode=True)
step_gpu_shape = make_cpu_step(out_of_line=True, module="unique")


# the options of the CPU dispatch's module: its loop over the opcodes unrolled whole
@wp.kernel(module="unique", module_options=step_module_options(opcode_dispatch=True))
def one_instruction_by_opcode(m: Machine):
    i = wp.tid()
    r = load_regs(m, i)
    step_by_opcode(m, i, r)
    store_regs(m, i, r)


# the GPU shape's cpu_step (kernels/step/step_cuda.py): the fast memory path only for accesses
# that fast_mem_is_direct finds plain WRAM/HRAM, the rest through the out-of-line general path
@wp.kernel(module="unique", enable_backward=False)
def one_instruction_gpu_shape(m: Machine):
    i = wp.tid()
    r = load_regs(m, i)
    step_gpu_shape(m, i, r)
    store_regs(m, i, r)


# Where the memory map changes, one byte on each side: a 16-bit access (the stack ops) or
# a pointer just past the edge of WRAM/HRAM must not pass as a plain byte.
EDGES = (
    np.array(
        [
            b + d
            for b in (0x8000, 0xA000, 0xC000, 0xE000, 0xFE00, 0xFEA0, 0xFF00, 0xFF80, 0xFFFF)
            for d in (-1, 0, 1)
        ]
        + [0x0000, 0xFFFE],
    )
    & 0xFFFF
)


def addresses(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` 16-bit register pair values: anywhere, or (half of them) at a region's edge."""
    anywhere = rng.integers(0, 0x10000, n)
    return np.where(rng.random(n) < 0.5, rng.choice(EDGES, n), anywhere)


def machines_with_random_states(seed: int):
    """Two machines in the same state: env k at its instruction ``k % 256`` with random
    operands, registers, IME and cycle count, boot ROM unmapped."""
    rng = np.random.default_rng(seed)
    n = 256 * COPIES
    rom = bytearray(program_rom("nop")[0])
    ops = np.arange(n) % 256
    for k in range(n):
        rom[TABLE + 4 * k : TABLE + 4 * k + 3] = bytes([ops[k], *rng.integers(0, 256, 2)])
    pairs = {p: addresses(rng, n) for p in ("sp", "bc", "de", "hl")}
    values = {
        "pc": TABLE + 4 * np.arange(n),
        "sp": pairs["sp"],
        "a": rng.integers(0, 256, n),
        "f": rng.integers(0, 16, n) << 4,
        **{p[0]: pairs[p] >> 8 for p in ("bc", "de", "hl")},
        **{p[1]: pairs[p] & 0xFF for p in ("bc", "de", "hl")},
        "ime": rng.integers(0, 2, n),
        "cycles": rng.integers(0, 1 << 40, n),
        "boot_on": np.zeros(n),
    }
    machines = [warp_machine(bytes(rom), num_envs=n) for _ in range(2)]
    ram = [(layout.VRAM_OFF, layout.VRAM_SIZE), (layout.WRAM_OFF, layout.WRAM_SIZE)]
    ram += [(layout.OAM_OFF, layout.OAM_SIZE), (layout.HRAM_OFF, layout.HRAM_SIZE)]
    contents = [rng.integers(0, 256, (n, size), dtype=np.uint8) for _, size in ram]
    for m in machines:
        for name, v in values.items():
            view = field_view(m, name)
            view.assign(wp.array(np.asarray(v, dtype=view.dtype), device="cpu"))
        mem = m.mem.numpy()  # a view on the CPU device
        for (off, size), data in zip(ram, contents, strict=True):
            mem[:, off : off + size] = data  # every byte differs by region: a wrong column shows
    return machines, ops


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("kernel", ["by_opcode", "gpu_shape"])
def test_dispatch_by_opcode_equals_the_field_decode(seed, kernel):
    """Also the GPU shape's step: fast_mem_is_direct restates cpu_fast_mem's addresses, and
    a wrong one would let a ROM, IO or VRAM access through as a plain byte."""
    (by_fields, by_opcode), ops = machines_with_random_states(seed)
    other = one_instruction_by_opcode if kernel == "by_opcode" else one_instruction_gpu_shape
    wp.launch(run_instructions, dim=len(ops), inputs=[by_fields, 1, -1], device="cpu")
    wp.launch(other, dim=len(ops), inputs=[by_opcode], device="cpu")
    a, b = dict(per_env_arrays(by_fields)), dict(per_env_arrays(by_opcode))
    assert int(field_view(by_fields, "pc").numpy()[0]) != TABLE  # env 0 (NOP) ran
    for name, arr in a.items():
        x, y = arr.numpy(), b[name].numpy()
        if not np.array_equal(x, y):
            env = int(np.argwhere(x != y)[0][0])
            pytest.fail(f"opcode ${ops[env]:02X} (env {env}): {name} differs")
