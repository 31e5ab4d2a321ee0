"""PyBoy 2.8.1 oracle backends: one PyBoy per env, in-process (and across processes in pyboy_mp).

Every PyBoy is built by :func:`make_pyboy`: the boot ROM of the ``boot=`` mode (default
``"fast"``, our own; ``gbxcule.asm.bootrom``), ``window="null"``, ``sound_emulated=True``
(PyBoy's default, and what our emulator's sound unit matches, ``kernels/apu/apu.py``), DMG mode, the grey palette :data:`SHADE_RGB`, and the ROM passed as bytes (so PyBoy never
reads or writes ``.ram``/``.rtc`` files).

Stock PyBoy (``stock=True``, registered as ``pyboy-stock``): what a user gets from
``PyBoy(rom)``: PyBoy's own DMG boot ROM (``bootrom=None``), its default palette (mapped
to shades by :data:`STOCK_SHADE_RGB`) and ``sound_emulated=True``. Only ``window="null"``
(no window; no emulated state) and the blank-title copy below differ from ``PyBoy(rom)``.
With ``sound_emulated=False`` (``pyboy-stock-nosound``) PyBoy reads every FF10-FF3F
register as $00 and ignores writes there, which our emulator (a sound unit, always on)
does not match: such a backend lists FF10-FF3F in ``lockstep_ignore`` and the lockstep
harness masks them; a game that reads them may still diverge from it.

Reset. :func:`post_boot_state` runs the boot ROM once per ROM and snapshots the
machine (``save_state``) from a hook at 0x0100, i.e. exactly when the CPU is
about to fetch the cartridge's first instruction; ``reset()`` loads that
snapshot. Running on from the snapshot is byte-identical (full save state and
screen) to running on from power-on: the boot frame ends when the boot ROM
switches the LCD on (PyBoy ends a frame on every LCD on/off switch), 20 T-cycles
before 0x0100, so the first step's first frame is 20 T-cycles shorter than a
continuous run's frame 1 and ends at the same cycle. Values at 0x0100 are in
history/postboot.md.

Input timing, read from PyBoy 2.8.1's ``button``/``send_input``/``tick``:
``button(name, delay=d)`` appends the press to ``PyBoy.events`` and queues the
release for ``frame_count + d``. Events in ``PyBoy.events`` are applied at the
start of the next frame, before any CPU cycle of it; after every frame the
queued events due at the new ``frame_count`` are moved into ``events``. So with
``step()`` pressing and then ticking ``frames_per_step`` frames:

* the press takes effect at the start of frame 0 of the step;
* the release takes effect at the start of frame ``release_after_frames`` of the
  step: the button is held for exactly frames ``0 .. release_after_frames-1``;
* when ``release_after_frames == frames_per_step`` the release is applied at the
  start of the next step's frame 0, just before that step's press (release first).
* A press request IF bit 4 (joypad) whenever a button goes released -> pressed,
  whatever P1 selects; a release then a press at one frame start counts as an edge.
* P1 (FF00) holds the value PyBoy computed at the last *write* to FF00, so a ROM
  sees new buttons only after it writes P1 again.

``release_after_frames`` must be in ``1 .. frames_per_step`` (PyBoy refuses 0;
a larger value would spill the release into a later step).

Registers: ``PyBoy.register_file`` has A..PC but not IME or HALT, and the
compiled build hides ``PyBoy.mb``. :func:`cpu_block` reads the CPU block that
``save_state`` writes first (33 bytes in DMG mode) and aborts the write there;
``cycles`` is ``CPU.cycles`` (T-cycles since power-on; 328 right after reset),
the same number ``PyBoy._cycles()`` returns.

Serial: ``PyBoy._serial()`` returns (as ``chr`` of each byte) every value
*written to SB* (FF01) since its last call, kept in a 1024-entry ring that
wraps silently. We drain it after every step, so up to 1023 SB writes per step
are captured. SB itself always reads $FF (no link partner).

Memory: ``PyBoy.memory[lo:hi]`` reads through the CPU's memory map between
instructions (current ROM/RAM banks, IO read masks, VRAM/OAM not locked). One
side effect: reading STAT clears PyBoy's one-shot ``stat_mode_override``.
"""

from __future__ import annotations

