"""Swarm resets: whole env states copied between envs of one ``Machine``, in one launch.

``dim = (N, LANES)``: env ``e`` with ``mask[e] != 0`` takes every per-env field of env
``src[e]``, its lanes walking the state words ``lane, lane + LANES, ...`` through the
same per-field address table as the start-state cache (``kernels/start_states.py``), so
a field added to ``Machine`` needs no change here. A source that is itself masked (its
state may be being overwritten in the same launch) or out of range copies nothing and
is counted in ``errors``; ``src[e] == e`` copies nothing.
"""

from __future__ import annotations

import warp as wp

from gbxcule.kernels.start_states import (
    ERR_COUNT,
    ERR_ENV,
    LANES,
    field_at,
    read_word,
    write_word,
)

wp.set_module_options({"enable_backward": False})

__all__ = ["LANES", "copy_env_states"]


@wp.kernel
def copy_env_states(
    word_field: wp.array(dtype=wp.int32),
    field_ptr: wp.array(dtype=wp.uint64),
    field_env_stride: wp.array(dtype=wp.int64),
    field_item: wp.array(dtype=wp.int32),
    field_elem_stride: wp.array(dtype=wp.int64),
    field_first_word: wp.array(dtype=wp.int32),
    src: wp.array(dtype=wp.int32),
    mask: wp.array(dtype=wp.uint8),
    restores: wp.array(dtype=wp.int32),
    errors: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if mask[e] == wp.uint8(0):
        return
    s = src[e]
    if s == e:
        return
    if s < 0 or s >= mask.shape[0] or mask[s] != wp.uint8(0):
        if lane == 0:
            wp.atomic_add(errors, ERR_COUNT, 1)
            errors[ERR_ENV] = e
        return
    if lane == 0:
        restores[e] = restores[e] + 1  # the host restarts env e's serial output from its ring
    w = lane
    while w < word_field.shape[0]:
        k = word_field[w]
        byte = wp.int64(w - field_first_word[k]) * wp.int64(4)
        f = field_at(field_ptr, field_env_stride, field_item, field_elem_stride, k)
        write_word(f, e, byte, read_word(f, s, byte))
        w += LANES
