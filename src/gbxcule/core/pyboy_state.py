"""PyBoyState: one neutral, documented picture of a PyBoy save state, whatever release wrote it.

Each field's ``metadata`` is also its place in the file (see ``pyboy_state_io``):
``fmt`` (u8, u16, u64 little-endian; f32/f64 IEEE; ``bytes`` with a fixed ``size``
or a size the codec works out; ``u16s``, ``size`` little-endian u16 words; ``struct``
for a nested dataclass), ``since``/``until`` (the first/last file layout that stores
it, see ``LAYOUTS``), ``when`` (``"cgb"``: stored only while the LCD block is in CGB
mode). Field order is file order.

A field absent from an older layout keeps its default, which is the value a fresh
PyBoy 2.8.1 DMG (``sound_emulated=True``, its default) has before its first frame, or the value
2.8.1's own loader puts there for older files. ``PyBoyState.defaulted`` lists them.

Units. Every cycle count is in T-cycles (4.194304 MHz, single speed) unless named
otherwise. PyBoy keeps one running counter, ``cpu.cycles`` (T-cycles since power-on);
each unit's ``last_cycles`` is the value of that counter when the unit last caught
up, and its ``cycles_to_interrupt`` is how many T-cycles ahead its next event is.
The LCD's ``clock`` counts T-cycles since the start of the current frame (0..70223;
LY = clock // 456 while the LCD is on) and ``clock_target`` is the clock at which the
LCD next changes mode. Booleans are stored as 0/1 ints so the values round-trip.

CGB. A state saved on CGB hardware (``cgb``; PyBoy 2.8 layout only, ``CGB_LAYOUTS``)
adds the HDMA block, stores all 8 WRAM banks, and, while its LCD is in CGB mode
(``lcd.cgb``), the LCD's CGB tail (VRAM bank 1, VBK, the palettes); a DMG cartridge
on CGB hardware has its LCD downgraded (``lcd.downgraded_to_dmg``) and no tail. In
double speed (``double_speed``, ``speed_shift`` 1) ``cpu.cycles`` and the counters
that follow it run at twice the rate; the LCD's ``clock`` and the sound unit's do not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from gbxcule.core.dmg import CLOCK_RATE, FRAME_CYCLES, MAX_CYCLES
from gbxcule.core.memory_layout import CGB_WRAM_BANK_SIZE

# File layouts in write order. A PyBoy STATE_VERSION names one layout, except 15: PyBoy
# 2.7.0 added the NR50 byte to the sound block without bumping the version (2.6.x lacks it).
LAYOUTS = ("v7", "v8", "v9", "v10", "v11", "v12", "v14", "v15", "v15nr50", "v29")
LAYOUT_RANK = {name: i for i, name in enumerate(LAYOUTS)}
CGB_LAYOUTS = ("v29",)  # the layouts whose CGB-hardware blocks are read

SCREEN_ROWS, SCREEN_COLS = 144, 160
VRAM_BYTES = 0x2000
OAM_BYTES = 0xA0
WRAM_BYTES = 0x2000  # DMG: 0xC000-0xDFFF
CGB_WRAM_BYTES = 8 * CGB_WRAM_BANK_SIZE  # CGB: banks 0-7 in order (0xD000 shows SVBK's)
CGB_PALETTE_WORDS = 32  # 8 palettes x 4 colours, one little-endian u16 each
# PyBoy's power-on words of every palette (its CGB boot ROM writes none).
PYBOY_CGB_PALETTE = (0x1CE7, 0x1E19, 0x7E31, 0x217B)
UNUSABLE_BYTES = 0x60  # 0xFEA0-0xFEFF, plain RAM in PyBoy
IO_BYTES = 0x4C  # 0xFF00-0xFF4B as PyBoy's io_ports array holds them
IO_HIGH_BYTES = 0x34  # 0xFF4C-0xFF7F, stored only by layouts up to v15
HRAM_BYTES = 0x7F  # 0xFF80-0xFFFE
LINE_PARAM_COLUMNS = 5  # per line: SCX, SCY, WX, WY, LCDC bit 4 (tile data select)
CART_RAM_BANK_BYTES = 0x2000
SGB_BORDER_TILES, SGB_BORDER_MAP, SGB_BORDER_PALETTES = 0x2000, 0x800, 0x80
IO_HIGH_OBJECT_PRIORITY = 0xFF6C - 0xFF4C
IO_HIGH_WRAM_SELECT = 0xFF70 - 0xFF4C

# Fresh PyBoy 2.8.1 values (DMG, sound_emulated=True) for fields older layouts lack.
NEVER = MAX_CYCLES
SAMPLE_RATE = 48000
FS_CYCLES = 8192  # the sound unit's frame sequencer: 512 Hz
SAMPLES_PER_FRAME = -(-SAMPLE_RATE * FRAME_CYCLES // CLOCK_RATE)  # 804


def spec(
    fmt: str,
    default: Any = 0,
    *,
    since: str = "v7",
    until: str = "v29",
    size=None,
    when: str | None = None,
    doc="",
) -> Any:
    """A dataclass field stored in the file as ``fmt`` in layouts ``since``..``until``."""
    meta = {"fmt": fmt, "since": since, "until": until, "size": size, "when": when, "doc": doc}
    if callable(default):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


def zeros(*shape: int):
    return lambda: np.zeros(shape, dtype=np.uint8)


def cgb_palette() -> np.ndarray:
    return np.array(PYBOY_CGB_PALETTE * (CGB_PALETTE_WORDS // 4), dtype=np.uint16)


def stored_in(f, layout: str) -> bool:
    rank = LAYOUT_RANK[layout]
    return LAYOUT_RANK[f.metadata["since"]] <= rank <= LAYOUT_RANK[f.metadata["until"]]


@dataclass
class CpuState:
    a: int = spec("u8")
    f: int = spec("u8")
    b: int = spec("u8")
    c: int = spec("u8")
    d: int = spec("u8")
    e: int = spec("u8")
    hl: int = spec("u16")
    sp: int = spec("u16")
    pc: int = spec("u16", doc="address of the next instruction to fetch")
    ime: int = spec("u8")
    ime_delay: int = spec("u8", since="v29", doc="EI sets 2; counted down per instruction")
    halted: int = spec("u8")
    stopped: int = spec("u8")
    ie: int = spec("u8", doc="0xFFFF")
    interrupt_queued: int = spec("u8", since="v8")
    if_: int = spec("u8", since="v8", doc="0xFF0F; v7 files do not store IF (taken as 0)")
    cycles: int = spec("u64", since="v12", doc="T-cycles since power-on")


@dataclass
class OamDmaState:
    active: int = spec("u8", since="v29")
    reading: int = spec("u8", since="v29")
    source: int = spec("u8", since="v29", doc="high byte of the source address")
    index: int = spec("u8", since="v29", doc="next byte (0..159)")
    start_cycle: int = spec("u64", since="v29", doc="cpu.cycles when the transfer started")


@dataclass
class HdmaState:
    """CGB VRAM DMA (FF51-FF55), stored right after the header on CGB hardware only."""

    hdma1: int = spec("u8", doc="FF51 as last written (or advanced)")
    hdma2: int = spec("u8")
    hdma3: int = spec("u8")
    hdma4: int = spec("u8")
    hdma5: int = spec(
        "u8",
        0xFF,
        doc="FF55 as read: 0xFF when idle; while an HBlank transfer runs, blocks left - 1",
    )
    transfer_active: int = spec("u8", doc="an HBlank transfer is running")
    curr_src: int = spec("u16", doc="next source address")
    curr_dst: int = spec("u16", doc="next destination (0x8000-0x9FF0)")


@dataclass
class PaletteIndexState:
    """BCPS / OCPS (FF68 / FF6A) as PyBoy holds them: the byte and its parts."""

    value: int = spec("u8")
    auto_inc: int = spec("u8", doc="bit 7: the index steps after each data write")
    index: int = spec("u8", doc="bits 1-5: the colour word (0..31)")
    hl: int = spec("u8", doc="bit 0: the word's high byte")


@dataclass
class LcdState:
    vram: np.ndarray = spec("bytes", zeros(VRAM_BYTES), size=VRAM_BYTES)
    oam: np.ndarray = spec("bytes", zeros(OAM_BYTES), size=OAM_BYTES)
    lcdc: int = spec("u8")
    bgp: int = spec("u8")
    obp0: int = spec("u8")
    obp1: int = spec("u8")
    stat: int = spec("u8", doc="STAT as PyBoy holds it: bits 0-1 mode, 2 LYC flag, 3-6 enables")
    ly: int = spec("u8")
    lyc: int = spec("u8")
    scy: int = spec("u8")
    scx: int = spec("u8")
    wy: int = spec("u8")
    wx: int = spec("u8")
    object_priority_mode: int = spec("u8", since="v29", doc="CGB OPRI; older files: FF6C byte")
    line_params: np.ndarray = spec(
        "bytes",
        zeros(SCREEN_ROWS, LINE_PARAM_COLUMNS),
        since="v11",
        size=SCREEN_ROWS * LINE_PARAM_COLUMNS,
        doc="per line as latched when it was drawn: SCX, SCY, WX, WY, LCDC.4; "
        "layouts before v11 keep it in the renderer block (same bytes)",
    )
    cgb: int = spec("u8", since="v8")
    downgraded_to_dmg: int = spec("u8", since="v29")
    speed_shift: int = spec("u8", since="v8", doc="0 in single speed (DMG)")
    frame_done: int = spec("u8", since="v14")
    first_frame: int = spec("u8", since="v14")
    reset: int = spec("u8", since="v14")
    last_cycles: int = spec("u64", since="v12")
    clock: int = spec("u64", since="v8", doc="T-cycles into the frame")
    clock_target: int = spec("u64", FRAME_CYCLES, since="v8", doc="clock of the next mode change")
    next_stat_mode: int = spec("u8", 2, since="v8")
    stat_transition: int = spec("u8", since="v29")
    # The CGB tail, stored only while ``cgb`` (not after a DMG cartridge downgraded the LCD).
    vram1: np.ndarray = spec("bytes", zeros(VRAM_BYTES), size=VRAM_BYTES, when="cgb")
    vbk: int = spec("u8", when="cgb", doc="FF4F bit 0: the VRAM bank the CPU sees")
    bcps: PaletteIndexState = spec("struct", PaletteIndexState, when="cgb")
    bcpd: np.ndarray = spec(
        "u16s", cgb_palette, size=CGB_PALETTE_WORDS, when="cgb", doc="BG palette words"
    )
    ocps: PaletteIndexState = spec("struct", PaletteIndexState, when="cgb")
    ocpd: np.ndarray = spec(
        "u16s", cgb_palette, size=CGB_PALETTE_WORDS, when="cgb", doc="OBJ palette words"
    )


@dataclass
class ToneChannelState:
    wave_duty: int = spec("u8", since="v14")
    init_length_timer: int = spec("u8", since="v14")
    envelope_volume: int = spec("u8", since="v14")
    envelope_direction: int = spec("u8", since="v14")
    envelope_pace: int = spec("u8", since="v14")
    sound_period: int = spec("u16", since="v14")
    length_enable: int = spec("u8", since="v14")
    enable: int = spec("u8", since="v14")
    lengthtimer: int = spec("u64", since="v14")
    envelopetimer: int = spec("u64", since="v14")
    periodtimer: int = spec("u64", since="v14")
    period: int = spec("u64", since="v14")
    waveframe: int = spec("u64", since="v14")
    volume: int = spec("u64", since="v14")
    sample_suppressed: int = spec("u8", since="v29")
    pending_wave_duty: int = spec("u8", since="v29", doc="older files: wave_duty")
    duty_update_pending: int = spec("u8", since="v29")


@dataclass
class SweepChannelState(ToneChannelState):
    sweep_pace: int = spec("u8", since="v14")
    sweep_direction: int = spec("u8", since="v14")
    sweep_magnitude: int = spec("u8", since="v14")
    sweeptimer: int = spec("u64", since="v14")
    sweepchecktimer: int = spec("u64", since="v29")
    sweepcalctimer: int = spec("u64", since="v29")
    sweep_restart_hold: int = spec("u64", since="v29")
    sweep_negate_used: int = spec("u8", since="v29")
    sweepenable: int = spec("u8", since="v14")
    shadow: int = spec("u64", since="v14")


@dataclass
class WaveChannelState:
    wavetable: np.ndarray = spec(
        "bytes", lambda: np.full(16, 0xFF, dtype=np.uint8), since="v14", size=16
    )
    dacpow: int = spec("u8", since="v14")
    init_length_timer: int = spec("u8", since="v14")
    volreg: int = spec("u8", since="v14")
    sound_period: int = spec("u16", since="v14")
    length_enable: int = spec("u8", since="v14")
    enable: int = spec("u8", since="v14")
    lengthtimer: int = spec("u64", since="v14")
    periodtimer: int = spec("u64", since="v14")
    period: int = spec("u64", since="v14")
    waveframe: int = spec("u64", since="v14")
    sample_suppressed: int = spec("u8", since="v29")
    volumeshift: int = spec("u64", since="v14")
    wave_access: int = spec("u8", since="v29")
    restart_pending: int = spec("u8", since="v29")
    sampleframe: int = spec("u64", since="v29", doc="older files: waveframe")


@dataclass
class NoiseChannelState:
    init_length_timer: int = spec("u8", since="v14")
    envelope_volume: int = spec("u8", since="v14")
    envelope_direction: int = spec("u8", since="v14")
    envelope_pace: int = spec("u8", since="v14")
    clkpow: int = spec("u8", since="v14")
    regwid: int = spec("u8", since="v14")
    clkdiv: int = spec("u8", since="v14")
    length_enable: int = spec("u8", since="v14")
    enable: int = spec("u8", since="v14")
    lengthtimer: int = spec("u64", since="v14")
    periodtimer: int = spec("u64", since="v14")
    envelopetimer: int = spec("u64", since="v14")
    period: int = spec("u64", since="v14")
    shiftregister: int = spec("u64", since="v14")
    lfsrfeed: int = spec("u64", since="v14")
    volume: int = spec("u64", since="v14")
    counter: int = spec("u64", since="v29")
    counter_countdown: int = spec("u64", since="v29")
    alignment: int = spec("u64", since="v29")
    counter_running: int = spec("u8", since="v29")


@dataclass
class SoundState:
    """PyBoy's sound unit (``kernels/apu/apu.py`` maps it); defaults: a fresh PyBoy's with sound on."""

    audiobuffer_head: int = spec("u64", since="v14")
    samples_per_frame: int = spec("u64", SAMPLES_PER_FRAME, since="v14")
    cycles_per_sample: float = spec("f64", CLOCK_RATE / SAMPLE_RATE, since="v14")
    audiobuffer: np.ndarray = spec(
        "bytes",
        zeros((SAMPLES_PER_FRAME + 1) * 2),
        since="v14",
        size="audiobuffer",
        doc="(samples_per_frame + 1) * 2 bytes",
    )
    speed_shift: int = spec("u8", since="v14")
    cycles_target: float = spec("f64", CLOCK_RATE / SAMPLE_RATE, since="v14")
    cycles_target_512hz: float = spec("f64", float(FS_CYCLES), since="v14")
    cycles_to_interrupt: int = spec("u64", -(-CLOCK_RATE // SAMPLE_RATE), since="v14")
    cycles: int = spec("u64", since="v14")
    last_cycles: int = spec("u64", since="v14")
    div_apu_counter: int = spec("u64", since="v14")
    div_apu: int = spec("u64", 3, since="v14")
    apu_poweron_after_div_write: int = spec("u8", since="v29")
    poweron: int = spec("u8", since="v14")
    disable_sampling: int = spec("u8", since="v14")
    noise_left: int = spec("u8", since="v14")
    wave_left: int = spec("u8", since="v14")
    tone_left: int = spec("u8", since="v14")
    sweep_left: int = spec("u8", since="v14")
    noise_right: int = spec("u8", since="v14")
    wave_right: int = spec("u8", since="v14")
    tone_right: int = spec("u8", since="v14")
    sweep_right: int = spec("u8", since="v14")
    nr50: int = spec("u8", since="v15nr50")
    sweep: SweepChannelState = spec(
        "struct", lambda: SweepChannelState(lengthtimer=64, period=4), since="v14"
    )
    tone: ToneChannelState = spec(
        "struct", lambda: ToneChannelState(lengthtimer=64, period=4), since="v14"
    )
    wave: WaveChannelState = spec(
        "struct", lambda: WaveChannelState(lengthtimer=256, period=4), since="v14"
    )
    noise: NoiseChannelState = spec(
        "struct",
        lambda: NoiseChannelState(lengthtimer=64, period=8, shiftregister=1, lfsrfeed=0x4000),
        since="v14",
    )


@dataclass
class MemoryState:
    wram: np.ndarray = spec(
        "bytes",
        zeros(WRAM_BYTES),
        size="wram",
        doc="0xC000-0xDFFF; on CGB hardware all 8 banks (CGB_WRAM_BYTES)",
    )
    unusable: np.ndarray = spec(
        "bytes", zeros(UNUSABLE_BYTES), size=UNUSABLE_BYTES, doc="0xFEA0-0xFEFF"
    )
    io: np.ndarray = spec(
        "bytes",
        zeros(IO_BYTES),
        size=IO_BYTES,
        doc="0xFF00-0xFF4B backing bytes; PyBoy reads most of these registers from their "
        "units (timer, LCD, serial, IF), so only P1 and unhandled ports are meaningful here",
    )
    hram: np.ndarray = spec("bytes", zeros(HRAM_BYTES), size=HRAM_BYTES, doc="0xFF80-0xFFFE")
    io_high: np.ndarray = spec(
        "bytes", zeros(IO_HIGH_BYTES), until="v15nr50", size=IO_HIGH_BYTES, doc="0xFF4C-0xFF7F"
    )


@dataclass
class TimerState:
    div: int = spec("u8", doc="PyBoy's DIV byte; DIV = div_counter >> 8 after a sync")
    tima: int = spec("u8")
    div_counter: int = spec("u16", doc="T-cycles since DIV last ticked (0..255)")
    tima_counter: int = spec("u16", doc="T-cycles since TIMA last ticked")
    tma: int = spec("u8")
    tac: int = spec("u8")
    tima_reload_state: int = spec("u8", since="v29")
    last_cycles: int = spec("u64", since="v12")
    cycles_to_interrupt: int = spec("u64", since="v14")


@dataclass
class RtcState:
    """MBC3 clock. Older layouts store only ``timezero`` (f32 up to v12), ``halt``, ``day_carry``."""

    timezero: float = spec("f64", 0.0, doc="wall time (s) when the clock read 0")
    halt: int = spec("u8")
    day_carry: int = spec("u8")
    seconds: int = spec("u8", since="v29")
    minutes: int = spec("u8", since="v29")
    hours: int = spec("u8", since="v29")
    day_low: int = spec("u8", since="v29")
    day_high: int = spec("u8", since="v29")
    halt_again: int = spec("u8", since="v29", doc="2.8 writes halt and day_carry twice")
    day_carry_again: int = spec("u8", since="v29")
    rtc_cycles: int = spec("u64", since="v29", doc="T-cycles into the current second")
    saved_at: float = spec("f64", 0.0, since="v29", doc="wall time (s) of the save")


@dataclass
class CartState:
    rom_bank: int = spec("u8", doc="PyBoy's rombank_selected (bank at 0x4000)")
    ram_bank: int = spec("u8", doc="rambank_selected (MBC3: 0x08-0x0C select an RTC register)")
    ram_enabled: int = spec("u8")
    memory_model: int = spec("u8", doc="MBC1 banking mode")
    ram: np.ndarray = spec(
        "bytes", zeros(0), size="cart_ram", doc="PyBoy's external_ram_count banks x 8 KiB"
    )
    rtc: RtcState | None = spec("struct", None, size="rtc")
    mbc1_bank_register1: int = spec("u8", size="mbc1", doc="MBC1 only: 2000-3FFF write (5 bits)")
    mbc1_bank_register2: int = spec("u8", size="mbc1", doc="MBC1 only: 4000-5FFF write (2 bits)")
    rumble_supported: int = spec("u8", since="v29", size="mbc5", doc="MBC5 only")
    rumble_enabled: int = spec("u8", since="v29", size="rumble", doc="MBC5 rumble carts only")


@dataclass
class JoypadState:
    directional: int = spec("u8", 0xF, doc="low nibble: right, left, up, down; 0 = pressed")
    standard: int = spec("u8", 0xF, doc="low nibble: A, B, select, start; 0 = pressed")


@dataclass
class SerialState:
    sb: int = spec("u8", 0xFF, since="v15")
    sc: int = spec("u8", 0x7E, since="v15")
    transfer_enabled: int = spec("u8", since="v15")
    internal_clock: int = spec("u8", since="v15")
    last_cycles: int = spec("u64", since="v15")
    cycles_to_interrupt: int = spec("u64", since="v15")
    clock: int = spec("u64", since="v15")
    clock_target: int = spec("u64", NEVER, since="v15")


@dataclass
class SgbState:
    """Super Game Boy block (PyBoy 2.8); all zero for a DMG run."""

    sgb_detected: int = spec("u8", since="v29")
    multiplayer_enabled: int = spec("u8", since="v29")
    multiplayer_players: int = spec("u8", 1, since="v29")
    mask_mode: int = spec("u8", since="v29")
    border_enabled: int = spec("u8", since="v29")
    last_command: int = spec("u8", since="v29")
    current_joypad: int = spec("u8", since="v29")
    joypad_data: np.ndarray = spec(
        "bytes", lambda: np.full(4, 0xFF, dtype=np.uint8), since="v29", size=4
    )
    border_tiles: np.ndarray = spec(
        "bytes", zeros(SGB_BORDER_TILES), since="v29", size=SGB_BORDER_TILES
    )
    border_map: np.ndarray = spec("bytes", zeros(SGB_BORDER_MAP), since="v29", size=SGB_BORDER_MAP)
    border_palettes: np.ndarray = spec(
        "bytes", zeros(SGB_BORDER_PALETTES), since="v29", size=SGB_BORDER_PALETTES
    )


@dataclass
class RendererState:
    screen: np.ndarray = field(
        default_factory=lambda: np.zeros((SCREEN_ROWS, SCREEN_COLS), dtype=np.uint32),
        metadata={"doc": "PyBoy's screen buffer (its 32-bit colour words)"},
    )
    screen_attributes: np.ndarray = field(
        default_factory=zeros(SCREEN_ROWS, SCREEN_COLS),
        metadata={"doc": "per-pixel BG/OBJ attributes (v10+; zero before)"},
    )
    wy_activated_frame: int = field(
        default=0, metadata={"doc": "window WY condition met this frame (v29)"}
    )


@dataclass(frozen=True)
class CartLayout:
    """The shape of PyBoy's cartridge block; the file does not record it, the ROM header does."""

    mbc: str = "none"  # "none", "mbc1", "mbc2", "mbc3", "mbc5"
    ram_banks: int = 1  # PyBoy's external_ram_count (1 even for carts without RAM)
    has_rtc: bool = False
    has_rumble: bool = False


