"""The step kernel in the shape a GPU runs: ``StepFeatures(units_out_of_line=True)``.

The same frame loop as ``kernels/step/step.py``'s ``step_kernel`` (same source, same results),
with the units a slice calls rarely kept out of line so the instruction loop's registers
are not spent on them; the CUDA backends launch it, and ``make test-cuda-build`` and
``bench.cuda_build_report`` (its GPU budget) build this module. The CPU device runs the
inlined shape faster and keeps it (kernels/step/step_cpu.py). See history/performance.md.
"""

from __future__ import annotations

from gbxcule.kernels.step.step import step_kernel_variant

step_kernel = step_kernel_variant(units_out_of_line=True)
