"""Argument checks shared by every backend (PyBoy oracles, Warp CPU/CUDA), beside them all.

Each check returns the value it accepted (normalised to a Python int where that
matters) or raises an error that names the argument: ``ValueError`` for a bad
value, ``TypeError`` for a bad type, ``IndexError`` for an env out of range,
``FileNotFoundError`` for a missing ROM.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.asm.bootrom import check_boot
from gbxcule.backends.protocol import EnvMaskError
from gbxcule.core.actions import check_step_timing
from gbxcule.core.cartridge import (
    BAD_LOGO_HINT,
    CGB_ONLY_HINT,
    CHECKSUM_HINT,
    CartridgeError,
    CartridgeHeader,
    colour_cartridge,
)


def read_rom(
    rom_path: str | Path, *, allow_bad_logo: bool = False, allow_cgb_only: bool = False
) -> bytes:
    """The ROM file's bytes. A wrong header checksum is refused (PyBoy refuses it), and so
    are a Game Boy Color only game (unless ``allow_cgb_only``: a Color machine runs it) and
    a wrong Nintendo logo unless ``allow_bad_logo`` (the error names that override)."""
    path = Path(rom_path)
    if not path.is_file():
        raise FileNotFoundError(f"ROM file not found: {path}")
    data = path.read_bytes()
    if len(data) < 0x150:
        raise ValueError(f"ROM file {path} is {len(data)} bytes, too short for a cartridge header")
    header = CartridgeHeader.parse(
        data, strict=False, allow_bad_logo=allow_bad_logo, allow_cgb_only=allow_cgb_only
    )
    bad = [p for p in header.problems if p.endswith((BAD_LOGO_HINT, CHECKSUM_HINT, CGB_ONLY_HINT))]
    if bad:
        raise CartridgeError(f"{path}: {bad[0]}")
    return data


def resolve_machine(cgb: Any, boot: str | None, rom: bytes) -> tuple[bool, str]:
    """``(cgb, boot)`` of a backend: ``cgb`` None follows the cartridge header as PyBoy
    does (``colour_cartridge``), True/False forces the machine; ``boot`` None is "fast" on
    a DMG and "pyboy" on a Game Boy Color machine, which boots PyBoy's CGB boot ROM only."""
    if cgb is not None and not isinstance(cgb, bool):
        raise TypeError(f"cgb must be None (the header decides), True or False, got {cgb!r}")
    colour = colour_cartridge(rom) if cgb is None else cgb
    if boot is None:
        boot = "pyboy" if colour else "fast"
    boot = check_boot(boot)
    if colour and boot != "pyboy":
        raise ValueError(
            f"a Game Boy Color machine runs PyBoy's CGB boot ROM (boot='pyboy' or unset), "
            f"not boot={boot!r}"
        )
    return colour, boot