@dataclass
class PyBoyState:
    """Everything a PyBoy save state holds. See the module docstring for units."""

    version: int = 29  # STATE_VERSION of the file this came from
    layout: str = "v29"
    cart_layout: CartLayout = field(default_factory=CartLayout)
    bootrom_enabled: int = 0
    key0: int = 0  # CGB registers, 0 on DMG
    key1: int = 0  # FF4D: bit 0 a speed switch armed, bit 7 the current speed
    double_speed: int = 0
    cgb: int = 0  # CGB hardware (a DMG cartridge on it too): HDMA block, 32 KiB WRAM
    hdma: HdmaState = field(default_factory=HdmaState)  # stored only on CGB hardware
    cpu: CpuState = field(default_factory=CpuState)
    oam_dma: OamDmaState = field(default_factory=OamDmaState)
    lcd: LcdState = field(default_factory=LcdState)
    sound: SoundState = field(default_factory=SoundState)
    renderer: RendererState = field(default_factory=RendererState)
    memory: MemoryState = field(default_factory=MemoryState)
    wram_select: int = 0  # CGB SVBK (FF70); older files keep it in io_high
    timer: TimerState = field(default_factory=TimerState)
    cart: CartState = field(default_factory=CartState)
    joypad: JoypadState = field(default_factory=JoypadState)
    serial: SerialState = field(default_factory=SerialState)
    sgb: SgbState = field(default_factory=SgbState)
    defaulted: tuple[str, ...] = ()  # dotted names of fields the source file did not store

    @property
    def from_cgb(self) -> bool:
        """Saved on CGB hardware, or with one of its modes set (our machines run DMG only)."""
        lcd = self.lcd
        return bool(
            self.cgb or lcd.cgb or lcd.downgraded_to_dmg or lcd.speed_shift or self.double_speed
        )


def iter_specs(cls):
    """The fields of a state dataclass that live in the file, in file order."""
    return [f for f in fields(cls) if "fmt" in f.metadata]
