"""Tiles, the sliding-tile puzzle: its ROM, its rules on our emulator (scripted presses and
memory writes, the shuffle against the Python model), its start states, and lockstep with
PyBoy 2.8.1 from the title screen (random presses, and a solver's presses that solve puzzle
after puzzle)."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.games.tiles import art, rules
from gbxcule.games.tiles import layout as L
from gbxcule.games.tiles.rom import tiles_rom_bytes, tiles_rom_path
from gbxcule.games.tiles.starts import make_starts, start_names
from gbxcule.lockstep import LockstepConfig, run_lockstep

from .test_emu_timing_lockstep import assert_lockstep

pytestmark = pytest.mark.l3

SYMBOLS = {
    "wMode": L.W_MODE,
    "wDifficulty": L.W_DIFFICULTY,
    "wShuffle": L.W_SHUFFLE,
    "wGapX": L.W_GAP_X,
    "wGapY": L.W_GAP_Y,
    "wInPlace": L.W_IN_PLACE,
    "wSolved": L.W_SOLVED,
    "wTimer": L.W_TIMER,
    "wMoves": L.W_MOVES,
    "wTries": L.W_TRIES,
    "wSolvedCount": L.W_SOLVED_COUNT,
    "wMovesBcd": L.W_MOVES_BCD,
    "wSolvedBcd": L.W_SOLVED_BCD,
    "wFrame": L.W_FRAME,
    "wRng": L.W_RNG,
    "wJoypad": L.W_JOYPAD,
    "wJoyNew": L.W_JOY_NEW,
    "wVBlankFlag": L.W_VBLANK_FLAG,
    "wShuffleLeft": L.W_SHUFFLE_LEFT,
    "wShufflePrev": L.W_SHUFFLE_PREV,
    "wBoard": L.W_BOARD,
}


def random_masks(seed: int, steps: int) -> np.ndarray:
    """Random "buttons" masks (START among them), a third of the steps idle."""
    rng = np.random.default_rng([seed, 53])
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.3] = 0
    return masks


def test_rom_header_and_symbols():
    rom = tiles_rom_bytes()
    assert len(rom) == 0x8000
    assert rom[0x134:0x144].rstrip(b"\0") == b"TILES"
    assert (rom[0x147], rom[0x148], rom[0x149]) == (0x00, 0x00, 0x00)  # ROM only, 32 KiB
    syms = SymbolTable.load(tiles_rom_path().with_suffix(".sym"))
    for label, addr in SYMBOLS.items():
        assert syms.address(label) == addr, label


def test_board_tiles_differ_at_half_resolution():
    assert len(art.cell_data()) <= 256 * 16
    halves = []
    for number in range(1, 16):
        img = np.array(art.board_tile_image(number))
        halves.append(img[::2, ::2])  # an 80x72 screen's pixels of the tile
    for a in range(15):
        for b in range(a):
            assert np.mean(halves[a] != halves[b]) > 0.2, (a + 1, b + 1)


def test_model_shuffle_and_solver():
    for div in range(0, 256, 7):
        for moves in L.SHUFFLE_MOVES[:2]:
            board, _, made = rules.shuffle(rules.seed_from_div(div), moves)
            assert sorted(board) == list(range(16)) and rules.in_place(board) < 15
            assert len(made) == moves and all(b != a ^ 1 for a, b in zip(made, made[1:]))
            for direction in rules.solve(board, moves):
                after = rules.move(board, direction)
                assert after is not None
                board = after
            assert board == L.SOLVED_BOARD
    assert rules.seed_from_div(0x5A) == 0x005A and rules.seed_from_div(0) == 0x5A00


class Game:
    """Env 0 of ours, a step (24 frames, buttons held 8) at a time."""

    def __init__(self, backend: WarpVecCpuBackend):
        self.b = backend

    def u8(self, addr: int) -> int:
        return int(self.b.read_memory(0, addr, addr + 1)[0])

    def u16(self, addr: int) -> int:
        return self.u8(addr) | self.u8(addr + 1) << 8

    def board(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.b.read_memory(0, L.W_BOARD, L.W_BOARD + L.CELLS))

    def state(self) -> bytes:
        return bytes(self.b.read_memory(0, *L.STATE_BYTES))

    def press(self, *masks: int) -> None:
        for mask in masks:
            self.b.step(np.array([mask], dtype=np.int64))

    def start(self, difficulty: int) -> None:
        self.press(0, 0, *[L.BUTTON_DOWN] * difficulty, L.BUTTON_START)

    def set_board(self, board: tuple[int, ...]) -> None:
        gap = board.index(0)
        self.b.write_memory(0, L.W_BOARD, bytes(board))
        self.b.write_memory(0, L.W_GAP_X, bytes((gap % 4, gap // 4)))

    def check_consistent(self) -> None:
        board = self.board()
        gap = board.index(0)
        assert sorted(board) == list(range(16))
        assert (self.u8(L.W_GAP_X), self.u8(L.W_GAP_Y)) == (gap % 4, gap // 4)
        assert self.u8(L.W_IN_PLACE) == rules.in_place(board)
        assert self.u8(L.W_SOLVED) == (board == L.SOLVED_BOARD)


@pytest.fixture(scope="module")
def backend():
    b = WarpVecCpuBackend(
        tiles_rom_path(), num_envs=1, threads=1, frames_per_step=24, release_after_frames=8,
        action_codec="buttons",
    )  # fmt: skip
    yield b
    b.close()


@pytest.fixture
def game(backend):
    backend.reset(0)
    return Game(backend)


def test_menu_start_and_the_shuffle_from_div(game):
    game.press(0, 0, L.BUTTON_DOWN)
    assert (game.u8(L.W_MODE), game.u8(L.W_DIFFICULTY)) == (L.MODE_TITLE, 1)
    game.press(L.BUTTON_DOWN, L.BUTTON_DOWN)
    assert game.u8(L.W_DIFFICULTY) == 2  # stops at HARD
    game.press(L.BUTTON_UP, L.BUTTON_A | L.BUTTON_B | L.BUTTON_SELECT)
    assert (game.u8(L.W_MODE), game.u8(L.W_DIFFICULTY)) == (L.MODE_TITLE, 1)
    cursor = game.b.read_memory(0, 0x9C00 + 32 * L.MENU_ROW + L.CURSOR_COL, 0x9C00 + 0x200)
    assert [int(cursor[64 * k]) for k in range(3)] == [art.BLANK, art.CURSOR, art.BLANK]
    game.press(L.BUTTON_START)
    assert (game.u8(L.W_MODE), game.u8(L.W_SHUFFLE)) == (L.MODE_PLAY, 12)
    game.check_consistent()
    assert game.u8(L.W_SOLVED) == 0 and game.state()[8:0x12] == bytes(10)  # counters
    board, rng = game.board(), game.u16(L.W_RNG)
    seeds = [d for d in range(256) if rules.shuffle(rules.seed_from_div(d), 12)[:2] == (board, rng)]
    assert len(seeds) == 1  # the board and generator of a DIV-seeded shuffle
    assert len(rules.solve(board, 12)) <= 12


def test_moves_walls_solving_and_the_next_puzzle(game):
    game.start(0)
    assert game.u8(L.W_SHUFFLE) == 4 and len(rules.solve(game.board(), 4)) <= 4
    game.set_board(L.SOLVED_BOARD[:14] + (0, 15))  # the gap at (2, 3)
    before = game.state()
    game.press(L.BUTTON_DOWN)  # the wall: only wTries (and the frame counter) change
    after = game.state()
    changed = {L.W_MODE + k for k in range(len(after)) if after[k] != before[k]}
    assert changed <= {L.W_TRIES, L.W_FRAME, L.W_FRAME + 1} and L.W_TRIES in changed
    game.press(L.BUTTON_LEFT)  # tile 14 slides right
    assert game.board() == L.SOLVED_BOARD[:13] + (0, 14, 15)
    assert (game.u16(L.W_MOVES), game.u16(L.W_TRIES), game.u8(L.W_IN_PLACE)) == (1, 2, 13)
    game.press(L.BUTTON_RIGHT | L.BUTTON_LEFT | L.BUTTON_UP)  # right counts, alone
    assert game.board() == L.SOLVED_BOARD[:14] + (0, 15) and game.u8(L.W_IN_PLACE) == 14
    game.check_consistent()
    game.press(L.BUTTON_RIGHT)
    assert game.board() == L.SOLVED_BOARD
    assert (game.u8(L.W_SOLVED), game.u8(L.W_IN_PLACE), game.u8(L.W_MODE)) == (1, 15, 2)
    assert (game.u16(L.W_MOVES), game.u16(L.W_TRIES), game.u16(L.W_SOLVED_COUNT)) == (3, 4, 1)
    assert (game.u16(L.W_MOVES_BCD), game.u16(L.W_SOLVED_BCD)) == (0x0003, 0x0001)
    rng = game.u16(L.W_RNG)
    game.press(L.BUTTON_LEFT)  # the pause (60 frames from the solving press) ignores input
    assert game.u8(L.W_MODE) == L.MODE_SOLVED and game.u16(L.W_TRIES) == 4
    game.press(0)
    assert game.u8(L.W_MODE) == L.MODE_PLAY
    assert game.board() == rules.shuffle(rng, 4)[0] and game.u8(L.W_SOLVED) == 0
    assert game.u16(L.W_SOLVED_COUNT) == 1
    game.check_consistent()


def test_solving_real_shuffles_and_the_screen_shows_the_board(game):
    game.start(1)
    for solved in (1, 2):
        for direction in rules.solve(game.board(), 12):
            game.press(L.DIR_BUTTONS[direction])
        assert game.u8(L.W_MODE) == L.MODE_SOLVED and game.u16(L.W_SOLVED_COUNT) == solved
        game.press(0, 0, 0)
        assert game.u8(L.W_MODE) == L.MODE_PLAY and game.u8(L.W_SHUFFLE) == 12
    game.check_consistent()
    vram = game.b.read_memory(0, 0x9800, 0x9800 + 32 * L.SCREEN_ROWS).reshape(L.SCREEN_ROWS, 32)
    cmap = np.frombuffer(art.cell_map(), np.uint8).reshape(16, 4, 4)
    board = np.array(game.board()).reshape(4, 4)
    shown = vram[1:17, 2:18].reshape(4, 4, 4, 4).transpose(0, 2, 1, 3)
    assert (shown == cmap[board]).all()
    moves = f"{game.u16(L.W_MOVES):04d}"
    assert bytes(vram[0, L.HUD_MOVES_COL : L.HUD_MOVES_COL + 4]) == bytes(
        art.CHAR_CELL[ch] for ch in moves
    )
    name = bytes(vram[0, L.HUD_DIFFICULTY_COL : L.HUD_DIFFICULTY_COL + 6])
    assert name == art.difficulty_names()[6:12]


def test_start_states_load_in_play_with_other_puzzles(backend):
    names = list(start_names())
    assert len(names) == 27 and names[:3] == ["easy", "medium", "hard"]
    states = make_starts(tiles_rom_bytes(), names)
    shuffles = {  # (board, generator) -> the DIV value START read, by difficulty
        moves: {rules.shuffle(rules.seed_from_div(d), moves)[:2]: d for d in range(256)}
        for moves in L.SHUFFLE_MOVES
    }
    game = Game(backend)
    boards = set()
    for name in names:
        backend.load_state(states[name])
        difficulty = next(k for k, d in enumerate(("easy", "medium", "hard")) if d in name)
        moves = L.SHUFFLE_MOVES[difficulty]
        assert (game.u8(L.W_MODE), game.u8(L.W_DIFFICULTY)) == (L.MODE_PLAY, difficulty), name
        assert game.u8(L.W_SHUFFLE) == moves and game.u16(L.W_SOLVED_COUNT) == 0
        assert game.u16(L.W_MOVES) == game.u16(L.W_TRIES) == 0
        game.check_consistent()
        board = game.board()
        assert (board, game.u16(L.W_RNG)) in shuffles[moves], name
        boards.add(board)
    assert len(boards) == len(names)  # START on another frame: another puzzle
    game.press(L.BUTTON_UP, L.BUTTON_LEFT)  # the last start plays on
    assert game.u8(L.W_MODE) == L.MODE_PLAY and game.u16(L.W_TRIES) == 2
    game.check_consistent()


def solver_masks(steps: int, difficulty: int) -> np.ndarray:
    """The presses of a player who starts ``difficulty`` and solves each puzzle shortest-way
    (found on our backend; both emulators then replay them)."""
    b = WarpVecCpuBackend(
        tiles_rom_path(), num_envs=1, threads=1, frames_per_step=24, release_after_frames=8,
        action_codec="buttons",
    )  # fmt: skip
    try:
        game, masks = Game(b), [0, 0] + [L.BUTTON_DOWN] * difficulty + [L.BUTTON_START]
        game.press(*masks)
        plan: list[int] = []
        while len(masks) < steps:
            mask = 0
            if game.u8(L.W_MODE) == L.MODE_PLAY:
                plan = plan or rules.solve(game.board(), L.SHUFFLE_MOVES[difficulty])
                mask = L.DIR_BUTTONS[plan.pop(0)]
            game.press(mask)
            masks.append(mask)
        assert game.u16(L.W_SOLVED_COUNT) >= steps // (L.SHUFFLE_MOVES[difficulty] + 6)
    finally:
        b.close()
    return np.array(masks)


def test_lockstep_from_the_title_registers_and_all_ram():
    """Every step: registers, T-cycles, VRAM, WRAM, OAM, IO, HRAM (300 x 24 frames)."""
    assert_lockstep(tiles_rom_bytes(), 300, random_masks(0, 300), 24, 8)


def test_lockstep_solving_puzzles():
    """A solver's presses: moves, solves, pauses and new shuffles (300 x 24 frames)."""
    assert_lockstep(tiles_rom_bytes(), 300, solver_masks(300, 0), 24, 8)


