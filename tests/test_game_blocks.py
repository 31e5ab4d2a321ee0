"""Blocks, the falling-block puzzle: its ROM, its rules on our emulator (scripted presses and
memory writes), its start states, and lockstep with PyBoy 2.8.1 from the title screen."""

from __future__ import annotations

import numpy as np
import pytest

from gbxcule.backends.warp_vec import WarpVecCpuBackend
from gbxcule.core.symbols import SymbolTable
from gbxcule.games.blocks import art
from gbxcule.games.blocks import layout as L
from gbxcule.games.blocks.rom import blocks_rom_bytes, blocks_rom_path
from gbxcule.games.blocks.starts import make_starts, start_names
from gbxcule.lockstep import LockstepConfig, run_lockstep

from .test_emu_timing_lockstep import assert_lockstep

pytestmark = pytest.mark.l3

SYMBOLS = {
    "wShadowOam": L.W_SHADOW_OAM,
    "wMode": L.W_MODE,
    "wScore": L.W_SCORE,
    "wLines": L.W_LINES,
    "wLevel": L.W_LEVEL,
    "wPieces": L.W_PIECES,
    "wPieceKind": L.W_PIECE_KIND,
    "wPieceRot": L.W_PIECE_ROT,
    "wPieceX": L.W_PIECE_X,
    "wPieceY": L.W_PIECE_Y,
    "wNextKind": L.W_NEXT_KIND,
    "wHeight": L.W_HEIGHT,
    "wLastClear": L.W_LAST_CLEAR,
    "wFrame": L.W_FRAME,
    "wRng": L.W_RNG,
    "wJoypad": L.W_JOYPAD,
    "wJoyNew": L.W_JOY_NEW,
    "wVBlankFlag": L.W_VBLANK_FLAG,
    "wTimer": L.W_TIMER,
    "wGravity": L.W_GRAVITY,
    "wRepeatRight": L.W_REPEAT_RIGHT,
    "wRepeatLeft": L.W_REPEAT_LEFT,
    "wRepeatDown": L.W_REPEAT_DOWN,
    "wDrawRow": L.W_DRAW_ROW,
    "wTemp": L.W_TEMP,
    "wHudText": L.W_HUD_TEXT,
    "wBoard": L.W_BOARD,
    "hDma": L.H_DMA,
}
I, O, T = 0, 1, 2  # piece kinds


def random_masks(seed: int, steps: int) -> np.ndarray:
    """Random "buttons" masks (START among them), a third of the steps idle."""
    rng = np.random.default_rng([seed, 67])
    masks = rng.integers(0, 256, size=steps)
    masks[rng.random(steps) < 0.3] = 0
    return masks


def player_masks(seed: int, steps: int) -> np.ndarray:
    """START, then one of LEFT, RIGHT, A, B, DOWN or nothing a step (START every 40th)."""
    rng = np.random.default_rng([seed, 71])
    moves = (L.BUTTON_LEFT, L.BUTTON_RIGHT, L.BUTTON_A, L.BUTTON_B, L.BUTTON_DOWN, 0)
    masks = rng.choice(moves, size=steps)
    masks[::40] = L.BUTTON_START
    return masks


def test_rom_header_and_symbols():
    rom = blocks_rom_bytes()
    assert len(rom) == 0x8000
    assert rom[0x134:0x144].rstrip(b"\0") == L.TITLE.encode() == b"BLOCKS"
    assert (rom[0x147], rom[0x148], rom[0x149]) == (0x00, 0x00, 0x00)  # ROM only, 32 KiB
    syms = SymbolTable.load(blocks_rom_path().with_suffix(".sym"))
    for label, addr in SYMBOLS.items():
        assert syms.address(label) == addr, label
    table = syms.address("PieceCells")
    assert rom[table : table + 224] == art.piece_table()
    assert L.W_BOARD & 0xFF == 0 and L.W_SHADOW_OAM & 0xFF == 0  # page-aligned, as the code needs


def test_piece_tables():
    cells = art.piece_cells()
    shapes = {"I": 2, "O": 1, "T": 4, "S": 2, "Z": 2, "J": 4, "L": 4}  # distinct rotations
    for kind, name in enumerate(L.KIND_NAMES):
        rotations = cells[kind]
        assert len(rotations) == 4
        for rot in rotations:
            assert len(set(rot)) == 4 and all(0 <= v < 4 for cell in rot for v in cell)
        normalized = {
            frozenset((x - min(c[0] for c in r), y - min(c[1] for c in r)) for x, y in r)
            for r in rotations
        }
        assert len(normalized) == shapes[name], name
        assert min(y for _, y in rotations[0]) == (1 if name == "I" else 0)  # spawn at the top
    assert sorted(cells[T][1]) == [(1, 0), (1, 1), (1, 2), (2, 1)]  # clockwise: points right
    assert sorted(cells[I][1]) == [(2, 0), (2, 1), (2, 2), (2, 3)]
    assert [L.gravity_frames(level) for level in (0, 1, 11, 12, 200)] == [30, 28, 8, 6, 6]


