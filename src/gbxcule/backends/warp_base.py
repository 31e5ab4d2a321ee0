"""Host side of the Warp emulator state: cartridge constants and the ``Machine`` allocator.

``allocate_machine`` walks the ``Machine`` struct, so a per-env scalar added to
``I32_FIELDS`` / ``I64_FIELDS`` in kernels/state.py needs no change here; a new
per-env array is declared with its trailing shape in its unit's ``Unit.arrays``. Shared arrays (the
ROM, the boot ROM) are passed in; scalar fields come from the cartridge constants
(missing scalars are 0).

Host code sees the per-env scalars by name: ``field_view(m, "pc")`` is the 1-D
``[N]`` column of ``m.i32`` (a view, so ``.numpy()``, ``.assign()`` and
``.zero_()`` work on it), and ``per_env_arrays`` lists every per-env field that
way, in ``I32_FIELDS`` / ``I64_FIELDS`` order.

Every per-env block (``mem``, the scalar blocks ``i32``/``i64``, the sound unit's row, the
MBC3 clock, the serial ring, the joypad queue, the line latches, the frame's VRAM/OAM and
its write log) can be laid out env-major (``[N, k]``, one contiguous row per env: best on
the CPU, where a worker thread owns a slice of envs) or interleaved (storage ``[k, N]``,
or ``[k1, k2, N]``, viewed as ``[N, k]`` with permuted strides, so lanes touching the
same address or field sit next to each other: the layout that coalesces on a GPU, and
the CUDA backend's default); kernels index them the same way either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from gbxcule.core import pixels as px
from gbxcule.core.cartridge import (
    CGB_FLAG_OFFSET,
    RAM_BANK_SIZE,
    CartridgeError,
    CartridgeHeader,
)
from gbxcule.core.memory_layout import CGB_BYTES, CGB_WRAMX_EXTRA, row_bytes
from gbxcule.kernels.board.mbc import MBC_KIND_BY_NAME
from gbxcule.kernels.state import I32_FIELDS, I64_FIELDS, ROM_CODE_PAD

MEM_LAYOUTS = ("env_major", "interleaved")
SHARED_FIELDS = ("rom", "rom_code", "boot")
LOGO_RANGE = (0x0104, 0x0134)
MBC_KIND = MBC_KIND_BY_NAME  # mapper name -> kernels/board/mbc.py kind
MBC2_RAM_BYTES = 512


CACHE_LINE_BYTES = 64
SCALAR_BLOCKS = ("i32", "i64")  # Machine fields holding one column per per-env scalar


def trailing_shapes(cgb: bool = False) -> dict[str, tuple[int, ...]]:
    """Trailing shape (after the env axis) of every per-env array with more than one
    dimension: the scalar blocks (the named columns, then the event-hook row,
    kernels/step/hooks.py, and the step-end row, kernels/step/step_end.py: not state, not listed),
    then each unit's own arrays (``Unit.arrays``, kernels/units.py); ``cgb``: a Game Boy
    Color machine's (``Machine.cgb`` a full row)."""
    from gbxcule.kernels.step.hooks import HOOK_WORDS
    from gbxcule.kernels.step.step_end import STEP_WORDS
    from gbxcule.kernels.units import per_env_arrays

    return {
        "i32": (len(I32_FIELDS) + int(HOOK_WORDS) + int(STEP_WORDS),),
        "i64": (len(I64_FIELDS),),
        **per_env_arrays(),
        **(_CGB_SHAPES if cgb else {}),
    }


# A Game Boy Color machine's rows that differ: the CGB state, and the renderer's frame
# snapshot and write log with VRAM bank 1 and the palettes (core/pixels.py)
_CGB_SHAPES = {
    "cgb": (CGB_BYTES,),
    "frame_video": (px.FRAME_VIDEO_BYTES_CGB,),
    "video_log": (px.VIDEO_LOG_WORDS_CGB,),
}


class UnsupportedCartridgeError(CartridgeError):
    """The ROM is valid but uses hardware the Warp emulator does not implement."""


@dataclass(frozen=True)
class CartConfig:
    """What the kernels need to know about the cartridge (Machine's scalar fields)."""

    mbc_kind: int
    rom_banks: int
    ram_banks: int  # 8 KiB banks backed per env (PyBoy's external_ram_count)
    cart_ram_bytes: int  # bytes of cart RAM in each env's mem row
    has_rtc: int
    mbc1_multicart: int
    mbc30: int

    def scalars(self) -> dict[str, int]:
        return {
            "mbc_kind": self.mbc_kind,
            "rom_banks": self.rom_banks,
            "ram_banks": self.ram_banks,
            "has_rtc": self.has_rtc,
            "mbc1_multicart": self.mbc1_multicart,
            "mbc30": self.mbc30,
        }


