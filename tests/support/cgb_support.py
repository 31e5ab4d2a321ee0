"""Lockstep of our CGB variant (kernels/variant.py, ``CGB`` True) with PyBoy 2.8.1's Game Boy
Color mode (``cgb=True``), from power-on through PyBoy's own CGB boot ROM.

Both sides run whole frames (PyBoy's ``tick()``; our step kernel, one frame a launch) and
are compared after each: the CPU's registers and cycle count (from PyBoy's save state's CPU
block), the IO page and HRAM as the CPU reads them, WRAM C000-CFFF and every bank at D000,
both VRAM banks, and every palette byte.
"""

from __future__ import annotations

import io

import numpy as np
import warp as wp

from gbxcule.asm.bootrom import pyboy_boot_rom_bytes
from gbxcule.backends.warp_base import allocate_machine, cart_config, field_view
from gbxcule.core.memory_layout import (
    CGB_BG_PALETTES_OFF,
    CGB_OBJ_PALETTES_OFF,
    CGB_VRAM_OTHER_OFF,
    CGB_WRAM_BANK_SIZE,
    IO_OFF,
)

REGS = ("a", "f", "b", "c", "d", "e", "h", "l", "sp", "pc", "cycles")


def colour(rom: bytes, flag: int = 0x80) -> bytes:
    """``rom`` as a Colour cartridge: header byte 0x143 set, the header checksum redone."""
    from gbxcule.core.cartridge import with_cgb_flag

    return with_cgb_flag(rom, flag)


def pyboy_cgb(rom: bytes):
    """PyBoy in Game Boy Color mode with its own CGB boot ROM, sound on."""
    from pyboy import PyBoy

    return PyBoy(io.BytesIO(rom), window="null", cgb=True, sound_emulated=True)


SHAPES = ("plain", "cpu")  # the step kernel: the plain one, or the CPU backends' dispatch


def _kernels(shape: str = "plain"):
    from gbxcule.kernels.debug_access import peek
    from gbxcule.kernels.step.reset import power_on
    from gbxcule.kernels.step.step import step_kernel
    from gbxcule.kernels.step.step_cpu import step_kernel as step_cpu_kernel
    from gbxcule.kernels.variant import cgb_variant

    step = step_kernel if shape == "plain" else step_cpu_kernel
    return cgb_variant(power_on), cgb_variant(step), cgb_variant(peek)


def cgb_machine(rom: bytes):
    """One CGB env at power-on, the CGB boot ROM mapped."""
    power_on, _, _ = _kernels()
    _, cart = cart_config(rom, allow_cgb_only=True)
    m = allocate_machine(
        1,
        rom=np.frombuffer(rom, np.uint8),
        boot=np.frombuffer(pyboy_boot_rom_bytes(cgb=True), np.uint8),
        cart=cart,
        device="cpu",
        cgb=True,
    )
    wp.launch(power_on, dim=1, inputs=[m], device="cpu")
    return m


def cgb_frame(m, shape: str = "plain", render: bool = False) -> None:
    """One frame; ``render``: latch its lines and snapshot its video for the renderer."""
    _, step, _ = _kernels(shape)
    buttons = wp.zeros(1, dtype=wp.int32, device="cpu")
    wp.launch(step, dim=1, inputs=[m, buttons, 1, 1, int(render), -1], device="cpu")


def peek(m, lo: int, hi: int) -> np.ndarray:
    _, _, peek_kernel = _kernels()
    out = wp.zeros(hi - lo, dtype=wp.uint8, device="cpu")
    wp.launch(peek_kernel, dim=1, inputs=[m, 0, lo, out], device="cpu")
    return out.numpy()


def pyboy_regs(pyboy) -> dict[str, int]:
    """The CPU registers and cycle count from the head of PyBoy's save state (its writer
    stopped after the CPU block: a whole CGB state costs more than a frame)."""
    from gbxcule.backends.pyboy_backend import cpu_block

    regs = cpu_block(pyboy)
    return {k: regs[k] for k in REGS}


def _our_banks(m) -> dict[str, np.ndarray]:
    """Each bank as PyBoy keeps it: VBK's VRAM bank in ``mem``, the other in ``cgb``; WRAM
    bank 1 at D000's offset and banks 2-7 past the cart RAM (core/memory_layout.py)."""
    from gbxcule.core.memory_layout import wramx_bank_offset

    row = m.cgb.numpy()[0]
    mem = m.mem.numpy()[0]
    raw_io = mem[IO_OFF : IO_OFF + 0x80]  # the registers as stored
    vbk = int(raw_io[0x4F]) & 1
    seen_vram = peek(m, 0x8000, 0xA000)
    other = row[CGB_VRAM_OTHER_OFF : CGB_VRAM_OTHER_OFF + 0x2000]
    out = {f"vram{vbk}": seen_vram, f"vram{1 - vbk}": other}
    for bank in range(1, 8):
        at = wramx_bank_offset(len(mem), bank)
        out[f"wram{bank}"] = mem[at : at + CGB_WRAM_BANK_SIZE]
    out["bg palettes"] = row[CGB_BG_PALETTES_OFF : CGB_BG_PALETTES_OFF + 64]
    out["obj palettes"] = row[CGB_OBJ_PALETTES_OFF : CGB_OBJ_PALETTES_OFF + 64]
    return out


