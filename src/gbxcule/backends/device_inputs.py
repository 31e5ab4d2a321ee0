"""Per-env inputs that may already live on the device: actions, env masks, start-state slots.

Host inputs (NumPy arrays, lists, CPU Torch tensors) are validated on the host, values
included, and a bad one raises at once, before anything runs. Device inputs (a CUDA
tensor on the backend's device, or a Warp array on the backend's device, also on the
CPU device) are checked on the host for dtype, shape and device only: their values are
never read there, so the host does not wait for the GPU. Their range is checked by the
kernel that consumes them: a bad value does nothing for that env (no buttons, no
restore) and is counted in a :class:`DeviceErrorLog`, which raises at a later call
(the next ``step()``/``reset_envs()`` once the device has got that far, or
``check_errors()``, which waits for it).

CUDA Torch tensors are consumed on the current Torch stream of their device: that
stream first waits for the work queued on Warp's stream (the emulator's last step),
and Warp's stream then waits for the consuming kernel; the host never waits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from gbxcule.backends.protocol import EnvMaskError
from gbxcule.core.actions import (
    ActionCodec,
    ActionDtypeError,
    ActionError,
    ActionRangeError,
    ActionShapeError,
    validate_actions,
)


class ActionDeviceError(ActionError):
    """Actions on another device than the backend's."""


_STREAMS: dict[int, wp.Stream] = {}


def torch_stream(device: wp.context.Device) -> wp.Stream:
    """The current Torch stream of a CUDA ``device``, as a (cached) Warp stream."""
    torch_s = torch.cuda.current_stream(torch.device(wp.device_to_torch(device)))
    handle = int(torch_s.cuda_stream)
    if handle not in _STREAMS:
        _STREAMS[handle] = wp.stream_from_torch(torch_s)
    return _STREAMS[handle]


def launch_consuming(kernel: Any, dim: Any, inputs: list, device: Any, on_torch: bool) -> None:
    """Launch ``kernel`` ordered after the emulator's queued work and before its next work.

    ``on_torch``: run it on the current Torch stream (it reads Torch tensors), with the
    two GPU-side waits described in the module doc; else on Warp's stream.
    """
    device = wp.get_device(device)
    if not device.is_cuda or not on_torch:
        wp.launch(kernel, dim=dim, inputs=inputs, device=device)
        return
    own = wp.get_stream(device)
    target = torch_stream(device)
    if target.cuda_stream == own.cuda_stream:
        wp.launch(kernel, dim=dim, inputs=inputs, stream=own)
        return
    target.wait_stream(own)
    wp.launch(kernel, dim=dim, inputs=inputs, stream=target)
    own.wait_stream(target)


def is_device_input(value: Any, device: Any) -> bool:
    """True for inputs whose values must not be read on the host (see the module doc)."""
    if isinstance(value, wp.array):
        return True
    return isinstance(value, torch.Tensor) and value.device.type != "cpu"


def _check_device(value: Any, device: Any, what: str, exc: type[Exception]) -> None:
    device = wp.get_device(device)
    if isinstance(value, wp.array):
        if value.device != device:
            raise exc(f"{what} is a Warp array on {value.device}, the backend runs on {device}")
        return
    want = torch.device(wp.device_to_torch(device))
    if value.device != want:
        raise exc(f"{what} is a tensor on {value.device}, the backend runs on {want}")


def _dtype_kind(value: Any) -> str:
    """'int', 'bool' or 'other' for a Warp array or a tensor."""
    if isinstance(value, wp.array):
        np_dtype = np.dtype(wp.dtype_to_numpy(value.dtype))
    else:
        if value.dtype == torch.bool:
            return "bool"
        if value.dtype.is_floating_point or value.dtype.is_complex:
            return "other"
        return "int"
    if np_dtype == np.bool_:
        return "bool"
    return "int" if np.issubdtype(np_dtype, np.integer) else "other"


