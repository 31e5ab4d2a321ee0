"""Helpers for the backend API tests: save states made by PyBoy 2.8.1, frame-by-frame lockstep.

``zoo_rom()`` is a ROM built with our assembler that keeps many units busy at once, so
states saved in the middle of a frame catch them mid-flight: OAM DMA copies, serial
transfers, TIMA reloads (TMA = $F0 at 262 kHz: one every 256 cycles), mode 3 with objects and fine scroll,
MBC3 clock reads and latches, RAM-bank switching and writes, interrupts (VBlank,
timer). ``pyboy_states_at_hook`` saves PyBoy states from a hook on its main loop.

``lockstep`` compares a reference and a Warp backend after every frame: registers
and the T-cycle counter, every byte of 0x8000-0xFFFF as the CPU reads it, the serial
output, and (at the end) the full machine as a PyBoy state (all cart RAM banks, timer,
LCD, serial, DMA, MBC and clock fields).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np

from gbxcule.asm import build_rom
from gbxcule.backends.pyboy_backend import make_pyboy, post_boot_state
from gbxcule.core.pyboy_state import PyBoyState
from gbxcule.core.savestate import load_pyboy_state
from gbxcule.kernels.board.ioregs import UNIT_REGS
from gbxcule.kernels.units import UNITS
from gbxcule.lockstep import LockstepConfig, compare_snapshots, take_snapshot

ALL_RAM = ((0x8000, 0x10000),)
FRAME_CFG = LockstepConfig(
    codec="buttons", regions=ALL_RAM, compare_cycles=True, compare_frames=False
)
KW = {"num_envs": 1, "frames_per_step": 1, "release_after_frames": 1, "action_codec": "buttons"}

_SPRITES = ", ".join(
    f"{16 + (k * 37) % 140}, {8 + (k * 53) % 168}, {k}, {(k * 16) & 0x70}" for k in range(40)
)

ZOO_SOURCE = f"""
SECTION "vblank", ROM0[$0040]
    reti
SECTION "timer", ROM0[$0050]
    push af
    ldh a, [$80]
    inc a
    ldh [$80], a
    pop af
    reti

SECTION "main", ROM0[$0150]
Main:
    di
    ld a, $0A
    ld [$0000], a          ; cart RAM (and clock) on
    ld hl, Sprites
    ld de, $C000
    ld b, 160
.copy:
    ld a, [hl+]
    ld [de], a
    inc de
    dec b
    jr nz, .copy
    ld a, $F0
    ldh [$06], a           ; TMA
    ldh [$05], a           ; TIMA
    ld a, $05
    ldh [$07], a           ; TAC: on, 262144 Hz
    ld a, 3
    ldh [$43], a           ; SCX fine scroll: mode-3 penalty
    ld a, $93
    ldh [$40], a           ; LCD on, objects on
    ld a, $05
    ldh [$FF], a           ; IE: VBlank, timer
    ei
Loop:
    ld a, $55
    ldh [$01], a
    ld a, $81
    ldh [$02], a           ; serial transfer, internal clock
    ld a, $C0
    ldh [$46], a           ; OAM DMA from $C000
    ld a, $08
    ld [$4000], a          ; select the clock's seconds register
    xor a
    ld [$6000], a
    inc a
    ld [$6000], a          ; latch
    ld a, [$A000]
    ldh [$81], a
    ld a, [$C0A0]
    and 3
    ld [$4000], a          ; RAM bank 0-3
    ld hl, $A000
    inc [hl]
    ld a, [$C0A0]
    inc a
    ld [$C0A0], a
    ld [$2000], a          ; ROM bank follows the counter
Probe:
    ld b, 24
.spin:
    dec b
    jr nz, .spin
    jr Loop

Sprites:
    db {_SPRITES}