class Game:
    """Env 0 of ours, a step at a time."""

    def __init__(self, backend: WarpVecCpuBackend):
        self.b = backend

    def u8(self, addr: int) -> int:
        return int(self.b.read_memory(0, addr, addr + 1)[0])

    def u16(self, addr: int) -> int:
        return self.u8(addr) | self.u8(addr + 1) << 8

    def piece(self) -> tuple[int, int, int, int]:
        """(kind, rotation, x (signed), y)."""
        kind, rot, x, y = self.b.read_memory(0, L.W_PIECE_KIND, L.W_PIECE_KIND + 4)
        return int(kind), int(rot), int(np.int8(x)), int(y)

    def board(self) -> np.ndarray:
        return self.b.read_memory(0, L.W_BOARD, L.W_BOARD + L.CELLS).reshape(L.WELL_H, L.WELL_W)

    def press(self, *masks: int) -> None:
        for mask in masks:
            self.b.step(np.array([mask], dtype=np.int64))

    def start(self) -> None:
        self.press(0, 0, L.BUTTON_START)
        assert self.u8(L.W_MODE) == L.MODE_PLAY

    def set_piece(self, kind: int, rot: int, x: int, y: int) -> None:
        self.b.write_memory(0, L.W_PIECE_KIND, bytes((kind, rot, x & 0xFF, y)))

    def set_board(self, board: np.ndarray) -> None:
        self.b.write_memory(0, L.W_BOARD, board.astype(np.uint8).tobytes())

    def drop(self) -> None:
        """DOWN held until the piece locks."""
        pieces = self.u16(L.W_PIECES)
        for _ in range(20):
            self.press(L.BUTTON_DOWN)
            if self.u16(L.W_PIECES) != pieces:
                return
        raise AssertionError("the piece did not lock")


@pytest.fixture(scope="module")
def backend():
    """Steps of 8 frames, the buttons held all 8: consecutive steps hold a button."""
    b = WarpVecCpuBackend(
        blocks_rom_path(), num_envs=1, threads=1, frames_per_step=8, release_after_frames=8,
        action_codec="buttons",
    )  # fmt: skip
    yield b
    b.close()


@pytest.fixture
def game(backend):
    backend.reset(0)
    return Game(backend)


def test_title_waits_for_start_and_start_seeds_the_game(game):
    game.press(*[0] * 10, L.BUTTON_A)
    frame = game.u16(L.W_FRAME)
    game.press(L.BUTTON_DOWN)
    assert game.u8(L.W_MODE) == L.MODE_TITLE and game.u16(L.W_FRAME) == frame + 8
    game.press(L.BUTTON_START)
    assert game.u8(L.W_MODE) == L.MODE_PLAY
    kind, rot, x, y = game.piece()
    assert kind < L.NUM_KINDS and game.u8(L.W_NEXT_KIND) < L.NUM_KINDS
    assert (rot, x, y) == (0, L.SPAWN_X, 0) and 0 < game.u8(L.W_GRAVITY) < 8
    assert not game.board().any()
    counters = (L.W_SCORE, L.W_LINES, L.W_PIECES)
    assert [game.u16(a) for a in counters] == [0, 0, 0]
    assert [game.u8(a) for a in (L.W_LEVEL, L.W_HEIGHT, L.W_LAST_CLEAR)] == [0, 0, 0]
    seed = game.u16(L.W_RNG)
    game.b.reset(0)
    game.press(*[0] * 11, L.BUTTON_START)  # START 8 frames earlier: another DIV, another game
    assert game.u8(L.W_MODE) == L.MODE_PLAY and game.u16(L.W_RNG) not in (seed, 0)


