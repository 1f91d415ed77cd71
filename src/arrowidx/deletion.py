"""Paimon deletion vectors, the deletion-vectors index file, and applying deletions to Arrow.

A deletion vector marks row positions of one data file as deleted. Paimon has two kinds,
chosen by the table option ``deletion-vectors.bitmap64``:

* 32-bit (the default, ``BitmapDeletionVector``): a portable Roaring32 bitmap behind the
  magic number 1581511376 written big-endian; positions up to 2**31 - 1.
* 64-bit (``Bitmap64DeletionVector``): Iceberg's ``deletion-vector-v1`` payload: the magic
  number 1681511377 written little-endian, then an ``int64 LE`` bucket count and, for each
  bucket key from 0 to the largest (empty ones included, as Java writes them), the key as
  ``int32 LE`` and a portable Roaring32 bitmap of the low 32 bits.

Either is framed as ``int32 BE length | magic | bitmap | int32 BE CRC32(magic + bitmap)``.
An index file is the version byte 1 followed by such records; the per-data-file
``(offset, length)`` ranges live in Paimon's index manifest (32-bit vectors record the length
field, 64-bit vectors the whole record).

Everything that touches many positions works on numpy arrays or on the bitmap's containers,
never on one Python object per row.
"""

from __future__ import annotations

import array
import json
import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap, BitMap64

from ._bytes import as_buffer, atomic_write
from ._roaring import (
    bitmap_of,
    packed_window,
    portable_layout,
    positions_of,
)
from .deletion_records import MAGIC_32, MAGIC_64, MAX_POSITION_32, empty_buckets, fail, read_record
from .errors import ArrowIdxError, CorruptIndexError
from .types import integer_array

__all__ = [
    "DeletionVector",
    "PositionOutOfRangeError",
    "apply_deletion_vector",
    "read_deletion_vectors",
    "read_puffin_deletion_vectors",
    "write_deletion_vectors",
    "write_deletion_vectors_file",
    "write_puffin_deletion_vectors",
]

VERSION_ID_V1 = 1
# Java's OptimizedRoaringBitmap64.MAX_VALUE: key Integer.MAX_VALUE - 1, low bits 0x80000000.
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0x80000000
_MAX_KEY_64 = 2**31 - 2
_MAX_RECORD = 2**31 - 1  # Java frames records in byte[] / int offsets

_MAGIC_32_BYTES = struct.pack(">i", MAGIC_32)
_MAGIC_64_BYTES = struct.pack("<i", MAGIC_64)
_EMPTY_PORTABLE = BitMap().serialize()  # 8 bytes: cookie 12346, zero containers
_I32BE = struct.Struct(">i")
_U32BE = struct.Struct(">I")
_U32LE = struct.Struct("<I")
_I32LE = struct.Struct("<i")
_U64LE = struct.Struct("<Q")
_I64LE = struct.Struct("<q")

_APPLY_WINDOW = 1 << 20  # positions per keep mask when applying to a stream of batches


class PositionOutOfRangeError(ArrowIdxError, ValueError):
    """A row position a deletion vector of this kind cannot hold (negative, or above
    2**31 - 1 for a 32-bit vector, or above Java's 64-bit maximum)."""


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_positions(arr: np.ndarray, limit: int, kind: str) -> None:
    if arr.size == 0:
        return
    if arr.dtype.kind == "i":
        low = int(arr.min())
        if low < 0:
            raise PositionOutOfRangeError(f"row positions must be >= 0, got {low}")
    high = int(arr.max())
    if high > limit:
        raise PositionOutOfRangeError(_too_large(high, limit, kind))


def _too_large(position: int, limit: int, kind: str) -> str:
    if kind == "32-bit":
        return (
            f"row position {position} exceeds {limit}: a 32-bit deletion vector only supports "
            "files with row count not exceeding 2147483647 (use bitmap64=True, the table "
            "option deletion-vectors.bitmap64)"
        )
    return f"row position {position} exceeds the 64-bit deletion vector maximum {limit}"


