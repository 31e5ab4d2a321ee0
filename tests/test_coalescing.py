"""bench/coalescing.py: sectors per warp request from per-lane addresses, both layouts."""

from __future__ import annotations

import numpy as np
import pytest

from bench.coalescing import count_requests, decode_addresses, summary, warp_requests
from bench.divergence_model import FRAME, ROUTE_FAST_MEM, SLICE

pytestmark = pytest.mark.tooling


def test_count_requests_sectors_and_ideal():
    # one request, 32 lanes reading consecutive bytes: one sector, ideal one
    lanes = np.arange(32)
    assert count_requests(np.zeros(32, np.int64), lanes, 1) == (1, 1, 1)
    # the same bytes 1,000 apart (an env-major row): 32 sectors for an ideal of one
    assert count_requests(np.zeros(32, np.int64), lanes * 1000, 1) == (1, 32, 1)
    # two requests of 4-byte words, 16 lanes each, all lanes on one word: 1 sector each
    req = np.repeat([0, 1], 16)
    assert count_requests(req, np.full(32, 64), 4) == (2, 2, 2)
    assert count_requests(np.zeros(0, np.int64), np.zeros(0, np.int64), 1) == (0, 0, 0)


def test_addresses_decode_as_the_trace_kernel_packs_them():
    word = np.array([(0x1234 + 1) | ((0x567 + 1) << 25) | ((0x89 + 1) << 45), 0], np.int64)
    fetch, a, b = decode_addresses(word)
    assert fetch.tolist() == [0x1234, -1]
    assert a.tolist() == [0x567, -1] and b.tolist() == [0x89, -1]


def _word(fetch: int, a: int = -1, b: int = -1) -> int:
    return (fetch + 1) | ((a + 1) << 25) | ((b + 1) << 45)


def test_a_warp_on_one_wram_byte_coalesces_only_interleaved():
    """32 lanes run LD A,[HL] on the same WRAM column in the same round: one fetch sector in
    both layouts, one data sector interleaved, 32 env-major; one field request per lane."""
    ld_a_hl = (ROUTE_FAST_MEM << 9) | 0x7E
    codes = [np.array([FRAME, SLICE, ld_a_hl], np.int16) for _ in range(32)]
    words = [np.array([0, 0, _word(0x150, 0x100, 0x100)], np.int64) for _ in range(32)]
    got = warp_requests(codes, words, np.arange(32), 32, {"mem": 16896, "i32": 256})
    assert got[("env_major", "fetch")].tolist() == [1, 1, 1]
    assert got[("interleaved", "fetch")].tolist() == [1, 1, 1]
    assert got[("env_major", "data")].tolist() == [1, 32, 1]
    assert got[("interleaved", "data")].tolist() == [1, 1, 1]
    # FRAME and SLICE: two rounds of one field request each, 32 lanes of int32
    assert got[("env_major", "fields")].tolist() == [2, 64, 8]
    assert got[("interleaved", "fields")].tolist() == [2, 8, 8]
    rows = [
        {"rom": "r", "layout": lay, "class": cls, "requests": int(v[0]), "sectors": int(v[1])}
        | {"ideal": int(v[2]), "envs": 32}
        for (lay, cls), v in got.items()
    ]
    text = summary(rows)
    assert "| r | index | data | 1 | 32.00 | 1.00 | 1.00 | 97 % | 0 % |" in text