def test_moves_rotations_and_walls(game):
    game.start()
    game.set_piece(T, 0, 3, 0)
    game.press(L.BUTTON_LEFT, 0)
    assert game.piece()[2] == 2  # an 8-frame press: one column
    game.press(L.BUTTON_LEFT, L.BUTTON_LEFT, 0)
    assert game.piece()[2] == 0  # held 16 frames: two (the press, then 8 frames later)
    game.press(L.BUTTON_LEFT, 0)
    assert game.piece()[:3] == (T, 0, 0)  # the wall
    game.press(L.BUTTON_A, 0)
    assert game.piece()[:3] == (T, 1, 0)
    game.press(L.BUTTON_LEFT, 0, L.BUTTON_LEFT, 0)
    assert game.piece()[:3] == (T, 1, -1)  # the box's column 0 is empty: X goes below 0
    game.press(L.BUTTON_B, 0)
    assert game.piece()[:3] == (T, 1, -1)  # rotation 0 would leave the well: no kick
    game.press(*[L.BUTTON_RIGHT] * 9, 0)
    assert game.piece()[:3] == (T, 1, 7)  # held 72 frames: 9 repeats, the last at the wall
    game.press(L.BUTTON_A | L.BUTTON_B, 0)
    assert game.piece()[1] == 1  # clockwise, then counter-clockwise
    y = game.piece()[3]
    board = np.zeros((L.WELL_H, L.WELL_W), np.uint8)
    board[y + 1, 7] = 3  # beside the T's stem: turning back to rotation 0 needs that cell
    game.set_board(board)
    game.press(L.BUTTON_B, 0)
    assert game.piece()[1] == 1  # blocked by the stack
    assert game.u16(L.W_PIECES) == 0 and game.u8(L.W_MODE) == L.MODE_PLAY


def _gravity_model(g: int, y: int, period: int, frames: int) -> tuple[int, int]:
    for _ in range(frames):
        g += 1
        if g >= period:
            g, y = 0, y + 1
    return g, y


@pytest.mark.parametrize("level", [0, 5, 12, 40])
def test_gravity_by_level_and_soft_drop(game, level):
    game.start()
    game.b.write_memory(0, L.W_LEVEL, level)
    game.set_piece(O, 0, 3, 0)
    g, y = game.u8(L.W_GRAVITY), 0
    game.press(0, 0, 0, 0, 0)
    want = _gravity_model(g, y, L.gravity_frames(level), 40)
    assert (game.u8(L.W_GRAVITY), game.piece()[3]) == want
    y = want[1]
    game.press(L.BUTTON_DOWN)  # a row on the press and every 2 frames; gravity restarts
    assert game.piece()[3] == y + 4 and game.u8(L.W_GRAVITY) <= 2
    assert game.u16(L.W_SCORE) == 0  # soft drop scores nothing


def test_a_line_clears_scores_and_the_rows_above_fall(game):
    game.start()
    board = np.zeros((L.WELL_H, L.WELL_W), np.uint8)
    board[15, [0, 1, 2, 7, 8, 9]] = 3
    board[14, [0, 9]] = (5, 6)
    game.set_board(board)
    game.set_piece(I, 0, 3, 0)  # lies flat in its box's row 1: columns 3..6
    next_kind = game.u8(L.W_NEXT_KIND)
    game.drop()
    want = np.zeros_like(board)
    want[15, [0, 9]] = (5, 6)
    assert (game.board() == want).all()
    assert (game.u16(L.W_SCORE), game.u16(L.W_LINES), game.u8(L.W_LEVEL)) == (1, 1, 0)
    assert (game.u16(L.W_PIECES), game.u8(L.W_LAST_CLEAR), game.u8(L.W_HEIGHT)) == (1, 1, 1)
    assert game.piece()[:3] == (next_kind, 0, L.SPAWN_X)  # DOWN still held: it drops on
    hud = bytes(game.b.read_memory(0, L.W_HUD_TEXT, L.W_HUD_TEXT + 15))
    assert hud == b"00001" + b"00001" + b"00000"
    game.press(0)
    bottom = L.bg_address(L.WELL_COL, L.WELL_ROW + 15)
    assert bytes(game.b.read_memory(0, bottom, bottom + 10)) == bytes(want[15])
    score = L.bg_address(L.HUD_VALUE_COL, L.SCORE_ROW)
    assert bytes(game.b.read_memory(0, score, score + 5)) == b"00001"


