"""IndexResult: REMAIN/SKIP/bitmap algebra (as Paimon's FileIndexResult) and Arrow masks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from arrowidx import IndexResult
from arrowidx.result import REMAIN, SKIP


@st.composite
def bitmaps(draw, limit: int = 300_000) -> BitMap:
    """Bitmaps mixing array, dense and run containers around container boundaries."""
    bm = BitMap(draw(st.lists(st.integers(0, limit), max_size=200)))
    for _ in range(draw(st.integers(0, 3))):
        start = draw(st.integers(0, limit))
        bm.add_range(start, start + draw(st.integers(1, 70_000)))
    if draw(st.booleans()):
        bm |= BitMap(range(draw(st.integers(0, limit)), limit, draw(st.integers(1, 3))))
    if draw(st.booleans()):
        bm.run_optimize()
    return bm


@settings(max_examples=200, deadline=None)
@given(bm=bitmaps(), num_rows=st.integers(0, 320_000))
def test_mask_matches_positions(bm, num_rows):
    mask = IndexResult.of(bm).to_mask(num_rows)
    assert len(mask) == num_rows and mask.null_count == 0
    expected = np.zeros(num_rows, dtype=bool)
    positions = np.array(bm.to_array(), dtype=np.int64)
    expected[positions[positions < num_rows]] = True
    assert (mask.to_numpy(zero_copy_only=False) == expected).all()


def test_constant_masks():
    assert REMAIN.to_mask(13).to_pylist() == [True] * 13
    assert SKIP.to_mask(13).to_pylist() == [False] * 13
    assert IndexResult.of(BitMap()).to_mask(0).to_pylist() == []


def test_and_or_follow_paimon():
    a, b = IndexResult.of(BitMap([1, 2, 3])), IndexResult.of(BitMap([3, 4]))
    assert (a & b).bitmap == BitMap([3]) and (a | b).bitmap == BitMap([1, 2, 3, 4])
    assert (a & REMAIN) is a and (REMAIN & a) is a
    assert (a & SKIP) is SKIP and (SKIP & a) is SKIP
    assert (a | REMAIN) is REMAIN and (SKIP | a) is a
    empty = IndexResult.of(BitMap())
    assert empty.kind == "bitmap" and not empty.remain
    calls = []
    lazy = IndexResult.of(lambda: calls.append(1) or BitMap([9]))
    assert (SKIP & lazy) is SKIP and not calls  # a decided AND never computes the other side
    assert lazy.bitmap == BitMap([9]) and calls == [1]
