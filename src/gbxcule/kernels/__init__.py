"""Warp kernels and ``@wp.func``s, one hardware unit per module (see ARCHITECTURE.md).

Grouped by hardware: ``cpu/``, ``board/`` (bus, IO page, cartridge, timer, serial,
joypad, DMA), ``ppu/``, ``apu/``, and ``step/`` composing them into the step kernel. Here
at the top: the ``Machine`` (``state``), the list of units (``units``), the address
bounds (``address_map``), the CUDA code generation (``codegen``) and the kernels the
backends launch around a step (start states, swarm copies, action masks, save-state
loads, debug reads)."""

# CUDA builds of every module here declare their locals value-initialized: imported first,
# so no kernels module is built before it (kernels/codegen.py, cuda_value_init)
from gbxcule.kernels import codegen as _codegen  # noqa: F401

# Every module here that defines a @wp.kernel, with one entry point its PTX must contain
# ("" where any will do): what CI builds for sm_90 and bench.cuda_build_report measures.
KERNEL_MODULES = {
    "gbxcule.kernels.step.step": "step_kernel",
    "gbxcule.kernels.step.step_cuda": "step_kernel",
    "gbxcule.kernels.ppu.render": "render_shades_kernel",
    # launched as its CGB variant (render_cgb_kernels); the plain build checks the code
    "gbxcule.kernels.ppu.render_cgb": "_render_cgb_down",
    "gbxcule.kernels.step.reset": "",
    "gbxcule.kernels.start_states": "",
    "gbxcule.kernels.swarm": "copy_env_states",
    "gbxcule.kernels.step.env_order": "pc_sort_keys",
    "gbxcule.kernels.action_masks": "",
    "gbxcule.kernels.pyboy_load": "",
    "gbxcule.kernels.debug_access": "",
    "gbxcule.kernels.cpu.run_cpu": "",
}
# The modules with a kernel built for the CPU device only (not for sm_90): the CPU's step
# dispatch by opcode, on whose 256 copies of the fast paths NVRTC runs out of memory.
CPU_ONLY_KERNEL_MODULES = {"gbxcule.kernels.step.step_cpu": "step_kernel"}
