"""``set_step_end`` and ``step_frames`` of the Warp backends (``core/step_end.py``).

The condition goes to every env's step-end row of ``Machine.i32`` (kernels/step/step_end.py);
the step kernel reads it each frame. Same kernel with or without one: a row of zeros is
no early end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from gbxcule.backends.checks import check_step_end
from gbxcule.backends.ram_views import mem_offset
from gbxcule.core.step_end import StepEnd, check_step_end_address
from gbxcule.kernels.step.step_end import STEP_END_AT, STEP_FRAMES, STEP_ROW, STEP_WORDS


class StepEndMixin:
    machine: Any
    num_envs: int
    codec: Any
    frames_per_step: int
    release_after_frames: int
    synchronize: Any
    step_end: StepEnd | None = None

    def set_step_end(self, end: StepEnd | None) -> None:
        """End every env's steps early on a RAM byte (``core/step_end.py``); ``None``: each
        step runs its action's frames. ``end.where`` must be an address (a task resolves
        symbols)."""
        check_step_end(self.codec, self.frames_per_step, self.release_after_frames, end)
        row = np.zeros(STEP_WORDS, np.int32)
        if end is not None:
            off = mem_offset(check_step_end_address(end.where), 0, 1, 0, False)
            assert off is not None  # the spans check_step_end_address allows are all RAM
            at = int(STEP_END_AT) - STEP_ROW
            row[at : at + 5] = (off + 1, end.op, end.value, end.mask, end.min_frames)
        self.synchronize()
        self.machine.i32[:, STEP_ROW : STEP_ROW + STEP_WORDS].assign(
            np.tile(row, (self.num_envs, 1))
        )
        self.step_end = end

    def step_frames_torch(self) -> torch.Tensor:
        """int32 ``[N]``, zero-copy: the frames each env's last step ran."""
        return wp.to_torch(self.machine.i32)[:, int(STEP_FRAMES)]

    def step_frames(self) -> np.ndarray:
        """int64 ``[N]`` on the host: the frames each env's last step ran."""
        return self.step_frames_torch().cpu().numpy().astype(np.int64)
