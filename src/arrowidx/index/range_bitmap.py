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

Build, in two passes over the column, a block of rows at a time: first its distinct keys
(each block's sorted with one SIMD sort, or a counting pass for integers of a small span,
merged as they grow); then each row's code (a table lookup for a small span, else a search
of the sorted keys) and one vectorised bit test per slice, OR-ed into the slices. Memory: the
dictionary, the slices and a block; the index is written once, straight into its buffer.
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
from .base import (
    BLOCK_ROWS,
    Blocks,
    ExactIndexReader,
    IndexReader,
    IndexType,
    IndexWriter,
    join_parts,
)
from .rangebitmap.bitslice import (
    BitSliceIndexBitmap,
    highest,
    lowest,
    version_error,
)
from .rangebitmap.dictionary import (
    ChunkedDictionary,
    FixedDictionary,
    KeyCodec,
    codec_for,
    serialize_variable,
)
from .rangebitmap.writing import BitSlices, serialize_bit_slices

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


def sorted_distinct(values: np.ndarray, in_place: bool = False) -> np.ndarray:
    """The distinct int64 ``values``, ascending: one sort (SIMD; of ``values`` themselves
    when ``in_place``) and a neighbour compare. Values spanning little more than their
    number: one counting pass, no sort.
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo <= 2 * n + (1 << 16):
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[values - lo] = True
        return np.flatnonzero(present).astype(np.int64) + lo
    if in_place:
        values.sort()
        ordered = values
    else:
        ordered = np.sort(values)
    first = np.empty(n, dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered if first.all() else ordered[first]


class DistinctKeys:
    """The distinct keys of a column, gathered block by block (sorted per block, merged when
    the blocks' lists outgrow what was merged): int64 order values, or binary keys."""

    def __init__(self, codec: KeyCodec):
        self.codec = codec
        self.parts: list = []
        self.held = 0  # keys in ``parts``
        self.merged = 0  # keys after the last merge

    def add(self, keys: Keys) -> None:
        values = keys.values
        if keys.nulls is not None:
            values = values.filter(pa.array(~keys.nulls)) if isinstance(values, pa.Array) else values[~keys.nulls]
        if not len(values):
            return
        part = pc.unique(values) if isinstance(values, pa.Array) else sorted_distinct(self.codec.order(values))
        self.parts.append(part)
        self.held += len(part)
        if len(self.parts) > 1 and self.held > 2 * self.merged + BLOCK_ROWS:
            self._merge()

    def _merge(self) -> None:
        if self.codec.fixed:
            if len(self.parts) == 1:
                merged = self.parts[0]
            else:  # the parts copied one by one into one array (each freed once copied)
                merged = np.empty(self.held, dtype=np.int64)
                at = 0
                while self.parts:
                    part = self.parts.pop(0)
                    merged[at : at + len(part)] = part
                    at += len(part)
                    del part
                merged = sorted_distinct(merged, in_place=True)
        else:
            merged = pc.unique(pa.concat_arrays(self.parts)) if len(self.parts) > 1 else self.parts[0]
        self.parts, self.held = [merged], len(merged)
        self.merged = len(merged)

    def result(self) -> np.ndarray | pa.Array:
        """Every distinct key, ascending (Java's order; strings as unsigned bytes)."""
        if not self.parts:
            return np.zeros(0, np.int64) if self.codec.fixed else pa.array([], pa.large_binary())
        self._merge()
        keys = self.parts[0]
        self.parts = []
        if not self.codec.fixed:
            keys = keys.take(pc.sort_indices(keys))  # unsigned bytewise, like BinaryString
        return keys


def _encoder(codec: KeyCodec, distinct: np.ndarray | pa.Array):
    """``codes(keys) -> uint32`` codes (ranks in ``distinct``) of every row; 0 for NULL rows."""
    if not codec.fixed:

        def codes(keys: Keys) -> np.ndarray:
            found = pc.index_in(keys.values, value_set=distinct)
            return found.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint32)

        return codes
    card = len(distinct)
    if not card:  # no value at all
        return lambda keys: np.zeros(len(keys), dtype=np.uint32)
    lo = int(distinct[0])
    span = int(distinct[-1]) - lo + 1
    if span <= 8 * card + (1 << 16):  # a table of every value's code: one gather
        code_of = np.zeros(span, dtype=np.uint32)
        code_of[distinct - lo] = np.arange(card, dtype=np.uint32)

        def codes(keys: Keys) -> np.ndarray:
            order = codec.order(keys.values)
            if keys.nulls is not None:
                order[keys.nulls] = lo
            order -= lo
            return code_of[order]

        return codes

    def codes(keys: Keys) -> np.ndarray:
        order = codec.order(keys.values)
        if keys.nulls is not None:
            order[keys.nulls] = distinct[0]
        if card <= 1 << 16:  # the keys stay in the CPU cache: a search per row
            return np.searchsorted(distinct, order).astype(np.uint32)
        by_value = np.argsort(order)  # searched in order, each search starts where the last ended
        out = np.empty(len(order), dtype=np.uint32)
        out[by_value] = np.searchsorted(distinct, order[by_value])
        return out

    return codes


