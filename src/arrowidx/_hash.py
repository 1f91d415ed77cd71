"""Vectorised hashes Java Paimon uses: Thomas Wang's long hash (FastHash) and XXH64.

Both work on whole numpy arrays. XXH64 over variable-length strings groups the rows by
byte length and hashes each group as a 2-D array, so the Python work is per distinct
length, never per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


def thomas_wang_long_hash(keys: np.ndarray) -> np.ndarray:
    """Paimon ``FastHash.getLongHash`` over int64 keys (signed shifts, wrapping arithmetic)."""
    k = keys.astype(np.int64, copy=True)
    return thomas_wang_inplace(k, np.empty_like(k))


def thomas_wang_inplace(k: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """:func:`thomas_wang_long_hash` computed in ``k`` (int64) with scratch ``tmp``: no
    temporaries, so chunks that fit the CPU cache stay there."""
    with np.errstate(over="ignore"):
        np.left_shift(k, 21, out=tmp)
        np.invert(k, out=k)
        k += tmp  # ~k + (k << 21)
        np.right_shift(k, 24, out=tmp)
        k ^= tmp
        np.left_shift(k, 3, out=tmp)
        tmp += k
        np.left_shift(k, 8, out=k)
        k += tmp  # (k + (k << 3)) + (k << 8)
        np.right_shift(k, 14, out=tmp)
        k ^= tmp
        np.left_shift(k, 2, out=tmp)
        tmp += k
        np.left_shift(k, 4, out=k)
        k += tmp  # (k + (k << 2)) + (k << 4)
        np.right_shift(k, 28, out=tmp)
        k ^= tmp
        np.left_shift(k, 31, out=tmp)
        k += tmp
    return k


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


def _merge_round(acc: np.ndarray, val: np.ndarray) -> np.ndarray:
    acc = acc ^ _round(np.zeros_like(val), val)
    return acc * _P1 + _P4


def _xxh64_fixed(data: np.ndarray, length: int) -> np.ndarray:
    """XXH64 (seed 0) of each row of a C-contiguous uint8 matrix whose rows are ``length`` bytes."""
    n = data.shape[0]
    with np.errstate(over="ignore"):
        p = 0
        if length >= 32:
            v1 = np.full(n, _P1 + _P2, dtype=np.uint64)
            v2 = np.full(n, _P2, dtype=np.uint64)
            v3 = np.zeros(n, dtype=np.uint64)
            v4 = np.full(n, np.uint64(0) - _P1, dtype=np.uint64)
            while p + 32 <= length:
                lanes = data[:, p : p + 32].copy().view("<u8")
                v1 = _round(v1, lanes[:, 0])
                v2 = _round(v2, lanes[:, 1])
                v3 = _round(v3, lanes[:, 2])
                v4 = _round(v4, lanes[:, 3])
                p += 32
            h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
            for v in (v1, v2, v3, v4):
                h = _merge_round(h, v)
        else:
            h = np.full(n, _P5, dtype=np.uint64)
        h = h + np.uint64(length)
        while p + 8 <= length:
            k1 = _round(np.zeros(n, dtype=np.uint64), data[:, p : p + 8].copy().view("<u8")[:, 0])
            h = _rotl(h ^ k1, 27) * _P1 + _P4
            p += 8
        if p + 4 <= length:
            w = data[:, p : p + 4].copy().view("<u4")[:, 0].astype(np.uint64)
            h = _rotl(h ^ (w * _P1), 23) * _P2 + _P3
            p += 4
        while p < length:
            h = _rotl(h ^ (data[:, p].astype(np.uint64) * _P5), 11) * _P1
            p += 1
        h = h ^ (h >> np.uint64(33))
        h = h * _P2
        h = h ^ (h >> np.uint64(29))
        h = h * _P3
        h = h ^ (h >> np.uint64(32))
    return h


def xxh64_binary(arr: pa.Array) -> np.ndarray:
    """XXH64 (seed 0) of every value of a binary/large_binary array, as int64 (Java long).

    Null slots hash their (empty) bytes; callers mask them out.
    """
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    n = len(arr)
    out = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return out.view(np.int64)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    lengths = np.diff(offsets)
    order = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[order]
    bounds = np.flatnonzero(np.diff(sorted_lengths)) + 1
    groups = np.split(order, bounds)
    for rows in groups:  # one iteration per distinct string length
        length = int(lengths[rows[0]])
        out[rows] = _xxh64_fixed(_rows_of_length(arr, rows, length), length)
    return out.view(np.int64)


def _rows_of_length(arr: pa.Array, rows: np.ndarray, length: int) -> np.ndarray:
    """The values ``rows`` of ``arr``, all ``length`` bytes long, as a ``(rows, length)``
    uint8 matrix: Arrow takes them and casts them to fixed-size binary, whose data buffer is
    that matrix (~4x faster than gathering the bytes with a numpy index matrix)."""
    if length == 0:
        return np.zeros((len(rows), 0), dtype=np.uint8)
    fixed = arr.take(pa.array(rows)).cast(pa.binary(length))
    data = np.frombuffer(fixed.buffers()[1], dtype=np.uint8)
    return data[fixed.offset * length : (fixed.offset + len(rows)) * length].reshape(-1, length)