def check_positive_int(name: str, value: Any) -> int:
    """``value`` if it is an int >= 1 (not a bool), else ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


DEFAULT_RELEASE_AFTER_FRAMES = 8  # the button is held for the first 8 frames of a step


def check_step_config(num_envs: int, frames_per_step: int, release_after_frames: int | None) -> int:
    """The release frame to use: ``release_after_frames``, or by default
    ``min(8, frames_per_step)``, so any ``frames_per_step`` works with the default."""
    check_positive_int("num_envs", num_envs)
    check_positive_int("frames_per_step", frames_per_step)
    if release_after_frames is None:
        return min(DEFAULT_RELEASE_AFTER_FRAMES, int(frames_per_step))
    if (
        isinstance(release_after_frames, bool)
        or not isinstance(release_after_frames, (int, np.integer))
        or not 1 <= release_after_frames <= frames_per_step
    ):
        raise ValueError(
            f"release_after_frames={release_after_frames!r} with frames_per_step="
            f"{frames_per_step}: release_after_frames must be an int in 1..frames_per_step "
            "(or None for min(8, frames_per_step))"
        )
    return int(release_after_frames)


def check_step_end(codec: Any, frames_per_step: int, release_after: int, end: Any) -> Any:
    """``end`` (a ``core/step_end.StepEnd`` with its address resolved, or ``None``) when a
    backend can run it with this codec's timing (``check_step_timing``); else a
    ``StepEndError`` or ``ValueError`` that says why."""
    from gbxcule.core.step_end import StepEnd, StepEndError

    if end is not None and not isinstance(end, StepEnd):
        raise StepEndError(f"set_step_end takes a StepEnd or None, got {end!r}")
    if end is not None and not isinstance(end.where, int):
        raise StepEndError(f"StepEnd.where {end.where!r}: resolve the symbol first")
    check_step_timing(codec, frames_per_step, release_after, end)
    return end


def check_opcode_dispatch(opcode_dispatch: Any, is_cuda: bool, units_out_of_line: bool) -> bool:
    """Whether the step kernel dispatches by opcode (``kernels/step/step_cpu.py``): by default
    wherever the CPU runs the inlined shape; ``True`` elsewhere is a ``ValueError`` (the
    GPU shape has no such dispatch, and NVRTC cannot build it)."""
    if opcode_dispatch is None:
        return not is_cuda and not units_out_of_line
    if not isinstance(opcode_dispatch, bool):
        raise TypeError(f"opcode_dispatch must be None, True or False, got {opcode_dispatch!r}")
    if opcode_dispatch and is_cuda:
        raise ValueError("opcode_dispatch=True is for the CPU device (NVRTC cannot build it)")
    if opcode_dispatch and units_out_of_line:
        raise ValueError("opcode_dispatch=True needs the inlined shape (units_out_of_line=False)")
    return opcode_dispatch


def check_cuda_max_registers(cap: Any, units_out_of_line: bool) -> int | None:
    """The GPU shape's register cap (``WarpVecBackend(cuda_max_registers=...)``): ``None``
    for its default (kernels/codegen.py, ``STEP_CUDA_MAX_REGISTERS``), 0 for none, or 32-255;
    any cap on the inlined shape is a ``ValueError`` (it is a CUDA kernel attribute of the
    GPU shape)."""
    if cap is None:
        return None
    if isinstance(cap, bool) or not isinstance(cap, int):
        raise TypeError(f"cuda_max_registers must be None or an int, got {cap!r}")
    if not (cap == 0 or 32 <= cap <= 255):
        raise ValueError(f"cuda_max_registers must be 0 (no cap) or 32-255, got {cap}")
    if not units_out_of_line:
        raise ValueError("cuda_max_registers is the GPU shape's (units_out_of_line=True)")
    return cap


def check_hot_loop(hot_loop: Any, units_out_of_line: bool) -> bool:
    """The GPU shape's call-free instruction loop (``WarpVecBackend(hot_loop=...)``): ``True``,
    or ``False`` (the shape before it) on the GPU shape only."""
    if not isinstance(hot_loop, bool):
        raise TypeError(f"hot_loop must be True or False, got {hot_loop!r}")
    if not hot_loop and not units_out_of_line:
        raise ValueError("hot_loop=False is the GPU shape's (units_out_of_line=True)")
    return hot_loop


ENV_ORDERS = ("launch", "pc")


def check_env_order(env_order: Any, units_out_of_line: bool) -> str:
    """``env_order`` (``WarpVecBackend(env_order=...)``): ``"launch"`` or ``"pc"``; ``"pc"``
    on the inlined shape is a ``ValueError`` (only the GPU shape maps threads to envs)."""
    if env_order not in ENV_ORDERS:
        raise ValueError(f"env_order must be one of {ENV_ORDERS}, got {env_order!r}")
    if env_order == "pc" and not units_out_of_line:
        raise ValueError("env_order='pc' is the GPU shape's (units_out_of_line=True)")
    return env_order


# CUDA threads per block when the caller names none. The step kernel takes 255 registers a
# thread, so an SM holds 256 threads whatever the block: Warp's blocks of 256 left half an
# H100's SMs idle at 16,384 envs, and blocks of 64 ran 1.42x (demo), 1.20x (busy ROM) and
# 1.31x (quest) faster there, 0.99x at 65,536 envs (bench/results/gpu/knob-block64*).
CUDA_BLOCK_DIM = 64


def check_block_dim(block_dim: Any, device: Any) -> int | None:
    """CUDA threads per block (``WarpVecBackend(block_dim=...)``): ``None`` for the
    device's default (``CUDA_BLOCK_DIM`` on CUDA; the CPU device has no blocks), or a
    multiple of 32 from 32 to 1024 on a CUDA device."""
    if block_dim is None:
        return CUDA_BLOCK_DIM if device.is_cuda else None
    if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)):
        raise TypeError(f"block_dim must be None or an int, got {block_dim!r}")
    if not device.is_cuda:
        raise ValueError(f"block_dim is for CUDA devices; {device} has no thread blocks")
    if not (32 <= block_dim <= 1024 and block_dim % 32 == 0):
        raise ValueError(f"block_dim must be a multiple of 32 from 32 to 1024, got {block_dim}")
    return int(block_dim)


def check_env(env: Any, num_envs: int) -> int:
    if isinstance(env, bool) or not isinstance(env, (int, np.integer)):
        raise TypeError(f"env must be an int, got {type(env).__name__}")
    if not 0 <= env < num_envs:
        raise IndexError(f"env {env} out of range for num_envs={num_envs}")
    return int(env)


def check_range(lo: int, hi: int) -> None:
    if not 0 <= lo < hi <= 0x10000:
        raise ValueError(
            f"memory range must satisfy 0 <= lo < hi <= 0x10000, got [{lo:#x}, {hi:#x})"
        )


def check_seed(seed: Any) -> int | None:
    """``seed`` if it is None or an int (not a bool), else ``TypeError``."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    return int(seed)