def _banked(pyboy, bank: int, lo: int, hi: int) -> np.ndarray:
    """``memory[bank, lo:hi]`` (PyBoy refuses a slice that ends at 0xA000: its last byte
    alone)."""
    mem = pyboy.memory
    return np.asarray([*mem[bank, lo : hi - 1], mem[bank, hi - 1]], np.uint8)


def _pyboy_banks(pyboy) -> dict[str, np.ndarray]:
    out = {f"vram{b}": _banked(pyboy, b, 0x8000, 0xA000) for b in (0, 1)}
    for bank in range(1, 8):  # memory[b, 0xC000 + k] is the 32 KiB array's byte b*0x1000 + k
        out[f"wram{bank}"] = _banked(pyboy, bank, 0xC000, 0xD000)
    return out


def diff(pyboy, m, palettes: dict[str, np.ndarray] | None = None) -> list[str]:
    """Every difference between PyBoy and our env (empty when they agree)."""
    out = []
    ref = pyboy_regs(pyboy)
    for k in REGS:
        got = int(field_view(m, k).numpy()[0])
        if ref[k] != got:
            out.append(f"{k}: pyboy {ref[k]:#x} ours {got:#x}")
    regions = {"wram0": (0xC000, 0xD000), "io": (0xFF00, 0xFF80), "hram": (0xFF80, 0x10000)}
    ours = _our_banks(m)
    theirs = _pyboy_banks(pyboy)
    for name, (lo, hi) in regions.items():
        theirs[name] = np.asarray(pyboy.memory[lo:hi], np.uint8)
        ours[name] = peek(m, lo, hi)
    if palettes is not None:
        theirs.update(palettes)
    # PCM12/PCM34 of a playing channel follow its duty position or LFSR, which are not
    # emulated (audio samples): kernels/apu/apu.py, apu_pcm
    theirs["io"][0x76:0x78] = ours["io"][0x76:0x78]
    for name, want in theirs.items():
        got = ours[name]
        bad = np.nonzero(want != got)[0]
        for k in bad[:6]:
            out.append(f"{name} +{k:04X}: pyboy {want[k]:02X} ours {got[k]:02X}")
        if len(bad) > 6:
            out.append(f"{name}: {len(bad)} bytes differ")
    return out


def sound_diff(pyboy, m, rom: bytes) -> list[str]:
    """The sound blocks of PyBoy's save state and of our machine's export that differ
    (the fields only audio samples read aside: ``APU_SAMPLE_ONLY``, ``APU_CGB_SAMPLE_ONLY``)."""
    from gbxcule.backends.machine_state import capture_env
    from gbxcule.backends.savestate_bridge import pyboy_state_from_env
    from gbxcule.core.savestate import load_pyboy_state
    from gbxcule.kernels.apu.apu_layout import APU_CGB_SAMPLE_ONLY, APU_SAMPLE_ONLY

    from .backend_api_support import state_diffs

    buf = io.BytesIO()
    pyboy.save_state(buf)
    theirs = load_pyboy_state(buf.getvalue(), rom).sound
    _, cart = cart_config(rom, allow_cgb_only=True)
    ours = pyboy_state_from_env(capture_env(m, 0), cart, rom).sound
    return state_diffs(theirs, ours, "sound.", skip={*APU_SAMPLE_ONLY, *APU_CGB_SAMPLE_ONLY})


def lockstep(
    rom: bytes, frames: int, shape: str = "plain", sound: int = 0
) -> tuple[int, list[str]]:
    """Both sides ``frames`` frames from power-on (our step kernel of ``shape``); (-1, [])
    when they agree after every frame, else the first frame that differs and how.
    ``sound``: every ``sound`` frames and after the last, the sound unit's saved state
    too (``sound_diff``; an export a frame costs more than the frame)."""
    pyboy = pyboy_cgb(rom)
    m = cgb_machine(rom)
    try:
        for f in range(frames):
            pyboy.tick(1, False)
            cgb_frame(m, shape)
            problems = diff(pyboy, m)
            if sound and not problems and (f % sound == sound - 1 or f == frames - 1):
                problems = sound_diff(pyboy, m, rom)
            if problems:
                return f + 1, problems
    finally:
        pyboy.stop(save=False)
    return -1, []
