"""Bit-slice index (``bsi``, deprecated in Paimon in favour of range-bitmap): V1.

Integer keys (TINYINT .. BIGINT, DATE, TIME, TIMESTAMP, DECIMAL's unscaled long) are split
by sign: a *positive* bit-sliced index holds the rows with ``x >= 0`` and the value ``x``, a
*negative* one the rows with ``x < 0`` and ``|x|``. Each stores ``value - min`` in slices.

Layout, big-endian except the Roaring bitmaps (portable format, run-optimised, unsized)::

    version (byte, 1) | row count (int32)
    has positive (byte) | [positive BSI]
    has negative (byte) | [negative BSI]
    BSI: version (byte, 1) | min (int64) | max (int64) | existence bitmap
         | slice count (int32) | slice 0 | slice 1 | ...

Java quirks reproduced byte for byte: the stored minimum is always 0 (Java's collector starts
its minimum at 0), a file without values is 7 bytes, and ``Long.MIN_VALUE`` cannot be written
(its absolute value overflows), which is an :class:`UnsupportedValueError` here.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from .._bytes import ByteReader
from .._roaring import portable_size, to_portable
from ..errors import CorruptIndexError, UnsupportedTypeError, UnsupportedValueError
from ..types import Keys, PaimonType
from .base import Blocks, ExactIndexReader, IndexReader, IndexType, IndexWriter, join_parts
from .rangebitmap.bitslice import SliceSet, load_bitmap, version_error
from .rangebitmap.writing import BitSlices

VERSION_1 = 1
SUPPORTED = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "DATE",
        "TIME",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
        "DECIMAL",
    }
)
_LONG_MIN = -(1 << 63)


# ---------------------------------------------------------------------------------------
# writer
# ---------------------------------------------------------------------------------------


def _serialize_half(half: BitSlices) -> list[bytes]:
    """One signed half: min 0 (as Java), max, existence bitmap, ``bit_length(max)`` slices
    (each bitmap dropped once serialised, so the index is not held twice)."""
    count = len(half.slices)  # the bit length of the largest magnitude
    parts = [struct.pack(">Bqq", VERSION_1, 0, half.top), to_portable(half.ebm, copy=False), struct.pack(">i", count)]
    half.ebm = None
    for i in range(count):  # per slice
        parts.append(to_portable(half.slices[i], copy=False))
        half.slices[i] = None
    return parts


class BsiWriter(IndexWriter):
    """One pass, block by block: each half's existence bitmap and slices grow as rows come
    (a slice appears with the first magnitude that has its bit)."""

    def __init__(self, ptype: PaimonType):
        self.ptype = ptype
        self.rows = 0
        self.halves = (BitSlices(), BitSlices())  # positive, negative
        self.blocks = Blocks()

    def add(self, keys: Keys) -> None:
        for block, first_row in self.blocks.add(keys):
            self._block(block, first_row)

    def _block(self, keys: Keys, offset: int) -> None:
        values = keys.values.astype(np.int64, copy=False)
        valid = ~keys.nulls if keys.nulls is not None else np.ones(len(values), bool)
        bad = valid & (values == _LONG_MIN)
        if bad.any():
            row = offset + int(np.flatnonzero(bad)[0])
            raise UnsupportedValueError(
                f"bsi cannot store the key -2**63 (row {row}): Java Paimon's writer fails on it too;"
                " use range-bitmap for this column"
            )
        self.rows = offset + len(values)
        positive = valid & (values >= 0)
        negative = valid & (values < 0)
        for half, present, magnitude in (
            (self.halves[0], positive, np.where(positive, values, 0)),
            (self.halves[1], negative, np.where(negative, -values, 0)),
        ):
            if present.any():
                half.add(magnitude, present, offset)

    def finish(self) -> bytearray:
        for block, first_row in self.blocks.flush():
            self._block(block, first_row)
        out = [struct.pack(">Bi", VERSION_1, self.rows)]
        for half in self.halves:
            if half.ebm:
                out += [b"\x01", *_serialize_half(half)]
            else:
                out.append(b"\x00")
        self.halves = ()
        return join_parts(out)


# ---------------------------------------------------------------------------------------
# reader
# ---------------------------------------------------------------------------------------


class _Half(SliceSet):
    """One signed half of a BSI; bitmaps are located when opened, decoded when used."""

    def __init__(self, r: ByteReader, rows: int, what: str):
        super().__init__()
        self.source, self.data, self.rows, self.what = r.source, r.data, rows, what
        version = r.u8(f"{what} BSI version")
        if version != VERSION_1:
            version_error(r, version, f"{what} BSI")
        at = r.pos
        self.min, self.max = r.i64(f"{what} BSI min"), r.i64(f"{what} BSI max")
        if not 0 <= self.min <= self.max:
            raise r.fail(f"{what} BSI range [{self.min}, {self.max}] is not within [0, 2**63)", at)
        self.max_value = self.max - self.min
        self.ebm_at = self._locate(r, f"{what} existence bitmap")
        at = r.pos
        self.count = r.i32(f"{what} slice count")
        if not 0 <= self.count <= 64 or self.max_value.bit_length() > self.count:
            raise r.fail(f"{self.count} slices for {what} values up to {self.max_value}", at)
        self.slices_at = [
            self._locate(r, f"{what} slice {i}") for i in range(self.count)
        ]  # per slice

    @staticmethod
    def _locate(r: ByteReader, what: str) -> tuple[int, int]:
        at = r.pos
        length = portable_size(r.data, at, r.end)
        if length is None:
            raise r.fail(f"{what} is not a portable Roaring bitmap or runs past the index", at)
        r.seek(at + length, what)
        return at, length

    def _load_ebm(self) -> BitMap:
        ebm = load_bitmap(self.data, self.source, *self.ebm_at, f"{self.what} existence bitmap")
        if ebm and ebm.max() >= self.rows:
            raise CorruptIndexError(
                f"{self.what} existence bitmap holds row {ebm.max()} of {self.rows}",
                source=self.source,
                offset=self.ebm_at[0],
            )
        return ebm

    def _span(self, i: int) -> tuple[int, int]:
        return self.slices_at[i]

    def _load_slice(self, i: int) -> BitMap:
        return load_bitmap(self.data, self.source, *self._span(i), f"{self.what} slice {i}")


class _NoValues(SliceSet):
    count, max_value, min = 0, -1, 0

    def _load_ebm(self) -> BitMap:
        return BitMap()


class BsiReader(ExactIndexReader):
    cost = 2

    exact_ops = frozenset({"eq", "in", "lt", "le", "gt", "ge", "is_null"})

    def __init__(self, r: ByteReader):
        version = r.u8("bsi version")
        if version != VERSION_1:
            version_error(r, version, "bsi index")
        self.rows = r.i32("bsi row count")
        if self.rows < 0:
            raise r.fail(f"negative bsi row count {self.rows}", r.pos - 4)
        self.positive = (
            _Half(r, self.rows, "positive") if r.boolean("has-positive flag") else _NoValues()
        )
        self.negative = (
            _Half(r, self.rows, "negative") if r.boolean("has-negative flag") else _NoValues()
        )
        if r.remaining:
            raise r.fail(f"{r.remaining} unexpected bytes after the bsi index")
        self.source = r.source

    def non_null_rows(self) -> BitMap:
        p, n = self.positive.ebm(), self.negative.ebm()
        if p.intersect(n):
            raise CorruptIndexError(
                "a row is in both the positive and the negative BSI", source=self.source
            )
        return p | n

    def null_rows(self) -> BitMap:
        rows = BitMap()
        rows.add_range(0, self.rows)
        return rows - self.non_null_rows()

    def matching_rows(self, op: str, keys: tuple) -> BitMap:
        """The non-null rows where ``<column> <op> keys`` holds (exact)."""
        p, n = self.positive, self.negative
        if op in ("eq", "in"):
            values = {int(k) for k in keys}
            positive_codes = [v - p.min for v in values if v >= 0]
            negative_codes = [-v - n.min for v in values if v < 0]
            if len(values) == 1:  # one key: nothing to share
                return p.eq(positive_codes[0]) if positive_codes else n.eq(negative_codes[0])
            with p.kept(), n.kept():  # the keys share the slices
                return p.eq_any(positive_codes) | n.eq_any(negative_codes)
        v = int(keys[0])
        if op in ("lt", "le"):
            if v >= 0:
                below = p.lt(v - p.min) if op == "lt" else p.le(v - p.min)
                return below | n.ebm()
            # x < v < 0  <=>  |x| > |v|
            return n.gt(-v - n.min) if op == "lt" else n.ge(-v - n.min)
        if v >= 0:
            return p.gt(v - p.min) if op == "gt" else p.ge(v - p.min)
        above = n.lt(-v - n.min) if op == "gt" else n.le(-v - n.min)
        return above | p.ebm()

    def describe(self) -> dict:
        return {
            "rows": self.rows,
            "positive slices": self.positive.count,
            "negative slices": self.negative.count,
        }


class BsiIndex(IndexType):
    name = "bsi"

    @classmethod
    def check_type(cls, ptype: PaimonType) -> None:
        if ptype.root not in SUPPORTED:
            raise UnsupportedTypeError(
                f"bsi does not support {ptype.sql} (as in Paimon: integers, DATE, TIME, TIMESTAMP and"
                " DECIMAL only); use range-bitmap"
            )

    @classmethod
    def check_options(cls, column: str, options: Mapping[str, str]) -> None:
        pass

    @classmethod
    def writer(cls, ptype: PaimonType, options: Mapping[str, str]) -> IndexWriter:
        cls.check_type(ptype)
        return BsiWriter(ptype)

    @classmethod
    def reader(cls, data: ByteReader, ptype: PaimonType, arrow_type: pa.DataType) -> IndexReader:
        cls.check_type(ptype)
        return BsiReader(data)
