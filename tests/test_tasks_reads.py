"""Task RAM reads: every decode kind against hand-computed values, every region a task can
read gathered on the device as the CPU sees it, and specific errors for the rest."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.asm import build_rom
from gbxcule.backends.ram_gather import HostRamGather
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.tasks import (
    BCD,
    S8,
    S16,
    U8,
    U16,
    U24,
    Bit,
    BitCount,
    Digits,
    Lookup,
    ReadError,
)
from gbxcule.tasks.memory import TaskMemory

from .support.backend_api_support import write_rom

pytestmark = pytest.mark.l1


def DeviceMemory(backend, reads):  # noqa: N802 - the backend's own gather
    return TaskMemory(backend, reads)


def HostMemory(backend, reads):  # noqa: N802 - read_memory calls, on any backend
    return TaskMemory(backend, reads, bind=lambda addrs: HostRamGather(backend, addrs))


def _decode(read, rows: list[list[int]]) -> list[int]:
    raw = torch.tensor(rows, dtype=torch.int64)
    return read.value({s: raw for s in read.sources()}).tolist()


def test_every_decode_kind():
    assert _decode(U8(0xC000), [[0x00], [0xFF]]) == [0, 255]
    assert _decode(U16(0xC000), [[0x34, 0x12]]) == [0x1234]
    assert _decode(U16(0xC000, "big"), [[0x34, 0x12]]) == [0x3412]
    assert _decode(U24(0xC000), [[1, 2, 3]]) == [0x030201]
    assert _decode(S8(0xC000), [[0x7F], [0x80], [0xFF]]) == [127, -128, -1]
    assert _decode(S16(0xC000), [[0xFE, 0xFF]]) == [-2]
    assert _decode(BCD(0xC000, 3), [[0x01, 0x23, 0x45]]) == [12345]
    assert _decode(BCD(0xC000, 2, "little"), [[0x45, 0x23]]) == [2345]
    assert _decode(BCD(0xC000, 1), [[0xAF]]) == [99]  # a nibble above 9 counts as 9
    # the falling-block puzzle's score: a digit a byte, 0x80 for a leading blank
    six = Digits(0xC000, 6, blank=(0x80,))
    assert _decode(six, [[0x80, 0x80, 1, 2, 0, 7], [9, 9, 9, 9, 9, 9]]) == [1207, 999999]
    tiles = Digits(0xC000, 3, offset=0x30)
    assert _decode(tiles, [[0x31, 0x30, 0x39], [0x20, 0x35, 0x35]]) == [109, 55]
    assert _decode(BitCount(0xD700, 3), [[0xFF, 0x01, 0x80], [0, 0, 0]]) == [10, 0]
    assert _decode(Bit(0xD700, 7), [[0x80], [0x7F]]) == [1, 0]
    table = Lookup(U8(0xD35E), {1: 10, 2: 20}, default=-1)
    assert _decode(table, [[1], [2], [3]]) == [10, 20, -1]


def test_bad_reads_are_refused_with_what_is_wrong():
    for make, match in (
        (lambda: U8(0x10000), "16-bit address space"),
        (lambda: U16(0xC000, "middle"), "endian"),
        (lambda: U8(True), "int or a symbol"),
        (lambda: BitCount(0xC000, 0), "size must be >= 1"),
        (lambda: Bit(0xC000, 8), "bit must be 0..7"),
        (lambda: BCD(0xC000, 10), "does not fit int64"),
        (lambda: Digits(0xC000, 2, blank=(256,)), "byte values"),
        (lambda: Lookup(0xC000, {1: 2}), "needs a Read"),
        (lambda: U8(0xA000, bank=-1), "bank"),
    ):
        with pytest.raises(ReadError, match=match):
            make()


# A cartridge with 4 banks of RAM, each stamped, bank 2 mapped and RAM enabled at the end;
# WRAM, echo, VRAM, OAM and HRAM hold known bytes too.
SOURCE = """
SECTION "main", ROM0[$0150]
Main:
    di
    ld a, $0A
    ld [$0000], a          ; cart RAM on
    ld b, 0
.bank:
    ld a, b
    ld [$4000], a          ; RAM bank b
    add a, $B0
    ld [$A010], a          ; bank k holds $B0 + k at $A010
    inc b
    ld a, b
    cp 4
    jr nz, .bank
    ld a, 2
    ld [$4000], a          ; bank 2 mapped
    ld a, $34
    ld [$C123], a
    ld a, $12
    ld [$C124], a
    ld a, $77
    ldh [$FF90], a
    xor a
    ldh [$FF40], a         ; LCD off: VRAM and OAM are writable
    ld a, $5A
    ld [$8001], a
    ld a, $A5
    ld [$FE03], a
    ld a, $21
    ldh [$FF43], a         ; SCX
    ld a, $37
    ldh [$FF42], a         ; SCY
    ld a, $57
    ldh [$FF4B], a         ; WX
Done:
    nop
    jr Done
