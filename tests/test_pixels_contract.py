"""The pixel contract: downsampling, packed2 layout, the L1 LUT, NumPy vs Torch forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gbxcule.core import pixels as px

pytestmark = pytest.mark.l1


def random_shades(seed: int, *lead: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4, (*lead, px.DOWN_H, px.DOWN_W), dtype=np.uint8)


def test_shapes_and_latch_fields():
    assert (px.DOWN_H, px.DOWN_W, px.PACKED_W) == (72, 80, 20)
    fields = [
        px.LATCH_LCDC,
        px.LATCH_SCX,
        px.LATCH_SCY,
        px.LATCH_WX,
        px.LATCH_WY,
        px.LATCH_BGP,
        px.LATCH_OBP0,
        px.LATCH_OBP1,
        px.LATCH_WIN_LINE,
        px.LATCH_FLAGS,
    ]
    assert len(set(fields)) == len(fields) and max(fields) < px.LATCH_FIELDS


def test_downsample_takes_even_rows_and_columns():
    full = np.random.default_rng(0).integers(0, 4, (3, 144, 160), dtype=np.uint8)
    down = px.downsample(full)
    assert down.shape == (3, 72, 80) and down.flags.c_contiguous
    for oy, ox in [(0, 0), (5, 79), (71, 3), (71, 79)]:
        assert (down[:, oy, ox] == full[:, 2 * oy, 2 * ox]).all()
    with pytest.raises(ValueError, match="144, 160"):
        px.downsample(full[:, :, :80])


def test_pack_layout_bit_positions():
    shades = np.zeros((1, 80), dtype=np.uint8)
    shades[0, 4 * 7 + 2] = 3  # byte 7, k = 2 -> bits 4..5
    shades[0, 4 * 19 + 3] = 1  # byte 19, k = 3 -> bit 6
    packed = px.pack_shades(shades)
    assert packed.shape == (1, 20)
    assert packed[0, 7] == 0b0011_0000 and packed[0, 19] == 0b0100_0000
    assert int(packed.sum()) == 0b0011_0000 + 0b0100_0000


def test_pack_unpack_roundtrip_and_errors():
    shades = random_shades(1, 4)
    packed = px.pack_shades(shades)
    assert packed.shape == (4, 72, 20) and packed.dtype == np.uint8
    assert np.array_equal(px.unpack_shades(packed), shades)
    every_byte = np.arange(256, dtype=np.uint8).reshape(-1, 1).repeat(20, axis=1)
    assert np.array_equal(px.pack_shades(px.unpack_shades(every_byte)), every_byte)
    with pytest.raises(ValueError, match="0..3"):
        px.pack_shades(np.full((2, 80), 4, dtype=np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        px.pack_shades(shades.astype(np.int32))
    with pytest.raises(ValueError, match="last dimension 20"):
        px.unpack_shades(np.zeros((2, 21), dtype=np.uint8))


def test_l1_lut_matches_unpacked_distance():
    lut = px.PACKED_L1_LUT
    assert lut.shape == (256, 256) and lut.dtype == np.uint8 and int(lut.max()) == 12
    assert (lut == lut.T).all() and (np.diag(lut) == 0).all()
    a, b = np.random.default_rng(2).integers(0, 256, (2, 5000), dtype=np.uint8)
    sa = (a[:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3
    sb = (b[:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3
    brute = np.abs(sa.astype(int) - sb.astype(int)).sum(axis=1)
    assert np.array_equal(lut[a, b], brute)


def test_packed_l1_distance_equals_shade_l1():
    sa, sb = random_shades(3, 6), random_shades(4, 6)
    expected = np.abs(sa.astype(int) - sb.astype(int)).sum(axis=(-2, -1))
    got = px.packed_l1_distance(px.pack_shades(sa), px.pack_shades(sb))
    assert np.array_equal(got, expected)
    assert (px.packed_l1_distance(px.pack_shades(sa), px.pack_shades(sa)) == 0).all()


def test_torch_forms_match_numpy():
    sa, sb = random_shades(5, 3), random_shades(6, 3)
    ta, tb = torch.from_numpy(sa), torch.from_numpy(sb)
    pa, pb = px.pack_shades_torch(ta), px.pack_shades_torch(tb)
    assert np.array_equal(pa.numpy(), px.pack_shades(sa))
    assert np.array_equal(px.unpack_shades_torch(pa).numpy(), sa)
    lut = torch.from_numpy(px.PACKED_L1_LUT.copy())
    dist = px.packed_l1_distance_torch(pa, pb, lut)
    assert np.array_equal(dist.numpy(), px.packed_l1_distance(pa.numpy(), pb.numpy()))
    assert np.array_equal(px.packed_l1_distance_torch(pa, pb).numpy(), dist.numpy())
    with pytest.raises(ValueError, match="uint8"):
        px.pack_shades_torch(ta.int())


def test_shades_to_grey():
    grey = px.shades_to_grey(np.array([[0, 1, 2, 3]], dtype=np.uint8))
    assert grey.tolist() == [[255, 170, 85, 0]]
    with pytest.raises(ValueError, match="0..3"):
        px.shades_to_grey(np.array([4], dtype=np.uint8))
