"""Quest, the second bundled game: its cartridge, maps and rules on our emulator, and in
lockstep with PyBoy 2.8.1 (sound on; stock: its own boot ROM) from the title screen.
Its scripted walk through two doors is a suite ROM (bench/roms/suite/quest.py): checked
on PyBoy, in lockstep with ours, and a golden of the GPU parity run."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.games import bundled_rom_path
from gbxcule.games.quest import art
from gbxcule.games.quest import layout as L
from gbxcule.games.quest.rom import quest_rom_bytes
from gbxcule.lockstep import LockstepConfig, run_lockstep

from .test_emu_timing_lockstep import assert_lockstep
from .test_pixels_emulator import run_side_by_side

pytestmark = pytest.mark.l3

BOOT_STEPS = 6  # x 16 frames: the title is up
DIRS = (L.BUTTON_RIGHT, L.BUTTON_LEFT, L.BUTTON_UP, L.BUTTON_DOWN)


def random_masks(seed: int, steps: int) -> np.ndarray:
    """Random "buttons" masks (START among them), a third of the steps idle."""
    rng = np.random.default_rng([seed, 31])
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.3] = 0
    return masks


def test_cartridge_banks_and_symbols():
    rom = quest_rom_bytes()
    assert len(rom) == L.ROM_BANKS * 0x4000 == 0x20000
    assert (rom[0x147], rom[0x148], rom[0x149]) == (0x03, 0x02, 0x02)  # MBC1+RAM+BATTERY
    for m in range(L.NUM_MAPS):
        bank = (L.MAP_BANK0 + m) * 0x4000
        assert rom[bank : bank + 1024] == art.world_map(m).tiles
    path = bundled_rom_path("quest")
    assert path.read_bytes() == rom
    syms = SymbolTable.load(path.with_suffix(".sym"))
    for label, addr in {
        "wMode": L.W_MODE,
        "wMap": L.W_MAP,
        "wPlayerX": L.W_PLAYER_X,
        "wScore": L.W_SCORE,
        "wLives": L.W_LIVES,
        "wRng": L.W_RNG,
        "wTemp": L.W_TEMP,
        "wFlags": L.W_FLAGS,
        "wEnemies": L.W_ENEMIES,
        "wGemTable": L.W_GEMS_TABLE,
        "wMusicTrig": L.W_MUSIC + 5,
        "sHiScore": L.S_HI_SCORE,
    }.items():
        assert syms.address(label) == addr, label
    assert syms["Map3"].bank == L.MAP_BANK0 + 3


def test_maps_are_connected_and_doors_pair_up():
    for m in range(L.NUM_MAPS):
        md = art.world_map(m)
        grid = md.tiles
        free = {(x, y) for y in range(32) for x in range(32) if grid[y * 32 + x] not in art.SOLID}
        assert len(free) > 500
        grid2d = [list(grid[row * 32 : row * 32 + 32]) for row in range(32)]
        assert free <= art._reachable(grid2d, art.HUB)  # no free cell cut off
        art.route(m, art.HUB, (md.warps[0][0], md.warps[0][1]))
        for x, y, dest, ax, ay in md.warps:
            assert grid[y * 32 + x] == art.DOOR
            back = [w for w in art.world_map(dest).warps if w[2] == m]
            assert back and (ax, ay) == art.arrival(back[0][0], back[0][1])
            assert art.world_map(dest).tiles[ay * 32 + ax] not in art.SOLID
        for x, y, *_ in md.enemies:
            assert (x, y) in free
        assert all((x, y) in free for x, y in md.gems) and len(md.enemies) == 10


@pytest.fixture
def quest():
    b = WarpVecCpuBackend(
        bundled_rom_path("quest"),
        num_envs=2,
        threads=1,
        frames_per_step=16,
        release_after_frames=8,
        action_codec="buttons",
    )
    b.reset(0)
    yield b
    b.close()


def _u8(b, addr: int, env: int = 0) -> int:
    return int(b.read_memory(env, addr, addr + 1)[0])


def _run(b, masks) -> None:
    for mask in masks:
        b.step(np.array(mask if isinstance(mask, tuple) else (mask, mask), dtype=np.int64))


def test_title_waits_for_start_and_start_seeds_the_generator_from_div(quest):
    _run(quest, [0] * 40)
    assert _u8(quest, L.W_MODE) == L.MODE_TITLE
    _run(quest, [(L.BUTTON_START, 0), (0, 0), (0, L.BUTTON_START)])
    for env in (0, 1):
        assert _u8(quest, L.W_MODE, env) == L.MODE_PLAY
        assert _u8(quest, L.W_LIVES, env) == L.START_LIVES
        assert (_u8(quest, L.W_PLAYER_X, env), _u8(quest, L.W_PLAYER_Y, env)) == (15, 15)
    seeds = [bytes(quest.read_memory(env, L.W_RNG, L.W_RNG + 2)) for env in (0, 1)]
    assert seeds[0] != seeds[1]  # START two steps apart: another DIV, another game


def test_game_over_saves_the_high_score_and_returns_to_the_title(quest):
    _run(quest, [0] * BOOT_STEPS + [L.BUTTON_START])
    rng = np.random.default_rng(3)
    for _ in range(2000):
        _run(quest, [DIRS[int(rng.integers(4))]])
        if _u8(quest, L.W_MODE) == L.MODE_OVER:
            break
    assert _u8(quest, L.W_MODE) == L.MODE_OVER and _u8(quest, L.W_LIVES) == 0
    score = bytes(quest.read_memory(0, L.W_SCORE, L.W_SCORE + 2))
    assert score != b"\0\0"
    battery = quest.cart_ram_torch()[0].numpy()  # enabled only while the game saves
    assert bytes(battery[: L.S_HI_SCORE + 2 - 0xA000]) == L.MAGIC + score
    _run(quest, [0] * (L.OVER_FRAMES // 16 + 1))
    assert _u8(quest, L.W_MODE) == L.MODE_TITLE
    assert bytes(quest.read_memory(0, L.W_HI_SCORE, L.W_HI_SCORE + 2)) == score


def test_music_engine_plays_from_its_bank_and_reads_nr52(quest):
    _run(quest, [0] * 12)
    notes = int.from_bytes(bytes(quest.read_memory(0, L.W_MUSIC + 3, L.W_MUSIC + 5)), "little")
    assert notes > 100
    assert _u8(quest, 0xFF26) & 0x80 and _u8(quest, 0xFF26) & 0x0F
    assert _u8(quest, L.W_BANK) == 1  # the title's bank, mapped back after each frame


@pytest.mark.parametrize("seed", range(2))
def test_lockstep_from_the_title_registers_and_all_ram(seed):
    """Every step: registers, T-cycles, VRAM, cart RAM, WRAM, OAM, IO, HRAM (sound on)."""
    assert_lockstep(quest_rom_bytes(), 300, random_masks(seed, 300), 24, 8)


def test_lockstep_with_stock_pyboy_and_its_boot_rom():
    """A stock ``PyBoy(rom)``: its own boot ROM and sound, registers, RAM and frames."""
    cfg = LockstepConfig(
        ref="pyboy-stock", steps=150, codec="buttons", boot="pyboy", compare_frames=True
    )
    result = run_lockstep(
        bundled_rom_path("quest"), random_masks(7, 150)[:, None], cfg, bundle_root=None
    )
    assert result.ok, result.diffs


def test_pixels_camera_and_packed2_every_step(tmp_path):
    inputs = np.stack([random_masks(11, 120), random_masks(12, 120)], axis=1)
    compared = run_side_by_side(
        tmp_path,
        quest_rom_bytes(),
        "quest",
        lambda oracle: True,
        inputs,
        frames_per_step=24,
        release_after_frames=8,
    )
    assert compared > 0


LONG_STEPS = 2_000  # x 24 frames


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 103))
def test_soak_lockstep_from_the_title(seed):
    """2,000 steps x 24 frames from the title, three seeds: registers, T-cycles, all RAM."""
    assert_lockstep(quest_rom_bytes(), LONG_STEPS, random_masks(seed, LONG_STEPS), 24, 8)


@pytest.mark.slow
def test_soak_lockstep_with_stock_pyboy():
    cfg = LockstepConfig(
        ref="pyboy-stock", steps=LONG_STEPS, codec="buttons", boot="pyboy", compare_frames=True
    )
    masks = random_masks(200, LONG_STEPS)[:, None]
    result = run_lockstep(bundled_rom_path("quest"), masks, cfg, bundle_root=None)
    assert result.ok, result.diffs


@pytest.mark.slow
def test_soak_pixels_camera_and_packed2(tmp_path):
    inputs = np.stack([random_masks(300, LONG_STEPS), random_masks(301, LONG_STEPS)], axis=1)
    compared = run_side_by_side(
        tmp_path, quest_rom_bytes(), "quest_soak", lambda oracle: True, inputs,
        frames_per_step=24, release_after_frames=8,
    )  # fmt: skip
    assert compared > 0
