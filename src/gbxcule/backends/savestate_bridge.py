"""PyBoy save states <-> one env of the Warp ``Machine`` (as a host :data:`MachineState`).

Each unit maps its own part, next to its kernel code, and declares it in its ``Unit``
(listed in ``kernels/units.py``; ``history/savestates.md`` has the table):
``kernels/cpu/cpu_state.py`` (registers, IME and its delay, HALT, queued interrupt,
cycle counter, IF, IE), ``bus.py`` (boot ROM switch, WRAM, FEA0-FEFF, HRAM, the raw IO
bytes), ``timer.py``, ``serial.py``, ``apu.py`` (the sound unit), ``ppu.py`` (LCD and
renderer: VRAM, OAM, registers, clock and flags), ``dma.py`` (OAM DMA), ``joypad.py``,
``mbc.py`` (banks, RAM, cart RAM) and ``rtc.py`` (the MBC3 clock). This module only composes them.

Loading (:func:`env_state_from_pyboy`) does what PyBoy 2.8.1's ``load_state`` does to a
machine: refuses a CGB-hardware state for a DMG machine and the other way round, then

* every field the file stores is taken from it, unit by unit;
* the fields PyBoy's loader derives are derived the same way (``kernels/pyboy_load.py``);
* the fields PyBoy keeps from the machine it loads into (:data:`UNSAVED_FIELDS`, each
  unit's ``<UNIT>_UNSAVED``) take the values of a PyBoy that was built and then loaded
  the post-boot snapshot (the oracle backend's reset): those of ``base``, a post-boot env
  (HALT during an EI delay, the window line counter, MBC1's low ROM bank, which PyBoy
  does not recompute until the next mapper write, the clock latch, pending button
  releases, the serial output ring), except the LYC-while-off and STAT-override
  one-shots, which our boot run leaves set, and the sprite-line cache, marked stale so
  the kernel rebuilds it from the loaded OAM (:data:`FRESH_PYBOY_FIELDS`);
* the MBC3 clock's last sync is 0, as PyBoy sets it; unlike PyBoy, the wall time since
  the save is *not* added: the emulated clock only follows cycles (``kernels/board/rtc.py``);
* the screen PyBoy saved is the frame the renderers draw until the next one is, as PyBoy
  shows it (``kernels/ppu/ppu.py``, ``lcd_from_pyboy``).

Exporting (:func:`pyboy_state_from_env`) writes the same fields back into a v29
``PyBoyState`` (a Game Boy Color machine's with its CGB fields: ``cgb.py``'s
``cgb_into_pyboy``). What it cannot carry: the audio buffer and the sound fields only samples
depend on (each unit's ``Unit.sample_only``: the sound unit's, as the last trigger or load left
them), the per-line scroll record (zero; PyBoy redraws on its next frame) and every
field PyBoy does not save (above). Its screen is the env's last frame as drawn here. The clock's ``saved_at`` is written as +infinity
so PyBoy 2.8.1 adds no wall time when it loads the export.
"""

from __future__ import annotations

import numpy as np

from gbxcule.backends.machine_state import MachineState, capture_env, copy_state, restore_env
from gbxcule.backends.warp_base import CartConfig, allocate_machine
from gbxcule.core import pixels as px
from gbxcule.core.memory_layout import CGB_BYTES, SPAN
from gbxcule.core.pyboy_state import PyBoyState
from gbxcule.core.savestate import SavestateError, cart_layout_from_rom, refuse_cgb
from gbxcule.kernels.board.cgb import cgb_into_pyboy
from gbxcule.kernels.units import UNITS

STAT_TRANSITION_VBLANK_PRETRIGGERED = 3  # CGB hardware only
# Unsaved fields a PyBoy that loaded the post-boot snapshot (the oracle's reset) holds
# otherwise than a machine that ran the boot ROM (kernels/ppu/ppu.py says why).
FRESH_PYBOY_FIELDS = {k: v for unit in UNITS for k, v in unit.fresh_after_load.items()}
# Machine fields a PyBoy state does not carry: loading keeps them from ``base``, exporting
# drops them. (The LCD's derived distances and IRQ line are recomputed, not listed.)
UNSAVED_FIELDS = frozenset().union(*(unit.unsaved for unit in UNITS))


def is_cgb_state(st: MachineState) -> bool:
    """Whether ``st`` is a Game Boy Color machine's (its ``Machine.cgb`` row full size)."""
    return int(st["cgb"].size) == CGB_BYTES


def _check_state(state: PyBoyState, st: MachineState) -> None:
    """A CGB-hardware state loads only into a CGB machine (kernels/board/cgb.py)."""
    if not is_cgb_state(st):
        refuse_cgb(state)
        if state.lcd.stat_transition == STAT_TRANSITION_VBLANK_PRETRIGGERED:
            raise SavestateError(
                "the state has a CGB-only LCD transition (VBlank STAT pre-trigger)"
            )
    elif not state.from_cgb:
        raise SavestateError("a DMG save state: this machine is a Game Boy Color (cgb=True)")
    if state.oam_dma.reading:
        raise SavestateError("the state was saved in the middle of an OAM DMA byte read")


