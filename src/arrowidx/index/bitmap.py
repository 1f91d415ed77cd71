"""Bitmap index (``bitmap``), versions 1 and 2: one Roaring bitmap of rows per distinct value.

V1: ``version | row count | value count | has null | [null offset] | (key, offset)*`` then
the bitmaps. V2 adds the NULL bitmap's length and splits the sorted ``(key, offset, length)``
entries into index blocks of at most ``index-block-size`` bytes; the header lists each
block's first key, so a point lookup reads the header and one block only. An offset
``< 0`` means the value occurs once, in row ``-1 - offset``. Keys are written as Java's
``DataOutput`` writes them (strings as int32 length + UTF-8).

Build, a block of rows at a time: the block is dictionary-encoded with ``pyarrow.compute``
(integers spanning at most 2**24 values skip the hash: value - minimum is the code), its rows
grouped by value with Arrow's counting sort (one pass, or two over 12-bit digits) and added
to each value's Roaring bitmap (CRoaring's bulk add), so memory is the index and a block.
A column of more than :data:`STREAMED_VALUES` distinct values keeps its keys instead and
groups all rows at the end, every value's bitmap written at once
(:func:`arrowidx._roaring.portables_of_groups`: the containers of all values laid out by
numpy, only values of over 4096 rows one by one through CRoaring). Bitmaps go out in Java's
``HashMap`` order; the entries and index blocks are numpy records too.
"""

from __future__ import annotations

import array
import bisect
import struct
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from .._bytes import ByteReader
from .._roaring import (
    bitmap_of,
    portables_of_groups,
    positions_of,
    put_at,
    read_portable,
    read_portable_unsized,
    to_portable,
)
from ..errors import OptionError, UnsupportedTypeError
from ..sizes import parse_memory_size
from ..types import Keys, PaimonType, java_float_order
from .base import Blocks, ExactIndexReader, IndexReader, IndexType, IndexWriter, concat_keys

VERSION_1, VERSION_2 = 1, 2
_INT = struct.Struct(">i")
_INT_PAIR = struct.Struct(">ii")
DEFAULT_BLOCK_SIZE = "16kb"

# Serialised key formats (Java DataOutput): big-endian fixed width, or None for strings.
_KEY_FORMATS = {
    "TINYINT": ">i1", "SMALLINT": ">i2", "INT": ">i4", "DATE": ">i4", "TIME": ">i4",
    "BIGINT": ">i8", "TIMESTAMP": ">i8", "TIMESTAMP_LTZ": ">i8",
    "FLOAT": ">f4", "DOUBLE": ">f8", "BOOLEAN": "u1", "STRING": None,
}  # fmt: skip


def _sort_keys(values: np.ndarray, ptype: PaimonType) -> np.ndarray:
    """Integers ordering values as Java's comparator does (floats by ``Float.compare``)."""
    if ptype.is_float:
        return java_float_order(values)
    return values.astype(np.int64)


def _sort_key(value, ptype: PaimonType):
    """One value's position in Java's order (bytes compare unsigned, like BinaryString)."""
    if ptype.is_string:
        return bytes(value)
    if ptype.is_float:
        return int(java_float_order(np.array([value], dtype=ptype.key_dtype))[0])
    return int(value)


# Arrow sorts integers whose values span at most this many by counting (measured: 4,097 is
# counted, 8,192 is not, and a comparison sort of 10M rows is ~40x slower).
_COUNTING_SORT_SPAN = 4096
_DIGIT = 12  # bits of a code sorted per counting pass: 2**12 == _COUNTING_SORT_SPAN
_GROUPED_SPAN = 1 << (2 * _DIGIT)  # codes below this are grouped in two counting passes


def group_rows(codes: np.ndarray, span: int) -> np.ndarray:
    """Row numbers ordered by ``codes`` (integers in ``[0, span)``), stably: Arrow's
    counting sort, once for a span of at most 4096, else as a radix sort of two 12-bit
    digits (low digit first; ~10x faster than one comparison sort of 100,000 codes spanning
    10,000), or a comparison sort above 2**24."""
    if span <= _COUNTING_SORT_SPAN or span > _GROUPED_SPAN:
        return pc.array_sort_indices(pa.array(codes)).to_numpy()
    mask = (1 << _DIGIT) - 1
    low = pc.array_sort_indices(pa.array((codes & mask).astype(np.int16))).to_numpy()
    high = (codes[low] >> _DIGIT).astype(np.int16)
    return low[pc.array_sort_indices(pa.array(high)).to_numpy()]


