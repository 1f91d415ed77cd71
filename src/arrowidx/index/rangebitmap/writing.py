"""Writing bit-sliced bitmaps block by block (the range bitmap's codes, the BSI's magnitudes).

A block's bitmaps come from vectorised masks (:func:`.bitslice.bitmap_from_mask`); blocks start
at multiples of 65,536 rows, so OR-ing one in only appends whole Roaring containers, and the
serialisation drops each bitmap once written.
"""

from __future__ import annotations

import struct

import numpy as np
from pyroaring import BitMap

from ..._roaring import to_portable
from .bitslice import EMPTY_PORTABLE, VERSION_1
from .bitwords import bit_masks, bitmap_from_mask


class BitSlices:
    """A bit-sliced index built block by block: the existence bitmap (rows with a value) and
    one bitmap per bit of the rows' non-negative integer values, rows numbered across blocks.

    Each block's bitmaps come from vectorised masks (:func:`bitmap_from_mask`); blocks start
    at multiples of 65,536 rows, so OR-ing a block in only appends whole containers.
    """

    def __init__(self) -> None:
        self.ebm = BitMap()
        self.slices: list[BitMap] = []
        self.top = 0  # the largest value added

    def add(self, values: np.ndarray, present: np.ndarray, offset: int) -> None:
        """Rows ``offset ..`` with ``values`` (unsigned or non-negative; 0 where not
        ``present``)."""
        self.ebm |= bitmap_from_mask(present, offset)
        top = int(values.max()) if len(values) else 0
        self.top = max(self.top, top)
        while len(self.slices) < top.bit_length():
            self.slices.append(BitMap())
        for i, mask in enumerate(bit_masks(values, top.bit_length())):  # per slice
            if mask is not None:
                self.slices[i] |= bitmap_from_mask(mask, offset)


def serialize_bit_slices(bits: BitSlices, cardinality: int) -> list[bytes]:
    """Java's ``BitSliceIndexBitmap`` bytes for the rows' codes, as parts to write one after
    the other (``bits``: as :class:`BitSlices` built them; each bitmap is dropped once
    written, so the index is not held twice).

    The slice count is the bit length of the largest code (at least 1); Java sizes it from
    ``cardinality - 1``, which makes an index without any value carry 64 empty slices.
    """
    count = max(int(cardinality - 1).bit_length(), 1) if cardinality > 0 else 64
    portable_ebm = to_portable(bits.ebm, copy=False)
    bits.ebm = None
    parts = []
    for i in range(count):  # per slice
        if i < len(bits.slices) and cardinality > 1:
            parts.append(to_portable(bits.slices[i], copy=False))
            bits.slices[i] = None
        else:
            parts.append(EMPTY_PORTABLE)
    index = np.empty((count, 2), dtype=">i4")
    lengths = np.array([len(s) for s in parts], dtype=np.int64)
    index[:, 0] = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    index[:, 1] = lengths
    header = struct.pack(">BbII", VERSION_1, count, len(portable_ebm), 8 * count) + index.tobytes()
    return [struct.pack(">i", len(header)), header, portable_ebm, *parts]