import functools
import io
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from gbxcule.asm.bootrom import BOOT_MAX_FRAMES, boot_file, check_boot
from gbxcule.backends.checks import (
    check_env,
    check_range,
    check_seed,
    check_step_config,
    check_step_end,
    read_rom,
    resolve_machine,
    write_values,
)
from gbxcule.backends.host_training import HostTrainingMixin, host_actions
from gbxcule.core.actions import check_step_timing, get_codec, validate_actions
from gbxcule.core.dmg import POST_BOOT_PC
from gbxcule.core.memory_layout import CGB_WRAM_BANKS, CGB_WRAMX, SPAN
from gbxcule.core.pixels import SHADE_RGB, STOCK_SHADE_RGB, shades_of_rgb
from gbxcule.core.step_end import StepEnd
from gbxcule.core.symbols import SymbolTable, symbols_beside

PYBOY_VERSION = "2.8.1"
SOUND_IO_RANGE = (0xFF10, 0xFF40)  # APU registers and wave RAM: [lo, hi)

_STATE_VERSION = 29  # PyBoy 2.8.1's save-state format
_CPU_BLOCK_BYTES = 33  # header (6) + A F B C D E (6) + HL SP PC (6) + 7 flags + cycles (8)
_HDMA_BLOCK_BYTES = 10  # CGB hardware: the HDMA block between the header and the CPU


class PyBoyVersionError(RuntimeError):
    """The installed PyBoy is not the version the oracle is pinned to."""


def require_pyboy_version() -> None:
    try:
        found = metadata.version("pyboy")
    except metadata.PackageNotFoundError:
        raise PyBoyVersionError(
            f"pyboy is not installed; the oracle needs pyboy=={PYBOY_VERSION}"
        ) from None
    if found != PYBOY_VERSION:
        raise PyBoyVersionError(
            f"the oracle is pinned to pyboy=={PYBOY_VERSION} (its timings are what we match), "
            f"but pyboy {found} is installed"
        )


def make_pyboy(
    rom: bytes | str | Path,
    *,
    log_level: str = "ERROR",
    boot: str = "fast",
    stock: bool = False,
    sound_emulated: bool | None = None,
    cgb: bool = False,
) -> Any:
    """A PyBoy on ``rom`` (bytes or path) at power-on, running boot mode ``boot``'s boot ROM.

    ``stock=True``: PyBoy's own boot ROM (``boot`` must be ``"pyboy"``) and default
    palette; else :data:`SHADE_RGB`. ``sound_emulated`` defaults to ``True`` either way.
    ``cgb=True``: PyBoy's Game Boy Color mode, with its own CGB boot ROM (``boot="pyboy"``).

    PyBoy turns on a game-wrapper plugin when the cartridge title names a game it knows
    ("TETRIS", "2048", ...); the wrapper reads game memory after every frame (a read of
    STAT clears a one-shot, for one) and can print a traceback each frame. So PyBoy is
    built on a copy whose title is blank (header checksum kept valid), which leaves it the
    generic wrapper, and the real bytes are written back into ROM bank 0 before anything
    runs: the boot ROM and the game read the cartridge as it is. PyBoy reads the title only
    to pick that plugin (and to name ``.ram``/``.rtc`` files, which a ROM given as bytes
    never has), so the copy changes no emulated state, stock or not.
    """
    require_pyboy_version()
    check_boot(boot)
    if (stock or cgb) and boot != "pyboy":
        raise ValueError(f'stock PyBoy runs its own boot ROM (boot="pyboy"), not boot={boot!r}')
    if sound_emulated is None:
        sound_emulated = True
    with warnings.catch_warnings():  # pysdl2 announces its bundled SDL2 on import
        warnings.filterwarnings("ignore", message="Using SDL2 binaries", category=UserWarning)
        from pyboy import PyBoy

    data = rom if isinstance(rom, bytes) else read_rom(rom)
    pyboy = PyBoy(
        io.BytesIO(_untitled(data)),
        bootrom=None if stock or cgb else str(boot_file(boot)),
        window="null",
        sound_emulated=bool(sound_emulated),
        cgb=bool(cgb),
        color_palette=STOCK_SHADE_RGB if stock else SHADE_RGB,
        log_level=log_level,
    )
    pyboy.memory[0, _TITLE_START] = data[_TITLE_START]
    pyboy.memory[0, _HEADER_CHECKSUM] = data[_HEADER_CHECKSUM]
    return pyboy


_TITLE_START = 0x134
_HEADER_CHECKSUM = 0x14D


def _untitled(rom: bytes) -> bytes:
    """``rom`` with an empty cartridge title (first byte 0) and a header checksum to match."""
    out = bytearray(rom)
    out[_TITLE_START] = 0
    out[_HEADER_CHECKSUM] = (rom[_HEADER_CHECKSUM] + rom[_TITLE_START]) & 0xFF
    return bytes(out)