def cart_config(
    rom: bytes, *, allow_bad_logo: bool = False, allow_cgb_only: bool = False
) -> tuple[CartridgeHeader, CartConfig]:
    """Validate ``rom`` and derive the kernel constants; raises ``CartridgeError`` subclasses.
    ``allow_bad_logo`` accepts a wrong logo or header checksum, as PyBoy does;
    ``allow_cgb_only`` a Game Boy Color only game (for a Color machine)."""
    header = CartridgeHeader.parse(
        rom, allow_bad_logo=allow_bad_logo, allow_cgb_only=allow_cgb_only
    )
    if header.mbc not in MBC_KIND:
        raise UnsupportedCartridgeError(
            f"cartridge type ${header.cart_type:02X} ({header.cart_type_name}) is not supported; "
            f"supported mappers: {', '.join(sorted(MBC_KIND))}"
        )
    kind = MBC_KIND[header.mbc]
    # PyBoy backs every cart with at least one 8 KiB RAM bank (its table maps "no RAM" to 1).
    ram_banks = max(1, header.ram_banks)
    if kind == MBC_KIND["none"]:
        ram_bytes = 0
    elif kind == MBC_KIND["mbc2"]:
        ram_bytes = MBC2_RAM_BYTES
    else:
        ram_bytes = ram_banks * RAM_BANK_SIZE
    multicart = 0
    if kind == MBC_KIND["mbc1"] and header.rom_banks == 64:
        logo = rom[LOGO_RANGE[0] : LOGO_RANGE[1]]
        banks = range(1, header.rom_banks)
        multicart = int(
            all(rom[k * 0x4000 + LOGO_RANGE[0] : k * 0x4000 + LOGO_RANGE[1]] == logo for k in banks)
        )
    mbc30 = int(kind == MBC_KIND["mbc3"] and (ram_banks > 4 or header.rom_banks > 128))
    return header, CartConfig(
        mbc_kind=kind,
        rom_banks=header.rom_banks,
        ram_banks=ram_banks,
        cart_ram_bytes=ram_bytes,
        has_rtc=int(header.has_timer),
        mbc1_multicart=multicart,
        mbc30=mbc30,
    )


def rom_code_words(rom: np.ndarray) -> np.ndarray:
    """int32 ``[ROM_CODE_PAD + len(rom)]`` (``Machine.rom_code``): at ``ROM_CODE_PAD + k`` the
    ROM's bytes ``k``, ``k+1``, ``k+2`` packed little-endian, zeros past the end; before
    them ``ROM_CODE_PAD`` copies of word 0 (kernels/cpu/fetch.py, ``rom_code_at``)."""
    r = np.concatenate([np.asarray(rom, dtype=np.uint8).astype(np.int32), np.zeros(2, np.int32)])
    words = r[:-2] | (r[1:-1] << 8) | (r[2:] << 16)
    return np.concatenate([np.full(ROM_CODE_PAD, words[0], np.int32), words])


def allocate_machine(
    num_envs: int,
    *,
    rom: np.ndarray,
    boot: np.ndarray,
    cart: CartConfig,
    device: str,
    mem_layout: str = "env_major",
    cpu_fast_paths: bool = True,
    cgb: bool = False,
):
    """A ``Machine`` with every per-env array zeroed, ``rom``/``boot`` shared by all envs;
    ``cpu_fast_paths`` sets ``Machine.cpu_fast_paths``; ``cgb``: a Game Boy Color machine
    (``Machine.cgb`` rows of ``CGB_BYTES``, ``cgb_mode`` from the cartridge's flag)."""
    from gbxcule.kernels.state import Machine

    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if mem_layout not in MEM_LAYOUTS:
        raise ValueError(f"mem_layout must be one of {MEM_LAYOUTS}, got {mem_layout!r}")
    check_room_for_envs(num_envs, bytes_per_env(cart, cgb=cgb), device)
    m = Machine()
    shapes = trailing_shapes(cgb=cgb)
    colour = bool(cgb) and rom.size > CGB_FLAG_OFFSET and bool(rom[CGB_FLAG_OFFSET] & 0x80)
    scalars = {
        **cart.scalars(),
        "cpu_fast_paths": int(bool(cpu_fast_paths)),
        "cgb_mode": int(colour),
    }
    shared = {"rom": rom, "rom_code": rom_code_words(rom), "boot": boot}
    for name, var in Machine.vars.items():
        vtype = var.type
        if name in SHARED_FIELDS:
            setattr(m, name, wp.array(shared[name], dtype=vtype.dtype, device=device))
        elif not hasattr(vtype, "ndim"):
            setattr(m, name, scalars.get(name, 0))
        elif vtype.ndim == 1:
            setattr(m, name, wp.zeros(num_envs, dtype=vtype.dtype, device=device))
        else:
            if name == "mem":
                trailing: tuple[int, ...] = (mem_row_bytes(cart, cgb),)
            elif name in shapes:
                trailing = shapes[name]
            else:
                raise KeyError(
                    f"Machine.{name} is a {vtype.ndim}-D per-env array no unit owns; declare "
                    "it in its unit's Unit.arrays (kernels/units.py)"
                )
            interleaved = mem_layout == "interleaved"  # every per-env block, env axis last
            setattr(m, name, _per_env_zeros(num_envs, trailing, vtype.dtype, device, interleaved))
    return m


