"""Actions from NumPy/Torch/Warp, RAM views on the device, symbols from .sym files.

Host actions (NumPy, CPU tensors) are range-checked before anything runs; actions that
live on the device (Warp arrays here, CUDA tensors on a GPU) are checked for dtype,
shape and device on the host, for range by the kernel: a bad id presses nothing and is
raised by a later call. RAM views share the emulator's memory (no copy, stable pointer).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from bench.roms.build import get_rom
from gbxcule.asm import assemble
from gbxcule.backends.device_inputs import ActionDeviceError
from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core import memory_layout as ml
from gbxcule.core.actions import ActionDtypeError, ActionRangeError, ActionShapeError
from gbxcule.core.symbols import SymbolError, SymbolTable, UnknownSymbolError
from gbxcule.demo.asm import game_source
from gbxcule.demo.game import W_PLAYER_X, W_SCORE

from .support.backend_api_support import write_rom

pytestmark = pytest.mark.api

N = 3
PACE = {"frames_per_step": 4, "release_after_frames": 2}


@pytest.fixture
def backend(demo):
    with WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as b:
        yield b


def cpu_states(b):
    return [b.get_cpu_state(e) for e in range(b.num_envs)]


# ---- actions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda a: torch.tensor(a, dtype=torch.int64),
        lambda a: torch.tensor(a, dtype=torch.int32),
        lambda a: torch.tensor(a, dtype=torch.uint8),
        lambda a: wp.array(np.array(a, dtype=np.int32), dtype=wp.int32, device="cpu"),
        lambda a: wp.array(np.array(a, dtype=np.int64), dtype=wp.int64, device="cpu"),
    ],
    ids=["torch-int64", "torch-int32", "torch-uint8", "warp-int32", "warp-int64"],
)
def test_actions_from_torch_and_warp_equal_numpy(demo, make):
    plan = np.random.default_rng(1).integers(0, 7, size=(8, N))
    with (
        WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as ref,
        WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as dut,
    ):
        for row in plan:
            ref.step(row)
            dut.step(make(row.tolist()))
        assert cpu_states(ref) == cpu_states(dut)
        assert np.array_equal(ref.wram_torch().numpy(), dut.wram_torch().numpy())


def test_host_actions_are_checked_before_anything_runs(backend):
    start = cpu_states(backend)
    bad = [
        (np.array([0, 7, 1]), ActionRangeError, "action 7 for env 1"),
        (np.array([0, -1, 1]), ActionRangeError, "action -1"),
        (np.array([0.0, 1.0, 2.0]), ActionDtypeError, "integer"),
        (np.array([True, False, True]), ActionDtypeError, "integer"),
        (np.array([0, 1]), ActionShapeError, r"shape \(3,\)"),
        (torch.tensor([0, 1, 9]), ActionRangeError, "action 9"),
        (torch.tensor([0.0, 1.0, 2.0]), ActionDtypeError, "integer"),
        (torch.zeros((3, 1), dtype=torch.int64), ActionShapeError, "shape"),
    ]
    for actions, exc, message in bad:
        with pytest.raises(exc, match=message):
            backend.step(actions)
    assert cpu_states(backend) == start


def test_device_actions_are_checked_for_dtype_shape_and_device(backend):
    start = cpu_states(backend)
    bad = [
        (wp.zeros(N, dtype=wp.float32, device="cpu"), ActionDtypeError, "integer"),
        (wp.zeros(N, dtype=wp.int16, device="cpu"), ActionDtypeError, "int32, int64"),
        (wp.zeros(N + 1, dtype=wp.int32, device="cpu"), ActionShapeError, "shape"),
        (torch.zeros(N, dtype=torch.int64, device="meta"), ActionDeviceError, "on meta"),
        (torch.zeros(N, dtype=torch.bool, device="meta"), ActionDeviceError, "on meta"),
    ]
    for actions, exc, message in bad:
        with pytest.raises(exc, match=message):
            backend.step(actions)
    assert cpu_states(backend) == start


def test_device_action_out_of_range_presses_nothing_and_raises_later(demo):
    """Env 1 gets id 9 on the device: it runs that step with no buttons, the others as
    asked; the next step() raises ActionRangeError, once."""
    plan = np.random.default_rng(2).integers(0, 7, size=(4, N))
    with (
        WarpVecCpuBackend(demo, num_envs=N, threads=1, action_codec="buttons", **PACE) as ref,
        WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as dut,
    ):
        codec_masks = dut.codec.mask_table
        for k, row in enumerate(plan):
            masks = codec_masks[row].astype(np.int64)
            ids = row.astype(np.int32)
            if k == 2:
                masks[1], ids[1] = 0, 9
            ref.step(masks)
            if k == 3:
                with pytest.raises(ActionRangeError, match="out-of-range action ids .*: 1 found"):
                    dut.step(wp.array(ids, dtype=wp.int32, device="cpu"))
                dut.step(wp.array(ids, dtype=wp.int32, device="cpu"))
            else:
                dut.step(wp.array(ids, dtype=wp.int32, device="cpu"))
        assert cpu_states(ref) == cpu_states(dut)
        dut.check_errors()  # already reported
        dut.step(wp.array(np.array([0, 0, 12], np.int32), dtype=wp.int32, device="cpu"))
        with pytest.raises(ActionRangeError, match="env 2"):
            dut.check_errors()


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "2"])
def test_bad_thread_counts_are_refused(demo, threads):
    with pytest.raises(ValueError, match=f"threads must be an int >= 1, got {threads!r}"):
        WarpVecCpuBackend(demo, num_envs=N, threads=threads, **PACE)


def test_thread_count_accepts_numpy_ints(demo):
    with WarpVecCpuBackend(demo, num_envs=N, threads=np.int64(2), **PACE) as w:
        assert w.threads == 2 and type(w.threads) is int


# ---- RAM views ------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_a_closed_backend_refuses_to_run(demo, threads):
    w = WarpVecCpuBackend(demo, num_envs=N, threads=threads, render_pixels=True, **PACE)
    w.step(np.zeros(N, dtype=np.int64))
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.step(np.zeros(N, dtype=np.int64))
    with pytest.raises(RuntimeError, match="closed"):
        w.render_pixels_snapshot_to_torch(torch.zeros(N * 72 * 80, dtype=torch.uint8))


@pytest.mark.parametrize("layout", ["env_major", "interleaved"])
def test_ram_views_are_zero_copy_and_stable(demo, layout):
    with WarpVecCpuBackend(demo, num_envs=N, threads=1, mem_layout=layout, **PACE) as b:
        wram, hram, cart = b.wram_torch(), b.hram_torch(), b.cart_ram_torch()
        assert wram.shape == (N, 8192) and hram.shape == (N, 127) and cart.shape == (N, 0)
        assert wram.dtype == torch.uint8
        row = b.mem_torch().shape[1]
        assert wram.stride() == ((row, 1) if layout == "env_major" else (1, N))
        mem_ptr = b.machine.mem.ptr
        assert wram.data_ptr() == mem_ptr + ml.WRAM_OFF * wram.stride(1)
        assert hram.data_ptr() == mem_ptr + ml.HRAM_OFF * hram.stride(1)
        pointers = (wram.data_ptr(), hram.data_ptr())
        rng = np.random.default_rng(3)
        for _ in range(5):
            b.step(rng.integers(0, 7, size=N))
            assert b.wram_torch() is wram and (wram.data_ptr(), hram.data_ptr()) == pointers
            for e in range(N):
                assert np.array_equal(wram[e].numpy(), b.read_memory(e, 0xC000, 0xE000))
                assert np.array_equal(hram[e].numpy(), b.read_memory(e, 0xFF80, 0xFFFF))
        b.write_memory(1, 0xC123, 0x5A)
        b.write_memory(2, 0xFF90, 0xA5)
        assert int(wram[1, 0x123]) == 0x5A and int(hram[2, 0x10]) == 0xA5
        wram[0, 0x456] = 0x77  # the other way: a view write is what the CPU reads
        assert b.read_memory(0, 0xC456, 0xC457)[0] == 0x77


def test_cart_ram_view_holds_every_bank(tmp_path):
    from .support.backend_api_support import zoo_rom

    path = write_rom(tmp_path, "zoo.gb", zoo_rom())
    with WarpVecCpuBackend(path, num_envs=2, threads=1, **PACE) as b:
        cart = b.cart_ram_torch()
        assert cart.shape == (2, 4 * 0x2000)
        for _ in range(6):
            b.step(np.zeros(2, dtype=np.int64))
        from gbxcule.core.savestate import load_pyboy_state

        exported = load_pyboy_state(b.export_pyboy_state(1), zoo_rom()).cart.ram
        assert np.array_equal(cart[1].numpy(), exported)
        assert cart[1].numpy().any()


# ---- symbols ----------------------------------------------------------------------------


def test_sym_parsing():
    text = "; rgblink\n[labels]\n00:C100 wPlayerX\n01:4000 Far ; comment\n00:C100 wPlayerX\n"
    table = SymbolTable.parse(text)
    assert len(table) == 2 and table["Far"].bank == 1 and table.address("wPlayerX") == 0xC100
    with pytest.raises(SymbolError, match="<string>:2: expected"):
        SymbolTable.parse("00:C100 a\nC100 b\n")
    with pytest.raises(SymbolError, match="defined twice"):
        SymbolTable.parse("00:C100 a\n00:C101 a\n")
    with pytest.raises(UnknownSymbolError, match="'nope' is not in"):
        table["nope"]
    with pytest.raises(KeyError):
        table.address("nope")


def test_symbols_on_the_backend(backend, demo):
    program = assemble(game_source())
    assert backend.symbol("wPlayerX") == W_PLAYER_X == program.symbols["wPlayerX"]
    assert backend.symbol("wScore") == W_SCORE
    rng = np.random.default_rng(4)
    for _ in range(6):
        backend.step(rng.integers(0, 7, size=N))
    all_x = backend.read_symbol("wPlayerX")
    assert all_x.shape == (N, 1)
    for e in range(N):
        assert all_x[e, 0] == backend.read_memory(e, W_PLAYER_X, W_PLAYER_X + 1)[0]
        assert np.array_equal(
            backend.read_symbol("wScore", e, size=2), backend.read_memory(e, W_SCORE, W_SCORE + 2)
        )
    main = program.symbols["Main"]
    assert np.array_equal(
        backend.read_symbol("Main", 0, size=3), backend.read_memory(0, main, main + 3)
    )
    view = backend.symbol_torch("wPlayerX")
    assert view.shape == (N, 1) and np.array_equal(view.numpy(), all_x)
    with pytest.raises(UnknownSymbolError, match="'wNope'"):
        backend.symbol("wNope")
    with pytest.raises(ValueError, match="no device view"):
        backend.symbol_torch("Main")
    with pytest.raises(IndexError):
        backend.read_symbol("wPlayerX", N)
    with pytest.raises(ValueError, match="size"):
        backend.read_symbol("wPlayerX", 0, size=0)


def test_missing_symbol_file(tmp_path):
    path = write_rom(tmp_path, "nosym.gb", get_rom("demo_game").build())
    with WarpVecCpuBackend(path, num_envs=1, threads=1, **PACE) as b:
        with pytest.raises(FileNotFoundError, match="nosym.sym"):
            b.symbol("wPlayerX")
    with WarpVecCpuBackend(path, num_envs=1, threads=1, sym_path=tmp_path / "x.sym", **PACE) as b:
        with pytest.raises(FileNotFoundError, match="x.sym"):
            b.symbol("wPlayerX")


def test_recorded_step_launches_follow_a_changed_pacing(demo):
    """step() replays recorded launches; changing frames_per_step afterwards must still
    run that many frames (the launches are recorded again)."""
    w = WarpVecCpuBackend(demo, num_envs=1, threads=1, frames_per_step=2, release_after_frames=1)
    frame = 70224
    for _ in range(10):  # past the boot's partial frame and the game's LCD-off set-up
        w.step(np.zeros(1, dtype=np.int64))
    c0 = w.get_cpu_state(0)["cycles"]
    w.step(np.zeros(1, dtype=np.int64))
    c1 = w.get_cpu_state(0)["cycles"]
    w.frames_per_step = 4
    w.step(np.zeros(1, dtype=np.int64))
    c2 = w.get_cpu_state(0)["cycles"]
    assert abs((c1 - c0) - 2 * frame) < 100
    assert abs((c2 - c1) - 4 * frame) < 100
    w.close()


def test_write_memory_data_forms_and_refusals(demo):
    with WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as b:
        b.write_memory(0, 0xC200, [1, 2, 3])
        b.write_memory(0, 0xC203, bytearray(b"\x04"))
        b.write_memory(0, 0xC204, np.uint8(5))
        b.write_memory(0, 0xC205, torch.tensor([6, 7], dtype=torch.uint8))
        assert b.read_memory(0, 0xC200, 0xC207).tolist() == [1, 2, 3, 4, 5, 6, 7]
        for bad, error, match in [
            ("ab", TypeError, "got str"),
            (True, TypeError, "got bool"),
            ([1.5], TypeError, "integer data"),
            ([1, 256], ValueError, "0..255"),
            (-1, ValueError, "0..255"),
        ]:
            with pytest.raises(error, match=match):
                b.write_memory(0, 0xC000, bad)
        with pytest.raises(ValueError, match="memory range"):
            b.write_memory(0, 0xFFFF, b"\x01\x02")
        assert (
            b.read_memory(0, 0xC000, 0xC002).tolist() == b.read_memory(1, 0xC000, 0xC002).tolist()
        )


@pytest.mark.parametrize("seed", ["1", 1.0, True])
def test_seeds_must_be_ints(demo, seed):
    with WarpVecCpuBackend(demo, num_envs=N, threads=1, **PACE) as b:
        with pytest.raises(TypeError, match="seed must be an int or None"):
            b.reset(seed=seed)
        b.reset(seed=np.int64(3))
        b.capture_start_state(0)
        b.capture_start_state(1)
        with pytest.raises(TypeError, match="seed must be an int or None"):
            b.reset_envs(np.ones(N, dtype=bool), seed=seed)


@pytest.mark.parametrize("device", ["cuda:0", "cuda"])
def test_cpu_backend_refuses_another_device(demo, device):
    with pytest.raises(ValueError, match="WarpVecCpuBackend runs on device 'cpu'"):
        WarpVecCpuBackend(demo, num_envs=N, threads=1, device=device, **PACE)
    with WarpVecCpuBackend(demo, num_envs=N, threads=1, device="cpu", **PACE) as b:
        assert b.device == "cpu"


def test_cuda_backend_refuses_a_cpu_device_and_a_machine_without_cuda(demo, monkeypatch):
    from gbxcule.backends.warp_vec import WarpVecCudaBackend

    for device in ("cpu", "gpu"):
        with pytest.raises(ValueError, match="WarpVecCudaBackend runs on a CUDA device"):
            WarpVecCudaBackend(demo, num_envs=N, device=device, **PACE)
    monkeypatch.setattr(wp, "is_cuda_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        WarpVecCudaBackend(demo, num_envs=N, **PACE)


@pytest.mark.parametrize("backend", ["pyboy", "pyboy-mp", "warp-cpu"])
def test_any_frames_per_step_works_with_the_default_release(demo, backend) -> None:
    from gbxcule.backends.registry import make_backend

    for frames, release in ((1, 1), (5, 5), (24, 8)):
        b = make_backend(backend, str(demo), num_envs=1, frames_per_step=frames)
        try:
            assert (b.frames_per_step, b.release_after_frames) == (frames, release)
        finally:
            b.close()
    with pytest.raises(ValueError, match=r"release_after_frames=9 with frames_per_step=4"):
        make_backend(backend, str(demo), frames_per_step=4, release_after_frames=9)
