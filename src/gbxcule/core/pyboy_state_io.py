"""Read and write PyBoy ``.state`` files of every layout a PyPI release wrote.

Which release writes which STATE_VERSION (read from each wheel's sources):

====================  =======  =========================================
releases              version  layout
====================  =======  =========================================
1.0.0 - 1.0.1         4        not supported (pre-v7)
1.1.0 - 1.3.0         5        not supported (pre-v7)
1.4.0                 6        not supported (pre-v7)
1.4.1 - 1.4.7         7        v7
1.5.0 - 1.5.5         8        v8
1.5.6 - 1.6.14        9        v9 (= v8 on DMG; CGB HDMA lost a byte)
2.0.0 - 2.2.1         10       v10
2.2.2 - 2.3.0         11       v11
2.4.0 - 2.4.1         12       v12
2.5.0 - 2.5.4         14       v14
2.6.0 - 2.6.1         15       v15
2.7.0                 15       v15nr50 (sound block gained NR50, same version)
2.8.0 - 2.8.1         29       v29
====================  =======  =========================================

Versions 13 and 16-28 were never released; such files are refused. Two v15 layouts
share a number; the file length tells them apart. PyBoy 2.8.1's own loader assumes
one v15 layout and reads some v29-only bytes from older files (LCD stat_transition
from v8 on, the sound additions from v14 on, MBC5 rumble bytes), so it misreads
files written by 1.5.0-2.7.0; ``write_pyboy_state`` converts them to v29 instead.

The cartridge block's shape depends on the cartridge (RAM bank count, MBC1's two
registers, MBC3's clock, MBC5's rumble byte), which the file does not record: pass
the ROM; without it the shape is taken from the block's length where that is
unambiguous. Save states written while a serial link or printer was attached are refused.

CGB hardware (PyBoy's ``cgb=True``, a Color or a DMG cartridge) is read and written in
the v29 layout only: the header's flag, the HDMA block, 32 KiB of WRAM and, while the
LCD is in CGB mode, its CGB tail (``core/pyboy_state.py``). CGB states of v8-v15 are
refused: no installed release writes one to check their layout against. Our machines
run DMG only; :func:`refuse_cgb` is the refusal where a state would be loaded into one.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from gbxcule.core.cartridge import RAM_BANK_SIZE, CartridgeError, CartridgeHeader
from gbxcule.core.pyboy_state import (
    CGB_LAYOUTS,
    CGB_WRAM_BYTES,
    IO_HIGH_OBJECT_PRIORITY,
    IO_HIGH_WRAM_SELECT,
    LAYOUT_RANK,
    LINE_PARAM_COLUMNS,
    SCREEN_COLS,
    SCREEN_ROWS,
    WRAM_BYTES,
    CartLayout,
    CartState,
    CpuState,
    HdmaState,
    JoypadState,
    LcdState,
    MemoryState,
    OamDmaState,
    PyBoyState,
    RtcState,
    SerialState,
    SgbState,
    SoundState,
    TimerState,
    iter_specs,
    stored_in,
)

PYBOY_281_STATE_VERSION = 29
LAYOUTS_BY_VERSION = {
    7: ("v7",),
    8: ("v8",),
    9: ("v9",),
    10: ("v10",),
    11: ("v11",),
    12: ("v12",),
    14: ("v14",),
    15: ("v15", "v15nr50"),
    29: ("v29",),
}
UNRELEASED_VERSIONS = frozenset({13, *range(16, 29)})
# PyBoy's RAM bank count per header RAM size code (it allocates one bank when there is none).
PYBOY_RAM_BANKS = {0x00: 1, 0x01: 1, 0x02: 1, 0x03: 4, 0x04: 16, 0x05: 8}
_NUM = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q", "f32": "<f", "f64": "<d"}


class SavestateError(ValueError):
    """A save state we cannot read or write; the message says why."""


CGB_REFUSAL = "a Game Boy Color save state: this version runs DMG machines; CGB is issue #46"


def refuse_cgb(state: PyBoyState) -> None:
    """Raise :class:`SavestateError` if ``state`` needs a CGB machine to run."""
    if state.from_cgb:
        raise SavestateError(CGB_REFUSAL)


def cart_layout_from_rom(rom: bytes) -> CartLayout:
    """How PyBoy lays out this ROM's cartridge block, from the header as PyBoy reads it."""
    try:
        header = CartridgeHeader.parse(rom, strict=False)
    except CartridgeError as exc:
        raise SavestateError(f"cannot read the ROM header: {exc}") from None
    if header.mbc not in ("none", "mbc1", "mbc2", "mbc3", "mbc5"):
        raise SavestateError(f"PyBoy has no cartridge type ${header.cart_type:02X}")
    banks = PYBOY_RAM_BANKS.get(header.ram_size_code)
    if banks is None:
        raise SavestateError(f"PyBoy has no RAM size code ${header.ram_size_code:02X}")
    return CartLayout(header.mbc, banks, header.has_timer, header.has_rumble)