def _device_ints(
    value: Any,
    n: int,
    what: str,
    exc_shape: type[Exception],
    exc_dtype: type[Exception],
    wp_dtypes: tuple = (wp.int32, wp.int64),
) -> tuple[wp.array, bool]:
    """A device input as a Warp int array of shape (n,); (array, came from Torch).

    Warp arrays must already have one of ``wp_dtypes`` (converting them would read
    them on the host); Torch tensors are converted on the Torch stream.
    """
    shape = tuple(value.shape)
    if shape != (n,):
        raise exc_shape(f"{what} must have shape ({n},) (one per env), got {shape}")
    if isinstance(value, wp.array):
        if value.dtype not in wp_dtypes:
            names = ", ".join(t.__name__ for t in wp_dtypes)
            raise exc_dtype(
                f"{what} as a Warp array must have dtype {names}, got {value.dtype.__name__}"
            )
        return value, False
    want = torch.int64 if value.dtype == torch.int64 and wp.int64 in wp_dtypes else torch.int32
    return wp.from_torch(value.to(want).contiguous()), True


class DeviceErrorLog:
    """Bad device inputs found by kernels: ``errors[0]`` counts them, ``errors[1]`` is one env.

    The count only grows; the host remembers how many it has reported. On CUDA a copy
    into pinned host memory is queued after each consuming launch, so reading the
    count never waits (it may lag behind the GPU); :meth:`raise_new` with ``wait``
    synchronises first.
    """

    def __init__(self, device: Any, what: str, effect: str, exc_type: type[Exception]) -> None:
        self.device = wp.get_device(device)
        self.what = what
        self.effect = effect
        self.exc_type = exc_type
        self.errors = wp.zeros(2, dtype=wp.int32, device=self.device)
        self._mirror = (
            wp.zeros(2, dtype=wp.int32, device="cpu", pinned=True) if self.device.is_cuda else None
        )
        # where the host reads the count: a zero-copy view (CPU memory either way)
        self._host = (self._mirror if self._mirror is not None else self.errors).numpy()
        self._reported = 0

    def after_launch(self) -> None:
        """Queue the count's copy to the host after the consuming kernel (CUDA only)."""
        if self._mirror is not None:
            wp.copy(self._mirror, self.errors, stream=wp.get_stream(self.device))

    def raise_new(self, *, wait: bool) -> None:
        """Raise ``exc_type`` if kernels found bad values since the last report."""
        if self._mirror is not None and wait:
            wp.synchronize_device(self.device)
            count, env = (int(v) for v in self.errors.numpy())
        else:
            count, env = int(self._host[0]), int(self._host[1])
        if count > self._reported:
            new = count - self._reported
            self._reported = count
            raise self.exc_type(
                f"{self.what}: {new} found on the device since the last check (env {env} "
                f"among them); {self.effect}"
            )


class ActionInput:
    """Turns ``step()``'s actions into the words the step kernel reads (their button masks
    and, for timed actions, hold and length: ``core/actions.py``)."""

    def __init__(self, codec: ActionCodec, num_envs: int, device: Any) -> None:
        self.codec = codec
        self.num_envs = num_envs
        self.device = wp.get_device(device)
        self.table = wp.array(codec.word_table, dtype=wp.int32, device=self.device)
        self.log = DeviceErrorLog(
            self.device,
            f"out-of-range action ids (valid 0..{codec.num_actions - 1} for codec {codec.name!r})",
            "those envs ran that step with no buttons pressed",
            ActionRangeError,
        )

    def fill(self, actions: Any, masks: wp.array) -> None:
        """Write the masks of ``actions`` into ``masks`` (int32 [N] on the device)."""
        self.log.raise_new(wait=False)
        if not is_device_input(actions, self.device):
            if isinstance(actions, torch.Tensor):
                actions = actions.detach().numpy()
            acts = validate_actions(actions, self.num_envs, self.codec)
            host = self.codec.to_words(acts)
            if self.device.is_cpu:
                masks.numpy()[:] = host  # a view of the buffer itself: no temporary array
            else:
                masks.assign(host)
            return
        _check_device(actions, self.device, "actions", ActionDeviceError)
        if _dtype_kind(actions) != "int":
            raise ActionDtypeError(f"actions must have an integer dtype, got {actions.dtype}")
        ids, on_torch = _device_ints(
            actions, self.num_envs, "actions", ActionShapeError, ActionDtypeError
        )
        from gbxcule.kernels.action_masks import actions_to_masks

        launch_consuming(
            actions_to_masks,
            self.num_envs,
            [ids, self.table, masks, self.log.errors],
            self.device,
            on_torch,
        )
        self.log.after_launch()