class RangeBitmapWriter(IndexWriter):
    """Two passes over the column: its distinct keys (the sorted dictionary), then each
    row's code (its key's rank) into the bit slices, block by block."""

    passes = 2

    def __init__(self, ptype: PaimonType, chunk_size: int):
        self.ptype = ptype
        self.codec = codec_for(ptype)
        self.chunk_size = chunk_size
        self.rows = 0
        self.distinct = DistinctKeys(self.codec)
        self.blocks = Blocks()
        self.keys = None  # the dictionary, from pass 2 on
        self.slices = BitSlices()

    def add(self, keys: Keys) -> None:
        if self.keys is None:  # pass 1: the distinct keys
            self.rows += len(keys)
            for block, _ in self.blocks.add(keys):
                self.distinct.add(block)
            return
        for block, first_row in self.blocks.add(keys):  # pass 2: each row's code
            self._codes(block, first_row)

    def next_pass(self) -> None:
        for block, _ in self.blocks.flush():
            self.distinct.add(block)
        self.keys = self.distinct.result()
        self.distinct = None
        self.codes = _encoder(self.codec, self.keys)
        self.blocks = Blocks()

    def _codes(self, keys: Keys, first_row: int) -> None:
        present = ~keys.nulls if keys.nulls is not None else np.ones(len(keys), dtype=bool)
        self.slices.add(self.codes(keys), present, first_row)

    def finish(self) -> bytearray:
        """The index, written once into one buffer (the keys encoded straight into it)."""
        if self.keys is None:
            if self.rows:
                raise RuntimeError("range-bitmap writer: finish() before its second pass (next_pass())")
            self.next_pass()
        for block, first_row in self.blocks.flush():
            self._codes(block, first_row)
        cardinality = len(self.keys)
        slices = serialize_bit_slices(self.slices, cardinality)
        self.slices = None
        if self.ptype.is_string:
            head, lo, hi = serialize_variable(self.keys, self.chunk_size)
            dictionary = None
            dictionary_length = len(head)
        else:
            dictionary = FixedDictionary(self.codec, self.keys, self.chunk_size)
            head, lo, hi, dictionary_length = dictionary.head, dictionary.lo, dictionary.hi, dictionary.size
        header = struct.pack(">Bii", VERSION_1, self.rows, cardinality) + lo + hi + struct.pack(">i", dictionary_length)
        out = bytearray(4 + len(header) + dictionary_length + sum(len(p) for p in slices))
        view = np.frombuffer(out, dtype=np.uint8)
        at = 0
        for part in (struct.pack(">i", len(header)), header, head):
            out[at : at + len(part)] = part
            at += len(part)
        if dictionary is not None:
            dictionary.write_keys(view[at : at + dictionary.keys_length])
            at += dictionary.keys_length
        self.keys = self.codes = dictionary = None
        del view
        return join_parts(slices, out, at)  # (each slice dropped once copied)


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
