"""Climb, the vertical platformer: its ROM, its rules on our emulator (a scripted climber
reading WRAM), its start states, and lockstep with PyBoy 2.8.1 from the title screen."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.games.climb import layout as L
from gbxcule.games.climb.art import COIN, PLATFORM
from gbxcule.games.climb.rom import climb_rom_bytes, climb_rom_path
from gbxcule.games.climb.starts import make_starts, start_names
from gbxcule.lockstep import LockstepConfig, run_lockstep

from .test_emu_timing_lockstep import assert_lockstep

pytestmark = pytest.mark.l3

NAMES = {"right": L.BUTTON_RIGHT, "left": L.BUTTON_LEFT, "a": L.BUTTON_A, None: 0}


def random_masks(seed: int, steps: int) -> np.ndarray:
    """Random "buttons" masks (START among them), a third of the steps idle."""
    rng = np.random.default_rng([seed, 47])
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.3] = 0
    return masks


def test_rom_header_and_symbols():
    rom = climb_rom_bytes()
    assert len(rom) == 0x8000
    assert rom[0x134:0x144].rstrip(b"\0") == b"CLIMB"
    assert (rom[0x147], rom[0x148], rom[0x149]) == (0x00, 0x00, 0x00)  # ROM only, 32 KiB
    syms = SymbolTable.load(climb_rom_path().with_suffix(".sym"))
    for label, addr in {
        "wShadowOam": L.W_SHADOW_OAM,
        "wMode": L.W_MODE,
        "wPlayerX": L.W_PLAYER_X,
        "wPlayerY": L.W_PLAYER_Y,
        "wVelY": L.W_VEL_Y,
        "wOnGround": L.W_ON_GROUND,
        "wCameraY": L.W_CAMERA_Y,
        "wHeight": L.W_HEIGHT,
        "wBestHeight": L.W_BEST_HEIGHT,
        "wScore": L.W_SCORE,
        "wScoreBcd": L.W_SCORE_BCD,
        "wCoins": L.W_COINS,
        "wFrame": L.W_FRAME,
        "wRng": L.W_RNG,
        "wTimer": L.W_TIMER,
        "wCoinErase": L.W_COIN_ERASE,
        "wClimb": L.W_CLIMB,
        "wRows": L.W_ROWS,
        "hDma": L.H_DMA,
    }.items():
        assert syms.address(label) == addr, label


class Player:
    """One env of ours stepped a frame at a time, with a scripted climber."""

    def __init__(self, backend: WarpVecCpuBackend):
        self.b = backend

    def u8(self, addr: int) -> int:
        return int(self.b.read_memory(0, addr, addr + 1)[0])

    def u16(self, addr: int) -> int:
        return self.u8(addr) | self.u8(addr + 1) << 8

    def press(self, button: str | None, frames: int = 1) -> None:
        for _ in range(frames):
            self.b.step(np.array([NAMES[button]], dtype=np.int64))

    def start(self, title_frames: int = 40) -> None:
        self.press(None, title_frames)
        self.b.step(np.array([L.BUTTON_START], dtype=np.int64))
        self.press(None, 2)
        assert self.u8(L.W_MODE) == L.MODE_PLAY

    def entry(self, row: int) -> tuple[int, int, int, int]:
        """(start, length, coin column, index) of BG row ``row``'s ring entry."""
        e = self.b.read_memory(0, L.W_ROWS + row * 8, L.W_ROWS + row * 8 + 5)
        return int(e[0]), int(e[1]), int(e[2]), int(e[3]) | int(e[4]) << 8

    def platform(self, index: int) -> tuple[int, int]:
        """(start, length) of platform ``index`` (it must be in the ring)."""
        for row in range(L.NUM_ROWS):
            start, length, _, k = self.entry(row)
            if length and k == index:
                return start, length
        raise LookupError(index)

    def walk_to(self, x: int) -> None:
        while (now := self.u8(L.W_PLAYER_X)) != x:
            self.press("right" if now < x else "left")

    def climb_one(self) -> None:
        """From the platform stood on to the next: walk to the take-off spot nearest it,
        jump on the press of A, steer to its middle until landed."""
        assert self.u8(L.W_ON_GROUND)
        start, length = self.platform(self.u16(L.W_HEIGHT))
        nxt, nlen = self.platform(self.u16(L.W_HEIGHT) + 1)
        lo, hi = max(start, nxt - 1), min(start + length - 1, nxt + nlen)
        col = (lo + hi) // 2 if lo <= hi else start + length - 1 if nxt > start else start
        self.walk_to(col * 8)
        self.press("a")
        goal = (2 * nxt + nlen) * 4 - 4
        for _ in range(80):
            x = self.u8(L.W_PLAYER_X)
            self.press("right" if x < goal else "left" if x > goal else None)
            if self.u8(L.W_ON_GROUND):
                return

    def visible_rows_match_the_ring(self) -> bool:
        """The BG map's on-screen rows hold the ring's platforms and coins."""
        top = self.u8(L.W_CAMERA_Y) // 8
        for k in range(19):
            row = (top + k) % L.NUM_ROWS
            start, length, _, _ = self.entry(row)
            coin = self.entry((row + 1) % L.NUM_ROWS)[2]
            want = [
                PLATFORM if start <= c < start + length else COIN if c == coin else 0
                for c in range(L.SCREEN_COLS)
            ]
            got = self.b.read_memory(0, 0x9800 + row * 32, 0x9800 + row * 32 + L.SCREEN_COLS)
            if list(got) != want:
                return False
        return True


