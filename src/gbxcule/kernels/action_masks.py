"""Action ids -> step words (button masks, with timed actions' hold and length) on the device, for actions that already live there.

Used when ``step()`` gets a CUDA tensor or a Warp array, so the ids are never read on
the host. An id outside ``[0, table.shape[0])`` presses nothing for that env and is
counted in ``errors`` (``errors[0]`` = how many, ``errors[1]`` = one such env); the
host reports it later (``backends/device_inputs.py``). Ids are int32 or int64.
"""

from __future__ import annotations

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def actions_to_masks(
    actions: wp.array(dtype=Any),
    table: wp.array(dtype=wp.int32),
    masks: wp.array(dtype=wp.int32),
    errors: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    a = wp.int64(actions[i])
    if a < wp.int64(0) or a >= wp.int64(table.shape[0]):
        masks[i] = 0
        wp.atomic_add(errors, 0, 1)
        errors[1] = i
    else:
        masks[i] = table[int(a)]


# Concrete overloads for the two id dtypes, so ahead-of-time builds (CUDA PTX) include them.
for _ids in (wp.int32, wp.int64):
    wp.overload(actions_to_masks, {"actions": wp.array(dtype=_ids)})
