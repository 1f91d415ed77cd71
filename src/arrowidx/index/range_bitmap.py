"""Range-bitmap index (``range-bitmap``): a sorted dictionary plus a bit-sliced index of codes.

Every distinct non-null key gets a code, its rank in Java's key order; the rows' codes are
stored as a bit-sliced index (one bitmap per bit, plus the existence bitmap of non-null
rows). ``=`` and ``IN`` find a key's code in the chunked dictionary and walk the slices;
``<``, ``<=``, ``>``, ``>=`` turn the key into a code bound (its insertion point when absent)
and walk the slices once; TopN picks the rows with the largest or smallest codes.

Layout (Java ``RangeBitmap`` V1), big-endian::

    header length (int32)
    version (byte, 1) | row count (int32) | distinct count (int32) | [min key | max key]
    dictionary length (int32)
    dictionary (see :mod:`.rangebitmap.dictionary`)
    bit-slice index (see :mod:`.rangebitmap.bitslice`)

Build: the column is dictionary-encoded once (a counting pass for integers with a small
span, ``pyarrow.compute.dictionary_encode`` otherwise), the distinct keys sorted, and each
slice built from one vectorised bit test over all rows' codes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from .._bytes import ByteReader
from ..errors import OptionError, UnsupportedTypeError
from ..result import REMAIN, IndexResult
from ..sizes import parse_memory_size
from ..types import Keys, PaimonType
from .base import ExactIndexReader, IndexReader, IndexType, IndexWriter
from .rangebitmap.bitslice import BitSliceIndexBitmap, highest, lowest, version_error
from .rangebitmap.bitwords import serialize_bit_slices
from .rangebitmap.dictionary import (
    ChunkedDictionary,
    KeyCodec,
    codec_for,
    serialize_fixed,
    serialize_variable,
)

VERSION_1 = 1
SUPPORTED = frozenset(
    {"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ",
     "STRING", "BOOLEAN", "FLOAT", "DOUBLE", "DECIMAL"}
)  # fmt: skip
_UNCHUNKED = frozenset({"BOOLEAN", "TINYINT", "SMALLINT"})  # Java's default chunk-size is 0b


def default_chunk_size(ptype: PaimonType) -> str:
    return "0b" if ptype.root in _UNCHUNKED else "16kb"


# ---------------------------------------------------------------------------------------
# writer
# ---------------------------------------------------------------------------------------


def _concat(chunks: list[Keys], ptype: PaimonType) -> tuple[np.ndarray | pa.Array, np.ndarray]:
    if ptype.is_string:
        values = (
            pa.concat_arrays([c.values for c in chunks])
            if chunks
            else pa.array([], pa.large_binary())
        )
    else:
        values = (
            np.concatenate([c.values for c in chunks]) if chunks else np.zeros(0, ptype.key_dtype)
        )
    nulls = (
        np.concatenate(
            [c.nulls if c.nulls is not None else np.zeros(len(c), dtype=bool) for c in chunks]
        )
        if chunks
        else np.zeros(0, dtype=bool)
    )
    return values, nulls


def encode_integers(order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct values, code of each value)`` for int64 order values.

    Values spanning little more than their number: one counting pass, no sort. Otherwise one
    (SIMD) sort finds the distinct values; with many repeats a hash dictionary-encode then
    maps rows to them, with mostly distinct values an argsort does.
    """
    n = len(order)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32)
    lo, hi = int(order.min()), int(order.max())
    if hi - lo <= 2 * n + (1 << 16):
        offsets = (order - lo).astype(np.intp)
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[offsets] = True
        code_of = np.cumsum(present, dtype=np.uint32) - np.uint32(1)
        return np.flatnonzero(present).astype(np.int64) + lo, code_of[offsets]
    ordered = np.sort(order)
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    distinct = ordered[first]
    if 4 * len(distinct) <= n:
        encoded = pc.dictionary_encode(pa.array(order, pa.int64()))
        rank = np.searchsorted(distinct, encoded.dictionary.to_numpy()).astype(np.uint32)
        return distinct, rank[encoded.indices.to_numpy()]
    codes = np.empty(n, dtype=np.uint32)
    codes[np.argsort(order)] = np.cumsum(first, dtype=np.uint32) - np.uint32(1)
    return distinct, codes