def test_lockstep_with_stock_pyboy_and_its_boot_rom():
    """A stock ``PyBoy(rom)``: its own boot ROM, registers, RAM and frames."""
    cfg = LockstepConfig(
        ref="pyboy-stock", steps=150, codec="buttons", boot="pyboy", compare_frames=True
    )
    result = run_lockstep(tiles_rom_path(), random_masks(7, 150)[:, None], cfg, bundle_root=None)
    assert result.ok, result.diffs


LONG_STEPS = 2_000  # x 24 frames


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 102))
def test_soak_lockstep_from_the_title(seed):
    """2,000 steps x 24 frames from the title: registers, T-cycles, all RAM."""
    assert_lockstep(tiles_rom_bytes(), LONG_STEPS, random_masks(seed, LONG_STEPS), 24, 8)


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", [1, 2])
def test_soak_lockstep_solving_puzzles(difficulty):
    """1,000 steps x 24 frames of MEDIUM played by the solver, or of HARD (too far for the
    solver) played by random directions."""
    if difficulty == 1:
        masks = solver_masks(1_000, 1)
    else:
        rng = np.random.default_rng(9)
        start = [0, 0, L.BUTTON_DOWN, L.BUTTON_DOWN, L.BUTTON_START]
        masks = np.array(start + list(rng.choice(L.DIR_BUTTONS + (0,), size=995)))
    assert_lockstep(tiles_rom_bytes(), len(masks), masks, 24, 8)


@pytest.mark.slow
def test_soak_lockstep_from_a_start_state(tmp_path):
    """Direction presses from the ``easy`` start (a PyBoy savestate), 1,000 steps."""
    rng = np.random.default_rng(5)
    masks = rng.choice(L.DIR_BUTTONS + (0, L.BUTTON_START), size=1_000)
    path = tmp_path / "easy.state"
    path.write_bytes(make_starts(tiles_rom_bytes(), ["easy"])["easy"])
    cfg = LockstepConfig(steps=1_000, codec="buttons", compare_frames=True, state=str(path))
    result = run_lockstep(tiles_rom_path(), masks[:, None], cfg, bundle_root=None)
    assert result.ok, result.diffs
