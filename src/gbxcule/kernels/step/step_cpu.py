"""The step kernel the CPU device runs: ``StepFeatures(opcode_dispatch=True)``.

The same frame loop as ``kernels/step/step.py``'s ``step_kernel``, in its inlined shape (same
source, same results), with each base opcode handed to its own copy of the fast paths
(kernels/cpu/cpu_step.py, ``make_fast_by_opcode``), run by an instruction loop of their own
(``cpu_run_fast``) wherever nothing but them can happen: the CPU backends launch it. It
is built for the CPU only, so it is not among the modules CI builds for sm_90: NVRTC runs
out of memory on its 256 copies of the fast paths. See history/cpu-instruction-count.md.
"""

from __future__ import annotations

from gbxcule.kernels.step.step import step_kernel_variant

step_kernel = step_kernel_variant(opcode_dispatch=True)
