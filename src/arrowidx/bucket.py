"""Paimon's primary-key hash, bucket numbers, hash-index files and dynamic bucket assignment.

Paimon hashes a key by laying the key columns out as a ``BinaryRow`` (an 8-byte aligned
null-bit header, one 8-byte slot per field, variable-length data after the slots) and running
MurmurHash3 (x86, 32-bit, seed 42) over that row's bytes as little-endian 4-byte words
(``BinaryRow.hashCode()``). Here the rows of a whole Arrow table are built with numpy and
pyarrow compute and hashed word by word across all rows at once.

A hash-index file (the dynamic-bucket index) is nothing but those hashes as consecutive
big-endian int32 values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._bytes import as_buffer, atomic_write
from .arrow_input import arrow_table
from .errors import ArrowIdxError, CorruptIndexError, OptionError, UnsupportedTypeError
from .types import integer_array

__all__ = [
    "DynamicBucketAssigner",
    "paimon_binary_rows",
    "paimon_bucket",
    "paimon_bucket_of_hash",
    "paimon_key_hash",
    "read_hash_index",
    "write_hash_index",
    "write_hash_index_file",
]

_SEED = 42
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M5 = np.uint32(5)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_CHUNK_ROWS = 1 << 20  # rows encoded and hashed at once (bounds temporary memory)
_MAX_INLINE = 7  # strings/binaries up to 7 bytes live inside their slot


# --------------------------------------------------------------------------------------
# Hash-index files
# --------------------------------------------------------------------------------------
def read_hash_index(data: Any) -> pa.Int32Array:
    """The key hashes of a hash-index file (bytes, a path or a binary file object)."""
    raw, source = as_buffer(data)
    size = len(memoryview(raw).cast("B"))
    if size % 4:
        raise CorruptIndexError(
            f"hash index size {size} is not a multiple of 4 (a trailing partial int)",
            source=source,
            offset=size - size % 4,
        )
    values = np.frombuffer(memoryview(raw).cast("B"), dtype=">i4").astype(np.int32)
    return pa.array(values, type=pa.int32())


def _int32_values(hashes: Any, what: str) -> np.ndarray:
    """Hashes as a numpy int32 array (any integer input whose values fit)."""
    arr = integer_array(hashes, what).reshape(-1)
    if arr.dtype != np.int32 and arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < -(2**31) or hi > 2**31 - 1:
            raise ArrowIdxError(f"{what} must fit in int32, got values in [{lo}, {hi}]")
    return arr.astype(np.int32, copy=False)


def write_hash_index(hashes: Any) -> bytes:
    """A hash-index file: the hashes as consecutive big-endian int32 values, in order."""
    return _int32_values(hashes, "hashes").astype(">i4").tobytes()


def write_hash_index_file(path: str | os.PathLike, hashes: Any) -> None:
    """Write a hash-index file atomically (temporary file + rename)."""
    atomic_write(path, write_hash_index(hashes))


# --------------------------------------------------------------------------------------
# BinaryRow layout
# --------------------------------------------------------------------------------------
class _Field:
    """One key column as BinaryRow pieces: the slot words, nulls and variable-length data."""

    __slots__ = ("slot", "nulls", "var", "var_size", "keep_var_for_null")

    def __init__(self, slot, nulls, var=None, var_size=None, keep_var_for_null=False):
        self.slot = slot  # uint64 per row: the slot's little-endian value (size field if var)
        self.nulls = nulls  # bool per row or None
        self.var = var  # large_binary array of variable-length bytes (unpadded) or None
        self.var_size = var_size  # int64 per row: bytes reserved in the variable part
        self.keep_var_for_null = keep_var_for_null


def _valid_and_nulls(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _ints(arr: pa.Array, dtype: str) -> np.ndarray:
    if arr.null_count:
        zero = pa.scalar(False) if pa.types.is_boolean(arr.type) else pa.scalar(0, arr.type)
        arr = arr.fill_null(zero)
    filled = arr
    return np.asarray(filled.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _fixed_field(values: np.ndarray, nulls) -> _Field:
    """Slot holding ``values`` (already the right width, signed) in its low bytes."""
    width = values.dtype.itemsize
    unsigned = values.view(f"<u{width}").astype(np.uint64)
    if nulls is not None:
        unsigned[nulls] = 0
    return _Field(unsigned, nulls)


def _bytes_field(arr: pa.Array, nulls) -> _Field:
    """STRING / BINARY: <= 7 bytes inline with a 0x80|len marker byte, else variable part."""
    arr = arr.cast(pa.large_binary()) if arr.type != pa.large_binary() else arr
    if nulls is not None:
        arr = arr.fill_null(b"")
    lengths = np.asarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)
    n = len(arr)
    slot = np.zeros(n, dtype=np.uint64)
    short = lengths <= _MAX_INLINE
    if short.any():
        # Inline: the bytes in slot bytes 0..len-1, byte 7 = 0x80 | len.
        padded = pc.binary_join_element_wise(
            pc.if_else(pa.array(short), arr, pa.scalar(b"", pa.large_binary())),
            pc.binary_repeat(
                pa.scalar(b"\x00", pa.large_binary()), pa.array(8 - np.where(short, lengths, 8))
            ),
            pa.scalar(b"", pa.large_binary()),
        )
        # padded: 8 bytes per short row, 0 bytes per long row
        data = np.frombuffer(
            padded.buffers()[2], dtype=np.uint8, count=8 * int(short.sum()), offset=0
        )
        words = data.view("<u8").copy()
        words |= (np.uint64(0x80) | lengths[short].astype(np.uint64)) << np.uint64(56)
        slot[short] = words
    long_rows = ~short
    var = None
    var_size = np.zeros(n, dtype=np.int64)
    if long_rows.any():
        var = pc.if_else(pa.array(long_rows), arr, pa.scalar(b"", pa.large_binary()))
        var_size = np.where(long_rows, lengths, 0)
        slot[long_rows] = lengths[long_rows].astype(np.uint64)  # offset added later
    if nulls is not None:
        slot[nulls] = 0
        if var is not None:
            var_size = np.where(nulls, 0, var_size)
    return _Field(slot, nulls, var, var_size)


def _decimal_field(arr: pa.Array, nulls) -> _Field:
    precision, scale = arr.type.precision, arr.type.scale
    if precision > 38:
        raise UnsupportedTypeError(f"DECIMAL precision {precision} exceeds Paimon's 38")
    if not isinstance(arr.type, pa.Decimal128Type):
        arr = arr.cast(pa.decimal128(precision, scale))
    if nulls is not None:
        arr = arr.fill_null(pa.scalar(0, pa.decimal128(precision, scale)))
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * (arr.offset + n))
    le = raw[16 * arr.offset :].reshape(n, 16)  # little-endian two's complement
    if precision <= 18:  # compact: the unscaled long in the slot
        unscaled = le[:, :8].copy().view("<i8").reshape(n)
        return _fixed_field(unscaled, nulls)
    # Non-compact: 16 reserved bytes holding BigInteger.toByteArray() (minimal big-endian).
    be = le[:, ::-1]
    sign = be[:, 0] >= 0x80
    ext = np.where(sign, 0xFF, 0x00).astype(np.uint8)
    redundant = (be[:, :15] == ext[:, None]) & ((be[:, 1:] >= 0x80) == sign[:, None])
    skip = np.logical_and.accumulate(redundant, axis=1).sum(axis=1)
    lengths = 16 - skip
    cols = np.arange(16)[None, :] + skip[:, None]
    body = np.where(cols < 16, np.take_along_axis(be, np.minimum(cols, 15), axis=1), 0)
    body = body.astype(np.uint8)
    var = _fixed_binary(body)
    slot = lengths.astype(np.uint64)
    var_size = np.full(n, 16, dtype=np.int64)
    if nulls is not None:
        slot[nulls] = 0
        body[nulls] = 0
        var = _fixed_binary(body)
    return _Field(slot, nulls, var, var_size, keep_var_for_null=True)


def _fixed_binary(matrix: np.ndarray) -> pa.Array:
    """Rows of a 2-D uint8 matrix as a large_binary array."""
    n, width = matrix.shape
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        n,
        [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(matrix).tobytes())],
    )


_UNIT_FACTOR = {"s": 1000, "ms": 1, "us": 1000, "ns": 1_000_000}


def _timestamp_field(arr: pa.Array, nulls) -> _Field:
    unit = arr.type.unit
    values = _ints(arr.cast(pa.int64()), "int64")
    if unit in ("s", "ms"):  # precision <= 3: compact, epoch millis in the slot
        millis = values * 1000 if unit == "s" else values
        return _fixed_field(millis, nulls)
    per_milli = _UNIT_FACTOR[unit]
    millis = np.floor_divide(values, per_milli)
    nanos = np.mod(values, per_milli) * (1000 if unit == "us" else 1)
    slot = nanos.astype(np.uint64)  # nanoOfMillisecond; offset added later
    body = millis.astype("<i8")
    if nulls is not None:
        slot[nulls] = 0
        body[nulls] = 0
    var = _fixed_binary(body.view(np.uint8).reshape(-1, 8))
    return _Field(slot, nulls, var, np.full(len(arr), 8, np.int64), keep_var_for_null=True)


def _field_of(arr: pa.Array, name: str) -> _Field:
    t = arr.type
    if pa.types.is_dictionary(t):
        return _field_of(arr.dictionary_decode(), name)
    nulls = _valid_and_nulls(arr)
    if pa.types.is_boolean(t):
        return _fixed_field(_ints(arr, "int8"), nulls)
    if pa.types.is_int8(t):
        return _fixed_field(_ints(arr, "int8"), nulls)
    if pa.types.is_int16(t):
        return _fixed_field(_ints(arr, "int16"), nulls)
    if pa.types.is_int32(t):
        return _fixed_field(_ints(arr, "int32"), nulls)
    if pa.types.is_int64(t):
        return _fixed_field(_ints(arr, "int64"), nulls)
    if pa.types.is_date32(t):
        return _fixed_field(_ints(arr.cast(pa.int32()), "int32"), nulls)
    if pa.types.is_date64(t):
        millis = _ints(arr.cast(pa.int64()), "int64")
        return _fixed_field(np.floor_divide(millis, 86_400_000).astype(np.int32), nulls)
    if pa.types.is_time(t):  # Paimon TIME: int millis of the day
        raw = _ints(arr.cast(pa.int64() if t.bit_width == 64 else pa.int32()), "int64")
        unit = t.unit
        millis = raw * 1000 if unit == "s" else raw // _UNIT_FACTOR[unit] if unit != "ms" else raw
        return _fixed_field(millis.astype(np.int32), nulls)
    if pa.types.is_float32(t):
        return _fixed_field(_ints(arr, "float32").view(np.int32), nulls)
    if pa.types.is_float64(t):
        return _fixed_field(_ints(arr, "float64").view(np.int64), nulls)
    if pa.types.is_timestamp(t):
        return _timestamp_field(arr, nulls)
    if pa.types.is_decimal(t):
        return _decimal_field(arr, nulls)
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return _bytes_field(arr, nulls)
    raise UnsupportedTypeError(
        f"key column {name!r} has Arrow type {t}, which has no Paimon key hash here "
        "(supported: integers, boolean, float, double, date, time, timestamp, decimal, "
        "string and binary)"
    )


def _round8(x: np.ndarray) -> np.ndarray:
    return (x + 7) & ~np.int64(7)


def _encode(columns: Sequence[pa.Array], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The BinaryRow bytes of every row: (flat uint8 buffer, int64 row offsets of n + 1)."""
    n = len(columns[0])
    arity = len(columns)
    header = ((arity + 63 + 8) // 64) * 8
    fixed = header + 8 * arity
    fields = [_field_of(col, name) for col, name in zip(columns, names)]
    matrix = np.zeros((n, fixed // 8), dtype=np.uint64)
    var_total = np.zeros(n, dtype=np.int64)
    for i, f in enumerate(fields):
        slot = f.slot
        if f.var is not None:
            reserved = _round8(f.var_size)
            # offset of this field's data within the row goes into the slot's high word
            offset = (fixed + var_total).astype(np.uint64) << np.uint64(32)
            has_var = reserved > 0
            slot = np.where(has_var, slot | offset, slot)
            var_total += reserved
        matrix[:, header // 8 + i] = slot
        if f.nulls is not None:
            bit = i + 8  # BinaryRow.HEADER_SIZE_IN_BITS
            word, shift = bit // 64, bit % 64
            matrix[:, word] |= f.nulls.astype(np.uint64) << np.uint64(shift)
    # matrix[:, 0] byte 0 is the RowKind (INSERT = 0), already zero.
    if not var_total.any():
        sizes = np.full(n, fixed, dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        return matrix.view(np.uint8).reshape(-1), offsets
    pieces = [_fixed_binary(matrix.view(np.uint8).reshape(n, fixed))]
    for f in fields:
        if f.var is None:
            continue
        lengths = np.asarray(pc.binary_length(f.var).to_numpy(zero_copy_only=False), np.int64)
        pad = _round8(f.var_size) - lengths
        pieces.append(f.var)
        pieces.append(
            pc.binary_repeat(pa.scalar(b"\x00", pa.large_binary()), pa.array(pad, pa.int64()))
        )
    rows = pc.binary_join_element_wise(*pieces, pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64, count=n + 1, offset=8 * rows.offset)
    data = np.frombuffer(rows.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
    if offsets[0]:
        data = data[int(offsets[0]) :]
        offsets = offsets - offsets[0]
    return data, offsets


def _murmur_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """MurmurHash3_x86_32 (seed 42) of each row ``data[offsets[i]:offsets[i+1]]`` (lengths
    are multiples of 8), hashing 4-byte little-endian words across all rows at once."""
    n = offsets.size - 1
    if n == 0:
        return np.zeros(0, np.int32)
    words = data.view("<u4")
    starts = offsets[:-1] // 4
    counts = (offsets[1:] - offsets[:-1]) // 4
    h = np.full(n, _SEED, dtype=np.uint32)
    lengths = (counts * 4).astype(np.uint32)
    if bool(np.all(counts == counts[0])):
        grid = words.reshape(n, int(counts[0]))
        for j in range(int(counts[0])):  # one step per word of the row, not per row
            _mix(h, grid[:, j].copy())
    else:
        order = np.argsort(-counts, kind="stable")
        sorted_counts = counts[order]
        sorted_starts = starts[order]
        hs = h[order]
        # rows with more than j words (those still active at word j) are a prefix of order
        ends = np.searchsorted(-sorted_counts, -np.arange(int(sorted_counts[0])), side="left")
        longest = int(sorted_counts[0])
        for j in range(longest):  # one step per word position, not per row
            m = int(ends[j])
            if m <= _TAIL_ROWS and longest - j > 64:
                # A few very long keys left: numpy's per-call overhead would dominate, so
                # finish just these rows with plain integer arithmetic.
                for r in range(m):
                    first = int(sorted_starts[r]) + j
                    last = int(sorted_starts[r]) + int(sorted_counts[r])
                    hs[r] = _mix_scalar(int(hs[r]), words[first:last])
                break
            _mix(hs[:m], words[sorted_starts[:m] + j])
        h = np.empty_like(hs)
        h[order] = hs
    h ^= lengths
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


_TAIL_ROWS = 4


def _mix_scalar(h: int, words: np.ndarray) -> int:
    """The block rounds of one row's remaining ``words`` (the rare long-key tail)."""
    mask = 0xFFFFFFFF
    for k in words.tolist():
        k = (k * 0xCC9E2D51) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * 0x1B873593) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    return h


def _mix(h: np.ndarray, k: np.ndarray) -> None:
    """One MurmurHash3 block round, in place on ``h`` (``k`` is clobbered)."""
    k *= _C1
    k[:] = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= _C2
    h ^= k
    h[:] = (h << np.uint32(13)) | (h >> np.uint32(19))
    h *= _M5
    h += _N1


def _key_columns(
    table: Any, key_columns: Any
) -> tuple[list[pa.ChunkedArray | pa.Array], list[str]]:
    if isinstance(key_columns, (str, int)):
        key_columns = [key_columns]
    key_columns = list(key_columns)
    if not key_columns:
        raise ArrowIdxError("at least one key column is needed")
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise TypeError(f"expected a pyarrow Table or RecordBatch, got {type(table).__name__}")
    names = [table.schema.names[c] if isinstance(c, int) else c for c in key_columns]
    cols = []
    for name in names:
        if name not in table.schema.names:
            raise ArrowIdxError(f"no column {name!r} in the table")
        cols.append(table.column(name))
    return cols, names


def _row_chunks(cols: list, n: int):
    for start in range(0, n, _CHUNK_ROWS):
        length = min(_CHUNK_ROWS, n - start)
        yield [
            (
                c.slice(start, length).combine_chunks()
                if isinstance(c, pa.ChunkedArray)
                else c.slice(start, length)
            )
            for c in cols
        ]


def paimon_binary_rows(table: pa.Table | pa.RecordBatch, key_columns: Any) -> pa.LargeBinaryArray:
    """The bytes of each row's key as Paimon's ``BinaryRowWriter`` lays them out."""
    table = arrow_table(table, "paimon_binary_rows")
    cols, names = _key_columns(table, key_columns)
    n = table.num_rows
    out = []
    for chunk in _row_chunks(cols, n):
        data, offsets = _encode(chunk, names)
        out.append(
            pa.LargeBinaryArray.from_buffers(
                pa.large_binary(),
                len(offsets) - 1,
                [None, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(data)],
            )
        )
    if not out:
        return pa.array([], pa.large_binary())
    return pa.concat_arrays(out) if len(out) > 1 else out[0]


def paimon_key_hash(table: pa.Table | pa.RecordBatch, key_columns: Any) -> pa.Int32Array:
    """Java's ``BinaryRow.hashCode()`` of each row's key (the named columns, in order).

    Supported Arrow types: int8/16/32/64 (TINYINT..BIGINT), bool, float32/64, date32/64,
    time32/64 (TIME, millis), timestamp (s/ms compact as TIMESTAMP(0..3), us/ns as
    TIMESTAMP(6)/(9); with or without a time zone), decimal (precision <= 38), string,
    large_string, string_view and the binary types; dictionary arrays are decoded. Anything
    else raises :class:`~arrowidx.UnsupportedTypeError`.
    """
    table = arrow_table(table, "paimon_key_hash")
    cols, names = _key_columns(table, key_columns)
    n = table.num_rows
    parts = [_murmur_rows(*_encode(chunk, names)) for chunk in _row_chunks(cols, n)]
    values = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    return pa.array(values, type=pa.int32())


def paimon_bucket_of_hash(hashes: Any, num_buckets: int) -> pa.Int32Array:
    """``Math.abs(hash % numBuckets)`` with Java's truncating remainder."""
    if int(num_buckets) <= 0:
        raise OptionError(f"num_buckets must be positive, got {num_buckets}")
    h = _int32_values(hashes, "hashes").astype(np.int64)
    return pa.array((np.abs(h) % int(num_buckets)).astype(np.int32), type=pa.int32())


def paimon_bucket(
    table: pa.Table | pa.RecordBatch, key_columns: Any, num_buckets: int
) -> pa.Int32Array:
    """Paimon's fixed bucket (``DefaultBucketFunction``) of each row: ``abs(hash % n)`` of the
    bucket key (by default the primary key without the partition columns)."""
    if int(num_buckets) <= 0:
        raise OptionError(f"num_buckets must be positive, got {num_buckets}")
    return paimon_bucket_of_hash(paimon_key_hash(table, key_columns), num_buckets)


# --------------------------------------------------------------------------------------
# Dynamic bucket assignment
# --------------------------------------------------------------------------------------
def _java_hashmap_order(buckets_in_compute_order: list[tuple[int, int]]) -> list[int]:
    """Iteration order of the ``java.util.HashMap<Integer, Long>`` that Paimon's
    ``PartitionIndex.loadIndex`` fills with ``compute(bucket, ...)`` once per loaded hash.

    ``buckets_in_compute_order`` is ``[(bucket, number of hashes)]`` in file order. Models
    lazy table allocation (16), the resize check at the start of every ``compute``, head
    insertion of new nodes, treeify-triggered resizes below 64 slots and order-preserving
    resize splits. Tree bins (8+ colliding buckets in a table of 64+) keep list order here.
    """
    cap, threshold, size = 0, 0, 0
    bins: list[list[int]] = []
    present: set[int] = set()

    def resize() -> None:
        nonlocal cap, threshold, bins
        if cap == 0:
            cap, threshold = 16, 12
        else:
            cap, threshold = cap * 2, threshold * 2
        new_bins: list[list[int]] = [[] for _ in range(cap)]
        for b in bins:
            for key in b:
                new_bins[_spread(key) & (cap - 1)].append(key)
        bins = new_bins

    def compute(key: int) -> None:
        nonlocal size
        if size > threshold or cap == 0:
            resize()
        if key in present:
            return
        b = bins[_spread(key) & (cap - 1)]
        before = len(b)
        b.insert(0, key)
        present.add(key)
        if before >= 7 and cap < 64:  # treeifyBin on a small table resizes instead
            resize()
        size += 1

    for bucket, count in buckets_in_compute_order:
        if count <= 0:
            continue
        compute(bucket)
        if count > 1:
            compute(bucket)  # later calls for the same key only run the resize check
    return [key for b in bins for key in b]


def _spread(key: int) -> int:
    h = key & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0xFFFFFFFF


def _stable_argsort_int32(values: np.ndarray) -> np.ndarray:
    """A stable argsort of int32 values: sort (value, index) packed into one int64 (numpy's
    plain integer sort is much faster than its stable argsort)."""
    packed = values.astype(np.int64) << 32
    packed |= np.arange(values.size, dtype=np.int64)
    packed.sort()
    return packed & 0xFFFFFFFF


def _unique_first(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted distinct values, index of each one's first occurrence, inverse indices)."""
    order = _stable_argsort_int32(values)
    ordered = values[order]
    starts = np.ones(values.size, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(starts) - 1
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = group
    return ordered[starts], order[starts], inverse


class DynamicBucketAssigner:
    """Paimon's dynamic bucket assignment (``bucket = -1``) for one partition.

    Mirrors ``HashBucketAssigner``/``PartitionIndex`` (with ``existing`` hash-index contents)
    and ``SimpleHashBucketAssigner`` (without): a key hash seen before keeps its bucket; a new
    hash goes to the first bucket (in Java ``HashMap`` order of the loaded buckets) holding
    fewer than ``target_bucket_row_number`` hashes, else to a newly created bucket (the
    smallest free id this assigner owns); once ``max_buckets`` exist, new hashes go to a
    uniformly random existing bucket (``seed`` makes that reproducible; Java's
    ``ThreadLocalRandom`` sequence is not reproduced).

    ``assign`` is vectorised: lookups of known hashes are a sorted search, and new hashes are
    handed out bucket by bucket (first occurrence order), since filling buckets in arrival
    order is inherently sequential only per bucket, not per row.

    Parameters: ``existing`` maps bucket -> that bucket's hashes (an Int32Array, numpy array
    or a hash-index file's bytes/path via :meth:`from_hash_index_files`), in index-manifest
    order; ``num_assigners``/``assign_id`` restrict new and counted buckets to
    ``bucket % num_assigners == assign_id % num_assigners`` like Paimon's parallel assigners
    (Java also skips loading hashes routed to other assigners, which changes nothing for
    the hashes that do arrive here).
    """

    def __init__(
        self,
        target_bucket_row_number: int = 2_000_000,
        *,
        max_buckets: int = -1,
        existing: Mapping[int, Any] | None = None,
        num_assigners: int = 1,
        assign_id: int = 0,
        seed: int | None = None,
    ):
        if int(target_bucket_row_number) < 1:
            raise OptionError(
                f"dynamic-bucket.target-row-num must be >= 1, got {target_bucket_row_number}"
            )
        if int(max_buckets) != -1 and int(max_buckets) < 1:
            raise OptionError(f"dynamic-bucket.max-buckets must be -1 or > 0, got {max_buckets}")
        if int(num_assigners) < 1:
            raise OptionError(f"num_assigners must be >= 1, got {num_assigners}")
        self.target = int(target_bucket_row_number)
        self.max_buckets = int(max_buckets)
        self.num_assigners = int(num_assigners)
        self.assign_id = int(assign_id)
        self._rng = np.random.default_rng(seed)
        self._hashes = np.zeros(0, np.int32)  # sorted, unique
        self._buckets = np.zeros(0, np.int32)  # bucket of each hash
        counts: dict[int, int] = {}
        order: list[tuple[int, int]] = []
        if existing:
            all_h, all_b = [], []
            for bucket, hashes in existing.items():
                bucket = int(bucket)
                if not 0 <= bucket <= 32767:
                    raise ArrowIdxError(f"bucket ids are Java shorts >= 0, got {bucket}")
                h = _int32_values(hashes, f"hashes of bucket {bucket}")
                all_h.append(h)
                all_b.append(np.full(h.size, bucket, np.int32))
                if self._mine(bucket):
                    counts[bucket] = counts.get(bucket, 0) + h.size
                    order.append((bucket, h.size))
            if all_h:
                self._merge(np.concatenate(all_h), np.concatenate(all_b))
        loaded = _java_hashmap_order(order)
        self._queue: list[list[int]] = [[b, counts[b]] for b in loaded]  # non-full, in order
        self._total: list[int] = list(loaded)
        self._total_set: set[int] = set(loaded)
        self._next_id = 0
        self._bound_reached = False

    @classmethod
    def from_hash_index_files(
        cls, files: Mapping[int, Any], **kwargs: Any
    ) -> DynamicBucketAssigner:
        """Restore from ``{bucket: hash-index file (bytes, path or file object)}``."""
        existing = {int(b): read_hash_index(f) for b, f in files.items()}
        return cls(existing=existing, **kwargs)

    def _mine(self, bucket: int) -> bool:
        return bucket % self.num_assigners == self.assign_id % self.num_assigners

    def _merge(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Add hash -> bucket pairs; a later pair for the same hash wins."""
        h = np.concatenate((self._hashes, hashes))
        b = np.concatenate((self._buckets, buckets))
        order = _stable_argsort_int32(h)
        h, b = h[order], b[order]
        last = np.ones(h.size, dtype=bool)
        if h.size > 1:
            last[:-1] = h[1:] != h[:-1]
        self._hashes, self._buckets = h[last], b[last]

    def _new_bucket(self, taken: set[int]) -> int | None:
        limit = (32767 if self.max_buckets == -1 else self.max_buckets) - 1
        i = self._next_id
        while i <= limit:
            if self._mine(i) and i not in taken:
                self._next_id = i
                return i
            i += 1
        self._next_id = i
        return None

    def assign(self, hashes: Any) -> pa.Int32Array:
        """The bucket of each key hash (in row order), updating the index as Java would."""
        h = _int32_values(hashes, "hashes")
        if h.size == 0:
            return pa.array(np.zeros(0, np.int32), type=pa.int32())
        values, first, inverse = _unique_first(h)
        # sorted queries make numpy's binary search walk the index forwards (cache friendly)
        at = np.searchsorted(self._hashes, values)
        known = at < self._hashes.size
        known[known] = self._hashes[at[known]] == values[known]
        bucket_of = np.empty(values.size, dtype=np.int32)
        bucket_of[known] = self._buckets[at[known]]
        fresh = ~known
        if fresh.any():
            self._assign_new(values[fresh], first[fresh], at[fresh], h.size, bucket_of, fresh)
        return pa.array(bucket_of[inverse], type=pa.int32())

    def _assign_new(self, uniq, first, at, n, bucket_of, fresh) -> None:
        """Hand out buckets to the distinct new hashes ``uniq`` (sorted; ``first`` is each
        one's first row, ``at`` its insertion point in the index)."""
        # rank of each distinct new hash in arrival (first occurrence) order, without a sort
        seen = np.zeros(n, dtype=bool)
        seen[first] = True
        arrival_rank = (np.cumsum(seen) - 1)[first]
        arrival = np.empty_like(arrival_rank)
        arrival[arrival_rank] = np.arange(arrival_rank.size)
        k = uniq.size
        assigned = np.empty(k, dtype=np.int32)
        # Work on copies so a failure leaves the assigner unchanged.
        queue = [list(e) for e in self._queue]
        total, total_set = list(self._total), set(self._total_set)
        next_id, bound = self._next_id, self._bound_reached
        j = 0
        try:
            while j < k:  # one step per bucket touched, not per hash
                while queue and queue[0][1] >= self.target:
                    queue.pop(0)
                if queue:
                    take = min(self.target - queue[0][1], k - j)
                    assigned[j : j + take] = queue[0][0]
                    queue[0][1] += take
                    j += take
                    continue
                if not bound:
                    nb = self._new_bucket(total_set)
                    if nb is not None:
                        total.append(nb)
                        total_set.add(nb)
                        queue.append([nb, 0])
                        continue
                    if self.max_buckets == -1:
                        raise ArrowIdxError(
                            "too many buckets (32767): increase dynamic-bucket.target-row-num "
                            f"({self.target})"
                        )
                    bound = True
                picks = self._rng.integers(len(total), size=k - j)
                assigned[j:] = np.asarray(total, dtype=np.int32)[picks]
                j = k
        except BaseException:
            self._next_id = next_id
            raise
        self._queue, self._total, self._total_set = queue, total, total_set
        self._bound_reached = bound
        by_value = np.empty(k, dtype=np.int32)
        by_value[arrival] = assigned
        bucket_of[fresh] = by_value
        # merge the sorted new hashes (all absent from the index) into the sorted index
        slots = at + np.arange(k)
        is_new = np.zeros(self._hashes.size + k, dtype=bool)
        is_new[slots] = True
        hashes = np.empty(is_new.size, dtype=np.int32)
        buckets = np.empty(is_new.size, dtype=np.int32)
        hashes[slots], buckets[slots] = uniq, by_value
        hashes[~is_new], buckets[~is_new] = self._hashes, self._buckets
        self._hashes, self._buckets = hashes, buckets

    def assign_keys(self, table: pa.Table | pa.RecordBatch, key_columns: Any) -> pa.Int32Array:
        """``assign(paimon_key_hash(table, key_columns))``: pass the trimmed primary key (the
        primary key without partition columns), as Paimon hashes it."""
        return self.assign(paimon_key_hash(table, key_columns))

    @property
    def buckets(self) -> list[int]:
        """This assigner's buckets, loaded ones first (Java's ``totalBucketArray``)."""
        return list(self._total)

    def bucket_hash_counts(self) -> dict[int, int]:
        """Number of distinct key hashes per bucket (every known bucket, any assigner)."""
        ids, counts = np.unique(self._buckets, return_counts=True)
        return {int(b): int(c) for b, c in zip(ids, counts)}

    def hashes_of(self, bucket: int) -> pa.Int32Array:
        """The key hashes mapped to ``bucket``, ascending."""
        return pa.array(self._hashes[self._buckets == int(bucket)], type=pa.int32())

    def hash_index_files(self) -> dict[int, bytes]:
        """``{bucket: hash-index file bytes}`` for every known bucket (hashes ascending; Java
        writes its ``IntHashSet`` order, which readers do not depend on)."""
        return {b: write_hash_index(self.hashes_of(b)) for b in self.bucket_hash_counts()}
