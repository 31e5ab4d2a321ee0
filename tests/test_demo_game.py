"""The demo game: its model's rules, the ROM against the model on PyBoy, divergence."""

from __future__ import annotations

import numpy as np
import pytest

from bench.roms.spec import check_spec
from bench.roms.suite import demo
from gbxcule.demo import game as g
from gbxcule.demo import rom as demo_rom

from .test_roms_ppu import run_on_pyboy

pytestmark = pytest.mark.l3

SPEC = demo.ROMS[0]


def xorshift16(x: int) -> int:
    x ^= (x << 7) & 0xFFFF
    x ^= x >> 9
    x ^= (x << 8) & 0xFFFF
    return x


def test_generator_is_xorshift16_7_9_8():
    rng = np.random.default_rng(5)
    for value in rng.integers(1, 0x10000, size=500):
        assert g.rng_step(int(value)) == xorshift16(int(value))


def test_start_state():
    s = g.initial_state()
    assert (s.x, s.y, s.score, s.frame) == (g.START_X, g.START_Y, 0, 0)
    values, x = [], g.RNG_SEED
    for _ in range(g.NUM_COINS):
        x = xorshift16(x)
        values.append((x & 0xFF, x >> 8))
    assert s.coins == tuple(values) and s.rng == x


def _far_state(x=10, y=20) -> g.DemoState:
    """A state with every coin far from the player."""
    return g.DemoState(x, y, 0, g.RNG_SEED, tuple([(200, 200)] * g.NUM_COINS))


@pytest.mark.parametrize(
    "buttons, dx, dy",
    [
        (0, 0, 0),
        (g.BUTTON_RIGHT, 1, 0),
        (g.BUTTON_LEFT, -1, 0),
        (g.BUTTON_DOWN, 0, 1),
        (g.BUTTON_UP, 0, -1),
        (g.BUTTON_RIGHT | g.BUTTON_LEFT, 0, 0),
        (g.BUTTON_UP | g.BUTTON_RIGHT | g.BUTTON_B, 2, -2),
        (g.BUTTON_A | 0x40 | 0x80, 0, 0),
    ],
)
def test_movement(buttons, dx, dy):
    s = g.tick(_far_state(), buttons)
    assert (s.x, s.y, s.frame) == (10 + dx, 20 + dy, 1)


def test_position_wraps_at_map_edges():
    s = g.simulate([g.BUTTON_LEFT | g.BUTTON_UP | g.BUTTON_B] * 6, _far_state(3, 1))
    assert (s.x, s.y) == (3 - 12 + 256, 1 - 12 + 256)


def test_collecting_scores_and_respawns():
    s = g.DemoState(100, 100, 9999, g.RNG_SEED, ((107, 93),) + ((0, 0),) * 7)
    assert g.tick(s, 0).score == 10000  # (107, 93) is within 7 on both axes
    after = g.tick(s, 0)
    nxt = g.rng_step(g.RNG_SEED)
    assert after.coins[0] == (nxt & 0xFF, nxt >> 8) and after.rng == nxt
    assert g.score_bcd(after.score) == 0x0000 and g.score_bcd(1234) == 0x1234
    missed = g.DemoState(100, 100, 0, g.RNG_SEED, ((108, 100),) + ((0, 0),) * 7)
    assert g.tick(missed, 0).score == 0  # 8 pixels apart: boxes just touch, no overlap


def test_tick_rejects_bad_buttons():
    with pytest.raises(ValueError, match="8-bit mask"):
        g.tick(g.initial_state(), 256)


def test_script_collects_coins_and_ends_idle():
    script = demo.demo_script()
    final = g.simulate(script)
    assert final.score >= 5
    # The picture lags two ticks: the last idle ticks must not change the state.
    before_tail = g.simulate(script[: -demo.TAIL_FRAMES])
    assert (before_tail.x, before_tail.y, before_tail.score) == (final.x, final.y, final.score)
    # Idle setup frames do nothing but count.
    assert g.simulate([0] * demo.SETUP_FRAMES).coins == g.initial_state().coins


