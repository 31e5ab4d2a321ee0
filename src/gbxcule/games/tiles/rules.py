"""Tiles' rules as Python, exactly as the ROM runs them: the seed, the shuffle, a move; and
a small solver (IDA* on the Manhattan distance) for boards a few moves from solved."""

from __future__ import annotations

from gbxcule.demo.game import rng_step  # the same xorshift16 (asm/routines.py)
from gbxcule.games.tiles import layout as L

Board = tuple[int, ...]
_STEP = {L.DIR_RIGHT: (1, 0), L.DIR_LEFT: (-1, 0), L.DIR_UP: (0, -1), L.DIR_DOWN: (0, 1)}


def seed_from_div(div: int) -> int:
    """``wRng`` after START pressed while DIV read ``div``."""
    return div | (div ^ 0x5A) << 8


def gap_target(gap: int, direction: int) -> int | None:
    """The cell the gap at ``gap`` moves to going ``direction``; None at the wall."""
    dx, dy = _STEP[direction]
    x, y = gap % L.SIDE + dx, gap // L.SIDE + dy
    return y * L.SIDE + x if 0 <= x < L.SIDE and 0 <= y < L.SIDE else None


def move(board: Board, direction: int) -> Board | None:
    """``board`` after moving its gap ``direction`` (the tile there slides in); None at the
    wall."""
    gap = board.index(0)
    target = gap_target(gap, direction)
    if target is None:
        return None
    out = list(board)
    out[gap], out[target] = out[target], 0
    return tuple(out)


def in_place(board: Board) -> int:
    """``wInPlace``: tiles 1..15 in their solved cell."""
    return sum(board[k] == k + 1 for k in range(L.CELLS - 1))


def shuffle(rng: int, moves: int) -> tuple[Board, int, list[int]]:
    """The ROM's shuffle from generator state ``rng``: (board, generator state after, the
    gap moves made)."""
    while True:
        board, made = L.SOLVED_BOARD, []
        while len(made) < moves:
            rng = rng_step(rng)
            direction = rng & 3
            if made and direction == made[-1] ^ 1:
                continue
            after = move(board, direction)
            if after is None:
                continue
            board = after
            made.append(direction)
        if in_place(board) < L.CELLS - 1:
            return board, rng, made


def _distance(board: Board) -> int:
    total = 0
    for cell, tile in enumerate(board):
        if tile:
            home = tile - 1
            total += abs(cell % L.SIDE - home % L.SIDE) + abs(cell // L.SIDE - home // L.SIDE)
    return total


def solve(board: Board, max_moves: int = 20) -> list[int]:
    """A shortest list of gap moves that solves ``board`` (IDA*; for boards up to
    ``max_moves`` from solved, else ValueError)."""
    path: list[int] = []

    def search(b: Board, bound: int) -> int:
        h = _distance(b)
        if h == 0:
            return -1
        if len(path) + h > bound:
            return len(path) + h
        best = 1 << 30
        for direction in _STEP:
            if path and direction == path[-1] ^ 1:
                continue
            after = move(b, direction)
            if after is None:
                continue
            path.append(direction)
            found = search(after, bound)
            if found < 0:
                return -1
            path.pop()
            best = min(best, found)
        return best

    bound = _distance(board)
    while bound <= max_moves:
        found = search(board, bound)
        if found < 0:
            return path
        bound = found
    raise ValueError(f"board is more than {max_moves} moves from solved")
