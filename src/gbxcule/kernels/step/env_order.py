"""Which env each thread of the GPU-shaped step kernel steps (``env_order="pc"``).

Envs of one warp run in lockstep; where they sit at different PCs (different phases of a
game) the warp runs each path in turn. Sorted by the PC each env starts its step at, the
envs a warp holds are mostly on the same code (the divergence model, history/
performance.md: quest 0.70-0.76x the issue slots, the game-like ROM 0.76-0.85x). The state
never moves: thread ``t`` steps env ``order[t]``, so actions, observations, RAM views,
hooks and savestates keep the user's env order; what it costs is that a warp's envs are
no longer neighbours in memory (only a GPU can weigh the two: bench/gpu_shape_ab.py).
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.state import PC

wp.set_module_options({"enable_backward": False})


@wp.kernel
def pc_sort_keys(
    i32: wp.array2d(dtype=wp.int32), keys: wp.array(dtype=wp.int32), order: wp.array(dtype=wp.int32)
):
    """``keys[t]`` = env ``t``'s PC and ``order[t]`` = ``t``, for a radix sort of the pairs
    (``wp.utils.radix_sort_pairs``: both arrays twice the envs long)."""
    t = wp.tid()
    keys[t] = i32[t, PC]
    order[t] = t
