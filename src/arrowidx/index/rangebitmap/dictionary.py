"""The range-bitmap dictionary: every distinct key, sorted, split into chunks.

Key encodings (Java ``KeyFactory``), big-endian: TINYINT 1 byte, SMALLINT 2, INT / DATE /
TIME 4, BIGINT / TIMESTAMP / DECIMAL (unscaled) 8, FLOAT / DOUBLE their IEEE bits, BOOLEAN one
byte (1 = true), strings an int32 length then UTF-8. Keys sort as Java compares them: floats
by ``Float.compare`` / ``Double.compare`` (-0.0 < 0.0, NaN largest), strings as unsigned
bytes. Internally every fixed-width key becomes a signed integer with that same order.

Layout, all integers big-endian::

    header length (int32, 13) | version (byte, 1) | chunk count | offsets length | chunks length
    chunk offsets (int32 each, into the chunk area)
    chunk headers, one per chunk:
      fixed:    version | first key | code | keys offset | key count | keys length | key width
      variable: version | first key | code | keys offset | key count | offsets length | keys length
    keys, per chunk: fixed: the keys after the first; variable: int32 offsets then the keys

A chunk's first key sits in its header and has code ``code``; the other keys of the chunk
get ``code + 1``, ``code + 2``, ... A chunk holds as many further keys as fit in
``chunk-size`` bytes (variable: also as many int32 offsets), so ``0b`` makes every key a chunk.
A lookup binary-searches the chunk headers, then decodes the keys of one chunk only.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..._bytes import ByteReader
from ...types import PaimonType, java_float_order
from .bitslice import version_error

VERSION_1 = 1
_HEADER_LENGTH = 13


@dataclass(frozen=True)
class KeyCodec:
    """How one Paimon type's keys are written, read and ordered."""

    root: str
    fmt: str | None  # numpy big-endian format; None: variable-length bytes

    @property
    def width(self) -> int:
        return np.dtype(self.fmt).itemsize if self.fmt else 0

    @property
    def fixed(self) -> bool:
        return self.fmt is not None

    def order(self, raw: np.ndarray) -> np.ndarray:
        """int64 values ordering decoded keys exactly as Java's comparator orders them."""
        if self.root == "BOOLEAN":
            return (raw == 1).astype(np.int64)
        if self.root in ("FLOAT", "DOUBLE"):
            native = raw.astype(np.float32 if self.root == "FLOAT" else np.float64)
            return java_float_order(native).astype(np.int64)
        return raw.astype(np.int64)

    def order_of(self, key) -> int | bytes:
        """The order value of one key as :func:`arrowidx.types.literal_keys` gives it."""
        if self.fmt is None:
            return bytes(key)
        if self.root == "BOOLEAN":
            return int(bool(key))
        if self.root in ("FLOAT", "DOUBLE"):
            dtype = np.float32 if self.root == "FLOAT" else np.float64
            return int(java_float_order(np.array([key], dtype=dtype))[0])
        return int(key)

    def encode(self, order: np.ndarray) -> np.ndarray:
        """Serialised keys (one row of ``width`` bytes each) for sorted order values."""
        if self.root in ("FLOAT", "DOUBLE"):
            itype = np.int32 if self.root == "FLOAT" else np.int64
            o = order.astype(itype)
            shift = itype(31 if itype is np.int32 else 63)
            mask = itype(0x7FFFFFFF if itype is np.int32 else 0x7FFFFFFFFFFFFFFF)
            bits = o ^ ((o >> shift) & mask)  # the order transform is its own inverse
            out = bits.astype(">i4" if itype is np.int32 else ">i8")
        elif self.root == "BOOLEAN":
            out = order.astype("u1")
        else:
            out = order.astype(self.fmt)
        return np.ascontiguousarray(out).view(np.uint8).reshape(len(order), self.width)

    def read(self, r: ByteReader, what: str) -> int | bytes:
        """One serialised key from ``r``, as its order value."""
        if self.fmt is None:
            n = r.i32(f"{what} length")
            return bytes(r.raw(n, what))
        return int(self.order(r.array(self.fmt, 1, what))[0])

    def serialized(self, key_bytes: bytes | np.ndarray) -> bytes:
        return bytes(key_bytes)


_FORMATS = {
    "TINYINT": ">i1", "SMALLINT": ">i2", "INT": ">i4", "DATE": ">i4", "TIME": ">i4",
    "BIGINT": ">i8", "TIMESTAMP": ">i8", "TIMESTAMP_LTZ": ">i8", "DECIMAL": ">i8",
    "FLOAT": ">f4", "DOUBLE": ">f8", "BOOLEAN": "u1", "STRING": None,
}  # fmt: skip