def _bitmap64_of(arr: np.ndarray) -> BitMap64:
    buf = array.array("Q")
    buf.frombytes(np.ascontiguousarray(arr, dtype=np.uint64).tobytes())
    return BitMap64(buf)


def _bm32_to_bm64(bm: BitMap) -> BitMap64:
    if not bm:
        return BitMap64()
    return BitMap64.deserialize(_U64LE.pack(1) + _U32LE.pack(0) + bm.serialize())


def _bm64_to_bm32(bm: BitMap64) -> BitMap:
    if not bm:
        return BitMap()
    top = bm.max()
    if top > MAX_POSITION_32:
        raise PositionOutOfRangeError(_too_large(top, MAX_POSITION_32, "32-bit"))
    raw = bm.serialize()  # one bucket, key 0
    return BitMap.deserialize(raw[12:])


# --------------------------------------------------------------------------------------
# DeletionVector
# --------------------------------------------------------------------------------------
class DeletionVector:
    """Deleted row positions of one data file, 32-bit or 64-bit (``bitmap64``).

    Build one with :meth:`from_positions` or read one with :meth:`deserialize`; the
    constructor makes an empty vector. Both kinds share every method.
    """

    __slots__ = ("_bm", "_bitmap64")

    def __init__(self, bitmap64: bool = False):
        self._bitmap64 = bool(bitmap64)
        self._bm: BitMap | BitMap64 = BitMap64() if self._bitmap64 else BitMap()

    # -- construction ---------------------------------------------------------------
    @classmethod
    def _wrap(cls, bm: BitMap | BitMap64, bitmap64: bool) -> DeletionVector:
        dv = cls.__new__(cls)
        dv._bitmap64 = bitmap64
        dv._bm = bm
        return dv

    @classmethod
    def from_positions(cls, positions: Any, bitmap64: bool = False) -> DeletionVector:
        """A vector deleting ``positions``: an Arrow integer array (no nulls), a numpy integer
        array, a ``range``, a sequence of ints or a single int. Raises
        :class:`PositionOutOfRangeError` for negative positions and for positions the kind
        cannot hold (above 2**31 - 1 for 32-bit)."""
        dv = cls(bitmap64)
        dv.delete(positions)
        return dv

    @classmethod
    def deserialize(cls, data: Any, *, source: str = "<bytes>") -> DeletionVector:
        """Read one serialised vector (``length | magic | bitmap | CRC``), the kind taken from
        the magic number. The bytes must hold exactly one record: trailing bytes, a wrong
        magic, length or CRC, out-of-order 64-bit keys and 32-bit positions above 2**31 - 1
        raise :class:`~arrowidx.CorruptIndexError` naming ``source`` and the byte offset."""
        buf = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        dv, end = _read_record(buf, 0, len(buf), source)
        if end != len(buf):
            raise CorruptIndexError(
                f"{len(buf) - end} trailing bytes after the deletion vector record",
                source=source,
                offset=end,
            )
        return dv

    @classmethod
    def from_puffin_blob(cls, data: Any, *, source: str = "<puffin blob>") -> DeletionVector:
        """Import an Iceberg Puffin ``deletion-vector-v1`` blob (the same bytes as a 64-bit
        record). Anything else, a 32-bit record included, is a :class:`CorruptIndexError`."""
        dv = cls.deserialize(data, source=source)
        if not dv.bitmap64:
            raise CorruptIndexError(
                "not a deletion-vector-v1 blob: it carries the 32-bit Paimon magic",
                source=source,
                offset=4,
            )
        return dv

    # -- properties -----------------------------------------------------------------
    @property
    def bitmap64(self) -> bool:
        """True for the 64-bit (Iceberg-compatible) kind, False for the 32-bit default."""
        return self._bitmap64

    @property
    def cardinality(self) -> int:
        """Number of deleted positions."""
        return len(self._bm)

    @property
    def max_position(self) -> int:
        """The largest position this kind can hold."""
        return MAX_POSITION_64 if self._bitmap64 else MAX_POSITION_32

    @property
    def bitmap(self) -> BitMap | BitMap64:
        """The underlying pyroaring bitmap (treat as read-only)."""
        return self._bm

    def is_empty(self) -> bool:
        return not self._bm

    def __len__(self) -> int:
        return len(self._bm)

    def __contains__(self, position: object) -> bool:
        return _is_scalar(position) and self.is_deleted(int(position))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeletionVector):
            return NotImplemented
        return self._bitmap64 == other._bitmap64 and self._bm == other._bm

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        kind = "64-bit" if self._bitmap64 else "32-bit"
        return f"DeletionVector({kind}, cardinality={len(self._bm)})"

    def copy(self) -> DeletionVector:
        return DeletionVector._wrap(self._bm.copy(), self._bitmap64)

    def with_kind(self, bitmap64: bool) -> DeletionVector:
        """This vector as the given kind: ``self`` if it already is, else a converted copy
        (64 to 32 bits raises :class:`PositionOutOfRangeError` if a position does not fit)."""
        bitmap64 = bool(bitmap64)
        if bitmap64 == self._bitmap64:
            return self
        if bitmap64:
            return DeletionVector._wrap(_bm32_to_bm64(self._bm), True)  # type: ignore[arg-type]
        return DeletionVector._wrap(_bm64_to_bm32(self._bm), False)  # type: ignore[arg-type]

    # -- mutation -------------------------------------------------------------------
    def delete(self, positions: Any) -> None:
        """Mark one position (an int) or many (Arrow/numpy integer array, range, sequence)
        as deleted."""
        kind = "64-bit" if self._bitmap64 else "32-bit"
        if _is_scalar(positions):
            pos = int(positions)
            if pos < 0:
                raise PositionOutOfRangeError(f"row positions must be >= 0, got {pos}")
            if pos > self.max_position:
                raise PositionOutOfRangeError(_too_large(pos, self.max_position, kind))
            self._bm.add(pos)
            return
        if isinstance(positions, range) and positions.step == 1:
            if len(positions):
                _check_positions(
                    np.array([positions.start, positions.stop - 1]), self.max_position, kind
                )
                self._bm.add_range(positions.start, positions.stop)
            return
        arr = integer_array(positions, "positions")
        _check_positions(arr, self.max_position, kind)
        if arr.size == 0:
            return
        if self._bitmap64:
            self._bm |= _bitmap64_of(arr)
        elif self._bm:
            self._bm |= bitmap_of(arr)
        else:
            self._bm = bitmap_of(arr)

    def checked_delete(self, position: int) -> bool:
        """Delete one position; True if it was not deleted before (Java's checkedDelete)."""
        before = len(self._bm)
        self.delete(int(position))
        return len(self._bm) != before

    def merge(self, other: DeletionVector) -> None:
        """Add every position of ``other`` to this vector (in place). A vector of the other
        kind is converted first; a 64-bit one merged into a 32-bit one must fit 31 bits."""
        if not isinstance(other, DeletionVector):
            raise TypeError(f"can only merge a DeletionVector, got {type(other).__name__}")
        self._bm |= other.with_kind(self._bitmap64)._bm

    # -- queries ---------------------------------------------------------------------
    def positions(self) -> np.ndarray:
        """The deleted positions, sorted, as a numpy uint64 array."""
        if self._bitmap64:
            return np.frombuffer(self._bm.to_array(), dtype=np.uint64)
        return np.frombuffer(self._bm.to_array(), dtype=np.uint32).astype(np.uint64)

    def is_deleted(self, positions: Any) -> bool | np.ndarray:
        """One position (an int) -> bool; an Arrow/numpy integer array -> numpy bool array.

        Positions this kind cannot hold (negative, or beyond its maximum) are reported as not
        deleted; Java's 32-bit vector throws for them instead.
        """
        if _is_scalar(positions):
            pos = int(positions)
            if pos < 0 or pos > self.max_position:
                return False
            return pos in self._bm
        arr = integer_array(positions, "positions")
        if arr.size == 0 or not self._bm:
            return np.zeros(arr.size, dtype=bool)
        top = int(self._bm.max())
        if top < min(64 * arr.size + (1 << 16), 1 << 27):
            # Dense: one byte per position up to just past the largest deleted one; that last
            # byte is 0 and every larger query clips onto it. Negative queries (and uint64
            # ones >= 2**63, viewed as int64) clip onto byte 0: only if position 0 is deleted
            # do they need a second look.
            mask = np.unpackbits(self._deleted_bits(0, top + 2), count=top + 2, bitorder="little")
            index = arr.view(np.int64) if arr.dtype == np.uint64 else arr
            result = np.take(mask, index, mode="clip").view(bool)
            if mask[0]:
                if arr.dtype.kind == "i":
                    wild = int(arr.min()) < 0
                else:
                    wild = arr.dtype == np.uint64 and int(arr.max()) >= 2**63
                if wild:
                    result[index < 0] = False
            return result
        # Sparse: binary search among the deleted positions within the queried span.
        result = np.zeros(arr.size, dtype=bool)
        valid = (arr < np.uint64(2**63)) if arr.dtype == np.uint64 else (arr >= 0)
        if not valid.all():
            result[valid] = self.is_deleted(arr[valid].astype(np.int64))
            return result
        arr = arr.astype(np.int64, copy=False)
        lo, hi = int(arr.min()), int(arr.max())
        deleted = self._positions_in(lo, hi + 1)
        if deleted.size == 0:
            return result
        index = np.searchsorted(deleted, arr)
        np.minimum(index, deleted.size - 1, out=index)
        return deleted[index] == arr

    def _clip_range(self, start: int, stop: int) -> tuple[int, int]:
        return max(start, 0), min(stop, self.max_position + 1 if self._bitmap64 else 2**32)

    def _sub(self, start: int, stop: int) -> BitMap | BitMap64 | None:
        """The deleted positions within ``[start, stop)`` (``None`` when there are none)."""
        bm = self._bm
        start, stop = self._clip_range(start, stop)
        if not bm or start >= stop:
            return None
        lo, hi = bm.min(), bm.max()
        if hi < start or lo >= stop:
            return None
        if lo >= start and hi < stop:
            return bm
        window = BitMap64(range(start, stop)) if self._bitmap64 else BitMap(range(start, stop))
        sub = bm & window
        return sub if sub else None

    def _positions_in(self, start: int, stop: int) -> np.ndarray:
        sub = self._sub(start, stop)
        if sub is None:
            return np.zeros(0, np.int64)
        dtype = np.uint64 if self._bitmap64 else np.uint32
        return np.frombuffer(sub.to_array(), dtype=dtype).astype(np.int64)

    def _deleted_bits(self, start: int, length: int) -> np.ndarray:
        """Deleted flags of positions ``[start, start + length)``, packed LSB-first (numpy
        uint8, ``ceil(length / 8)`` bytes, bits past ``length`` zero)."""
        if length <= 0:
            return np.zeros(0, np.uint8)
        sub = self._sub(start, start + length)
        if sub is None:
            return np.zeros((length + 7) // 8, np.uint8)
        return packed_window(sub, start, length, self._bitmap64)

    def deleted_mask(self, start: int, length: int) -> pa.BooleanArray:
        """True where position ``start + i`` is deleted, for ``i`` in ``range(length)``."""
        bits = self._deleted_bits(int(start), int(length))
        return pa.BooleanArray.from_buffers(pa.bool_(), int(length), [None, pa.py_buffer(bits)])

    def kept(self, rows: BitMap) -> BitMap:
        """The positions of ``rows`` (a 32-bit ``BitMap``, such as an index's answer) that
        are not deleted."""
        if not self._bm:
            return BitMap(rows)
        if not self._bitmap64:
            return rows - self._bm
        positions = positions_of(rows)
        return bitmap_of(positions[~self.is_deleted(positions)])

    def keep_mask(self, start: int, length: int) -> pa.BooleanArray:
        """True where position ``start + i`` is kept (not deleted), for ``i`` in
        ``range(length)``: AND it with an index result, or pass it to ``filter``."""
        start, length = int(start), int(length)
        if length < 0 or start < 0:
            raise ArrowIdxError(
                f"keep_mask needs start >= 0 and length >= 0, got {start}, {length}"
            )
        bits = self._deleted_bits(start, length)
        np.invert(bits, out=bits)
        if length & 7:
            bits[-1] &= (1 << (length & 7)) - 1
        return pa.BooleanArray.from_buffers(pa.bool_(), length, [None, pa.py_buffer(bits)])

    def count_deleted(self, start: int, length: int) -> int:
        """How many of positions ``[start, start + length)`` are deleted."""
        lo, hi = self._clip_range(int(start), int(start) + int(length))
        return int(self._bm.range_cardinality(lo, hi)) if lo < hi else 0

    def apply(self, data: Any, start: int = 0):
        """``data`` (whose first row is position ``start``) without the deleted rows: a
        ``pa.Table`` or ``pa.RecordBatch`` of the same kind, or for any other Arrow data
        (a Polars or pandas DataFrame, anything with ``__arrow_c_stream__``) a ``pa.Table``."""
        if not isinstance(data, (pa.Table, pa.RecordBatch)):
            from .arrow_input import arrow_table

            data = arrow_table(data, "DeletionVector.apply")
        n = data.num_rows
        if self.count_deleted(start, n) == 0:
            return data
        return data.filter(self.keep_mask(start, n))

    # -- serialisation ---------------------------------------------------------------
    def _payload(self) -> tuple[bytes, list[bytes]]:
        """(magic bytes, bitmap pieces) -- Java run-optimises before writing."""
        self._bm.run_optimize()
        if not self._bitmap64:
            return _MAGIC_32_BYTES, [self._bm.serialize()]
        if not self._bm:
            return _MAGIC_64_BYTES, [_I64LE.pack(0)]
        raw = self._bm.serialize()
        buf = np.frombuffer(raw, dtype=np.uint8)
        count = int(buf[:8].view("<u8")[0])
        spans: list[tuple[int, int, int]] = []  # (key, start, end) of key + bitmap
        p = 8
        for _ in range(count):
            key = int(buf[p : p + 4].view("<u4")[0])
            layout = portable_layout(buf, p + 4, buf.size)
            spans.append((key, p, p + 4 + layout.size))
            p += 4 + layout.size
        top = spans[-1][0]
        missing = top + 1 - len(spans)
        size = 4 + 8 + (p - 8) + missing * (4 + len(_EMPTY_PORTABLE))
        if size + 8 > _MAX_RECORD:
            raise ArrowIdxError(
                f"64-bit deletion vector would serialise to {size + 8} bytes (Java refuses "
                "records over 2 GiB; keys 0..max are all written)"
            )
        pieces = [_I64LE.pack(top + 1)]
        if missing == 0:
            pieces.append(raw[8:])
            return _MAGIC_64_BYTES, pieces
        expected = 0
        for key, lo, hi in spans:  # one step per non-empty bucket
            if key > expected:
                pieces.append(empty_buckets(expected, key))
            pieces.append(raw[lo:hi])
            expected = key + 1
        return _MAGIC_64_BYTES, pieces

    def serialize(self) -> bytes:
        """The whole record: ``int32 BE length | magic | bitmap | int32 BE CRC32``, byte for
        byte what Java's ``DeletionVector.serializeTo`` writes."""
        magic, pieces = self._payload()
        length = len(magic) + sum(len(p) for p in pieces)
        if length + 8 > _MAX_RECORD:
            raise ArrowIdxError(f"deletion vector record of {length + 8} bytes exceeds 2 GiB")
        crc = zlib.crc32(magic)
        for piece in pieces:
            crc = zlib.crc32(piece, crc)
        return b"".join([_I32BE.pack(length), magic, *pieces, _U32BE.pack(crc)])

    def index_length(self) -> int:
        """The length Paimon records for this vector in an index manifest: the length field
        (magic + bitmap) for 32-bit vectors, the whole record for 64-bit ones."""
        size = len(self.serialize())
        return size if self._bitmap64 else size - 8

    def to_puffin_blob(self) -> bytes:
        """An Iceberg Puffin ``deletion-vector-v1`` blob: the 64-bit record (a 32-bit vector
        is converted first, which is lossless)."""
        return self.with_kind(True).serialize()


def _read_record(buf: np.ndarray, pos: int, end: int, source: str) -> tuple[DeletionVector, int]:
    """Parse the record starting at ``pos`` (:func:`arrowidx.deletion_records.read_record`);
    returns the vector and the offset after it."""
    bm, bitmap64, after = read_record(buf, pos, end, source)
    return DeletionVector._wrap(bm, bitmap64), after


# --------------------------------------------------------------------------------------
# The deletion-vectors index file
# --------------------------------------------------------------------------------------
def _coerce(value: Any, bitmap64: bool | None, name: str) -> DeletionVector:
    if isinstance(value, DeletionVector):
        return value if bitmap64 is None else value.with_kind(bitmap64)
    try:
        return DeletionVector.from_positions(value, bitmap64=bool(bitmap64))
    except ArrowIdxError as e:
        raise type(e)(f"deletion vector for {name!r}: {e}") from None


def write_deletion_vectors(
    mapping: Mapping[str, Any], bitmap64: bool | None = None
) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """Serialise ``{data file name: vector}`` as a deletion-vectors index file.

    Values are :class:`DeletionVector` objects or positions. ``bitmap64`` is the table option
    ``deletion-vectors.bitmap64``: ``True``/``False`` writes every vector as that kind
    (converting where needed); ``None`` (the default) keeps each vector's own kind and builds
    32-bit vectors from positions, as Paimon does by default.

    Returns the file bytes (version byte 1, then the records in the mapping's order) and
    ``{name: (offset, length)}`` exactly as Paimon stores them in ``DeletionVectorMeta``:
    ``length`` is the length field for 32-bit vectors and the whole record for 64-bit ones.
    """
    pieces = [bytes([VERSION_ID_V1])]
    ranges: dict[str, tuple[int, int]] = {}
    pos = 1
    for name, value in mapping.items():
        if not isinstance(name, str):
            raise ArrowIdxError(f"data file names must be str, got {type(name).__name__}")
        dv = _coerce(value, bitmap64, name)
        record = dv.serialize()
        if pos > _MAX_RECORD:
            raise ArrowIdxError("deletion-vectors index file exceeds Java's 2 GiB int offsets")
        ranges[name] = (pos, len(record) if dv.bitmap64 else len(record) - 8)
        pieces.append(record)
        pos += len(record)
    return b"".join(pieces), ranges


def write_deletion_vectors_file(
    path: str | os.PathLike, mapping: Mapping[str, Any], bitmap64: bool | None = None
) -> dict[str, tuple[int, int]]:
    """Write the index file atomically (temporary file + rename); returns the ranges."""
    data, ranges = write_deletion_vectors(mapping, bitmap64)
    atomic_write(path, data)
    return ranges


def read_deletion_vectors(
    data: Any,
    ranges: Mapping[str, Any] | None = None,
    bitmap64: bool | None = None,
) -> dict[str, DeletionVector]:
    """Read a deletion-vectors index file (bytes, a path or a binary file object).

    ``ranges`` maps data file names to ``(offset, length)`` -- or ``(offset, length,
    cardinality)`` -- as stored in Paimon's index manifest; the result has the same names.
    Each range's length must agree with the record (32-bit: the length field; 64-bit: the
    whole record) and a given cardinality with the vector. With ``ranges=None`` every record
    is read in file order and returned as ``{"0": dv, "1": dv, ...}`` (the file itself holds no
    names), and the records must cover the file exactly.

    The kind of each vector comes from its magic number, as in Java. ``bitmap64`` (the table
    option) is optional: when ``True``/``False`` every vector must be of that kind.
    """
    raw, source = as_buffer(data)
    buf = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    if buf.size < 1:
        raise fail("empty deletion-vectors index file (no version byte)", source, 0)
    if int(buf[0]) != VERSION_ID_V1:
        raise fail(
            f"unsupported deletion-vectors index version {int(buf[0])}, expected {VERSION_ID_V1}",
            source,
            0,
        )
    result: dict[str, DeletionVector] = {}
    if ranges is None:
        pos, i = 1, 0
        while pos < buf.size:
            dv, pos = _read_record(buf, pos, buf.size, source)
            result[str(i)] = dv
            i += 1
    else:
        for name, rng in ranges.items():
            offset, length, cardinality = _parse_range(name, rng)
            if offset < 1 or offset >= buf.size:
                raise fail(
                    f"range of {name!r} starts at {offset}, outside the records [1, {buf.size})",
                    source,
                    max(0, min(offset, buf.size)),
                )
            dv, end = _read_record(buf, offset, buf.size, source)
            recorded = end - offset if dv.bitmap64 else end - offset - 8
            if recorded != length:
                raise fail(
                    f"range of {name!r} says length {length} but the "
                    f"{'64' if dv.bitmap64 else '32'}-bit record there has length {recorded}",
                    source,
                    offset,
                )
            if cardinality is not None and cardinality != dv.cardinality:
                raise fail(
                    f"range of {name!r} says cardinality {cardinality} but the vector holds "
                    f"{dv.cardinality} positions",
                    source,
                    offset,
                )
            result[name] = dv
    if bitmap64 is not None:
        for name, dv in result.items():
            if dv.bitmap64 != bool(bitmap64):
                raise CorruptIndexError(
                    f"vector {name!r} is {'64' if dv.bitmap64 else '32'}-bit but "
                    f"deletion-vectors.bitmap64={bool(bitmap64)}",
                    source=source,
                )
    return result


def _parse_range(name: str, rng: Any) -> tuple[int, int, int | None]:
    try:
        items = tuple(rng)
    except TypeError:
        raise ArrowIdxError(f"range of {name!r} must be (offset, length), got {rng!r}") from None
    if (
        len(items) not in (2, 3)
        or not all(x is None or _is_scalar(x) for x in items)
        or items[0] is None
        or items[1] is None
    ):
        raise ArrowIdxError(f"range of {name!r} must be (offset, length), got {rng!r}")
    card = None if len(items) == 2 or items[2] is None else int(items[2])
    return int(items[0]), int(items[1]), card


# --------------------------------------------------------------------------------------
# Applying deletions to Arrow
# --------------------------------------------------------------------------------------
def apply_deletion_vector(
    batches: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
    dv: DeletionVector | None,
    start: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Yield each batch of one data file without its deleted rows.

    The first row of the first batch is position ``start``; positions continue across
    batches. One batch comes out per batch in (zero rows if all were deleted); a batch with
    no deletions is passed through untouched. ``dv=None`` passes everything through.
    """
    from .arrow_input import record_batches

    _, batches = record_batches(batches, "apply_deletion_vector")
    pos = int(start)
    window_start, window = 0, None  # keep mask of a run of positions, sliced per batch
    for batch in batches:
        n = batch.num_rows
        if dv is None or dv.count_deleted(pos, n) == 0:
            yield batch
        else:
            if window is None or pos < window_start or pos + n > window_start + len(window):
                window_start, window = pos, dv.keep_mask(pos, max(n, _APPLY_WINDOW))
            yield batch.filter(window.slice(pos - window_start, n))
        pos += n


# --------------------------------------------------------------------------------------
# Iceberg Puffin files holding deletion-vector-v1 blobs
# --------------------------------------------------------------------------------------
_PUFFIN_MAGIC = b"PFA1"
_DV_BLOB = "deletion-vector-v1"


def write_puffin_deletion_vectors(
    mapping: Mapping[str, Any], *, created_by: str = "arrowidx"
) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """An Iceberg Puffin file with one ``deletion-vector-v1`` blob per referenced data file.

    Values are :class:`DeletionVector` objects (32-bit ones are converted, losslessly) or
    positions. Returns the file bytes and ``{data file: (content_offset,
    content_size_in_bytes)}`` -- the values an Iceberg v3 manifest entry for the vector
    carries (with ``referenced_data_file`` and ``record_count`` = cardinality). Blobs are
    uncompressed with ``snapshot-id`` and ``sequence-number`` -1, as the spec requires for
    deletion vectors.
    """
    pieces = [_PUFFIN_MAGIC]
    pos = len(_PUFFIN_MAGIC)
    blobs, ranges = [], {}
    for name, value in mapping.items():
        if not isinstance(name, str):
            raise ArrowIdxError(f"data file names must be str, got {type(name).__name__}")
        dv = _coerce(value, True, name)
        blob = dv.serialize()
        blobs.append(
            {
                "type": _DV_BLOB,
                "fields": [],
                "snapshot-id": -1,
                "sequence-number": -1,
                "offset": pos,
                "length": len(blob),
                "properties": {"referenced-data-file": name, "cardinality": str(dv.cardinality)},
            }
        )
        ranges[name] = (pos, len(blob))
        pieces.append(blob)
        pos += len(blob)
    footer = json.dumps(
        {"blobs": blobs, "properties": {"created-by": created_by}}, separators=(",", ":")
    ).encode("utf-8")
    pieces += [_PUFFIN_MAGIC, footer, struct.pack("<i", len(footer)), bytes(4), _PUFFIN_MAGIC]
    return b"".join(pieces), ranges


def read_puffin_deletion_vectors(data: Any) -> dict[str, DeletionVector]:
    """``{referenced data file: DeletionVector}`` of every ``deletion-vector-v1`` blob in an
    Iceberg Puffin file (bytes, a path or a binary file object); other blob types are
    skipped. Compressed footers are not supported; a malformed file is a
    :class:`CorruptIndexError`."""
    raw, source = as_buffer(data)
    buf = bytes(memoryview(raw).cast("B"))
    size = len(buf)
    if size < 4 + 4 + 4 + 4 + 4 or buf[:4] != _PUFFIN_MAGIC or buf[-4:] != _PUFFIN_MAGIC:
        raise fail("not a Puffin file (magic PFA1 missing at either end)", source, 0)
    if buf[-8] & 1:
        raise fail("compressed Puffin footers are not supported", source, size - 8)
    (footer_size,) = struct.unpack("<i", buf[-12:-8])
    footer_start = size - 12 - footer_size
    if footer_size < 0 or footer_start < 8 or buf[footer_start - 4 : footer_start] != _PUFFIN_MAGIC:
        raise fail(f"bad Puffin footer size {footer_size}", source, size - 12)
    try:
        footer = json.loads(buf[footer_start : size - 12].decode("utf-8"))
        blobs = footer["blobs"]
        if not isinstance(blobs, list):
            raise TypeError("blobs is not a list")
    except (ValueError, KeyError, TypeError) as e:
        raise fail(
            f"Puffin footer is not valid JSON metadata ({e})", source, footer_start
        ) from None
    result: dict[str, DeletionVector] = {}
    for i, blob in enumerate(blobs):
        if not isinstance(blob, dict) or blob.get("type") != _DV_BLOB:
            continue
        try:
            offset, length = int(blob["offset"]), int(blob["length"])
            name = str(blob["properties"]["referenced-data-file"])
            card = blob["properties"].get("cardinality")
        except (KeyError, TypeError, ValueError) as e:
            raise fail(
                f"Puffin blob {i} lacks deletion-vector metadata ({e})", source, footer_start
            ) from None
        if blob.get("compression-codec") not in (None, "none"):
            raise fail(f"deletion-vector blob {i} must not be compressed", source, footer_start)
        if offset < 4 or length < 0 or offset + length > footer_start - 4:
            raise fail(
                f"Puffin blob {i} [{offset}, +{length}) is outside the blob area",
                source,
                footer_start,
            )
        dv = DeletionVector.deserialize(memoryview(buf)[offset : offset + length], source=source)
        if not dv.bitmap64:
            raise fail(f"Puffin blob {i} holds a 32-bit Paimon vector", source, offset)
        if card is not None and str(dv.cardinality) != str(card):
            raise fail(
                f"Puffin blob {i} says cardinality {card} but holds {dv.cardinality}",
                source,
                offset,
            )
        result[name] = dv
    return result