"""


@pytest.fixture(scope="module")
def banked(tmp_path_factory):
    rom = build_rom(SOURCE, cart_type="MBC5+RAM+BATTERY", rom_banks=2, ram_banks=4)
    path = write_rom(tmp_path_factory.mktemp("reads"), "banked.gb", rom)
    b = WarpVecCpuBackend(str(path), num_envs=2, threads=1, frames_per_step=4)
    b.reset()
    b.step(np.zeros(2, dtype=np.int64))
    yield b
    b.close()


def test_device_gather_reads_every_region_as_the_cpu_sees_it(banked):
    reads = {
        "wram": U16(0xC123),
        "echo": U16(0xE123),
        "hram": U8(0xFF90),
        "vram": U8(0x8001),
        "oam": U8(0xFE03),
        "mapped": U8(0xA010),
        "bank3": U8(0xA010, bank=3),
        "camera": U16(0xFF42, "big"),  # SCY then SCX
        "wx": U8(0xFF4B),
    }
    mem = DeviceMemory(banked, reads.values())
    raws = mem.gather()
    got = {k: r.value(raws).tolist() for k, r in reads.items()}
    assert got == {
        "wram": [0x1234] * 2,
        "echo": [0x1234] * 2,
        "hram": [0x77] * 2,
        "vram": [0x5A] * 2,
        "oam": [0xA5] * 2,
        "mapped": [0xB2] * 2,
        "bank3": [0xB3] * 2,
        "camera": [0x3721] * 2,
        "wx": [0x57] * 2,
    }
    for k, r in reads.items():  # the device gather equals the CPU's bus reads
        if r.bank is None:
            order = "big" if k == "camera" else "little"
            assert got[k][0] == int.from_bytes(
                banked.read_memory(0, r.where, r.where + r.size), order
            ), k
    # mapped bank follows the mapper per env; cart RAM disabled reads 0xFF, as the bus does
    banked.write_memory(1, 0x4000, 1)
    banked.write_memory(0, 0x0000, 0x00)
    assert mem.gather()[reads["mapped"]].flatten().tolist() == [0xFF, 0xB1]
    assert banked.read_memory(0, 0xA010, 0xA011).tolist() == [0xFF]
    banked.write_memory(0, 0x0000, 0x0A)
    banked.write_memory(1, 0x4000, 2)


def test_host_reads_equal_the_device_gather(banked, monkeypatch):
    calls = []
    real = banked.read_memory
    monkeypatch.setattr(banked, "read_memory", lambda *a: calls.append(a) or real(*a))
    for reads, per_env in (
        ([U16(0xC123), U8(0xFF90), U8(0xA010)], 3),  # far apart: a call per read
        ([U16(0xC123), U8(0xC200), BitCount(0xC100, 4)], 1),  # one span: a call an env
        ([U8(0xFE00), U8(0xFF90)], 2),  # OAM and HRAM: no span over the IO page between
    ):
        calls.clear()
        dev, host = DeviceMemory(banked, reads).gather(), HostMemory(banked, reads).gather()
        assert len(calls) == per_env * banked.num_envs
        for r in reads:
            assert torch.equal(dev[r], host[r])
    with pytest.raises(ReadError, match="Warp backends only"):
        HostMemory(banked, [U8(0xA010, bank=1)])


def test_reads_outside_ram_are_refused_by_region(banked):
    for read, match in (
        (U8(0xFEA0), "not usable"),
        (U16(0xFF7F), "one region"),  # the last IO register, then HRAM
        (U8(0x4000), "ROM does not change"),
        (U16(0xDFFF), "one region"),
        (U8(0xA010, bank=4), "4 bank"),
        (U8(0xC000, bank=1), "applies to cartridge RAM"),
    ):
        with pytest.raises(ReadError, match=match):
            DeviceMemory(banked, [read])


def test_computed_io_registers_read_as_pyboy_reads_them(demo):
    """DIV, TIMA, STAT, LY (with the stored LYC), IF, P1, NR52 and IE: the device gather
    (one bus-read launch) equals PyBoy's ``memory[addr]`` at every step, and the reads'
    side effects (STAT's one-shot override, the sound unit's sync) leave both machines
    equal after it."""
    from gbxcule.backends.pyboy_backend import PyBoySingleBackend

    reads = [U8(0xFF04), U8(0xFF05), U8(0xFF41), U16(0xFF44), U8(0xFF0F), U8(0xFF00),
             U8(0xFF26), U8(0xFFFF), U8(0xC100)]  # fmt: skip
    ours = WarpVecCpuBackend(str(demo), num_envs=2, threads=1)
    ref = PyBoySingleBackend(str(demo), num_envs=2)
    try:
        dev, host = DeviceMemory(ours, reads), HostMemory(ref, reads)
        rng = np.random.default_rng(9)
        seen = set()
        for step in range(25):
            acts = rng.integers(0, 7, 2)
            ours.step(acts)
            ref.step(acts)
            a, b = dev.gather(), host.gather()
            for r in reads:
                assert torch.equal(a[r].cpu(), b[r]), (step, r)
            seen.add(int(a[reads[0]][0, 0]))
            for e in range(2):
                assert ours.get_cpu_state(e) == ref.get_cpu_state(e), step
                io = ours.read_memory(e, 0xFF00, 0xFF80), ref.read_memory(e, 0xFF00, 0xFF80)
                assert np.array_equal(*io), step
        assert len(seen) > 5  # DIV moves
    finally:
        ours.close()
        ref.close()


def test_symbols_name_reads_and_a_cart_ram_symbol_reads_its_own_bank(demo):
    from gbxcule.demo import game

    b = WarpVecCpuBackend(str(demo), num_envs=1, threads=1)
    try:
        b.step(np.zeros(1, dtype=np.int64))
        sym = next(n for n, s in b.symbols.items() if s.address == game.W_SCORE)
        raws = DeviceMemory(b, [U16(sym), U16(game.W_SCORE)]).gather()
        assert torch.equal(raws[U16(sym)], raws[U16(game.W_SCORE)])
        with pytest.raises(KeyError):
            DeviceMemory(b, [U8("no_such_symbol")])
    finally:
        b.close()