def test_four_rows_score_8_and_raise_the_level(game):
    game.start()
    board = np.zeros((L.WELL_H, L.WELL_W), np.uint8)
    board[12:16, :9] = 4
    board[11, 0] = 7
    game.set_board(board)
    game.b.write_memory(0, L.W_SCORE, bytes((0xF9, 0xFF, 9, 0)))  # score 65529, 9 lines
    game.set_piece(I, 1, 7, 0)  # upright in its box's column 2: column 9
    game.drop()
    want = np.zeros_like(board)
    want[15, 0] = 7
    assert (game.board() == want).all()
    assert (game.u16(L.W_SCORE), game.u16(L.W_LINES), game.u8(L.W_LEVEL)) == (65535, 13, 1)
    assert (game.u8(L.W_LAST_CLEAR), game.u8(L.W_HEIGHT)) == (4, 1)
    board[:] = 0
    board[15, 1:] = 2
    game.set_board(board)
    game.set_piece(T, 1, -1, 0)  # pointing right, its stem in column 0
    game.drop()  # one row: the score stays at 65535
    assert (game.u16(L.W_SCORE), game.u16(L.W_LINES), game.u8(L.W_LAST_CLEAR)) == (65535, 14, 1)
    want[:] = 0
    want[14:16, 0] = T + 1
    want[15, 1] = T + 1
    assert (game.board() == want).all() and game.u8(L.W_HEIGHT) == 2


@pytest.mark.parametrize("lines, level", [(2548, 254), (65534, 255)])
def test_the_level_is_lines_over_10_up_to_255(game, lines, level):
    game.start()
    board = np.zeros((L.WELL_H, L.WELL_W), np.uint8)
    board[15, 1:] = 2
    game.set_board(board)
    game.b.write_memory(0, L.W_LINES, lines.to_bytes(2, "little"))
    game.b.write_memory(0, L.W_PIECES, b"\xfe\xff")
    game.set_piece(T, 1, -1, 0)
    game.drop()
    assert (game.u16(L.W_LINES), game.u8(L.W_LEVEL)) == (lines + 1, level)
    assert game.u16(L.W_PIECES) == 65535
    hud = bytes(game.b.read_memory(0, L.W_HUD_TEXT, L.W_HUD_TEXT + 15))
    assert hud == b"00001" + f"{lines + 1:05d}{level:05d}".encode()


def test_stacking_without_moving_ends_the_game_then_the_title(game):
    game.start()
    for _ in range(300):
        game.press(L.BUTTON_DOWN)
        if game.u8(L.W_MODE) != L.MODE_PLAY:
            break
    assert game.u8(L.W_MODE) == L.MODE_OVER
    assert game.u8(L.W_HEIGHT) >= 12 and game.u16(L.W_PIECES) >= 6
    assert game.u16(L.W_LINES) == 0 and not game.board()[:, :3].any()  # never moved
    game.press(*[L.BUTTON_START] * 7, *[0] * 7)  # 112 frames: still over, input ignored
    assert game.u8(L.W_MODE) == L.MODE_OVER
    game.press(0)
    assert game.u8(L.W_MODE) == L.MODE_TITLE
    game.press(L.BUTTON_START)
    assert game.u8(L.W_MODE) == L.MODE_PLAY and not game.board().any()
    assert (game.u16(L.W_PIECES), game.u8(L.W_HEIGHT)) == (0, 0)


def test_start_states_load_in_play_with_other_games(backend):
    names = list(start_names())
    trained, heldout = [f"random-{k}" for k in range(8)], [f"heldout-{k}" for k in range(4)]
    assert names == ["play", *trained, *heldout]
    states = make_starts(blocks_rom_bytes(), names)
    game = Game(backend)
    seeds = set()
    for name in names:
        backend.load_state(states[name])
        assert game.u8(L.W_MODE) == L.MODE_PLAY, name
        assert game.piece()[1:] == (0, L.SPAWN_X, 0) and not game.board().any()
        assert game.u16(L.W_PIECES) == game.u16(L.W_SCORE) == 0
        seeds.add(game.u16(L.W_RNG))
    assert len(seeds) == len(names)  # START on another frame: another game
    game.press(L.BUTTON_LEFT, 0, L.BUTTON_DOWN)  # the last start plays on
    assert game.u8(L.W_MODE) == L.MODE_PLAY and game.piece()[2] == L.SPAWN_X - 1


def _placements(board: np.ndarray, kind: int):
    """(rotation, column, board after the lock with full rows removed) of each spot the piece
    can drop straight into from the top."""
    for rot, cells in enumerate(art.piece_cells()[kind]):
        for x in range(-2, L.WELL_W):

            def fits(y: int, cells=cells, x=x) -> bool:
                return all(
                    0 <= x + dx < L.WELL_W and y + dy < L.WELL_H and not board[y + dy, x + dx]
                    for dx, dy in cells
                )

            if not fits(0):
                continue
            y = 0
            while fits(y + 1):
                y += 1
            after = board.copy()
            for dx, dy in cells:
                after[y + dy, x + dx] = kind + 1
            kept = after[~after.all(axis=1)]
            yield rot, x, np.vstack([np.zeros((L.WELL_H - len(kept), L.WELL_W), np.uint8), kept])