@pytest.fixture
def player():
    b = WarpVecCpuBackend(
        climb_rom_path(),
        num_envs=1,
        threads=1,
        frames_per_step=1,
        release_after_frames=1,
        action_codec="buttons",
    )
    b.reset(0)
    yield Player(b)
    b.close()


def test_title_waits_for_start_then_play_begins_on_the_floor(player):
    player.press(None, 100)
    assert player.u8(L.W_MODE) == L.MODE_TITLE
    player.start(0)
    assert (player.u8(L.W_PLAYER_X), player.u8(L.W_PLAYER_Y)) == (L.START_X, L.START_Y)
    assert player.u8(L.W_ON_GROUND) == 1 and player.u8(L.W_CAMERA_Y) == 0
    assert player.entry(L.FLOOR_ROW)[:2] == (0, L.SCREEN_COLS)
    for k in range(1, L.INITIAL_PLATFORMS + 1):
        start, length, coin, index = player.entry((L.FLOOR_ROW - 3 * k) % L.NUM_ROWS)
        assert index == k and 3 <= length <= 6 and start + length <= L.SCREEN_COLS
        assert coin == L.NO_COIN or start < coin < start + length
    assert player.visible_rows_match_the_ring()


def test_a_jump_from_the_floor_lands_on_the_platform_above(player):
    player.start()
    start, length = player.platform(1)
    player.walk_to((start + length // 2) * 8)
    player.press("a")
    assert player.u8(L.W_ON_GROUND) == 0 and player.u8(L.W_VEL_Y) >= 0x80  # rising
    tops = []
    for _ in range(60):
        player.press(None)
        tops.append(player.u8(L.W_PLAYER_Y))
        if player.u8(L.W_ON_GROUND):
            break
    assert min(tops) < L.START_Y - 24  # up through the platform from below
    assert player.u8(L.W_PLAYER_Y) == L.START_Y - 24
    assert (player.u16(L.W_HEIGHT), player.u16(L.W_BEST_HEIGHT)) == (1, 1)
    assert player.u16(L.W_SCORE) == 10 + player.u16(L.W_COINS)


def test_a_jump_with_no_platform_above_comes_back_down(player):
    player.start()
    start, length = player.platform(1)
    player.walk_to(0 if start > 5 else L.MAX_X)
    player.press("a")
    arc = [player.u8(L.W_PLAYER_Y)]
    while not player.u8(L.W_ON_GROUND) and len(arc) < 60:
        player.press("a")  # held: only the press edge jumps
        arc.append(player.u8(L.W_PLAYER_Y))
    assert min(arc) == L.START_Y - 29 and len(arc) == 43  # the layout docstring's arc
    player.press(None, 5)
    assert player.u8(L.W_ON_GROUND) == 1 and player.u8(L.W_PLAYER_Y) == L.START_Y
    assert player.u16(L.W_HEIGHT) == 0 and player.u16(L.W_SCORE) == 0


def test_climbing_scrolls_the_view_and_falling_off_the_bottom_ends_the_game(player):
    player.start()
    for k in range(1, 11):
        player.climb_one()
        assert player.u16(L.W_HEIGHT) == k and player.u16(L.W_BEST_HEIGHT) == k
    coins = player.u16(L.W_COINS)
    assert player.u16(L.W_SCORE) == 100 + coins
    assert int(f"{player.u16(L.W_SCORE_BCD):04X}") == 100 + coins
    assert player.u8(L.W_PLAYER_Y) >= L.SCROLL_LINE
    climbed = player.u16(L.W_CLIMB)
    assert climbed == 10 * 24 - (L.START_Y - player.u8(L.W_PLAYER_Y))
    assert player.u8(L.W_CAMERA_Y) == -climbed % 256
    assert player.visible_rows_match_the_ring()
    for k in range(60):  # no jumps: only down from here, and the floor is gone
        player.press(("left", "right")[k // 6 % 2], 8)
        if player.u8(L.W_MODE) != L.MODE_PLAY:
            break
    assert player.u8(L.W_MODE) == L.MODE_OVER and player.u8(L.W_PLAYER_Y) >= L.SCREEN_H
    assert player.u16(L.W_CLIMB) == climbed  # never scrolls down
    assert player.u16(L.W_BEST_HEIGHT) == 10  # coins may still be taken on the way down
    assert player.u16(L.W_SCORE) == 100 + player.u16(L.W_COINS)
    player.press(None, L.OVER_FRAMES - 1)
    assert player.u8(L.W_MODE) == L.MODE_OVER
    player.press(None, 2)
    assert player.u8(L.W_MODE) == L.MODE_TITLE
    assert not player.b.read_memory(0, L.W_SHADOW_OAM, L.W_SHADOW_OAM + 160).any()


def test_start_states_load_in_play_with_other_levels():
    names = list(start_names())
    assert len(names) == 37 and names[0] == "play"
    states = make_starts(climb_rom_bytes(), names)
    b = WarpVecCpuBackend(climb_rom_path(), num_envs=1, threads=1, action_codec="buttons")
    try:
        b.reset(0)
        levels = set()
        for name in names:
            b.load_state(states[name])
            mem = b.read_memory(0, L.W_MODE, L.W_CLIMB + 2)

            def at(addr: int, mem=mem) -> int:
                return int(mem[addr - L.W_MODE])

            assert at(L.W_MODE) == L.MODE_PLAY, name
            assert (at(L.W_PLAYER_X), at(L.W_PLAYER_Y), at(L.W_ON_GROUND)) == (76, 128, 1)
            levels.add(bytes(b.read_memory(0, L.W_ROWS, L.W_ROWS + 256)))
            b.step(np.array([L.BUTTON_A | L.BUTTON_RIGHT], dtype=np.int64))
            assert int(b.read_memory(0, L.W_MODE, L.W_MODE + 1)[0]) == L.MODE_PLAY
        assert len(levels) == len(names)  # START on another frame: another level
    finally:
        b.close()


def test_lockstep_from_the_title_registers_and_all_ram():
    """Every step: registers, T-cycles, VRAM, WRAM, OAM, IO, HRAM (300 x 24 frames)."""
    assert_lockstep(climb_rom_bytes(), 300, random_masks(0, 300), 24, 8)


def test_lockstep_with_stock_pyboy_and_its_boot_rom():
    """A stock ``PyBoy(rom)``: its own boot ROM, registers, RAM and frames."""
    cfg = LockstepConfig(
        ref="pyboy-stock", steps=150, codec="buttons", boot="pyboy", compare_frames=True
    )
    result = run_lockstep(climb_rom_path(), random_masks(7, 150)[:, None], cfg, bundle_root=None)
    assert result.ok, result.diffs


LONG_STEPS = 2_000  # x 24 frames


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 102))
def test_soak_lockstep_from_the_title(seed):
    """2,000 steps x 24 frames from the title: registers, T-cycles, all RAM."""
    assert_lockstep(climb_rom_bytes(), LONG_STEPS, random_masks(seed, LONG_STEPS), 24, 8)


@pytest.mark.slow
def test_soak_lockstep_from_the_play_start(tmp_path):
    """Play-minded input (A, left, right, START to start again) from the ``play`` start:
    jumps, landings, the generator and the ring redraws, 1,000 steps of 24 frames."""
    rng = np.random.default_rng(5)
    masks = rng.choice([L.BUTTON_A, L.BUTTON_A | L.BUTTON_LEFT, L.BUTTON_A | L.BUTTON_RIGHT,
                        L.BUTTON_LEFT, L.BUTTON_RIGHT, L.BUTTON_START, 0], size=1_000)  # fmt: skip
    path = tmp_path / "play.state"
    path.write_bytes(make_starts(climb_rom_bytes(), ["play"])["play"])
    cfg = LockstepConfig(steps=1_000, codec="buttons", compare_frames=True, state=str(path))
    result = run_lockstep(climb_rom_path(), masks[:, None], cfg, bundle_root=None)
    assert result.ok, result.diffs