@functools.lru_cache(maxsize=8)
def post_boot_state(
    rom: bytes,
    boot: str = "fast",
    stock: bool = False,
    sound_emulated: bool | None = None,
    cgb: bool = False,
) -> bytes:
    """PyBoy save state of ``rom`` taken when the CPU is about to fetch 0x0100 after the boot ROM
    of ``boot`` (``make_pyboy``'s arguments)."""
    pyboy = make_pyboy(rom, boot=boot, stock=stock, sound_emulated=sound_emulated, cgb=cgb)
    captured: list[bytes] = []

    def capture(_context: object) -> None:
        if not captured:
            buf = io.BytesIO()
            pyboy.save_state(buf)
            captured.append(buf.getvalue())

    try:
        pyboy.hook_register(0, POST_BOOT_PC, capture, None)
        for _ in range(BOOT_MAX_FRAMES[boot]):
            pyboy.tick(1, False)
            if captured:
                break
    finally:
        pyboy.stop(save=False)
    if not captured:
        raise RuntimeError(
            f"the {boot!r} boot ROM did not reach 0x0100 within {BOOT_MAX_FRAMES[boot]} frames"
        )
    return captured[0]


class _CpuBlockDone(Exception):
    pass


class _PrefixWriter(io.RawIOBase):
    """Collects the first ``limit`` bytes of a save state, then stops the writer."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.data += bytes(b)
        if len(self.data) >= self.limit:
            raise _CpuBlockDone
        return len(b)


def cpu_block(pyboy: Any) -> dict[str, int]:
    """The CPU registers, IME, HALT and cycle counter, from the head of PyBoy's save state."""
    writer = _PrefixWriter(_CPU_BLOCK_BYTES + _HDMA_BLOCK_BYTES)
    try:
        pyboy.save_state(writer)
    except _CpuBlockDone:
        pass
    d = bytes(writer.data[: _CPU_BLOCK_BYTES + _HDMA_BLOCK_BYTES])
    if len(d) >= 6 and d[0] == _STATE_VERSION and d[5] == 1:  # CGB: the HDMA block first
        d = d[:6] + d[6 + _HDMA_BLOCK_BYTES :]
    if len(d) < _CPU_BLOCK_BYTES or d[0] != _STATE_VERSION or d[5] > 1:
        raise RuntimeError(
            f"unexpected PyBoy save-state header {d[:6].hex()} (want version {_STATE_VERSION})"
        )
    hl = d[12] | d[13] << 8
    return {
        "pc": d[16] | d[17] << 8,
        "sp": d[14] | d[15] << 8,
        "a": d[6],
        "f": d[7],
        "b": d[8],
        "c": d[9],
        "d": d[10],
        "e": d[11],
        "h": hl >> 8,
        "l": hl & 0xFF,
        "ime": d[18],
        "halted": d[20],
        "cycles": int.from_bytes(d[25:33], "little"),
    }


def shades_from_rgba(rgba: np.ndarray) -> np.ndarray:
    """uint8 [144,160] shade indices of a PyBoy RGBA screen drawn with :data:`SHADE_RGB`
    or PyBoy's default palette, :data:`STOCK_SHADE_RGB` (the stock backend's, and the
    screen a stock PyBoy's save state brings until the next frame is drawn)."""
    shades = shades_of_rgb(np.asarray(rgba)[:, :, :3])
    if shades is None:
        raise RuntimeError(
            "screen has a colour outside SHADE_RGB and STOCK_SHADE_RGB; was PyBoy built by "
            "make_pyboy, and its save state by a PyBoy with the default palette?"
        )
    return shades