def env_mask(mask: Any, num_envs: int, device: Any) -> tuple[wp.array | None, bool]:
    """An env mask as a uint8 [N] Warp array on ``device``; (array, from Torch).

    Host masks (bool or integer, nonzero = selected) give ``None`` when nothing is
    selected, so the caller can skip the launch.
    """
    if not is_device_input(mask, device):
        arr = mask.detach().numpy() if isinstance(mask, torch.Tensor) else np.asarray(mask)
        if arr.dtype != np.bool_ and not np.issubdtype(arr.dtype, np.integer):
            raise EnvMaskError(f"the env mask must be bool or integer, got dtype {arr.dtype}")
        if arr.shape != (num_envs,):
            raise EnvMaskError(f"the env mask must have shape ({num_envs},), got {arr.shape}")
        if arr.dtype != np.bool_ and arr.size and (arr.min() < 0 or arr.max() > 1):
            raise EnvMaskError(
                f"an integer env mask holds 0 or 1 per env, got values {arr.min()}..{arr.max()}: "
                "env indices? pass a bool [N] mask with those envs set"
            )
        sel = (arr != 0).astype(np.uint8)
        if not sel.any():
            return None, False
        return wp.array(sel, dtype=wp.uint8, device=device), False
    _check_device(mask, device, "the env mask", EnvMaskError)
    if _dtype_kind(mask) == "other":
        raise EnvMaskError(f"the env mask must be bool or integer, got dtype {mask.dtype}")
    if tuple(mask.shape) != (num_envs,):
        raise EnvMaskError(f"the env mask must have shape ({num_envs},), got {tuple(mask.shape)}")
    if isinstance(mask, wp.array):
        if mask.dtype != wp.uint8:
            raise EnvMaskError(
                f"an env mask as a Warp array must be uint8, got {mask.dtype.__name__}"
            )
        return mask, False
    return wp.from_torch(mask.ne(0).to(torch.uint8).contiguous()), True


def env_slots(slots: Any, num_envs: int, num_slots: int, device: Any) -> tuple[wp.array, bool]:
    """Per-env start-state slots as an int32 [N] Warp array; (array, from Torch).

    An int selects that slot for every env. Host values are range-checked here
    (``IndexError``); device values by the restore kernel.
    """
    if isinstance(slots, (int, np.integer)) and not isinstance(slots, bool):
        return env_slots(np.full(num_envs, int(slots), dtype=np.int64), num_envs, num_slots, device)
    if not is_device_input(slots, device):
        arr = slots.detach().numpy() if isinstance(slots, torch.Tensor) else np.asarray(slots)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise EnvMaskError(f"slots must be integers, got dtype {arr.dtype}")
        if arr.shape != (num_envs,):
            raise EnvMaskError(f"slots must have shape ({num_envs},), got {arr.shape}")
        bad = np.flatnonzero((arr < 0) | (arr >= num_slots))
        if bad.size:
            raise IndexError(
                f"start-state slot {int(arr[bad[0]])} for env {int(bad[0])} out of range: "
                f"the cache holds {num_slots} state(s)"
            )
        return wp.array(arr.astype(np.int32), dtype=wp.int32, device=device), False
    _check_device(slots, device, "slots", EnvMaskError)
    if _dtype_kind(slots) != "int":
        raise EnvMaskError(f"slots must be integers, got dtype {slots.dtype}")
    return _device_ints(slots, num_envs, "slots", EnvMaskError, EnvMaskError, (wp.int32,))