def _rtc_bytes(layout: str) -> int:
    if LAYOUT_RANK[layout] <= LAYOUT_RANK["v12"]:
        return 4 + 2
    return 8 + 2 + (0 if layout != "v29" else 7 + 8 + 8)


def _cart_extra(cart: CartLayout, layout: str) -> int:
    extra = _rtc_bytes(layout) if cart.has_rtc else 0
    if cart.mbc == "mbc1":
        extra += 2
    if cart.mbc == "mbc5" and layout == "v29":
        extra += 2 if cart.has_rumble else 1
    return extra


def _infer_cart(data: bytes, start: int, block_len: int, layout: str) -> CartLayout:
    """The cart layout that explains a cart block of ``block_len`` bytes, if only one does.

    Carts without MBC registers in the file (none, MBC2, MBC3 without clock, and MBC5
    before v29) all read as "none". In v29 MBC1's two registers and MBC5's two rumble
    bytes have the same length; the values tell them apart unless they are (1, 0|1).
    """
    shapes = [CartLayout("none"), CartLayout("mbc1"), CartLayout("mbc3", has_rtc=True)]
    if layout == "v29":
        shapes += [CartLayout("mbc5"), CartLayout("mbc5", has_rumble=True)]
    found = []
    for c in shapes:
        body = block_len - 4 - _cart_extra(c, layout)
        if body >= RAM_BANK_SIZE and body % RAM_BANK_SIZE == 0:
            found.append(dataclasses.replace(c, ram_banks=body // RAM_BANK_SIZE))
    if len(found) == 2 and {c.mbc for c in found} == {"mbc1", "mbc5"}:
        first, second = data[start + block_len - 2], data[start + block_len - 1]
        if not (first == 1 and second <= 1):
            found = [c for c in found if c.mbc == "mbc1"]
    if len(found) != 1:
        fits = ", ".join(f"{c.mbc}{'+rtc' if c.has_rtc else ''}" for c in found) or "nothing"
        raise SavestateError(
            f"cannot tell the cartridge block's shape from its length ({block_len} bytes; "
            f"fits: {fits}); pass the ROM"
        )
    return found[0]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise SavestateError(
                f"truncated save state: {what} needs {n} bytes at offset {self.pos}, "
                f"file has {len(self.data)}"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def num(self, fmt: str, what: str):
        return struct.unpack(_NUM[fmt], self.take(struct.calcsize(_NUM[fmt]), what))[0]


class _Context:
    """What a struct's variable-size fields depend on."""

    def __init__(self, layout: str, cart: CartLayout | None, cgb: int = 0) -> None:
        self.layout = layout
        self.cart = cart
        self.cgb = cgb  # the header's CGB-hardware flag

    def present(self, f, obj) -> bool:
        if not stored_in(f, self.layout):
            return False
        if f.metadata["when"] == "cgb":
            return bool(self.cgb and obj.cgb)
        size = f.metadata["size"]
        cart = self.cart
        if size == "rtc":
            return cart is not None and cart.has_rtc
        if size == "mbc1":
            return cart is not None and cart.mbc == "mbc1"
        if size == "mbc5":
            return cart is not None and cart.mbc == "mbc5"
        if size == "rumble":
            return cart is not None and cart.mbc == "mbc5" and cart.has_rumble
        return True

    def length(self, f, obj) -> int:
        size = f.metadata["size"]
        if size == "cart_ram":
            if self.cart is None:
                raise SavestateError("the cartridge block's shape is unknown; pass the ROM")
            return self.cart.ram_banks * RAM_BANK_SIZE
        if size == "audiobuffer":
            return (obj.samples_per_frame + 1) * 2
        if size == "wram":
            return CGB_WRAM_BYTES if self.cgb else WRAM_BYTES
        return size


def _read_struct(cls, r: _Reader, ctx: _Context, prefix: str, defaulted: list[str]):
    obj = cls()
    for f in iter_specs(cls):
        name = f"{prefix}{f.name}"
        if not stored_in(f, ctx.layout):
            defaulted.append(name)
            continue
        if not ctx.present(f, obj):
            continue
        fmt = f.metadata["fmt"]
        if fmt == "struct":
            sub = RtcState if f.name == "rtc" else type(getattr(obj, f.name))
            value = _read_struct(sub, r, ctx, name + ".", defaulted)
        elif fmt == "bytes":
            n = ctx.length(f, obj)
            default = getattr(obj, f.name)
            value = np.frombuffer(r.take(n, name), dtype=np.uint8).copy()
            if default.ndim == 2 and n:
                value = value.reshape(default.shape)
        elif fmt == "u16s":
            n = ctx.length(f, obj)
            value = np.frombuffer(r.take(2 * n, name), dtype="<u2").astype(np.uint16)
        elif f.name == "timezero" and LAYOUT_RANK[ctx.layout] <= LAYOUT_RANK["v12"]:
            value = r.num("f32", name)
        else:
            value = r.num(fmt, name)
        setattr(obj, f.name, value)
    return obj


def _write_struct(obj, out: bytearray, ctx: _Context) -> None:
    for f in iter_specs(type(obj)):
        if not ctx.present(f, obj):
            continue
        fmt, value = f.metadata["fmt"], getattr(obj, f.name)
        if fmt == "struct":
            _write_struct(value, out, ctx)
        elif fmt in ("bytes", "u16s"):
            dtype = np.uint8 if fmt == "bytes" else np.dtype("<u2")
            raw = np.ascontiguousarray(value, dtype=dtype).tobytes()
            want = ctx.length(f, obj) * np.dtype(dtype).itemsize
            if len(raw) != want:
                raise SavestateError(f"{f.name} has {len(raw)} bytes, the file needs {want}")
            out += raw
        elif f.name == "timezero" and LAYOUT_RANK[ctx.layout] <= LAYOUT_RANK["v12"]:
            out += struct.pack("<f", value)
        else:
            try:
                out += struct.pack(_NUM[fmt], value)
            except struct.error:
                raise SavestateError(f"{f.name}={value!r} does not fit {fmt}") from None


def _read_header(r: _Reader, state: PyBoyState, layout: str) -> None:
    state.bootrom_enabled = r.num("u8", "bootrom_enabled")
    if layout == "v7":
        return
    if layout == "v29":
        state.key0 = r.num("u8", "key0")
    state.key1 = r.num("u8", "key1")
    state.double_speed = r.num("u8", "double_speed")
    state.cgb = r.num("u8", "cgb flag")
    if state.cgb and layout not in CGB_LAYOUTS:
        raise SavestateError(
            f"a CGB-hardware save state of version {r.data[0]}: only version 29 (PyBoy "
            "2.8.0-2.8.1) CGB states are read"
        )


def _check_cgb_flags(state: PyBoyState) -> None:
    """The LCD's CGB flags agree with the header's, as PyBoy 2.8.1's loader demands."""
    lcd = state.lcd
    if not state.cgb and (lcd.cgb or lcd.downgraded_to_dmg):
        raise SavestateError(
            "the LCD block is in CGB mode (or downgraded from it) but the header says DMG "
            "hardware: corrupt, or not a save state PyBoy wrote"
        )
    if state.cgb and bool(lcd.cgb) == bool(lcd.downgraded_to_dmg):
        raise SavestateError(
            f"a CGB-hardware state whose LCD block has cgb={lcd.cgb}, downgraded_to_dmg="
            f"{lcd.downgraded_to_dmg} (exactly one is set when PyBoy saves): corrupt"
        )


def _read_renderer(r: _Reader, state: PyBoyState, layout: str) -> None:
    rank = LAYOUT_RANK[layout]
    if rank < LAYOUT_RANK["v11"]:
        raw = r.take(SCREEN_ROWS * LINE_PARAM_COLUMNS, "renderer line params")
        state.lcd.line_params = np.frombuffer(raw, np.uint8).reshape(SCREEN_ROWS, -1).copy()
    pixels = SCREEN_ROWS * SCREEN_COLS
    if rank >= LAYOUT_RANK["v10"]:
        raw = np.frombuffer(r.take(pixels * 5, "screen buffer"), np.uint8).reshape(pixels, 5)
        words = raw[:, :4].copy().view("<u4").reshape(SCREEN_ROWS, SCREEN_COLS)
        state.renderer.screen_attributes = raw[:, 4].reshape(SCREEN_ROWS, SCREEN_COLS).copy()
    else:
        words = np.frombuffer(r.take(pixels * 4, "screen buffer"), "<u4")
        words = words.reshape(SCREEN_ROWS, SCREEN_COLS)
    state.renderer.screen = words.astype(np.uint32)
    if layout == "v29":
        state.renderer.wy_activated_frame = r.num("u8", "wy_activated_frame")


def _write_renderer(out: bytearray, state: PyBoyState, layout: str) -> None:
    rank = LAYOUT_RANK[layout]
    if rank < LAYOUT_RANK["v11"]:
        out += np.ascontiguousarray(state.lcd.line_params, dtype=np.uint8).tobytes()
    words = np.ascontiguousarray(state.renderer.screen, dtype="<u4").reshape(-1)
    if rank >= LAYOUT_RANK["v10"]:
        packed = np.empty((words.size, 5), np.uint8)
        packed[:, :4] = words.view(np.uint8).reshape(-1, 4)
        packed[:, 4] = np.asarray(state.renderer.screen_attributes, np.uint8).reshape(-1)
        out += packed.tobytes()
    else:
        out += words.tobytes()
    if layout == "v29":
        out += bytes([state.renderer.wy_activated_frame])


def _sections(state_cls_layout: str, cgb: int):
    """Section names in file order after the header; ``@`` ones are handled by hand."""
    order = ["hdma"] if cgb else []
    order.append("cpu")
    if state_cls_layout == "v29":
        order.append("oam_dma")
    order += ["lcd", "sound", "@renderer", "memory"]
    if state_cls_layout == "v29":
        order.append("@wram_select")
    order += ["timer", "cart", "joypad", "serial", "sgb"]
    return order


_SECTION_TYPES = {
    "hdma": HdmaState,
    "cpu": CpuState,
    "oam_dma": OamDmaState,
    "lcd": LcdState,
    "sound": SoundState,
    "memory": MemoryState,
    "timer": TimerState,
    "cart": CartState,
    "joypad": JoypadState,
    "serial": SerialState,
    "sgb": SgbState,
}


def _parse(data: bytes, layout: str, cart: CartLayout) -> PyBoyState:
    r = _Reader(data)
    state = PyBoyState(version=data[0], layout=layout, cart_layout=cart)
    r.take(1, "version")
    _read_header(r, state, layout)
    defaulted: list[str] = []
    ctx = _Context(layout, cart, state.cgb)
    for name in _sections(layout, state.cgb):
        if name == "@renderer":
            _read_renderer(r, state, layout)
        elif name == "@wram_select":
            state.wram_select = r.num("u8", "wram_select")
        else:
            setattr(state, name, _read_struct(_SECTION_TYPES[name], r, ctx, name + ".", defaulted))
        if name == "lcd":
            _check_cgb_flags(state)
    if layout != "v29":
        state.lcd.object_priority_mode = int(state.memory.io_high[IO_HIGH_OBJECT_PRIORITY])
        state.wram_select = int(state.memory.io_high[IO_HIGH_WRAM_SELECT])
        _fill_v29_derived(state)
    if r.pos != len(data):
        raise SavestateError(
            f"{len(data) - r.pos} bytes of trailing data after the save state "
            f"(read {r.pos} of {len(data)}): not a {layout} file of this cartridge, or corrupt"
        )
    state.defaulted = tuple(defaulted)
    return state


def _fill_v29_derived(state: PyBoyState) -> None:
    """Fields PyBoy 2.8.1's loader derives from others when an older file lacks them."""
    for ch in (state.sound.sweep, state.sound.tone):
        ch.pending_wave_duty = ch.wave_duty
    state.sound.wave.sampleframe = state.sound.wave.waveframe
    if state.layout == "v7" and state.lcd.lcdc & 0x80:
        # No LCD clock in the file: 2.8.1 switches the LCD on as it loads LCDC, which
        # restarts the frame at the next LCD tick. Do the same.
        state.lcd.clock_target = 0
        state.lcd.first_frame = 1
        state.lcd.reset = 1
    if state.cart.rtc is not None and not LAYOUT_RANK[state.layout] >= LAYOUT_RANK["v29"]:
        # A legacy clock is "registers = now - timezero": zero registers saved at timezero.
        state.cart.rtc.saved_at = state.cart.rtc.timezero


def _tail_bytes(layout: str) -> int:
    """Bytes after the cartridge block: joypad, serial, SGB."""
    size = 2
    if LAYOUT_RANK[layout] >= LAYOUT_RANK["v15"]:
        size += 4 + 32
    if layout == "v29":
        size += 7 + 4 + 0x2000 + 0x800 + 0x80
    return size


def load_pyboy_state(
    data: bytes, rom: bytes | None = None, *, cart: CartLayout | None = None
) -> PyBoyState:
    """Parse a PyBoy ``.state`` (versions 7-29 as released; CGB hardware: 29) into a
    :class:`PyBoyState`.

    ``rom`` (or ``cart``) fixes the cartridge block's shape; without either the shape is
    inferred from the block's length, and an ambiguous one raises :class:`SavestateError`.
    """
    data = bytes(data)
    if len(data) < 2:
        raise SavestateError(f"truncated save state: {len(data)} bytes")
    version = data[0]
    if version in UNRELEASED_VERSIONS:
        raise SavestateError(
            f"state version {version} was never in a PyPI release of PyBoy; "
            "its layout is not known, so it is not read"
        )
    if version > PYBOY_281_STATE_VERSION:
        raise SavestateError(
            f"state version {version} (the first byte) is newer than PyBoy 2.8.1's (29): "
            "a later PyBoy's state, or not a save state at all"
        )
    if version not in LAYOUTS_BY_VERSION:
        raise SavestateError(f"state version {version} is older than 7 and is not supported")
    layouts = LAYOUTS_BY_VERSION[version]
    if rom is not None:
        cart = cart_layout_from_rom(rom)
    errors = []
    for layout in layouts:
        try:
            state = _parse(data, layout, cart or _cart_from_length(data, layout))
        except SavestateError as exc:
            errors.append(exc)
            continue
        if rom is not None:
            _refuse_bank_past_rom(state, rom)
        return state
    error = (
        errors[0]
        if len({str(e) for e in errors}) == 1
        else SavestateError("; ".join(f"as {lay}: {e}" for lay, e in zip(layouts, errors)))
    )
    if cart is not None:
        _refuse_other_cartridge(data, layouts, cart, error)
    raise error


def _refuse_bank_past_rom(state: PyBoyState, rom: bytes) -> None:
    """PyBoy keeps the selected ROM bank below its ROM's bank count (every mapper takes it
    modulo the count): a state whose bank is past this ROM's was saved on a larger one."""
    banks = max(2, len(rom) // 0x4000)
    if state.cart.rom_bank >= banks:
        raise SavestateError(
            f"the state has ROM bank {state.cart.rom_bank} mapped, and this ROM has {banks} "
            "banks: it was saved on another (larger) game; save a state of this ROM in PyBoy"
        )


def _describe(cart: CartLayout) -> str:
    extras = [x for x, on in (("clock", cart.has_rtc), ("rumble", cart.has_rumble)) if on]
    what = cart.mbc.upper() if cart.mbc != "none" else "no mapper"
    return f"{what}, {cart.ram_banks} RAM bank(s)" + "".join(f", {x}" for x in extras)


def _refuse_other_cartridge(
    data: bytes, layouts: list[str], cart: CartLayout, error: SavestateError
) -> None:
    """A state that does not fit this ROM's cartridge but fits another one was most likely
    saved on another game: say so beside the parse error (which names only bytes)."""
    for layout in layouts:
        try:
            theirs = _cart_from_length(data, layout)
            _parse(data, layout, theirs)
        except SavestateError:
            continue
        raise SavestateError(
            f"{error}. The state fits a different cartridge ({_describe(theirs)}) than this "
            f"ROM's ({_describe(cart)}): it was saved on another game or ROM revision (or cut "
            "short); save a state of this ROM in PyBoy"
        ) from error


def _cart_from_length(data: bytes, layout: str) -> CartLayout:
    """Measure the cart block by parsing everything before it with a placeholder cart."""
    r = _Reader(data)
    r.take(1, "version")
    scratch = PyBoyState(layout=layout)
    _read_header(r, scratch, layout)
    ctx = _Context(layout, None, scratch.cgb)
    for name in _sections(layout, scratch.cgb):
        if name == "cart":
            break
        if name == "@renderer":
            _read_renderer(r, scratch, layout)
        elif name == "@wram_select":
            r.take(1, "wram_select")
        else:
            setattr(scratch, name, _read_struct(_SECTION_TYPES[name], r, ctx, "", []))
    return _infer_cart(data, r.pos, len(data) - r.pos - _tail_bytes(layout), layout)


def write_pyboy_state(
    state: PyBoyState, version: int = PYBOY_281_STATE_VERSION, *, rom: bytes | None = None
) -> bytes:
    """Serialise ``state`` as a PyBoy ``.state``; the default (v29) loads in PyBoy 2.8.1.

    Older versions are written only in the state's own layout (byte-exact round trips).
    """
    if version == PYBOY_281_STATE_VERSION:
        layout = "v29"
    elif version == state.version:
        layout = state.layout
    else:
        raise SavestateError(
            f"can write version {PYBOY_281_STATE_VERSION}, or the state's own version "
            f"{state.version}; not {version}"
        )
    if state.cgb and layout not in CGB_LAYOUTS:
        raise SavestateError(f"a CGB-hardware state is written as version 29 only, not {version}")
    _check_cgb_flags(state)
    cart = cart_layout_from_rom(rom) if rom is not None else state.cart_layout
    out = bytearray([version, state.bootrom_enabled])
    if layout == "v29":
        out.append(state.key0)
    if layout != "v7":
        out += bytes([state.key1, state.double_speed, state.cgb])
    ctx = _Context(layout, cart, state.cgb)
    memory = state.memory
    if layout != "v29":
        memory = dataclasses.replace(memory, io_high=memory.io_high.copy())
        memory.io_high[IO_HIGH_OBJECT_PRIORITY] = state.lcd.object_priority_mode
        memory.io_high[IO_HIGH_WRAM_SELECT] = state.wram_select
    for name in _sections(layout, state.cgb):
        if name == "@renderer":
            _write_renderer(out, state, layout)
        elif name == "@wram_select":
            out.append(state.wram_select)
        else:
            _write_struct(memory if name == "memory" else getattr(state, name), out, ctx)
    return bytes(out)