def _badness(board: np.ndarray) -> float:
    filled = board != 0
    tops = np.where(filled.any(axis=0), filled.argmax(axis=0), L.WELL_H)
    heights = L.WELL_H - tops
    holes = sum(int((~filled[tops[c] :, c]).sum()) for c in range(L.WELL_W))
    return 0.51 * heights.sum() + 0.36 * holes + 0.18 * np.abs(np.diff(heights)).sum()


def placer_masks(steps: int) -> tuple[np.ndarray, int]:
    """The presses of a player who drops each piece where it leaves the flattest stack
    (played on our backend; both emulators then replay them), and the rows it cleared."""
    b = WarpVecCpuBackend(
        blocks_rom_path(), num_envs=1, threads=1, frames_per_step=24, release_after_frames=8,
        action_codec="buttons",
    )  # fmt: skip
    try:
        game, masks, target, planned, lines = Game(b), [0, 0, L.BUTTON_START], (0, 0), None, 0
        game.press(*masks)
        while len(masks) < steps:
            mode, pieces = game.u8(L.W_MODE), game.u16(L.W_PIECES)
            mask = L.BUTTON_START if mode == L.MODE_TITLE else 0
            if mode == L.MODE_PLAY:
                if planned != (pieces, game.u16(L.W_LINES)):
                    board, lines_before = game.board(), game.u16(L.W_LINES)
                    lines = max(lines, lines_before)
                    spots = _placements(board, game.piece()[0])
                    target = min(spots, key=lambda spot: _badness(spot[2]))[:2]
                    planned = (pieces, lines_before)
                _, rot, x, _ = game.piece()
                if rot != target[0]:
                    mask = L.BUTTON_A
                elif x != target[1]:
                    mask = L.BUTTON_RIGHT if x < target[1] else L.BUTTON_LEFT
                else:
                    mask = L.BUTTON_DOWN
            game.press(mask)
            masks.append(mask)
    finally:
        b.close()
    return np.array(masks), max(lines, game.u16(L.W_LINES))


def test_lockstep_from_the_title_registers_and_all_ram():
    """Every step: registers, T-cycles, VRAM, WRAM, OAM, IO, HRAM (300 x 24 frames)."""
    assert_lockstep(blocks_rom_bytes(), 300, random_masks(0, 300), 24, 8)


def test_lockstep_clearing_rows():
    """A placer's presses: locks, cleared rows, the score and the HUD (300 x 24 frames)."""
    masks, lines = placer_masks(300)
    assert lines >= 8
    assert_lockstep(blocks_rom_bytes(), 300, masks, 24, 8)


def test_lockstep_with_stock_pyboy_and_its_boot_rom():
    """A stock ``PyBoy(rom)``: its own boot ROM, registers, RAM and frames."""
    cfg = LockstepConfig(
        ref="pyboy-stock", steps=150, codec="buttons", boot="pyboy", compare_frames=True
    )
    masks = player_masks(7, 150)[:, None]
    result = run_lockstep(blocks_rom_path(), masks, cfg, bundle_root=None)
    assert result.ok, result.diffs


LONG_STEPS = 2_000  # x 24 frames


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 102))
def test_soak_lockstep_from_the_title(seed):
    """2,000 steps x 24 frames from the title: registers, T-cycles, all RAM."""
    assert_lockstep(blocks_rom_bytes(), LONG_STEPS, random_masks(seed, LONG_STEPS), 24, 8)


@pytest.mark.slow
def test_soak_lockstep_playing():
    """2,000 steps x 24 frames of a random player's presses: games, game overs, titles."""
    assert_lockstep(blocks_rom_bytes(), LONG_STEPS, player_masks(3, LONG_STEPS), 24, 8)


@pytest.mark.slow
def test_soak_lockstep_clearing_rows():
    """2,000 steps x 24 frames of the placer: rows by the dozen, levels, faster gravity."""
    masks, lines = placer_masks(LONG_STEPS)
    assert lines >= 20
    assert_lockstep(blocks_rom_bytes(), LONG_STEPS, masks, 24, 8)


@pytest.mark.slow
def test_soak_lockstep_from_a_start_state(tmp_path):
    """A random player's presses from the ``play`` start (a PyBoy savestate), 1,000 steps."""
    path = tmp_path / "play.state"
    path.write_bytes(make_starts(blocks_rom_bytes(), ["play"])["play"])
    cfg = LockstepConfig(steps=1_000, codec="buttons", compare_frames=True, state=str(path))
    masks = player_masks(5, 1_000)[:, None]
    result = run_lockstep(blocks_rom_path(), masks, cfg, bundle_root=None)
    assert result.ok, result.diffs