def encode_strings(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """``(sorted distinct keys, code of each row)`` for a binary array (nulls get code 0)."""
    encoded = pc.dictionary_encode(values)
    distinct = encoded.dictionary
    by_value = pc.sort_indices(distinct).to_numpy()  # unsigned bytewise, like BinaryString
    rank = np.empty(len(distinct), dtype=np.uint32)
    rank[by_value] = np.arange(len(distinct), dtype=np.uint32)
    indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    codes = rank[indices] if len(distinct) else np.zeros(len(values), np.uint32)
    return distinct.take(pa.array(by_value)), codes


class RangeBitmapWriter(IndexWriter):
    def __init__(self, ptype: PaimonType, chunk_size: int):
        self.ptype = ptype
        self.codec = codec_for(ptype)
        self.chunk_size = chunk_size
        self.chunks: list[Keys] = []

    def add(self, keys: Keys) -> None:
        self.chunks.append(keys)

    def finish(self) -> bytes:
        values, nulls = _concat(self.chunks, self.ptype)
        rows = len(nulls)
        present = ~nulls
        if self.ptype.is_string:
            distinct, codes = encode_strings(values)
            codes[nulls] = 0
            dictionary, lo, hi = serialize_variable(distinct, self.chunk_size)
            cardinality = len(distinct)
        else:
            order = self.codec.order(values)
            distinct, present_codes = encode_integers(order[present] if nulls.any() else order)
            if nulls.any():
                codes = np.zeros(rows, dtype=np.uint32)
                codes[present] = present_codes
            else:
                codes = present_codes
            dictionary, lo, hi = serialize_fixed(self.codec, distinct, self.chunk_size)
            cardinality = len(distinct)
        slices = serialize_bit_slices(codes, present, cardinality)
        header = b"".join(
            [
                struct.pack(">Bii", VERSION_1, rows, cardinality),
                lo,
                hi,
                struct.pack(">i", len(dictionary)),
            ]
        )
        return b"".join([struct.pack(">i", len(header)), header, dictionary, slices])


# ---------------------------------------------------------------------------------------
# reader
# ---------------------------------------------------------------------------------------


class RangeBitmapReader(ExactIndexReader):
    """Opens the header, the dictionary header and the slice table; decodes the rest lazily."""

    cost = 2

    exact_ops = frozenset({"eq", "in", "lt", "le", "gt", "ge", "is_null"})

    def __init__(self, r: ByteReader, ptype: PaimonType):
        self.codec: KeyCodec = codec_for(ptype)
        at = r.pos
        header_length = r.i32("range-bitmap header length")
        if header_length < 13:
            raise r.fail(
                f"range-bitmap header length {header_length} is below the minimum of 13", at
            )
        h = r.sub(header_length, "range-bitmap header")
        version = h.u8("range-bitmap version")
        if version != VERSION_1:
            version_error(h, version, "range-bitmap index")
        self.rows = h.i32("range-bitmap row count")
        self.cardinality = h.i32("range-bitmap distinct count")
        if self.rows < 0 or self.cardinality < 0 or self.cardinality > self.rows:
            raise h.fail(f"{self.cardinality} distinct values in {self.rows} rows", at + 5)
        self.min = self.max = None
        if self.cardinality:
            self.min = self.codec.read(h, "minimum key")
            self.max = self.codec.read(h, "maximum key")
            if self.min > self.max or (self.cardinality == 1) != (self.min == self.max):
                raise h.fail(
                    f"minimum and maximum keys disagree with {self.cardinality} distinct values"
                )
        dictionary_length = h.i32("dictionary length")
        if h.remaining:
            raise h.fail(f"{h.remaining} unexpected bytes at the end of the range-bitmap header")
        if dictionary_length < 0 or dictionary_length > r.remaining:
            raise h.fail(
                f"dictionary length {dictionary_length} with {r.remaining} bytes left", h.pos - 4
            )
        self.dictionary = ChunkedDictionary(
            r.sub(dictionary_length, "dictionary"), self.codec, self.cardinality
        )
        self.bsi = BitSliceIndexBitmap(r, self.rows, max(self.cardinality - 1, 0))
        if self.cardinality and self.dictionary.chunk(0).head != self.min:
            raise r.fail("the header's minimum key is not the dictionary's first key", at + 13)
        self.dictionary.expected_last = self.max  # checked if the last chunk is ever decoded

    @property
    def lists_keys(self) -> bool:
        return self.codec.fixed

    def distinct_keys(self) -> np.ndarray | None:
        """Every key the index holds, ascending, as the int64 order values
        ``codec.order_of`` gives (what a key directory lists); None for variable-width keys."""
        if not self.codec.fixed:
            return None
        if not self.cardinality:
            return np.empty(0, np.int64)
        return self.dictionary.ordered_keys()

    # -- row sets ----------------------------------------------------------------------
    def _all_rows(self) -> BitMap:
        rows = BitMap()
        rows.add_range(0, self.rows)
        return rows

    def non_null_rows(self) -> BitMap:
        return BitMap(self.bsi.ebm()) if self.cardinality else BitMap()

    def null_rows(self) -> BitMap:
        return self._all_rows() - self.non_null_rows()

    def _code(self, key) -> int:
        """The dictionary code of ``key`` (in Java's key order); negative when no row holds it."""
        if key < self.min or key > self.max:
            return -1
        return self.dictionary.find(key)

    def matching_rows(self, op: str, keys: tuple) -> BitMap:
        """The non-null rows where ``<column> <op> keys`` holds in Java's key order."""
        if not self.cardinality:
            return BitMap()
        ordered = [self.codec.order_of(k) for k in keys]
        if op in ("eq", "in"):
            if self.min == self.max:  # one distinct value: no slice to walk
                return self.non_null_rows() if self.min in ordered else BitMap()
            if len(ordered) == 1:  # one key (a needle, per file of a scan): nothing to share
                code = self._code(ordered[0])
                return self.bsi.eq(code) if code >= 0 else BitMap()
            codes = [self._code(k) for k in set(ordered)]
            with self.bsi.kept():  # the keys share the slices
                return self.bsi.eq_any(codes)
        key = ordered[0]
        # min/max settle many ranges without the dictionary (as Java does)
        if op in ("lt", "le"):
            if key > self.max or (op == "le" and key == self.max):
                return self.non_null_rows()
            if key < self.min or (op == "lt" and key == self.min):
                return BitMap()
        else:
            if key < self.min or (op == "ge" and key == self.min):
                return self.non_null_rows()
            if key > self.max or (op == "gt" and key == self.max):
                return BitMap()
        code = self.dictionary.find(key)
        found = code >= 0
        bound = code if found else -code - 1  # first code at or above the key
        if op == "lt":
            return self.bsi.lt(bound)
        if op == "le":
            return self.bsi.lt(bound + 1 if found else bound)
        if op == "gt":
            return self.bsi.ge(bound + 1 if found else bound)
        return self.bsi.ge(bound)

    # -- TopN --------------------------------------------------------------------------
    def top_n(
        self, descending: bool, nulls_first: bool, limit: int, strict: bool, candidates: IndexResult
    ) -> IndexResult:
        """The top ``limit`` rows of ``candidates`` by this column.

        Java's order and tie-break: values by Java's comparator (NaN largest), ties keep the
        highest row numbers, NULLs (first or last as asked) keep the lowest. ``strict``
        (one sort key) gives exactly ``limit`` rows when there are that many; otherwise
        every row tied with the last one is kept.
        """
        if candidates.kind == "skip":
            return candidates
        if limit < 0:
            return REMAIN
        return IndexResult.of(lambda: self._top(descending, nulls_first, limit, strict, candidates))

    def _top(
        self, descending: bool, nulls_first: bool, k: int, strict: bool, candidates: IndexResult
    ) -> BitMap:
        rows = self._all_rows()
        cand = rows if candidates.kind != "bitmap" else candidates.bitmap & rows
        if k == 0:
            return BitMap()
        values = self.non_null_rows() & cand
        nulls = cand - values

        def best(n: int) -> BitMap:
            above, tied = (
                self.bsi.extreme(n, values, largest=descending) if values else (BitMap(), BitMap())
            )
            return above | (highest(tied, n - len(above)) if strict else tied)

        if nulls_first:
            if len(nulls) >= k:
                return lowest(nulls, k) if strict else nulls
            return nulls | best(k - len(nulls))
        top = best(k)
        if len(top) >= k:
            return top
        return top | (lowest(nulls, k - len(top)) if strict else nulls)

    def describe(self) -> dict:
        return {
            "rows": self.rows,
            "distinct values": self.cardinality,
            "dictionary chunks": self.dictionary.size,
            "slices": self.bsi.count,
        }


class RangeBitmapIndex(IndexType):
    name = "range-bitmap"
    options = frozenset({"chunk-size"})

    @classmethod
    def check_type(cls, ptype: PaimonType) -> None:
        if ptype.root not in SUPPORTED:
            raise UnsupportedTypeError(f"range-bitmap does not support {ptype.sql}")
        if ptype.root == "DECIMAL" and (ptype.precision or 0) > 18:
            raise UnsupportedTypeError(
                f"range-bitmap supports DECIMAL with a precision up to 18 (as in Paimon), not {ptype.sql}; use bsi"
            )
        if ptype.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (ptype.precision or 0) > 6:
            raise UnsupportedTypeError(
                f"range-bitmap supports TIMESTAMP with a precision up to 6 (as in Paimon), not {ptype.sql};"
                " cast the column to microseconds"
            )

    @classmethod
    def _chunk_size(cls, column: str, ptype: PaimonType | None, options: Mapping[str, str]) -> int:
        key = f"file-index.range-bitmap.{column}.chunk-size"
        default = default_chunk_size(ptype) if ptype is not None else "16kb"
        size = parse_memory_size(options.get("chunk-size", default), key)
        if size > 2**31 - 1:
            raise OptionError(f"{key} must be below 2gb, got {options['chunk-size']!r}")
        return size

    @classmethod
    def check_options(cls, column: str, options: Mapping[str, str]) -> None:
        cls._chunk_size(column, None, options)

    @classmethod
    def writer(cls, ptype: PaimonType, options: Mapping[str, str]) -> IndexWriter:
        cls.check_type(ptype)
        return RangeBitmapWriter(ptype, cls._chunk_size("?", ptype, options))

    @classmethod
    def reader(cls, data: ByteReader, ptype: PaimonType, arrow_type: pa.DataType) -> IndexReader:
        if ptype.root not in SUPPORTED:
            raise UnsupportedTypeError(f"range-bitmap cannot hold {ptype.sql}")
        return RangeBitmapReader(data, ptype)
