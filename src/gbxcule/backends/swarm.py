"""Host side of swarm resets: :func:`copy_envs` (``TrainingApiMixin.copy_envs``).

pokemonred_puffer-style swarms move the envs that lag behind to the state of an env
that reached a milestone. Here that is one launch of ``kernels/swarm.py``: masked envs
take the whole machine state of their source env, on the device, with no host copy.
Source ids and the mask may live on the host (checked here, at once) or on the device
(checked by the kernel: bad entries copy nothing and raise at the next check, as
``reset_envs`` slots do).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from gbxcule.backends.checks import check_copy_sources
from gbxcule.backends.device_inputs import (
    EnvMaskError,
    env_mask,
    is_device_input,
    launch_consuming,
)


def _device_sources(src: Any, n: int, device: Any) -> wp.array:
    if isinstance(src, wp.array):
        if src.dtype != wp.int32 or src.shape != (n,) or src.device != wp.get_device(device):
            raise EnvMaskError(f"source env ids as a Warp array must be int32 [{n}] on {device}")
        return src
    if src.dtype in (torch.bool,) or src.is_floating_point() or tuple(src.shape) != (n,):
        raise EnvMaskError(
            f"source env ids must be an integer tensor of shape ({n},), "
            f"got {src.dtype} {tuple(src.shape)}"
        )
    if str(src.device) != str(wp.device_to_torch(wp.get_device(device))):
        raise EnvMaskError(f"source env ids are on {src.device}, the backend runs on {device}")
    return wp.from_torch(src.to(torch.int32).contiguous())


def copy_envs(backend: Any, src_env_per_dst: Any, mask: Any, errors: wp.array) -> None:
    """Envs selected by ``mask`` take the full state of env ``src_env_per_dst[e]``."""
    from gbxcule.kernels.swarm import LANES, copy_env_states

    n = backend.num_envs
    device = backend.device
    on_device = is_device_input(src_env_per_dst, device) or is_device_input(mask, device)
    sel, mask_torch = env_mask(mask, n, device)
    if sel is None:
        return
    if on_device:
        if not is_device_input(src_env_per_dst, device):
            src_env_per_dst = torch.as_tensor(np.asarray(src_env_per_dst)).to(
                wp.device_to_torch(wp.get_device(device))
            )
        src = _device_sources(src_env_per_dst, n, device)
        on_torch = mask_torch or isinstance(src_env_per_dst, torch.Tensor)
    else:
        src_host = src_env_per_dst
        if isinstance(src_host, torch.Tensor):
            src_host = src_host.detach().numpy()
        host = check_copy_sources(np.asarray(src_host), sel.numpy(), n)
        src = wp.array(host, dtype=wp.int32, device=device)
        on_torch = False
    cache = backend._start_states
    launch_consuming(
        copy_env_states,
        (n, LANES),
        [*cache._field_inputs(), src, sel, cache.restores, errors],
        device,
        on_torch,
    )