def test_demo_rom_matches_the_model_on_pyboy():
    check_spec(SPEC, "pyboy")


def test_demo_check_fails_on_a_wrong_state(tmp_path):
    backend = run_on_pyboy(SPEC, tmp_path)
    try:
        with pytest.raises(AssertionError, match="demo: x = "):
            shorter = SPEC.inputs[:-50] + (0,) * 50  # type: ignore[index]
            demo.check_demo(backend, 0, shorter)
        frame = backend.frame_shades(0).copy()
        frame[70, 80] ^= 1
        backend.frame_shades = lambda env: frame  # type: ignore[method-assign]
        with pytest.raises(AssertionError, match=r"demo frame: 1 pixels differ; first at \(y=70"):
            SPEC.check(backend, 0)
    finally:
        backend.close()


def _wram_after(tmp_path, inputs: tuple[int, ...]) -> tuple[np.ndarray, g.DemoState]:
    backend = run_on_pyboy(SPEC, tmp_path, inputs=inputs, steps=len(inputs))
    try:
        return backend.read_memory(0, 0xC000, 0xE000), demo.read_state(backend, 0)
    finally:
        backend.close()


def test_inputs_make_envs_diverge_and_replay_identically(tmp_path):
    rng = np.random.default_rng(11)
    dirs = [0, 1, 2, 4, 8, 5, 10, 0x21, 0x22, 0x24, 0x28]
    seq_a = (0,) * demo.SETUP_FRAMES + tuple(int(rng.choice(dirs)) for _ in range(200))
    seq_b = (0,) * demo.SETUP_FRAMES + tuple(int(rng.choice(dirs)) for _ in range(200))
    wram_a, state_a = _wram_after(tmp_path, seq_a)
    wram_a2, _ = _wram_after(tmp_path, seq_a)
    wram_b, state_b = _wram_after(tmp_path, seq_b)
    assert np.array_equal(wram_a, wram_a2)
    assert not np.array_equal(wram_a, wram_b)
    for seq, state in ((seq_a, state_a), (seq_b, state_b)):
        want = g.simulate(seq)
        assert (state.x, state.y, state.score, state.coins) == (
            want.x,
            want.y,
            want.score,
            want.coins,
        )
    assert (state_a.x, state_a.y) != (state_b.x, state_b.y)


def test_state_from_wram_needs_the_whole_range():
    with pytest.raises(ValueError, match="need WRAM"):
        g.state_from_wram(bytes(4))


def test_rom_labels_sit_at_the_documented_addresses():
    from gbxcule.asm import assemble
    from gbxcule.demo.asm import game_source

    symbols = assemble(game_source()).symbols
    documented = {
        "wShadowOam": g.W_SHADOW_OAM,
        "wPlayerX": g.W_PLAYER_X,
        "wPlayerY": g.W_PLAYER_Y,
        "wScore": g.W_SCORE,
        "wScoreBcd": g.W_SCORE_BCD,
        "wFrame": g.W_FRAME,
        "wRng": g.W_RNG,
        "wJoypad": g.W_JOYPAD,
        "wVBlankFlag": g.W_VBLANK_FLAG,
        "wTemp": g.W_TEMP,
        "wCoins": g.W_COINS,
    }
    assert {k: symbols[k] for k in documented} == documented
    assert symbols["DmaRoutineEnd"] - symbols["DmaRoutine"] <= 0xFFFE - g.H_DMA


def test_demo_rom_is_reproducible():
    rom = demo_rom.demo_rom_bytes()
    assert len(rom) == 0x8000 and rom[0x134:0x140].rstrip(b"\0") == b"GBXCULE DEMO"
    demo_rom._built.cache_clear()  # assembled again from source
    assert demo_rom.demo_rom_bytes() == rom
