"""Warp backends: N Game Boys per launch, on the CPU device or on CUDA.

``WarpVecCpuBackend`` splits the envs into contiguous slices, one per worker
thread, and launches each slice's kernel from its own thread (Warp's CPU
launches run on the calling thread and release the GIL). ``WarpVecCudaBackend``
launches all envs at once on a CUDA device.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

from gbxcule.asm.bootrom import BOOT_MAX_FRAMES, boot_image, check_boot, pyboy_boot_rom_bytes
from gbxcule.backends.checks import (
    check_block_dim,
    check_cuda_max_registers,
    check_env,
    check_env_order,
    check_hot_loop,
    check_opcode_dispatch,
    check_positive_int,
    check_range,
    check_seed,
    check_step_config,
    read_rom,
    resolve_machine,
    write_values,
)
from gbxcule.backends.env_slices import EnvSlices, PerEnv, PerSlice
from gbxcule.backends.hooks import HooksMixin
from gbxcule.backends.pixels import PixelBackendMixin, PixelBuffers
from gbxcule.backends.protocol import CPU_STATE_KEYS
from gbxcule.backends.step_end import StepEndMixin
from gbxcule.backends.training_api import TrainingApiMixin
from gbxcule.backends.warp_base import (
    allocate_machine,
    cart_config,
    field_view,
    per_env_arrays,
    slice_machine,
)
from gbxcule.core.actions import check_step_timing, get_codec
from gbxcule.core.dmg import POST_BOOT_PC
from gbxcule.kernels.board.joypad import joypad_slots
from gbxcule.kernels.state import Machine
from gbxcule.kernels.variant import cgb_variant, machine_kernel


def peek_memory(m: Any, env: int, lo: int, hi: int) -> np.ndarray:
    """Bytes ``[lo, hi)`` of ``env`` read through the bus (PyBoy ``memory[lo:hi]`` semantics)."""
    from gbxcule.kernels.debug_access import peek

    check_range(lo, hi)
    out = wp.zeros(hi - lo, dtype=wp.uint8, device=m.mem.device)
    if hi > lo:
        wp.launch(machine_kernel(m, peek), dim=1, inputs=[m, env, lo, out], device=m.mem.device)
    return out.numpy()


def poke_memory(m: Any, env: int, addr: int, data: bytes | np.ndarray | int) -> None:
    """Write bytes from ``addr`` through the bus (PyBoy ``memory[addr] = v`` semantics)."""
    from gbxcule.kernels.debug_access import poke

    values = write_values(addr, data)
    if len(values):
        arr = wp.array(values.astype(np.uint8), dtype=wp.uint8, device=m.mem.device)
        wp.launch(machine_kernel(m, poke), dim=1, inputs=[m, env, addr, arr], device=m.mem.device)


class WarpVecBase(PixelBackendMixin, TrainingApiMixin, HooksMixin, StepEndMixin):
    """Shared shell: ROM validation, state allocation, reset, host access to one env."""

    name = "warp"

    def __init__(
        self,
        rom_path: str | Path,
        *,
        num_envs: int = 1,
        frames_per_step: int = 24,
        release_after_frames: int | None = None,
        action_codec: str = "pokemonred_puffer_v1",
        render_pixels: bool = False,
        render_pixels_packed: bool = False,
        render_pixels_rgb: bool = False,
        state_path: str | Path | None = None,
        device: str = "cpu",
        mem_layout: str = "env_major",
        sym_path: str | Path | None = None,
        cpu_fast_paths: bool = True,
        allow_bad_logo: bool = False,
        boot: str | None = None,
        units_out_of_line: bool | None = None,
        opcode_dispatch: bool | None = None,
        block_dim: int | None = None,
        cuda_max_registers: int | None = None,
        hot_loop: bool = True,
        env_order: str = "launch",
        cgb: bool | None = None,
    ) -> None:
        """``block_dim``: CUDA threads per block for every launch (a multiple of 32 up to
        1024); ``None`` (default) 64 on CUDA (``checks.CUDA_BLOCK_DIM``). The step kernel
        takes 255 registers a thread, so an SM holds 256 threads: in blocks of Warp's 256,
        16,384 envs were 64 blocks for 132 SMs on an H100; blocks of 64 spread them over
        every SM (history/performance.md). CUDA devices only; same results either way.

        ``units_out_of_line``: the step kernel's shape (``kernels/step/step.py``'s
        ``StepFeatures``): ``None`` (default) the device's own, out of line on CUDA
        (``kernels/step/step_cuda.py``) and inlined on the CPU; ``True``/``False`` force one, for
        timing both shapes on both devices. Same results either way.

        ``cuda_max_registers``: the GPU shape's register cap (``None``: its default, 128,
        ``kernels/codegen.py``; 0: none; else 32-255), for timing caps on a GPU. The GPU
        shape only. Same results either way.

        ``hot_loop``: the GPU shape's call-free instruction loop (``kernels/cpu/cpu_step.py``,
        ``cpu_hot_loop``); ``False`` is the shape before it, for timing both. The GPU
        shape only. Same results either way.

        ``env_order``: which env each thread of the GPU shape steps: ``"launch"`` (thread
        ``t``, env ``t``) or ``"pc"`` (envs sorted by the PC they start the step at, so a
        warp's envs run the same code more often; ``kernels/step/env_order.py``). The state
        stays in the user's order either way; ``"pc"`` needs one launch (CUDA, or the CPU
        with ``threads=1``). Same results either way.

        ``opcode_dispatch``: the inlined shape with each base opcode dispatched to its own
        copy of the fast paths (``kernels/step/step_cpu.py``); ``None`` (default) on wherever
        the CPU runs the inlined shape, ``False`` the field decode alone (for timing both).
        The CPU device only. Same results either way.

        ``boot``: which boot ROM ``reset()`` runs from power-on (``gbxcule.asm.bootrom``):
        ``"fast"`` (a DMG's default; our goldens, PyBoy backend default), ``"dmg"`` (a real
        DMG's post-boot DIV counter and LCD phase) or ``"pyboy"`` (the installed PyBoy's own
        boot ROM: every env then equals a stock ``PyBoy(rom)`` at 0x0100; a CGB machine's).

        ``cgb``: as PyBoy's: ``None`` a Game Boy Color machine for a cartridge whose header
        says Colour (0x143 bit 7), ``True``/``False`` forced. Its ``render_pixels`` are
        luminance, ``render_pixels_rgb`` RGB (``history/cgb.md``)."""
        release_after_frames = check_step_config(num_envs, frames_per_step, release_after_frames)
        if boot is not None:
            check_boot(boot)  # named before the ROM is read
        self.codec = get_codec(action_codec)
        self.rom_path = Path(rom_path)
        self._rom = read_rom(rom_path, allow_bad_logo=allow_bad_logo, allow_cgb_only=True)
        self.cgb, self.boot = resolve_machine(cgb, boot, self._rom)
        self.header, self.cart = cart_config(
            self._rom, allow_bad_logo=allow_bad_logo, allow_cgb_only=self.cgb
        )
        self.num_envs = num_envs
        self.frames_per_step = frames_per_step
        self.release_after_frames = release_after_frames
        self.device = device
        if units_out_of_line is not None and not isinstance(units_out_of_line, bool):
            raise TypeError(
                f"units_out_of_line must be None, True or False, got {units_out_of_line!r}"
            )
        self.units_out_of_line = (
            wp.get_device(device).is_cuda if units_out_of_line is None else units_out_of_line
        )
        self.opcode_dispatch = check_opcode_dispatch(
            opcode_dispatch, wp.get_device(device).is_cuda, self.units_out_of_line
        )
        self.cuda_max_registers = check_cuda_max_registers(
            cuda_max_registers, self.units_out_of_line
        )
        self.hot_loop = check_hot_loop(hot_loop, self.units_out_of_line)
        self.env_order = check_env_order(env_order, self.units_out_of_line)
        self.mem_layout = mem_layout
        joypad_slots(frames_per_step, release_after_frames)
        check_step_timing(self.codec, frames_per_step, release_after_frames, None)
        self.machine = allocate_machine(
            num_envs,
            rom=np.frombuffer(self._rom, dtype=np.uint8),
            boot=np.frombuffer(
                pyboy_boot_rom_bytes(cgb=True) if self.cgb else boot_image(self.boot),
                dtype=np.uint8,
            ),
            cart=self.cart,
            device=device,
            mem_layout=mem_layout,
            cpu_fast_paths=cpu_fast_paths,
            cgb=self.cgb,
        )
        block_dim = check_block_dim(block_dim, wp.get_device(device))
        kernel_for = cgb_variant if self.cgb else None  # every launch: kernels/variant.py
        self._slices = EnvSlices(num_envs, self._launch_parts(), block_dim, kernel_for)
        self._machine_parts = PerSlice(
            [self.machine]
            if len(self._slices.ranges) == 1
            else [slice_machine(self.machine, lo, hi) for lo, hi in self._slices.ranges]
        )
        # The step kernel's Machine arguments: the struct, and for the GPU shape each slice's
        # Machine again as a one-element array and which env each thread steps (its env
        # order, twice the slice long for the radix sort of env_order="pc"; kernels/step/step.py).
        self._step_machine: list[Any] = [self._machine_parts]
        if self.units_out_of_line:
            if self.env_order == "pc" and len(self._slices.ranges) != 1:
                raise ValueError(
                    "env_order='pc' sorts every env for one launch: a CUDA backend, or the "
                    "CPU backend with threads=1"
                )
            self._env_order = PerSlice(
                [
                    wp.array(np.arange(2 * (hi - lo), dtype=np.int32), device=device)
                    for lo, hi in self._slices.ranges
                ]
            )
            self._step_machine.append(
                PerSlice(
                    [wp.array([p], dtype=Machine, device=device) for p in self._machine_parts.parts]
                )
            )
            self._step_machine.append(self._env_order)
            if self.env_order == "pc":  # the sort's keys, beside the order it sorts
                self._order_keys = wp.zeros(2 * num_envs, dtype=wp.int32, device=device)
        self.pixels = PixelBuffers(
            num_envs, device, render_pixels=render_pixels, slices=self._slices, colour=self.cgb,
            render_pixels_packed=render_pixels_packed, render_pixels_rgb=render_pixels_rgb,
        )  # fmt: skip
        self._buttons = wp.zeros(num_envs, dtype=wp.int32, device=device)
        self._recorded_step: tuple[tuple[int, int], list[Any]] | None = None
        self._init_training_api(state_path=state_path, sym_path=sym_path)  # training_api.py
        self.reset()

    def _sort_envs_by_pc(self) -> None:
        """The GPU shape's env order for the next step: envs by the PC they are at
        (kernels/step/env_order.py), on the device, in the device's stream."""
        from gbxcule.kernels.step.env_order import pc_sort_keys

        order, keys = self._env_order.parts[0], self._order_keys
        blocks = {} if self._slices.block_dim is None else {"block_dim": self._slices.block_dim}
        wp.launch(
            pc_sort_keys,
            dim=self.num_envs,
            inputs=[self.machine.i32, keys, order],
            device=self.device,
            **blocks,
        )
        wp.utils.radix_sort_pairs(keys, order, self.num_envs)

    # ---- launching ------------------------------------------------------------
    def _launch_parts(self) -> int:
        """How many env slices launches are split into; the CPU backend uses its threads."""
        return 1

    def _launch_all(self, kernel: Any, *args: Any) -> None:
        """Launch a Machine-first kernel over every env slice (``PerEnv`` args cut per slice)."""
        self._slices.launch(kernel, [self._machine_parts, *args], device=self.device)

    def _step_launches(self) -> list[Any]:
        """``step()``'s launches, recorded once: their arguments do not change from step to
        step (the buttons buffer is refilled in place); recorded again if the pacing is, or
        (``set_hooks`` drops the record) the kernel: backends/hooks.py."""
        pacing = (self.frames_per_step, self.release_after_frames)
        if self._recorded_step is None or self._recorded_step[0] != pacing:
            launches = self._slices.record(
                self._step_kernel(),
                [
                    *self._step_machine,
                    PerEnv(self._buttons),
                    self.frames_per_step,
                    self.release_after_frames,
                    1,  # latch the last frame's lines, as PyBoy renders the last tick
                    -1,
                ],
                device=self.device,
            )
            self._recorded_step = (pacing, launches)
        return self._recorded_step[1]

    # ---- protocol -------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        """Power-on, then the ``boot`` mode's boot ROM up to PC=0x0100, where the oracle snapshots
        (``seed`` unused).

        PyBoy is deterministic, so every env starts identical; ``seed`` is accepted for the
        protocol and ignored.
        """
        from gbxcule.kernels.step.reset import power_on

        seed = check_seed(seed)
        for _, arr in per_env_arrays(self.machine):
            arr.zero_()
        self._buttons.zero_()
        self._serial_seen = np.zeros(self.num_envs, dtype=np.int64)
        self._serial = [bytearray() for _ in range(self.num_envs)]
        self._launch_all(power_on)
        frames = BOOT_MAX_FRAMES[self.boot]
        boot = self._step_kernel(hooks=False)
        self._slices.launch(
            boot,
            [*self._step_machine, PerEnv(self._buttons), frames, 0, 0, POST_BOOT_PC],
            device=self.device,
        )
        wp.synchronize_device(self.device)
        pcs = field_view(self.machine, "pc").numpy()
        booted = (pcs == POST_BOOT_PC) & (field_view(self.machine, "boot_on").numpy() == 0)
        if not np.all(booted):
            bad = int(np.argmin(booted))
            raise RuntimeError(
                f"env {bad}: the {self.boot!r} boot ROM did not reach 0x0100 within {frames} "
                f"frames (PC={pcs[bad]:#06x})"
            )
        self._after_reset(seed)  # post-boot state kept for load_state; state_path loaded

    def step(self, actions: Any) -> None:
        """``frames_per_step`` frames per env; the action's buttons are held for the first
        ``release_after_frames`` of them (PyBoy's ``button(name, delay)``)."""
        self._load_actions(actions)  # NumPy or Torch, host- or device-checked (training_api.py)
        if self.env_order == "pc":
            self._sort_envs_by_pc()
        self._slices.replay(self._step_launches())
        self.render_pixels_after_step()  # backends/pixels.py

    def get_cpu_state(self, env: int) -> dict[str, int]:
        env = check_env(env, self.num_envs)
        return {key: int(field_view(self.machine, key).numpy()[env]) for key in CPU_STATE_KEYS}

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        return peek_memory(self.machine, check_env(env, self.num_envs), lo, hi)

    def write_memory(self, env: int, addr: int, data: bytes | np.ndarray | int) -> None:
        poke_memory(self.machine, check_env(env, self.num_envs), addr, data)

    def serial_output(self, env: int) -> bytes:
        """Every byte written to SB since reset (the device keeps a ring of the last
        ``SERIAL_CAP``; bytes are collected here on each call, so call at least that often)."""
        env = check_env(env, self.num_envs)
        self._refresh_serial_after_restores()  # envs restored by reset_envs restart their output
        m = self.machine
        total = int(field_view(m, "serial_len").numpy()[env])
        seen = int(self._serial_seen[env])
        cap = m.serial_buf.shape[1]
        if total - seen > cap:
            raise RuntimeError(
                f"env {env}: {total - seen} serial bytes arrived since the last read, more than "
                f"the {cap}-byte device ring keeps"
            )
        if total > seen:
            ring = m.serial_buf.numpy()[env]
            self._serial[env] += bytes(ring[k % cap] for k in range(seen, total))
            self._serial_seen[env] = total
        return bytes(self._serial[env])

    def synchronize(self) -> None:
        """Wait until the device has finished every step queued so far (on CUDA ``step()``
        returns once its work is queued; on the CPU it has already run). For timing."""
        wp.synchronize_device(self.device)

    def close(self) -> None:
        self._slices.close()

    def __enter__(self) -> WarpVecBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WarpVecCpuBackend(WarpVecBase):
    """All envs on the CPU device, one contiguous slice per worker thread."""

    name = "warp-cpu"

    def __init__(self, rom_path: str | Path, *, threads: int | None = None, **kwargs: Any) -> None:
        device = kwargs.pop("device", "cpu")
        if device != "cpu":
            raise ValueError(
                f"WarpVecCpuBackend runs on device 'cpu', got device={device!r}; "
                "WarpVecCudaBackend runs on CUDA devices"
            )
        if threads is None:
            threads = os.cpu_count() or 1
        self.threads = check_positive_int("threads", threads)
        super().__init__(rom_path, device="cpu", **kwargs)

    def _launch_parts(self) -> int:
        return self.threads


class WarpVecCudaBackend(WarpVecBase):
    """All envs in one launch on a CUDA device, every per-env block interleaved by default
    (``mem_layout``: the lanes of a warp reading one field or address read one line;
    ``"env_major"``, the CPU's, is still accepted for timing both)."""

    name = "warp-cuda"

    def __init__(
        self,
        rom_path: str | Path,
        *,
        device: str = "cuda:0",
        mem_layout: str = "interleaved",
        **kwargs: Any,
    ) -> None:
        if not str(device).startswith("cuda"):
            raise ValueError(
                f"WarpVecCudaBackend runs on a CUDA device ('cuda' or 'cuda:N'), got "
                f"device={device!r}; WarpVecCpuBackend runs on the CPU"
            )
        wp.init()
        if not wp.is_cuda_available():
            raise RuntimeError("WarpVecCudaBackend needs a CUDA device; none is visible to Warp")
        super().__init__(rom_path, device=device, mem_layout=mem_layout, **kwargs)
