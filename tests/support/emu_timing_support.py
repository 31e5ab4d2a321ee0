"""Lockstep helpers for the timing tests: PyBoy and our step kernel on the same ROM.

Both sides start from the post-boot point (PC=0x0100): PyBoy from the oracle's
snapshot (``post_boot_state``), ours from power-on through the boot ROM. Then
both run the same steps (button masks pressed at each step's start, released
``release_after`` frames later) and are compared after every step: registers,
the cycle counter, every RAM region and the IO page as the CPU reads them, and
the serial output.
"""

from __future__ import annotations

import io

import numpy as np
import warp as wp

from gbxcule.asm.bootrom import boot_rom_bytes
from gbxcule.backends.pyboy_backend import cpu_block, make_pyboy, post_boot_state
from gbxcule.backends.warp_base import allocate_machine, cart_config, field_view
from gbxcule.core.actions import mask_to_buttons
from gbxcule.core.memory_layout import SPAN, SPANS

# every span the CPU can write, echo RAM aside (WRAM's bytes again); IE with HRAM
REGIONS = {s.key: (s.lo, s.hi) for s in SPANS if s.row is not None and s.mirror is None}
REGIONS["hram"] = (SPAN["hram"].lo, SPAN["ie"].hi)
del REGIONS["ie"]
REGS = ("pc", "sp", "a", "f", "b", "c", "d", "e", "h", "l", "ime", "halted", "cycles")


def warp_boot(rom: bytes, num_envs: int = 1):
    """A Machine at the post-boot point, on the CPU device."""
    from gbxcule.core.dmg import POST_BOOT_PC
    from gbxcule.kernels.step.reset import power_on
    from gbxcule.kernels.step.step import BOOT_MAX_FRAMES, step_kernel

    _, cart = cart_config(rom)
    m = allocate_machine(
        num_envs,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.frombuffer(boot_rom_bytes(), np.uint8),
        cart=cart,
        device="cpu",
    )
    wp.launch(power_on, dim=num_envs, inputs=[m], device="cpu")
    no_buttons = wp.zeros(num_envs, dtype=wp.int32, device="cpu")
    wp.launch(
        step_kernel,
        dim=num_envs,
        inputs=[m, no_buttons, BOOT_MAX_FRAMES, 1, 0, POST_BOOT_PC],
        device="cpu",
    )
    if np.any(field_view(m, "pc").numpy() != POST_BOOT_PC) or np.any(
        field_view(m, "boot_on").numpy() != 0
    ):
        raise AssertionError("the boot ROM did not hand over to 0x0100")
    return m


def warp_step(m, masks, frames: int, release_after: int, render: int = 1) -> None:
    from gbxcule.kernels.step.step import step_kernel

    buttons = wp.array(np.asarray(masks, dtype=np.int32), dtype=wp.int32, device="cpu")
    wp.launch(
        step_kernel,
        dim=len(masks),
        inputs=[m, buttons, frames, release_after, render, -1],
        device="cpu",
    )


def warp_regs(m, env: int) -> dict[str, int]:
    return {k: int(field_view(m, k).numpy()[env]) for k in REGS}


def warp_mem(m, env: int, lo: int, hi: int) -> np.ndarray:
    from gbxcule.backends.warp_vec import peek_memory

    return peek_memory(m, env, lo, hi)


def warp_serial(m, env: int) -> bytes:
    from gbxcule.kernels.board.serial import serial_bytes

    return serial_bytes(m.serial_buf.numpy()[env], int(field_view(m, "serial_len").numpy()[env]))


def pyboy_boot(rom: bytes):
    pyboy = make_pyboy(rom)
    pyboy.load_state(io.BytesIO(post_boot_state(rom)))
    pyboy.events.clear()
    pyboy._serial()
    return pyboy


def pyboy_step(pyboy, mask: int, frames: int, release_after: int, render: bool = True) -> bytes:
    for name in mask_to_buttons(mask):
        pyboy.button(name, release_after)
    pyboy.tick(frames, render)
    return pyboy._serial().encode("latin-1")


def diff_states(pyboy, m, env: int, serial_ref: bytes) -> list[str]:
    """Every difference between PyBoy and env ``env`` of ``m`` (empty when they agree)."""
    out = []
    ref = cpu_block(pyboy)
    got = warp_regs(m, env)
    for k in REGS:
        if ref[k] != got[k]:
            out.append(f"{k}: pyboy {ref[k]:#x} ours {got[k]:#x}")
    for name, (lo, hi) in REGIONS.items():
        a = np.asarray(pyboy.memory[lo:hi], dtype=np.uint8)
        b = warp_mem(m, env, lo, hi)
        bad = np.nonzero(a != b)[0]
        for k in bad[:8]:
            out.append(f"{name} {lo + k:04X}: pyboy {a[k]:02X} ours {b[k]:02X}")
        if len(bad) > 8:
            out.append(f"{name}: {len(bad)} bytes differ")
    ser = warp_serial(m, env)
    if ser != serial_ref:
        out.append(f"serial: pyboy {serial_ref[-40:]!r} ours {ser[-40:]!r}")
    return out


def lockstep(
    rom: bytes,
    steps: int,
    masks=None,
    frames: int = 1,
    release_after: int = 1,
) -> tuple[int, list[str]]:
    """Run both sides ``steps`` steps; (-1, []) when they agree throughout, else the first diff."""
    pyboy = pyboy_boot(rom)
    m = warp_boot(rom)
    serial = b""
    try:
        diff = diff_states(pyboy, m, 0, serial)
        if diff:
            return 0, diff
        for s in range(steps):
            mask = 0 if masks is None else int(masks[s % len(masks)])
            serial += pyboy_step(pyboy, mask, frames, release_after)
            warp_step(m, [mask], frames, release_after)
            diff = diff_states(pyboy, m, 0, serial)
            if diff:
                return s + 1, diff
    finally:
        pyboy.stop(save=False)
    return -1, []