def write_values(addr: int, data: Any) -> np.ndarray:
    """``write_memory``'s ``data`` as int64 values, checked: an int, bytes-like, or a
    sequence/array of ints 0..255, all of it landing in 0x0000-0xFFFF from ``addr``."""
    if isinstance(data, (bool, str)):
        raise TypeError(
            f"write_memory needs an int, bytes or integer array, got {type(data).__name__}"
        )
    if isinstance(data, (int, np.integer)):
        values = np.array([int(data)], dtype=np.int64)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        values = np.frombuffer(bytes(data), dtype=np.uint8).astype(np.int64)
    else:
        arr = np.asarray(data)
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"write_memory needs integer data, got dtype {arr.dtype}")
        values = arr.astype(np.int64).ravel()
    check_range(addr, addr + len(values))
    if np.any((values < 0) | (values > 0xFF)):
        raise ValueError("write_memory values must be bytes 0..255")
    return values


def check_copy_sources(arr: np.ndarray, sel: np.ndarray, n: int) -> np.ndarray:
    """``copy_envs``'s source ids (host, int32 ``[N]``) for mask ``sel``: integers in range,
    none of them a copy's target in the same call; else an error that names the env."""
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise EnvMaskError(f"source env ids must be integers, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise EnvMaskError(f"source env ids must have shape ({n},), got {arr.shape}")
    picked = np.flatnonzero(sel)
    bad = picked[(arr[picked] < 0) | (arr[picked] >= n)]
    if bad.size:
        raise IndexError(f"env {bad[0]}: source env {arr[bad[0]]} out of range 0..{n - 1}")
    chained = picked[(arr[picked] != picked) & (sel[arr[picked].clip(0, n - 1)] != 0)]
    if chained.size:
        e = int(chained[0])
        raise ValueError(
            f"env {e} copies env {arr[e]}, which is itself overwritten in this call; "
            "a source env must not be in the mask"
        )
    return arr.astype(np.int32)