def codec_for(ptype: PaimonType) -> KeyCodec:
    return KeyCodec(ptype.root, _FORMATS[ptype.root])


# ---------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------


class FixedDictionary:
    """The dictionary of sorted distinct fixed-width keys (int64 ``order`` values), laid out:
    ``head`` (the dictionary header, chunk offsets and chunk headers, a few bytes per chunk)
    then ``keys_length`` bytes of keys that :meth:`write_keys` encodes straight into the
    caller's buffer, a block of keys at a time (no copy of all the keys as bytes)."""

    def __init__(self, codec: KeyCodec, order: np.ndarray, limit: int):
        self.codec, self.order = codec, order
        card = len(order)
        if card == 0:
            self.head, self.keys_length, self.lo, self.hi = _dictionary(0, b"", b"", b""), 0, b"", b""
            return
        w = codec.width
        self.per_chunk = per_chunk = min(1 + limit // w, card)
        heads = np.arange(0, card, per_chunk, dtype=np.int64)
        sizes = np.minimum(per_chunk, card - heads) - 1
        key_lengths = sizes * w
        header = np.zeros(
            len(heads),
            dtype=[("v", "u1"), ("key", f"V{w}"), ("code", ">i4"), ("offset", ">i4"),
                   ("size", ">i4"), ("keys", ">i4"), ("width", ">i4")],
        )  # fmt: skip
        header["v"] = VERSION_1
        header["key"] = np.ascontiguousarray(codec.encode(order[heads])).view(f"V{w}").ravel()
        header["code"] = heads
        header["offset"] = np.concatenate(([0], np.cumsum(key_lengths)[:-1]))
        header["size"] = sizes
        header["keys"] = key_lengths
        header["width"] = w
        offsets = (np.arange(len(heads), dtype=np.int64) * header.dtype.itemsize).astype(">i4")
        self.keys_length = (card - len(heads)) * w
        self.head = _dictionary(len(heads), offsets.tobytes(), header.tobytes(), b"")
        self.lo, self.hi = codec.encode(order[:1]).tobytes(), codec.encode(order[-1:]).tobytes()

    @property
    def size(self) -> int:
        return len(self.head) + self.keys_length

    def write_keys(self, out: np.ndarray) -> None:
        """Encode every key but each chunk's first into ``out`` (uint8, ``keys_length``)."""
        card, w = len(self.order), self.codec.width
        if not self.keys_length:
            return
        step = self.per_chunk * max(1, (1 << 18) // self.per_chunk)  # whole chunks per step
        for start in range(0, card, step):  # per block of keys
            part = self.order[start : start + step]
            rest = np.arange(start, start + len(part)) % self.per_chunk != 0
            at = (start - start // self.per_chunk) * w  # keys written before this step
            encoded = self.codec.encode(part[rest])
            out[at : at + encoded.size] = encoded.reshape(-1)


def serialize_variable(keys: pa.Array, limit: int) -> tuple[bytes, bytes, bytes]:
    """``(dictionary, min key, max key)`` bytes for sorted distinct binary keys."""
    card = len(keys)
    if card == 0:
        return _dictionary(0, b"", b"", b""), b"", b""
    ser, bounds = _length_prefixed(keys)
    max_keys = limit // 4
    chunk_offsets, headers, key_parts = [], [], []
    chunk_offset = keys_offset = 0
    head = 0
    while head < card:  # per chunk
        start = head + 1
        fit = int(np.searchsorted(bounds, bounds[start] + limit, side="right")) - 1
        m = max(0, min(fit - start, max_keys, card - start))
        keys_length = int(bounds[start + m] - bounds[start])
        rel = (bounds[start : start + m] - bounds[start]).astype(">i4").tobytes()
        header = b"".join(
            [
                b"\x01",
                ser[bounds[head] : bounds[head + 1]],
                struct.pack(">iiiii", head, keys_offset, m, 4 * m, keys_length),
            ]
        )
        chunk_offsets.append(chunk_offset)
        headers.append(header)
        key_parts.append(rel)
        key_parts.append(ser[bounds[start] : bounds[start + m]])
        chunk_offset += len(header)
        keys_offset += 4 * m + keys_length
        head = start + m
    offsets = np.array(chunk_offsets, dtype=">i4").tobytes()
    dictionary = _dictionary(len(headers), offsets, b"".join(headers), b"".join(key_parts))
    return dictionary, ser[bounds[0] : bounds[1]], ser[bounds[card - 1] : bounds[card]]


def _length_prefixed(keys: pa.Array) -> tuple[bytes, np.ndarray]:
    """Every key as int32 length + bytes, concatenated; and the start of each (plus the end).

    Vectorised: the length bytes are scattered to their places and the key bytes fill the
    rest in order, so no Python code runs per key.
    """
    keys = keys.cast(pa.large_binary())
    offsets_buf, data_buf = keys.buffers()[1], keys.buffers()[2]
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[keys.offset : keys.offset + len(keys) + 1]
    lengths = np.diff(offsets)
    data = (
        np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if data_buf is not None
        else np.zeros(0, np.uint8)
    )
    bounds = np.concatenate(([0], np.cumsum(lengths + 4)))
    out = np.empty(int(bounds[-1]), dtype=np.uint8)
    is_length = np.zeros(len(out), dtype=bool)
    length_at = (bounds[:-1, None] + np.arange(4)).ravel()
    is_length[length_at] = True
    out[length_at] = lengths.astype(">i4").view(np.uint8)
    out[~is_length] = data
    return out.tobytes(), bounds


def _dictionary(size: int, offsets: bytes, chunks: bytes, keys: bytes) -> bytes:
    header = struct.pack(">iBiii", _HEADER_LENGTH, VERSION_1, size, len(offsets), len(chunks))
    return b"".join([header, offsets, chunks, keys])


# ---------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------


@dataclass
class _Chunk:
    head: int | bytes  # order value of the first key
    code: int
    size: int  # keys after the first
    keys_start: int  # absolute offset of this chunk's keys
    keys_length: int
    offsets_length: int = 0  # variable-length chunks only
    decoded: object = None


class ChunkedDictionary:
    """A dictionary read lazily: headers of the chunks a search visits, keys of one chunk."""

    def __init__(self, r: ByteReader, codec: KeyCodec, cardinality: int):
        self.codec = codec
        self.source = r.source
        self.data = r.data
        self.cardinality = cardinality
        at = r.pos
        header_length = r.i32("dictionary header length")
        if header_length != _HEADER_LENGTH:
            raise r.fail(f"dictionary header length {header_length}, expected {_HEADER_LENGTH}", at)
        version = r.u8("dictionary version")
        if version != VERSION_1:
            version_error(r, version, "range-bitmap dictionary")
        self.size = r.i32("dictionary chunk count")
        offsets_length = r.i32("dictionary offsets length")
        chunks_length = r.i32("dictionary chunks length")
        if self.size < 0 or self.size > cardinality or (self.size == 0) != (cardinality == 0):
            raise r.fail(f"{self.size} dictionary chunks for {cardinality} distinct values", at + 5)
        if offsets_length != 4 * self.size:
            raise r.fail(
                f"dictionary offsets length {offsets_length} is not 4 x {self.size} chunks", at + 9
            )
        if chunks_length < 0 or offsets_length + chunks_length > r.remaining:
            raise r.fail(
                f"dictionary chunks length {chunks_length} with {r.remaining} bytes left", at + 13
            )
        offsets = r.array(">i4", self.size, "chunk offsets").astype(np.int64)
        self.chunks_start = r.pos
        self.keys_start = r.pos + chunks_length
        self.keys_end = r.end
        bounds = np.concatenate((offsets, [chunks_length]))
        if self.size and (offsets[0] != 0 or (np.diff(bounds) <= 0).any()):
            raise r.fail(
                "dictionary chunk offsets are not increasing from 0 inside the chunk area",
                self.chunks_start - offsets_length,
            )
        self.bounds = bounds.tolist()
        self._chunks: dict[int, _Chunk] = {}
        self.expected_last: int | bytes | None = None
        if self.size and self.chunk(0).code != 0:
            raise r.fail(
                f"the first dictionary chunk starts at code {self.chunk(0).code}, not 0",
                self.chunks_start,
            )

    def chunk(self, i: int) -> _Chunk:
        """Chunk ``i``'s header, parsed and checked on first use."""
        found = self._chunks.get(i)
        if found is not None:
            return found
        start = self.chunks_start + self.bounds[i]
        r = ByteReader(self.data, self.source, start, self.chunks_start + self.bounds[i + 1])
        version = r.u8("chunk version")
        if version != VERSION_1:
            version_error(r, version, "range-bitmap dictionary chunk")
        head = self.codec.read(r, "chunk key")
        code, offset, size = (
            r.i32("chunk code"),
            r.i32("chunk keys offset"),
            r.i32("chunk key count"),
        )
        if self.codec.fixed:
            keys_length, width = r.i32("chunk keys length"), r.i32("chunk key width")
            offsets_length = 0
            if width != self.codec.width or size < 0 or keys_length != size * width:
                raise r.fail(
                    f"chunk {i} has {size} keys of width {width} in {keys_length} bytes", start
                )
        else:
            offsets_length, keys_length = r.i32("chunk offsets length"), r.i32("chunk keys length")
            if size < 0 or offsets_length != 4 * size or keys_length < 0:
                raise r.fail(
                    f"chunk {i} has {size} keys, {offsets_length} offset bytes, {keys_length} key bytes",
                    start,
                )
        if r.remaining:
            raise r.fail(f"{r.remaining} unexpected bytes at the end of dictionary chunk {i}")
        if code < 0 or code + size >= self.cardinality:
            raise r.fail(
                f"chunk {i} codes [{code}, {code + size}] exceed {self.cardinality} distinct values",
                start,
            )
        keys_start = self.keys_start + offset
        if offset < 0 or keys_start + offsets_length + keys_length > self.keys_end:
            raise r.fail(f"chunk {i} keys at offset {offset} run past the dictionary", start)
        found = self._chunks[i] = _Chunk(head, code, size, keys_start, keys_length, offsets_length)
        return found

    def _check_next(self, i: int) -> None:
        """Chunk ``i``'s codes must run into chunk ``i + 1`` (or to the last code)."""
        c = self.chunk(i)
        expected = self.chunk(i + 1).code if i + 1 < self.size else self.cardinality
        if c.code + c.size + 1 != expected:
            raise self._fail(
                f"chunk {i} ends at code {c.code + c.size}, the next code is {expected}",
                c.keys_start,
            )
        if i + 1 < self.size and not c.head < self.chunk(i + 1).head:
            raise self._fail(f"dictionary chunks {i} and {i + 1} are out of order", c.keys_start)

    def _fail(self, message: str, offset: int):
        from ...errors import CorruptIndexError

        return CorruptIndexError(message, source=self.source, offset=offset)

    def find(self, key: int | bytes) -> int:
        """The code of ``key`` if present, else ``-(insertion point) - 1`` (Java's convention)."""
        lo, hi = 0, self.size - 1
        while lo <= hi:  # over chunk headers
            mid = (lo + hi) >> 1
            c = self.chunk(mid)
            if c.head < key:
                lo = mid + 1
            elif c.head > key:
                hi = mid - 1
            else:
                return c.code
        if lo == 0:
            return -1
        self._check_next(lo - 1)
        c = self.chunk(lo - 1)
        if c.size == 0:
            return -(c.code + 1) - 1
        keys = self._keys(lo - 1)
        p = bisect.bisect_left(keys, key)
        if p < c.size and keys[p] == key:
            return c.code + 1 + p
        return -(c.code + 1 + p) - 1

    def ordered_keys(self) -> np.ndarray:
        """Every key, ascending, as int64 order values (fixed-width keys only): each chunk
        checked as a lookup checks it, and the whole run strictly increasing."""
        parts = []
        for i in range(self.size):
            self._check_next(i)
            parts.append(np.array([self.chunk(i).head], np.int64))
            parts.append(self._keys(i))
        keys = np.concatenate(parts) if parts else np.empty(0, np.int64)
        if len(keys) > 1 and (keys[1:] <= keys[:-1]).any():
            raise self._fail("the dictionary keys are not in ascending order across chunks", self.chunks_start)
        return keys

    def _keys(self, i: int):
        c = self.chunk(i)
        if c.decoded is None:
            if self.codec.fixed:
                raw = np.frombuffer(
                    self.data, dtype=self.codec.fmt, count=c.size, offset=c.keys_start
                )
                order = self.codec.order(raw)
                if c.size and (order[0] <= c.head or (order[1:] <= order[:-1]).any()):
                    raise self._fail(f"keys of dictionary chunk {i} are not sorted", c.keys_start)
                c.decoded = order
            else:
                c.decoded = _VariableKeys(self, c, i)
            if i == self.size - 1 and self.expected_last is not None:
                last = c.decoded[c.size - 1] if c.size else c.head
                if last != self.expected_last:
                    raise self._fail(
                        "the last dictionary key is not the header's maximum", c.keys_start
                    )
        return c.decoded


class _VariableKeys:
    """The keys of one variable-length chunk, decoded one by one as a binary search asks."""

    def __init__(self, dictionary: ChunkedDictionary, chunk: _Chunk, index: int):
        self.d = dictionary
        self.c = chunk
        self.index = index
        self.base = chunk.keys_start + chunk.offsets_length
        self.offsets = np.frombuffer(
            dictionary.data, dtype=">i4", count=chunk.size, offset=chunk.keys_start
        )

    def __len__(self) -> int:
        return self.c.size

    def __getitem__(self, j: int) -> bytes:
        off = int(self.offsets[j])
        if not 0 <= off <= self.c.keys_length - 4:
            raise self.d._fail(
                f"key {j} of dictionary chunk {self.index} has offset {off}",
                self.c.keys_start + 4 * j,
            )
        r = ByteReader(self.d.data, self.d.source, self.base + off, self.base + self.c.keys_length)
        return self.d.codec.read(r, f"key {j} of dictionary chunk {self.index}")