"""


def zoo_rom() -> bytes:
    return build_rom(
        ZOO_SOURCE, title="APIZOO", cart_type="MBC3+TIMER+RAM+BATTERY", rom_banks=4, ram_banks=4
    )


def zoo_probe_address() -> int:
    from gbxcule.asm import assemble

    return assemble(ZOO_SOURCE).symbols["Probe"]


def write_rom(tmp: Path, name: str, rom: bytes) -> Path:
    path = tmp / name
    path.write_bytes(rom)
    return path


def pyboy_states_at_hooks(
    rom: bytes, hooks: dict[int, list[int]], max_frames: int = 30
) -> list[bytes]:
    """PyBoy 2.8.1 states saved when the CPU reaches each address of ``hooks`` for the
    listed (1-based) times, in the order they were saved."""
    pyboy = make_pyboy(rom)
    pyboy.load_state(io.BytesIO(post_boot_state(rom)))
    states: list[bytes] = []
    total = sum(len(hits) for hits in hooks.values())

    def make_hook(addr: int):
        wanted = set(hooks[addr])
        count = [0]

        def hook(_ctx: object) -> None:
            count[0] += 1
            if count[0] in wanted:
                buf = io.BytesIO()
                pyboy.save_state(buf)
                states.append(buf.getvalue())

        return hook

    try:
        for addr in hooks:
            pyboy.hook_register(0, addr, make_hook(addr), None)
        for _ in range(max_frames):
            pyboy.tick(1, False)
            if len(states) == total:
                break
    finally:
        pyboy.stop(save=False)
    if len(states) != total:
        raise AssertionError(f"only {len(states)} of {total} hook states in {max_frames} frames")
    return states


def pyboy_state_after(rom: bytes, frames: int, seed: int) -> bytes:
    """PyBoy 2.8.1 state after ``frames`` frames of random buttons from the post-boot point."""
    pyboy = make_pyboy(rom)
    pyboy.load_state(io.BytesIO(post_boot_state(rom)))
    rng = np.random.default_rng(seed)
    try:
        from gbxcule.core.actions import mask_to_buttons

        for _ in range(frames):
            for name in mask_to_buttons(int(rng.integers(0, 256))):
                pyboy.button(name, 1)
            pyboy.tick(1, False)
        buf = io.BytesIO()
        pyboy.save_state(buf)
        return buf.getvalue()
    finally:
        pyboy.stop(save=False)


def pyboy_full_state(ref, rom: bytes) -> PyBoyState:
    buf = io.BytesIO()
    ref.pyboy(0).save_state(buf)
    return load_pyboy_state(buf.getvalue(), rom)


# Fields no backend pair can agree on: sound (not emulated), PyBoy's screen buffer and
# per-line scroll record (API only), the clock's wall times, the state's own file version,
# the CGB-only OPRI register (older files keep whatever byte sat at FF6C; we export the
# DMG value), PyBoy's unused backing bytes of registers that live in units, and the
# serial ``internal_clock`` copy of SC bit 0 (2.8.1 reads it nowhere; older releases
# left it out of step with SC).
_SKIP = {
    "version",
    "layout",
    "defaulted",
    *(f for unit in UNITS for f in unit.sample_only),  # fields only audio samples depend on
    "sgb",
    "renderer.screen",
    "renderer.screen_attributes",
    "lcd.line_params",
    "lcd.object_priority_mode",
    "cart.rtc.timezero",
    "cart.rtc.saved_at",
    "serial.internal_clock",
}


def state_diffs(ref: PyBoyState, ours: PyBoyState, prefix: str = "", skip=()) -> list[str]:
    """Fields of two PyBoy states that differ (see ``_SKIP``, plus ``skip``)."""
    out = []
    if not prefix:
        if ref.cart_layout.mbc == "mbc1":  # MBC1 picks its RAM bank at each access
            ours = dataclasses.replace(
                ours, cart=dataclasses.replace(ours.cart, ram_bank=ref.cart.ram_bank)
            )
        io_ref, io_ours = ref.memory.io.copy(), ours.memory.io.copy()
        io_ref[list(UNIT_REGS)] = io_ours[list(UNIT_REGS)] = 0
        if not np.array_equal(io_ref, io_ours):
            out.append(f"memory.io: {np.flatnonzero(io_ref != io_ours).tolist()} differ")
    for f in dataclasses.fields(ref):
        name = prefix + f.name
        if name in _SKIP or name in skip or name == "memory.io":
            continue
        a, b = getattr(ref, f.name), getattr(ours, f.name)
        if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
            out += state_diffs(a, b, name + ".", skip)
        elif isinstance(a, np.ndarray):
            if not np.array_equal(a, b):
                bad = np.flatnonzero(np.asarray(a).ravel() != np.asarray(b).ravel())
                out.append(f"{name}: {bad.size} bytes differ, first at {int(bad[0])}")
        elif a != b:
            out.append(f"{name}: ref {a!r} ours {b!r}")
    return out


NO_CART_RAM = ((0x8000, 0xA000), (0xC000, 0x10000))


def lockstep(
    ref,
    dut,
    rom: bytes,
    frames: int,
    seed: int,
    *,
    stale_div_at_load: bool = False,
    full_every: int = 0,
    dut_serial_from: int = 0,
) -> None:
    """Step both one frame at a time under the same random buttons; assert equal every frame.

    Every frame: registers, cycles, 0x8000-0xFFFF as the CPU reads it, serial output.
    Every ``full_every`` frames (and after the last): the whole machine as a PyBoy state.
    On carts with a clock, 0xA000-0xBFFF is left to the full-state check: PyBoy adds host
    wall time when its clock is read twice at one cycle count, which the host's own reads
    of a selected clock register do.

    ``dut_serial_from``: the dut's serial bytes before this index are not compared (it
    kept running while the ref was loaded from its export).
    ``stale_div_at_load``: PyBoy shows a pre-v29 file's DIV byte until its timer first
    syncs (2.8.1 keeps DIV beside the counter); FF04 is not compared right after loading.
    """
    spans = NO_CART_RAM if dut.cart.has_rtc else ALL_RAM
    cfgs = [dataclasses.replace(FRAME_CFG, regions=(span,)) for span in spans]
    rng = np.random.default_rng(seed)
    for frame in range(frames + 1):
        if frame:
            buttons = rng.integers(0, 256, size=1)
            ref.step(buttons)
            dut.step(buttons)
        diffs = []
        for cfg in cfgs:  # take_snapshot reads [lo, hi) of all regions at once: one each
            r = take_snapshot(ref, 0, cfg, frame, False)
            d = take_snapshot(dut, 0, cfg, frame, False)
            d.serial = d.serial[dut_serial_from:]
            diffs += compare_snapshots(r, d, cfg)
        if frame == 0 and stale_div_at_load:
            diffs = [d for d in diffs if not d.startswith("memory $FF04")]
        if frame == frames or (full_every and frame % full_every == 0):
            ours = load_pyboy_state(dut.export_pyboy_state(0), rom)
            skip = ("timer.div",) if frame == 0 and stale_div_at_load else ()
            diffs += state_diffs(pyboy_full_state(ref, rom), ours, skip=skip)
        assert not diffs, f"frame {frame}:\n  " + "\n  ".join(diffs)