def _integer_groups(present: np.ndarray | pa.Array, ptype: PaimonType):
    """``(distinct values ascending, their counts, row numbers grouped by value)`` for an
    integer column whose values span at most 2**24 (and not far more than it has rows);
    otherwise None.

    Such a column needs no hash dictionary: value - minimum is the group, counted with
    numpy, and grouped by :func:`group_rows`.
    """
    if ptype.is_string or ptype.is_float or ptype.root == "BOOLEAN" or not len(present):
        return None
    lo, hi = int(present.min()), int(present.max())
    span = hi - lo + 1
    if span > _COUNTING_SORT_SPAN and (span > _GROUPED_SPAN or span > 8 * len(present) + 65536):
        return None
    counts = np.zeros(span, dtype=np.int64)
    step = 1 << 20  # cache-sized pieces: bincount widens each to int64
    for at in range(0, len(present), step):
        piece = present[at : at + step].astype(np.int64)
        piece -= lo
        counts += np.bincount(piece, minlength=span)
    distinct = np.flatnonzero(counts)
    if span <= _COUNTING_SORT_SPAN:
        grouping = pc.array_sort_indices(pa.array(present)).to_numpy()
    else:
        grouping = group_rows((present.astype(np.int64) - lo).astype(np.int32), span)
    return (distinct + lo).astype(present.dtype), counts[distinct], grouping


_M32 = 0xFFFFFFFF


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << r) | (x >> (32 - r))) & _M32


def _murmur_mix(h1: np.ndarray, k1: np.ndarray) -> np.ndarray:
    k1 = (k1 * 0xCC9E2D51) & _M32
    k1 = (_rotl(k1, 15) * 0x1B873593) & _M32
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & _M32
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def binary_string_hashes(values: pa.Array) -> np.ndarray:
    """``BinaryString.hashCode()`` of each value (Paimon's MurmurHash3 over the UTF-8 bytes:
    little-endian 4-byte words, then the tail bytes one by one, sign-extended; seed 42),
    as uint32, vectorised over the values."""
    values = values.cast(pa.large_binary()) if values.type != pa.large_binary() else values
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset : values.offset + n + 1]
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8) if values.buffers()[2] is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.full(n, 42, dtype=np.uint64)
    words = lengths // 4
    for j in range(int(words.max()) if n else 0):
        sel = np.flatnonzero(words > j)
        at = starts[sel] + 4 * j
        word = data[at].astype(np.uint64) | (data[at + 1].astype(np.uint64) << 8) | (data[at + 2].astype(np.uint64) << 16) | (data[at + 3].astype(np.uint64) << 24)
        h[sel] = _murmur_mix(h[sel], word)
    for t in range(3):
        sel = np.flatnonzero(lengths % 4 > t)
        byte = data[starts[sel] + 4 * words[sel] + t].astype(np.int8).astype(np.int64) & _M32
        h[sel] = _murmur_mix(h[sel], byte.astype(np.uint64))
    return _fmix32(h ^ lengths.astype(np.uint64)).astype(np.uint32)