def env_state_from_pyboy(state: PyBoyState, base: MachineState, cart: CartConfig) -> MachineState:
    """The env state PyBoy 2.8.1 would have after loading ``state`` (see the module doc)."""
    _check_state(state, base)
    st = copy_state(base)
    for unit in UNITS:  # kernels/units.py: each takes its own part
        unit.load(state, st, cart)
    return _derive_lcd(st, cart)


def _scratch_machine(st: MachineState, cart: CartConfig):
    """A one-env CPU machine holding ``st`` (its ROM zeros: what runs on it reads none)."""
    m = allocate_machine(
        1,
        rom=np.zeros(SPAN["romx"].hi, dtype=np.uint8),
        boot=np.zeros(0x100, dtype=np.uint8),
        cart=cart,
        device="cpu",
        cgb=is_cgb_state(st),
    )
    restore_env(m, 0, st)
    return m


def _derive_lcd(st: MachineState, cart: CartConfig) -> MachineState:
    """Run ``kernels/pyboy_load.py`` on a one-env scratch machine holding ``st`` (its CGB
    variant for a CGB machine's: the CGB sprite timing)."""
    import warp as wp

    from gbxcule.kernels.pyboy_load import derive_lcd_after_load
    from gbxcule.kernels.variant import machine_kernel

    m = _scratch_machine(st, cart)
    one = wp.ones(1, dtype=wp.uint8, device="cpu")
    wp.launch(machine_kernel(m, derive_lcd_after_load), dim=1, inputs=[m, one], device="cpu")
    return capture_env(m, 0)


def pyboy_state_from_env(st: MachineState, cart: CartConfig, rom: bytes) -> PyBoyState:
    """A v29 ``PyBoyState`` of the env state ``st`` (see the module doc for what is lost)."""
    layout = cart_layout_from_rom(rom)
    parts: dict = {}
    for unit in UNITS:  # kernels/units.py: each gives back its own part
        parts.update(unit.save(st, cart, layout))
    if is_cgb_state(st):  # its fields sit in the others' blocks (header, LCD, RAM)
        parts = cgb_into_pyboy(st, parts)
        parts["renderer"].screen = _colour_screen_words(st, cart)
    else:
        parts["renderer"].screen = _screen_words(st, cart)
    return PyBoyState(cart_layout=layout, **parts)


def _colour_screen_words(st: MachineState, cart: CartConfig) -> np.ndarray:
    """A CGB machine's last frame as PyBoy's screen buffer (bytes R, G, B, A from the
    lowest), drawn by the CGB renderer (``pixels_cgb.frame_of_colours`` loads it back)."""
    import warp as wp

    from gbxcule.kernels.ppu.render_cgb import render_cgb_kernels

    m = _scratch_machine(st, cart)
    out = wp.empty((1, px.SCREEN_H, px.SCREEN_W, 3), dtype=wp.uint8, device="cpu")
    envs = wp.zeros(1, dtype=wp.int32, device="cpu")
    inputs = [m.frame_video, m.line_latch, m.video_log, envs, out]
    wp.launch(render_cgb_kernels()[0], dim=(1, px.SCREEN_H), inputs=inputs, device="cpu")
    rgb = out.numpy()[0].astype(np.uint32)
    return rgb[..., 0] | rgb[..., 1] << 8 | rgb[..., 2] << 16 | np.uint32(0xFF) << 24


def _screen_words(st: MachineState, cart: CartConfig) -> np.ndarray:
    """The env's last frame as PyBoy's screen buffer (``uint32 [144, 160]``, the oracle's
    palette), drawn by the renderer on a scratch machine: what PyBoy shows after loading
    the export, and what loading it back draws (``px.frame_of_shades``)."""
    import warp as wp

    from gbxcule.kernels.ppu.render import render_full_kernel

    m = _scratch_machine(st, cart)
    out = wp.empty((1, px.SCREEN_H, px.SCREEN_W), dtype=wp.uint8, device="cpu")
    envs = wp.zeros(1, dtype=wp.int32, device="cpu")
    video = (m.frame_video, px.VIDEO_VRAM_OFF, px.VIDEO_OAM_OFF, m.line_latch, m.video_log)
    wp.launch(render_full_kernel, dim=(1, px.SCREEN_H), inputs=[*video, envs, out], device="cpu")
    grey = px.GREY_LEVELS[out.numpy()[0]].astype(np.uint32)
    return grey | grey << 8 | grey << 16 | np.uint32(0xFF) << 24
