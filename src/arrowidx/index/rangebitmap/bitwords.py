"""Building bit slices with numpy: a boolean row mask, packed bits or machine words as a
Roaring bitmap (CRoaring handed the containers directly: dense 65,536-row blocks as bitsets,
sparse ones as sorted 16-bit positions), and the slices of a column of codes serialised.
Never a row in Python. Read and queried in :mod:`.bitslice`."""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from ..._roaring import (
    bitmap_of,
    bitmap_of_sorted,
    to_portable,
)

VERSION_1 = 1
_ROWS_PER_CONTAINER = 1 << 16
_BYTES_PER_CONTAINER = _ROWS_PER_CONTAINER // 8
_ARRAY_MAX = 4096  # a container with more values is a bitset in the portable format
_NO_RUN_COOKIE = 12346
_ONE = np.uint64(1)
EMPTY_PORTABLE = to_portable(BitMap())


def bitmap_from_mask(mask: np.ndarray, offset: int = 0) -> BitMap:
    """The rows where ``mask`` (a numpy bool array) is True, as a ``BitMap``; row ``i`` of the
    mask is ``offset + i`` (``offset`` a multiple of 65,536)."""
    n = len(mask)
    if n == 0:
        return BitMap()
    packed = np.packbits(mask, bitorder="little")
    blocks = -(-len(packed) // _BYTES_PER_CONTAINER)
    pad = blocks * _BYTES_PER_CONTAINER - len(packed)
    if pad:
        packed = np.concatenate((packed, np.zeros(pad, dtype=np.uint8)))
    return bitmap_from_packed(packed, mask, offset)


def bitmap_from_packed(packed: np.ndarray, mask: np.ndarray | None = None, offset: int = 0) -> BitMap:
    """The set bits of ``packed`` (uint8, LSB first, whole 65,536-row blocks), as a ``BitMap``
    (bit ``i`` is row ``offset + i``, ``offset`` a multiple of 65,536).

    Dense blocks go to CRoaring as 8 KiB bitsets straight from the bytes; sparse blocks as
    their positions (found in ``mask``, the same bits unpacked, when the caller has it). The
    loop is per block (153 for 10M rows), not per row.
    """
    packed = packed.reshape(-1, _BYTES_PER_CONTAINER)
    cards = np.bitwise_count(packed.view(np.uint64)).sum(axis=1, dtype=np.int64)
    total = int(cards.sum())
    if total * 32 < packed.size * 8:  # mostly sparse: positions are cheaper than bitsets
        if mask is None:
            rows = positions_of_words(packed.reshape(-1).view(np.uint64))
        else:
            rows = np.flatnonzero(mask).astype(np.uint32)
        if offset:
            rows += np.uint32(offset)
        return bitmap_of_sorted(rows) if mask is None else bitmap_of(rows)
    keys = np.flatnonzero(cards)
    parts: list[bytes] = []
    for key in keys.tolist():  # per 65,536-row block
        if cards[key] > _ARRAY_MAX:
            parts.append(packed[key].tobytes())
        else:
            lo = key * _ROWS_PER_CONTAINER
            bits = (
                mask[lo : lo + _ROWS_PER_CONTAINER]
                if mask is not None
                else np.unpackbits(packed[key], bitorder="little")
            )
            parts.append(np.flatnonzero(bits).astype("<u2").tobytes())
    m = len(keys)
    header = np.empty((m, 2), dtype="<u2")
    header[:, 0] = keys + (offset >> 16)
    header[:, 1] = cards[keys] - 1
    sizes = np.fromiter((len(p) for p in parts), dtype=np.int64, count=m)
    offsets = 8 + 8 * m + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    buf = b"".join(
        [
            struct.pack("<II", _NO_RUN_COOKIE, m),
            header.tobytes(),
            offsets.astype("<u4").tobytes(),
            *parts,
        ]
    )
    return BitMap.deserialize(buf)


_EVEN_BITS = np.uint64(0x5555_5555_5555_5555)


def bitmap_from_words(words: np.ndarray) -> BitMap:
    """The set bits of ``words`` (uint64, whole 65,536-row blocks), as a ``BitMap``.

    For words neither sparse nor nearly full (:meth:`SliceSet._bitmap_of_words` reads those
    bit by bit): two bitmaps are handed to CRoaring, ``words | pad`` and ``pad`` (``pad``:
    the even bits ``words`` lacks, so every block of ``words | pad`` holds over 4,096 rows
    and goes in as a bitset), and CRoaring's vectorised AND-NOT gives back ``words``, each
    block as an array or a bitset as its rows call for (~1.5 ms for 10M rows).
    """
    pad = np.bitwise_and(np.invert(words), _EVEN_BITS)
    with_pad = np.bitwise_or(words, pad)
    return bitmap_from_packed(with_pad.view(np.uint8)) - bitmap_from_packed(pad.view(np.uint8))


def positions_of_words(words: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """The set bits of uint64 ``words`` as sorted uint32 positions (bit ``b`` of word ``k`` is
    position ``64 * k + b``, or ``64 * where[k] + b`` when the words are those at ``where``).

    Each pass takes the lowest bit of every word that still has one and writes it straight
    to its place in the output (its word's offset plus the pass number), so there are as
    many passes as the most bits in one word, and the output needs no sort.
    """
    live = np.flatnonzero(words != 0)
    v = words[live]
    counts = np.bitwise_count(v)
    at = np.cumsum(counts, dtype=np.intp)
    out = np.empty(int(at[-1]) if len(at) else 0, dtype=np.uint32)
    at -= counts
    base = (live if where is None else where[live]).astype(np.uint32)
    base <<= 6
    low = np.empty_like(v)
    taken = 1
    while True:  # per pass: the lowest remaining bit of each word
        low = np.negative(v, out=low[: len(v)])
        np.bitwise_and(v, low, out=low)
        np.bitwise_xor(v, low, out=v)
        low -= _ONE  # the bits below it, as many as its index
        out[at] = base + np.bitwise_count(low)
        more = np.flatnonzero(counts > taken)
        if not len(more):
            return out
        v, at, base, counts = v[more], at[more] + 1, base[more], counts[more]
        taken += 1


def bit_masks(values: np.ndarray, count: int):
    """For ``i`` in ``range(count)``: the mask of rows whose (unsigned) ``values`` have bit ``i``."""
    unsigned = values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)
    width = unsigned.dtype.itemsize * 8
    for i in range(count):  # per slice
        if i >= width:
            yield None
            continue
        yield (unsigned & unsigned.dtype.type(1 << i)) != 0