def java_hash_codes(keys, ptype: PaimonType) -> np.ndarray:
    """``hashCode()`` of the Java objects Paimon's bitmap writer keys its ``HashMap`` by
    (BinaryString, Integer, Long, Float, Double, Boolean, ...), as uint32. ``keys``: a
    numpy array (or list) of values, or for STRING an Arrow binary array (or list of bytes)."""
    root = ptype.root
    if root == "STRING":
        return binary_string_hashes(keys if isinstance(keys, pa.Array) else pa.array(keys, pa.large_binary()))
    if root == "BOOLEAN":
        return np.where(np.array(keys, dtype=bool), 1231, 1237).astype(np.uint32)
    if root == "FLOAT":
        return np.array(keys, dtype=np.float32).view(np.uint32)
    if root == "DOUBLE":
        bits = np.array(keys, dtype=np.float64).view(np.uint64)
        return ((bits ^ (bits >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    if root in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
        bits = np.array(keys, dtype=np.int64).view(np.uint64)
        return ((bits ^ (bits >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    return np.array(keys, dtype=np.int64).astype(np.int32).view(np.uint32)


def java_hashmap_positions(hashes: np.ndarray, first_rows: np.ndarray) -> np.ndarray:
    """The iteration order of a ``java.util.HashMap`` whose keys (with ``hashes``) were added
    by ``computeIfAbsent`` in the order of ``first_rows`` (each key's first row): by bucket at
    the capacity its size needs, then the latest added first (``computeIfAbsent`` puts a new
    key at the head of its bucket; resizes keep the order). (Bins Java turns into trees, 8+
    keys in one bucket of a table of 64+, are not modelled.)"""
    n = len(hashes)
    capacity = 16
    while n > capacity * 3 // 4:
        capacity *= 2
    h = hashes.astype(np.uint32)
    bucket = (h ^ (h >> np.uint32(16))) & np.uint32(capacity - 1)
    return np.lexsort((-first_rows.astype(np.int64), bucket))


def _entries(keys: np.ndarray | pa.Array, fmt: str | None, ints: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes, sizes)``: one entry per key, back to back, each the key as Java's
    ``DataOutput`` writes it (strings: int32 length + UTF-8) followed by ``ints`` as int32,
    big-endian; built with numpy for all keys at once."""
    if fmt is not None:
        record = np.dtype([("k", fmt)] + [(f"i{j}", ">i4") for j in range(len(ints))])
        out = np.empty(len(keys), dtype=record)
        out["k"] = keys
        for j, values in enumerate(ints):
            out[f"i{j}"] = values
        return out.view(np.uint8).reshape(-1), np.full(len(keys), record.itemsize, dtype=np.int64)
    keys = keys.cast(pa.large_binary()) if keys.type != pa.large_binary() else keys
    n = len(keys)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int64)[keys.offset : keys.offset + n + 1]
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8) if keys.buffers()[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    sizes = 4 + lengths + 4 * len(ints)
    at = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    put_at(out, at, lengths, ">i4")
    before = np.cumsum(lengths) - lengths  # key bytes before each key, all keys together
    step = np.repeat(np.arange(n), lengths)
    inner = np.arange(int(lengths.sum())) - before[step]
    out[at[step] + 4 + inner] = data[offsets[:-1][step] + inner]
    for j, values in enumerate(ints):
        put_at(out, at + 4 + lengths + 4 * j, values, ">i4")
    return out, sizes


# ---------------------------------------------------------------------------------------
# writer
# ---------------------------------------------------------------------------------------


def _groups(present: np.ndarray | pa.Array, ptype: PaimonType):
    """``(keys, counts, grouping, starts)`` of non-null keys: the distinct keys in Java's
    order, how many rows hold each, the positions in ``present`` grouped by key (ascending
    within a key) and where each key's positions start in ``grouping``."""
    small = _integer_groups(present, ptype)
    if small is not None:
        keys, counts, grouping = small  # already ascending, Java's order
        return keys, counts, grouping, np.cumsum(counts) - counts
    if ptype.is_string:
        encoded = pc.dictionary_encode(present)
        dictionary = encoded.dictionary
        order_of_dict = pc.sort_indices(dictionary).to_numpy()
        keys = dictionary.take(pa.array(order_of_dict))
    else:
        encoded = pc.dictionary_encode(pa.array(_identity(present, ptype)))
        dictionary = _from_identity(encoded.dictionary.to_numpy(zero_copy_only=False), ptype)
        order_of_dict = np.argsort(_sort_keys(dictionary, ptype), kind="stable")
        keys = dictionary[order_of_dict]
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    grouping = group_rows(indices, len(dictionary))  # a stable sort of the dictionary codes
    counts = np.bincount(indices, minlength=len(dictionary))
    starts = np.cumsum(counts) - counts
    return keys, counts[order_of_dict], grouping, starts[order_of_dict]


def _identity(values: np.ndarray, ptype: PaimonType) -> np.ndarray:
    """Integers equal exactly when keys are the same key (floats by their bits: -0.0 and 0.0
    are two keys, as in Java's ``HashMap``)."""
    if ptype.is_float:
        return values.view(np.int32 if values.dtype == np.float32 else np.int64)
    return values.astype(np.uint8) if values.dtype == np.bool_ else values


def _from_identity(ids: np.ndarray, ptype: PaimonType) -> np.ndarray:
    if ptype.is_float:
        return ids.view(ptype.key_dtype)
    return ids.astype(bool) if ptype.root == "BOOLEAN" else ids


#: Distinct values up to which the bitmap writer keeps one Roaring bitmap per value, adding
#: each block's rows to it (memory: the index); beyond, it keeps the keys and groups them at
#: the end, as many rows as distinct values asking for memory in proportion anyway.
STREAMED_VALUES = 4096


class BitmapWriter(IndexWriter):
    """One pass, block by block: a column of few distinct values keeps one bitmap of rows
    per value (and the NULL rows), grown as blocks come; one of many distinct values (over
    :data:`STREAMED_VALUES`) keeps its keys and groups all rows at the end."""

    def __init__(self, ptype: PaimonType, version: int, block_size: int):
        self.ptype = ptype
        self.version = version
        self.block_size = block_size
        self.rows = 0
        self.nulls = BitMap()
        self.values: list = []  # distinct keys, by code (a value's code: when it was first met)
        self.ids = np.zeros(0, np.int64)  # numeric: their identities, sorted, with their codes
        self.id_codes = np.zeros(0, np.int64)
        self.known = pa.array([], pa.large_binary())  # strings: the distinct keys, by code
        self.bitmaps: list[BitMap] | None = []  # rows of each code; None: keys kept instead
        self.chunks: list[Keys] = []
        self.blocks = Blocks()

    def add(self, keys: Keys) -> None:
        for block, first_row in self.blocks.add(keys):
            self._block(block, first_row)

    def _block(self, keys: Keys, offset: int) -> None:
        self.rows = offset + len(keys)
        if self.bitmaps is None:
            self.chunks.append(keys)
            return
        nulls = keys.nulls
        present = keys.values if nulls is None else (keys.values.filter(pa.array(~nulls)) if self.ptype.is_string else keys.values[~nulls])
        block_keys, counts, grouping, starts = _groups(present, self.ptype)
        codes = self._codes(block_keys)
        if codes is None:  # too many distinct values to keep a bitmap each
            self._keep_keys(offset)
            self.chunks.append(keys)
            return
        if nulls is not None:
            self.nulls |= bitmap_of(np.flatnonzero(nulls).astype(np.uint32) + np.uint32(offset))
        grouped = (grouping if nulls is None else np.flatnonzero(~nulls)[grouping]).astype(np.uint32)
        grouped += np.uint32(offset)
        rows = array.array("I")  # (slices of an array.array go to CRoaring's bulk add as they are)
        rows.frombytes(memoryview(grouped).cast("B"))
        bitmaps = self.bitmaps
        for code, start, count in zip(codes.tolist(), starts.tolist(), counts.tolist()):  # per value of the block
            if code == len(bitmaps):
                bitmaps.append(BitMap(rows[start : start + count]))  # (CRoaring's bulk add)
            else:
                bitmaps[code].update(rows[start : start + count])

    def _codes(self, block_keys) -> np.ndarray | None:
        """The codes of a block's distinct keys (new keys get new codes, in ``block_keys``'
        order); None when that would make more than :data:`STREAMED_VALUES` codes."""
        if self.ptype.is_string:
            found = pc.index_in(block_keys, value_set=self.known)
            new = found.is_null().to_numpy(zero_copy_only=False)
            codes = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        else:
            ids = _identity(block_keys, self.ptype).astype(np.int64)
            at = np.searchsorted(self.ids, ids)
            hit = at < len(self.ids)
            hit[hit] = self.ids[at[hit]] == ids[hit]
            new = ~hit
            codes = np.full(len(ids), -1, dtype=np.int64)
            codes[hit] = self.id_codes[at[hit]]
        fresh = int(new.sum())
        card = len(self.bitmaps)
        if card + fresh > STREAMED_VALUES:
            return None
        if fresh:
            codes[new] = np.arange(card, card + fresh)
            if self.ptype.is_string:
                self.known = pa.concat_arrays([self.known, block_keys.filter(pa.array(new))])
            else:
                self.values.append(block_keys[new])
                ids = np.concatenate([self.ids, ids[new]])
                by_id = np.argsort(ids, kind="stable")
                self.ids, self.id_codes = ids[by_id], np.concatenate([self.id_codes, codes[new]])[by_id]
        return codes

    def _distinct(self) -> np.ndarray | pa.Array:
        """The distinct keys met so far, by code."""
        if self.ptype.is_string:
            return self.known
        return np.concatenate(self.values) if self.values else np.zeros(0, self.ptype.key_dtype)

    def _keep_keys(self, row_count: int) -> None:
        """Leave bitmaps for keys: the ``row_count`` rows so far as one chunk of keys, rebuilt
        from the bitmaps (NULL rows get the first key, masked as NULL)."""
        self.chunks = []
        if row_count:
            codes = np.zeros(row_count, dtype=np.int64)
            for code, rows in enumerate(self.bitmaps):  # per distinct value (at most STREAMED_VALUES)
                codes[positions_of(rows)] = code
            distinct = self._distinct()
            if not len(distinct):  # every row so far NULL
                values = pa.nulls(row_count, pa.large_binary()) if self.ptype.is_string else np.zeros(row_count, self.ptype.key_dtype)
            else:
                values = distinct.take(pa.array(codes)) if self.ptype.is_string else distinct[codes]
            nulls = None
            if self.nulls:
                nulls = np.zeros(row_count, dtype=bool)
                nulls[positions_of(self.nulls)] = True
            self.chunks.append(Keys(values, nulls))
        self.bitmaps, self.values, self.known, self.nulls = None, [], None, BitMap()

    def finish(self) -> bytes:
        for block, first_row in self.blocks.flush():
            self._block(block, first_row)
        if self.bitmaps is None:
            return self._finish_keys()
        distinct = self._distinct()
        counts = np.array([len(b) for b in self.bitmaps], dtype=np.int64)  # per distinct value
        first_rows = np.array([b.min() for b in self.bitmaps], dtype=np.int64)
        if self.ptype.is_string:
            order = pc.sort_indices(distinct).to_numpy()
            keys = distinct.take(pa.array(order))
        else:
            order = np.argsort(_sort_keys(distinct, self.ptype), kind="stable")
            keys = distinct[order]
        bitmaps = self.bitmaps

        def portables(stored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            parts = [to_portable(bitmaps[order[i]], copy=False) for i in stored.tolist()]  # per value of 2+ rows
            sizes = np.array([len(p) for p in parts], dtype=np.int64)
            return np.frombuffer(b"".join(parts), dtype=np.uint8), sizes

        return self._serialize(self.rows, self.nulls, keys, counts[order], first_rows[order], portables)

    def _finish_keys(self) -> bytes:
        """The index of a column with many distinct values: every row grouped at once."""
        chunks = self.chunks
        if not chunks:
            values = pa.array([], pa.large_binary()) if self.ptype.is_string else np.zeros(0, self.ptype.key_dtype)
            nulls = None
        else:
            keys = concat_keys(chunks)
            values, nulls = keys.values, keys.nulls
        self.chunks = []
        null_rows = BitMap() if nulls is None else bitmap_of(np.flatnonzero(nulls).astype(np.uint32))
        present = values if nulls is None else (values.filter(pa.array(~nulls)) if self.ptype.is_string else values[~nulls])
        keys, counts, grouping, starts = _groups(present, self.ptype)
        rows_by_value = (grouping if nulls is None else np.flatnonzero(~nulls)[grouping]).astype(np.uint32)
        first_rows = rows_by_value[starts] if len(starts) else np.zeros(0, np.uint32)

        def portables(stored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return portables_of_groups(rows_by_value, starts[stored], counts[stored])

        return self._serialize(len(values), null_rows, keys, counts, first_rows, portables)

    def _serialize(self, row_count: int, null_rows: BitMap, keys, counts, first_rows, portables) -> bytes:
        """The index; ``keys`` in Java's sort order with each one's row count and first row;
        ``portables(i)``: the portable bitmaps of the keys at positions ``i`` of ``keys``, back
        to back, and each one's size."""
        fmt = _KEY_FORMATS[self.ptype.root]
        counts = np.asarray(counts, dtype=np.int64)
        first_rows = np.asarray(first_rows, dtype=np.int64)
        n = len(counts)
        nulls = len(null_rows)
        null_bytes = to_portable(null_rows) if nulls else b""
        head = len(null_bytes) if nulls > 1 else 0  # the NULL bitmap opens the body
        # Java's writer keeps value -> rows in a HashMap: the bitmaps (and V1's entries) come in
        # its iteration order; V2's entries are sorted by key. A value in one row has no bitmap.
        java = java_hashmap_positions(java_hash_codes(keys, self.ptype), first_rows) if n else np.zeros(0, np.int64)
        stored = java[counts[java] > 1]
        body, sizes = portables(stored) if len(stored) else (np.zeros(0, np.uint8), np.zeros(0, np.int64))
        offsets = -1 - first_rows
        lengths = np.full(n, -1, dtype=np.int64)
        offsets[stored] = head + np.cumsum(sizes) - sizes
        lengths[stored] = sizes
        has_null = nulls > 0
        null_offset = -1 - int(null_rows.min()) if nulls == 1 else 0
        out = bytearray([self.version])
        out += row_count.to_bytes(4, "big") + n.to_bytes(4, "big", signed=True)
        out.append(1 if has_null else 0)
        if self.version == VERSION_1:
            if has_null:
                out += null_offset.to_bytes(4, "big", signed=True)
            ordered = keys.take(pa.array(java)) if fmt is None else keys[java]
            out += _entries(ordered, fmt, [offsets[java]])[0].tobytes()
        else:
            if has_null:
                out += null_offset.to_bytes(4, "big", signed=True) + len(null_bytes).to_bytes(4, "big")
            out += self._v2_blocks(*_entries(keys, fmt, [offsets, lengths]))
        return b"".join([out, null_bytes if head else b"", body])

    def _v2_blocks(self, entries: np.ndarray, sizes: np.ndarray) -> bytes:
        """Index blocks as Java packs them: greedily, each at most ``block_size`` bytes
        (``entries``: the sorted ``(key, offset, length)`` entries back to back)."""
        ends = np.cumsum(sizes)
        room = self.block_size - 4  # after the block's entry count
        blocks: list[tuple[int, int]] = []
        i, n = 0, len(sizes)
        while i < n:  # per index block
            if sizes[i] > room:
                raise OptionError(
                    f"bitmap index-block-size {self.block_size} bytes cannot hold a key of"
                    f" {int(sizes[i]) - 8} bytes; raise file-index.bitmap.<column>.index-block-size"
                )
            begin = int(ends[i] - sizes[i])
            j = int(np.searchsorted(ends, begin + room, "right"))
            blocks.append((i, j))
            i = j
        header = bytearray(len(blocks).to_bytes(4, "big"))
        data = []
        block_offset = 0
        for i, j in blocks:
            begin = int(ends[i] - sizes[i])
            header += entries[begin : begin + int(sizes[i]) - 8].tobytes() + block_offset.to_bytes(4, "big")  # first key
            data.append((j - i).to_bytes(4, "big") + entries[begin : int(ends[j - 1])].tobytes())
            block_offset += len(data[-1])
        header += block_offset.to_bytes(4, "big")
        return b"".join([header, *data])


# ---------------------------------------------------------------------------------------
# reader
# ---------------------------------------------------------------------------------------


class BitmapReader(ExactIndexReader):
    """Reads V1 or V2; V2 decodes an index block only when a lookup lands in it."""

    exact_ops = frozenset({"eq", "in", "is_null"})

    def __init__(self, data: ByteReader, ptype: PaimonType):
        self.r = data
        self.ptype = ptype
        self.fmt = _KEY_FORMATS[ptype.root]
        self._bitmaps: dict = {}
        self.version = data.u8("bitmap version")
        if self.version not in (VERSION_1, VERSION_2):
            if self.version > VERSION_2:
                from .container import UnsupportedVersionError

                raise UnsupportedVersionError(
                    f"bitmap index version {self.version}; arrowidx reads versions 1 and 2",
                    source=data.source,
                    offset=data.pos - 1,
                )
            raise data.fail(f"bad bitmap index version {self.version}", data.pos - 1)
        self.row_count = data.i32("bitmap row count")
        if self.row_count < 0:
            raise data.fail(f"negative bitmap row count {self.row_count}", data.pos - 4)
        if self.version == VERSION_1:  # V1 lists every (key, offset) in the header
            entry_size = 4 + (4 if self.fmt is None else np.dtype(self.fmt).itemsize)
            self.cardinality = data.count("bitmap distinct value count", entry_size)
        else:
            self.cardinality = data.i32("bitmap distinct value count")
            if self.cardinality < 0:
                raise data.fail(f"negative distinct value count {self.cardinality}", data.pos - 4)
        self.has_null = data.boolean("bitmap has-null flag")
        self.null_offset, self.null_length = 0, -1
        if self.has_null:
            self.null_offset = data.i32("null bitmap offset")
            if self.version == VERSION_2:
                self.null_length = data.i32("null bitmap length")
        if self.version == VERSION_1:
            self._read_v1_dictionary()
        else:
            self._read_v2_header()

    # -- header parsing --------------------------------------------------------------
    def _read_key(self, r: ByteReader):
        if self.fmt is None:
            n = r.i32("key length")
            return bytes(r.raw(n, "string key"))
        value = r.array(self.fmt, 1, "key")[0]
        return value.item()

    def _read_v1_dictionary(self) -> None:
        r = self.r
        self._entries: dict = {}
        for _ in range(self.cardinality):  # V1 has no blocks: the whole dictionary is the header
            key = self._read_key(r)
            offset = r.i32("bitmap offset")
            self._entries[_sort_key(key, self.ptype)] = (offset, -1)
        self.body_start = r.pos
        # V1 stores no lengths: each bitmap runs to the next offset (or the end of the index).
        offsets = sorted({o for o, _ in self._entries.values() if o >= 0} | ({self.null_offset} if self._null_stored else set()))
        ends = dict(zip(offsets, offsets[1:] + [r.end - self.body_start]))
        self._entries = {k: (o, ends[o] - o if o >= 0 else -1) for k, (o, _) in self._entries.items()}
        if self._null_stored:
            self.null_length = ends[self.null_offset] - self.null_offset

    @property
    def _null_stored(self) -> bool:
        return self.has_null and self.null_offset >= 0

    def _read_v2_header(self) -> None:
        r = self.r
        n_blocks = r.count("bitmap index block count", 5)
        if self.fmt is not None:
            raw = r.array([("k", self.fmt), ("o", ">i4")], n_blocks, "index block headers")
            self._block_keys = _sort_keys(raw["k"].astype(self.ptype.key_dtype), self.ptype).tolist()
            self._block_offsets = raw["o"].tolist()
        else:
            keys, offsets = [], []
            for _ in range(n_blocks):  # per index block (16kb of entries each by default)
                keys.append(self._read_key(r))
                offsets.append(r.i32("index block offset"))
            self._block_keys, self._block_offsets = keys, offsets
        body_offset = r.i32("bitmap body offset")
        self.blocks_start = r.pos
        self.body_start = r.pos + body_offset
        if body_offset < 0 or self.body_start > r.end:
            raise r.fail(f"bitmap body offset {body_offset} points past the index", r.pos - 4)
        self._blocks: dict[int, tuple[list, list]] = {}

    def _block_reader(self, i: int) -> ByteReader:
        start = self.blocks_start + self._block_offsets[i]
        if not self.blocks_start <= start < self.body_start:
            raise self.r.fail(f"index block {i} offset {self._block_offsets[i]} is outside the block area")
        return ByteReader(self.r.data, self.r.source, start, self.body_start)

    def _block(self, i: int) -> tuple[list, list]:
        """Decode fixed-width index block ``i`` into (sorted keys, (offset, length) pairs)."""
        if i not in self._blocks:
            r = self._block_reader(i)
            n = r.count("index block entry count", 8 + np.dtype(self.fmt).itemsize)
            raw = r.array([("k", self.fmt), ("o", ">i4"), ("l", ">i4")], n, "index block entries")
            keys = _sort_keys(raw["k"].astype(self.ptype.key_dtype), self.ptype).tolist()
            self._blocks[i] = (keys, list(zip(raw["o"].tolist(), raw["l"].tolist())))
        return self._blocks[i]

    def _scan_string_block(self, i: int, targets: set[bytes]) -> dict[bytes, tuple[int, int]]:
        """Walk the entries of string block ``i`` once, finding every key of ``targets``
        there (stops when all are found)."""
        r = self._block_reader(i)
        n = r.count("index block entry count", 12)
        at = r.pos
        block = bytes(r.raw(r.remaining, "index block"))
        size, pos, found = len(block), 0, {}
        lengths = {len(t) for t in targets}
        unpack_int = _INT.unpack_from
        try:
            for _ in range(n):  # per entry of one 16kb block, never per row
                (klen,) = unpack_int(block, pos)
                if klen < 0 or pos + 12 + klen > size:
                    raise r.fail(f"string key of {klen} bytes runs past the index block", at + pos)
                if klen in lengths:
                    key = block[pos + 4 : pos + 4 + klen]
                    if key in targets:
                        found[key] = _INT_PAIR.unpack_from(block, pos + 4 + klen)
                        if len(found) == len(targets):
                            break
                pos += 12 + klen
        except struct.error:
            raise r.fail("index block entries run past the block area", at + pos) from None
        return found

    def _find_all(self, sort_keys: set) -> dict:
        """``{sort key: (offset, length)}`` for the keys of ``sort_keys`` the index holds;
        each index block is read once for all the keys it may hold."""
        if self.version == VERSION_1:
            return {k: self._entries[k] for k in sort_keys if k in self._entries}
        by_block: dict[int, set] = {}
        for sk in sort_keys:
            i = bisect.bisect_right(self._block_keys, sk) - 1
            if i >= 0:
                by_block.setdefault(i, set()).add(sk)
        found = {}
        for i, wanted in by_block.items():  # per index block
            if self.fmt is None:
                found.update(self._scan_string_block(i, wanted))
                continue
            keys, locs = self._block(i)
            for sk in wanted:
                j = bisect.bisect_left(keys, sk)
                if j < len(keys) and keys[j] == sk:
                    found[sk] = locs[j]
        return found

    # -- bitmaps -----------------------------------------------------------------------
    def _read_bitmap(self, offset: int, length: int, what: str) -> BitMap:
        if offset < 0:
            row = -1 - offset
            if row >= self.row_count:
                raise self.r.fail(f"{what}: single row {row} is past the row count {self.row_count}")
            return BitMap([row])
        start = self.body_start + offset
        if not self.body_start <= start <= self.r.end:
            raise self.r.fail(f"{what}: offset {offset} is outside the bitmap body")
        r = ByteReader(self.r.data, self.r.source, start, self.r.end)
        bitmap = read_portable(r, length, what) if length >= 0 else read_portable_unsized(r, what)
        if len(bitmap) and bitmap.max() >= self.row_count:
            raise r.fail(f"{what} holds row {bitmap.max()} past the row count {self.row_count}", start)
        return bitmap

    def value_bitmaps(self, keys) -> list[BitMap]:
        """Rows holding each of ``keys`` (an empty bitmap for a value that does not occur)."""
        pairs = [(k, _sort_key(k, self.ptype)) for k in keys]  # not a dict: -0.0 == 0.0
        missing = {sk for _, sk in pairs if sk not in self._bitmaps}
        if missing:
            located = self._find_all(missing)
            for key, sk in pairs:
                if sk not in self._bitmaps:
                    loc = located.get(sk)
                    self._bitmaps[sk] = BitMap() if loc is None else self._read_bitmap(*loc, what=f"bitmap of {key!r}")
        return [self._bitmaps[sk] for _, sk in pairs]

    def value_bitmap(self, key) -> BitMap:
        """Rows holding ``key`` (an empty bitmap if the value does not occur)."""
        return self.value_bitmaps([key])[0]

    def null_rows(self) -> BitMap:
        if not self.has_null:
            return BitMap()
        if "null" not in self._bitmaps:
            self._bitmaps["null"] = self._read_bitmap(self.null_offset, self.null_length, "NULL bitmap")
        return self._bitmaps["null"]

    def non_null_rows(self) -> BitMap:
        rows = BitMap()
        rows.add_range(0, self.row_count)
        return rows - self.null_rows()

    def matching_rows(self, op: str, keys: tuple) -> BitMap:
        return BitMap.union(BitMap(), *self.value_bitmaps(keys))

    def describe(self) -> dict:
        return {
            "version": self.version,
            "rows": self.row_count,
            "distinct values": self.cardinality,
            "has nulls": self.has_null,
        }


class BitmapIndex(IndexType):
    name = "bitmap"
    options = frozenset({"version", "index-block-size"})

    @classmethod
    def check_type(cls, ptype: PaimonType) -> None:
        if ptype.root == "DECIMAL":
            raise UnsupportedTypeError("bitmap does not support DECIMAL (as in Paimon); use bsi or range-bitmap")

    @classmethod
    def _parse(cls, column: str, options: Mapping[str, str]) -> tuple[int, int]:
        try:
            version = int(options.get("version", VERSION_2))
        except ValueError:
            raise OptionError(f"file-index.bitmap.{column}.version must be 1 or 2, got {options['version']!r}") from None
        if version not in (VERSION_1, VERSION_2):
            raise OptionError(f"file-index.bitmap.{column}.version must be 1 or 2, got {version}")
        key = f"file-index.bitmap.{column}.index-block-size"
        block_size = parse_memory_size(options.get("index-block-size", DEFAULT_BLOCK_SIZE), key)
        if block_size <= 0 or block_size > 2**31 - 1:
            raise OptionError(f"{key} must be positive and below 2gb, got {block_size}")
        return version, block_size

    @classmethod
    def check_options(cls, column: str, options: Mapping[str, str]) -> None:
        cls._parse(column, options)

    @classmethod
    def writer(cls, ptype: PaimonType, options: Mapping[str, str]) -> IndexWriter:
        cls.check_type(ptype)
        version, block_size = cls._parse("?", options)
        return BitmapWriter(ptype, version, block_size)

    @classmethod
    def reader(cls, data: ByteReader, ptype: PaimonType, arrow_type: pa.DataType) -> IndexReader:
        return BitmapReader(data, ptype)