class PyBoySingleBackend(HostTrainingMixin):
    """``num_envs`` PyBoy instances stepped one after another in this process."""

    name = "pyboy"

    def __init__(
        self,
        rom_path: str | Path,
        *,
        num_envs: int = 1,
        frames_per_step: int = 24,
        release_after_frames: int | None = None,
        action_codec: str = "pokemonred_puffer_v1",
        render: bool = True,
        state_path: str | Path | None = None,
        allow_bad_logo: bool = False,
        boot: str | None = None,
        stock: bool = False,
        sound_emulated: bool | None = None,
        cgb: bool | None = None,
    ) -> None:
        """``boot``: ``"fast"`` (default), ``"dmg"`` or ``"pyboy"`` (``gbxcule.asm.bootrom``);
        ``stock``: an unmodified ``PyBoy(rom)`` (boot ``"pyboy"``, default palette);
        ``sound_emulated`` default ``True``; ``cgb`` as PyBoy's (``None``: the header
        decides, ``checks.resolve_machine``; a Game Boy Color machine boots PyBoy's CGB
        boot ROM and its screens are RGB); see the module doc."""
        release_after_frames = check_step_config(num_envs, frames_per_step, release_after_frames)
        if boot is not None:
            check_boot(boot)
        self.rom_path = Path(rom_path)
        self._rom = read_rom(rom_path, allow_bad_logo=allow_bad_logo, allow_cgb_only=True)
        self.cgb, self.boot = resolve_machine(cgb, boot or ("pyboy" if stock else None), self._rom)
        if not self.cgb:  # a Color-only game on a DMG: refused by name
            read_rom(rom_path, allow_bad_logo=allow_bad_logo)
        self.stock = bool(stock)
        self.sound_emulated = True if sound_emulated is None else bool(sound_emulated)
        self._pyboy_args = {
            "boot": self.boot,
            "stock": self.stock,
            "sound_emulated": self.sound_emulated,
            "cgb": self.cgb,
        }
        # Addresses our emulator cannot match against this reference (masked by the harness).
        self.lockstep_ignore = () if self.sound_emulated else (SOUND_IO_RANGE,)
        self.state_path = None if state_path is None else Path(state_path)
        self.codec = get_codec(action_codec)
        self.num_envs = num_envs
        self.frames_per_step = frames_per_step
        self.release_after_frames = release_after_frames
        self.render = bool(render)
        self._boot_state = post_boot_state(self._rom, **self._pyboy_args)
        self._pyboys = [make_pyboy(self._rom, **self._pyboy_args) for _ in range(num_envs)]
        self._serial = [bytearray() for _ in range(num_envs)]
        self._buttons = [self.codec.buttons(a) for a in range(self.codec.num_actions)]
        check_step_timing(self.codec, frames_per_step, release_after_frames, None)
        self.step_end: StepEnd | None = None
        self._frames = np.zeros(num_envs, dtype=np.int64)
        self._init_host_training()
        self.reset()

    @functools.cached_property
    def symbols(self) -> SymbolTable:
        """The ``.sym`` file beside the ROM: task reads by symbol, as on the Warp backends."""
        return symbols_beside(self.rom_path)

    def reset(self, seed: int | None = None) -> None:
        """Every env to the post-boot snapshot (PC=0x0100). PyBoy is deterministic: ``seed`` is unused."""
        check_seed(seed)
        for env, pyboy in enumerate(self._pyboys):
            pyboy.load_state(io.BytesIO(self._boot_state))
            pyboy.events.clear()  # a release left due from the last step must not leak in
            pyboy._serial()
            self._serial[env].clear()
        if self.state_path is not None:
            self.load_state(self.state_path)

    def load_state(self, source: Any, envs: Any = None) -> None:
        """Reset ``envs`` (default: all), then load a PyBoy ``.state`` (v7-v29) or our snapshot.

        The state goes to PyBoy as the v29 file ``core/savestate`` writes for it (2.8.1
        misreads v8-v15 files itself), with the MBC3 clock's ``saved_at`` at +infinity
        so no wall time is added (``core/state_source.py``).
        """
        from gbxcule.core.savestate import SavestateError, write_pyboy_state
        from gbxcule.core.state_source import read_state_source, without_wall_clock

        state = without_wall_clock(read_state_source(source, self._rom, cgb=self.cgb))
        if self.cgb and not state.from_cgb:
            raise SavestateError("a DMG save state: this machine is a Game Boy Color (cgb=True)")
        data = write_pyboy_state(state, rom=self._rom)
        ids = range(self.num_envs) if envs is None else [check_env(e, self.num_envs) for e in envs]
        for env in ids:
            pyboy = self._pyboys[env]
            pyboy.load_state(io.BytesIO(self._boot_state))
            pyboy.events.clear()
            pyboy._serial()
            self._serial[env].clear()
            pyboy.load_state(io.BytesIO(data))

    def save_state(self, env: int) -> bytes:
        """``env``'s state as PyBoy's ``save_state`` writes it (``load_state`` takes it)."""
        buf = io.BytesIO()
        self.pyboy(env).save_state(buf)
        return buf.getvalue()

    def step(self, actions: Any) -> None:
        acts = validate_actions(host_actions(actions), self.num_envs, self.codec)
        codec, end = self.codec, self.step_end
        for env, pyboy in enumerate(self._pyboys):
            action = int(acts[env])
            hold = codec.hold(action, self.release_after_frames)
            length = codec.length(action, self.frames_per_step)
            for button in self._buttons[action]:
                pyboy.button(button, hold)
            if end is None:
                pyboy.tick(length, self.render)
                self._frames[env] = length
            else:
                self._frames[env] = _tick_until(pyboy, length, end, self.render)
            self._serial[env] += pyboy._serial().encode("latin-1")

    def set_step_end(self, end: StepEnd | None) -> None:
        """End steps early on a RAM byte (``core/step_end.py``): a ``tick(1)`` at a time,
        the byte checked after each; ``None``: each step runs its action's frames."""
        self.step_end = check_step_end(
            self.codec, self.frames_per_step, self.release_after_frames, end
        )

    def step_frames(self) -> np.ndarray:
        """int64 ``[N]``: the frames each env's last step ran."""
        return self._frames.copy()

    def pyboy(self, env: int) -> Any:
        """The PyBoy instance of ``env`` (for tests and debugging)."""
        return self._pyboys[check_env(env, self.num_envs)]

    def get_cpu_state(self, env: int) -> dict[str, int]:
        return cpu_block(self.pyboy(env))

    def read_memory(self, env: int, lo: int, hi: int) -> np.ndarray:
        pyboy = self.pyboy(env)
        check_range(lo, hi)
        return np.asarray(pyboy.memory[lo:hi], dtype=np.uint8)

    def read_wram_bank(self, env: int, bank: int, lo: int, hi: int) -> np.ndarray:
        """A Game Boy Color machine's WRAM bank ``bank`` (1-7) at ``lo..hi`` in D000-DFFF,
        whatever SVBK maps (a task's ``bank=`` read)."""
        wramx_lo, wramx_hi = CGB_WRAMX
        if not self.cgb or not 1 <= bank <= CGB_WRAM_BANKS or not wramx_lo <= lo <= hi <= wramx_hi:
            raise ValueError(f"WRAM bank {bank} at {lo:#06x}-{hi:#06x}: not a CGB WRAMX bank")
        memory = self.pyboy(env).memory
        # PyBoy's memory[bank, WRAM start + k] is the 32 KiB WRAM's byte bank * 0x1000 + k
        wram = SPAN["wram"].lo
        return np.asarray([memory[bank, wram + a - wramx_lo] for a in range(lo, hi)], np.uint8)

    def write_memory(self, env: int, addr: int, data: bytes | np.ndarray | int) -> None:
        pyboy = self.pyboy(env)
        for offset, value in enumerate(write_values(addr, data).tolist()):
            pyboy.memory[addr + offset] = value

    def serial_output(self, env: int) -> bytes:
        return bytes(self._serial[check_env(env, self.num_envs)])

    def frame_shades(self, env: int) -> np.ndarray:
        pyboy = self.pyboy(env)
        if not self.render:
            raise RuntimeError("frame_shades needs a backend built with render=True")
        if self.cgb:
            raise ValueError(
                "a Game Boy Color machine's frames are in colour, not DMG shades: use "
                "screens(envs) (RGB) or render_obs with 'luma' or 'rgb'"
            )
        return shades_from_rgba(pyboy.screen.ndarray)

    def frame_rgb(self, env: int) -> np.ndarray:
        """``uint8 [144, 160, 3]``: the screen of ``env`` as PyBoy shows it."""
        pyboy = self.pyboy(env)
        if not self.render:
            raise RuntimeError("frame_rgb needs a backend built with render=True")
        return np.asarray(pyboy.screen.ndarray)[:, :, :3].copy()

    def close(self) -> None:
        for pyboy in self._pyboys:
            pyboy.stop(save=False)
        self._pyboys = []

    def __enter__(self) -> PyBoySingleBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tick_until(pyboy: Any, length: int, end: StepEnd, render: bool) -> int:
    """Frames of one step that ``end`` may cut short (every frame rendered: any may be the
    last, as the Warp step latches them all)."""
    addr = int(end.where)  # type: ignore[arg-type] - set_step_end resolved it
    start = pyboy.memory[addr]
    for ran in range(1, length + 1):
        pyboy.tick(1, render)
        if ran >= end.min_frames and end.met(start, pyboy.memory[addr]):
            return ran
    return length
