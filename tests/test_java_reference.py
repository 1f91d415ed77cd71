"""The tests' own Java references (``java_reference.py``) against Java's definitions: the
float keys sort as a line-for-line port of ``Double.compare``, for float64 and float32."""

from __future__ import annotations

import math
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from .java_reference import java_double_sort_key, java_float_key

SPECIALS = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1.5, -1.5, 5e-324, -5e-324, 1.7976931348623157e308,
            -1.7976931348623157e308, 1.0, -2.25, 3.4028234663852886e38, 1e-45]  # fmt: skip


def _nan_with_payload(width: int) -> float:
    if width == 32:
        return struct.unpack("<f", struct.pack("<I", 0xFFC00001))[0]
    return struct.unpack("<d", struct.pack("<Q", 0xFFF0000000000123))[0]


def _check(values: list[float], dtype) -> None:
    arr = np.array(values, dtype=dtype)
    keys = java_float_key(arr)
    as_double = [float(v) for v in arr]  # float32 -> double is exact and keeps the order, -0.0 and NaN
    by_java = sorted(range(len(arr)), key=lambda i: java_double_sort_key(as_double[i]))
    assert [keys[i] for i in by_java] == sorted(keys.tolist())  # the keys sort as Double.compare
    for i in range(len(arr)):
        for j in range(len(arr)):
            java = java_double_sort_key(as_double[i]) < java_double_sort_key(as_double[j])
            assert (keys[i] < keys[j]) == java, (as_double[i], as_double[j])


def test_specials_sort_as_double_compare():
    for dtype, width in ((np.float64, 64), (np.float32, 32)):
        fits = [v for v in SPECIALS if width == 64 or not math.isfinite(v) or abs(v) <= 3.4028234663852886e38]
        _check(fits + [_nan_with_payload(width)], dtype)
    keys = java_float_key(np.array([-0.0, 0.0, math.nan, _nan_with_payload(64), math.inf]))
    assert keys[0] < keys[1] and keys[2] == keys[3] > keys[4]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True), max_size=30), st.booleans())
def test_random_floats_sort_as_double_compare(values, single):
    if single:  # rounded to float32 by the array; keys are checked on the rounded values
        values = [v for v in values if not math.isfinite(v) or abs(v) <= 3.4e38]
    _check(values, np.float32 if single else np.float64)
