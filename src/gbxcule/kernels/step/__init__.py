"""The step kernel and what composes it: the units synced per slice (``slice``), the frame
loop and kernel factory (``step``) with its CPU and GPU shapes (``step_cpu``,
``step_cuda``), step ends and event hooks (``step_end``, ``hooks``), env order for the
GPU, and the reset kernel (each unit's power-on values composed)."""