def mem_row_bytes(cart: CartConfig, cgb: bool = False) -> int:
    """One env's ``mem`` row: the address map's, plus WRAM banks 2-7 on a Game Boy Color
    machine (``core/memory_layout.py``)."""
    return row_bytes(cart.cart_ram_bytes) + (CGB_WRAMX_EXTRA if cgb else 0)


def bytes_per_env(cart: CartConfig, cgb: bool = False) -> int:
    """The bytes one env's state takes (every per-env array of the ``Machine``)."""
    from gbxcule.kernels.state import Machine

    shapes = {**trailing_shapes(cgb=cgb), "mem": (mem_row_bytes(cart, cgb),)}
    total = 0
    for name, var in Machine.vars.items():
        if name in SHARED_FIELDS or not hasattr(var.type, "ndim"):
            continue
        items = int(np.prod(shapes.get(name, ()), dtype=np.int64))
        total += items * wp.types.type_size_in_bytes(var.type.dtype)
    return total


def free_bytes(device: str) -> int | None:
    """Memory free for new arrays on ``device`` (Linux's MemAvailable on the host, the
    driver's free memory on a GPU), or None where it cannot be told."""
    if str(device).startswith("cuda"):
        free = getattr(wp.get_device(device), "free_memory", None)
        return int(free) if free is not None else None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_room_for_envs(num_envs: int, per_env: int, device: str) -> None:
    """Refuse, with the numbers, envs whose state alone would not fit in free memory
    (before allocating: a failed allocation of millions of envs took seconds and ended in
    a raw traceback)."""
    free = free_bytes(device)
    need = num_envs * per_env
    if free is not None and need > free:
        gib = 1 << 30
        raise ValueError(
            f"{num_envs:,} envs need {need / gib:,.1f} GiB for their emulator state alone "
            f"({per_env:,} B each) and {device} has {free / gib:,.1f} GiB free: use fewer envs"
        )


def _per_env_zeros(num_envs: int, trailing: tuple[int, ...], dtype, device: str, interleaved: bool):
    """Zeroed ``[num_envs, *trailing]``: interleaved (storage ``[*trailing, N]``, viewed with
    the env axis first), or env-major with each env's row padded to whole cache lines, so
    worker threads that own neighbouring envs never write to the same line (false sharing
    made 2 envs on 2 threads slower than 1)."""
    if interleaved:
        storage = wp.zeros((*trailing, num_envs), dtype=dtype, device=device)
        return storage.transpose((len(trailing), *range(len(trailing))))
    if len(trailing) != 1:
        return wp.zeros((num_envs, *trailing), dtype=dtype, device=device)
    (cols,) = trailing
    per_line = max(1, CACHE_LINE_BYTES // wp.types.type_size_in_bytes(dtype))
    padded = -(-cols // per_line) * per_line
    arr = wp.zeros((num_envs, padded), dtype=dtype, device=device)
    return arr if padded == cols else arr[:, :cols]


def per_env_arrays(m) -> list[tuple[str, wp.array]]:
    """Every per-env field of ``m`` by name (env axis first), shared ones excluded.

    The scalar blocks are listed column by column (``("pc", m.i32[:, PC])``, ...), so
    each entry is one field as host code knows it.
    """
    from gbxcule.kernels.state import Machine

    out = []
    for name, var in Machine.vars.items():
        if name in SHARED_FIELDS or not hasattr(var.type, "ndim"):
            continue
        block = getattr(m, name)
        if name in SCALAR_BLOCKS:
            fields = I32_FIELDS if name == "i32" else I64_FIELDS
            out.extend((field, block[:, k]) for k, field in enumerate(fields))
        else:
            out.append((name, block))
    return out


def field_view(m, name: str) -> wp.array:
    """The per-env field ``name`` of every env: ``[N, ...]``, a view into ``m`` (no copy)."""
    from gbxcule.kernels.state import I32_FIELDS, I64_FIELDS

    if name in I32_FIELDS:
        return m.i32[:, I32_FIELDS.index(name)]
    if name in I64_FIELDS:
        return m.i64[:, I64_FIELDS.index(name)]
    if (
        name in SHARED_FIELDS
        or name in SCALAR_BLOCKS
        or not isinstance(getattr(m, name, None), wp.array)
    ):
        raise KeyError(f"{name!r} is not a per-env field of Machine")
    return getattr(m, name)


def machine_envs(m) -> int:
    """How many envs ``m`` holds."""
    return int(m.mem.shape[0])


def slice_machine(m, lo: int, hi: int):
    """A ``Machine`` viewing envs ``[lo, hi)`` of ``m`` (no copy): env ``lo`` becomes index 0."""
    from gbxcule.kernels.state import Machine

    view = Machine()
    for name, var in Machine.vars.items():
        value = getattr(m, name)
        if name in SHARED_FIELDS or not hasattr(var.type, "ndim"):
            setattr(view, name, value)
        else:
            setattr(view, name, value[lo:hi])
    return view
