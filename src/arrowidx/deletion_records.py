"""The bytes of one deletion-vector record, parsed and checked: ``int32 BE length | magic |
bitmap | int32 BE CRC32(magic + bitmap)``, the bitmap a portable Roaring32 (32-bit vectors)
or Iceberg's ``deletion-vector-v1`` buckets of Roaring32 bitmaps (64-bit vectors). Every
malformed byte is a :class:`~arrowidx.errors.CorruptIndexError` naming the source and the
offset. :mod:`arrowidx.deletion` builds vectors and index files on it."""

from __future__ import annotations

import struct
import zlib

import numpy as np
from pyroaring import BitMap, BitMap64

from ._roaring import MalformedBitmap, PortableLayout, portable_layout
from .errors import CorruptIndexError

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
MAX_POSITION_32 = 2**31 - 1
_MAX_KEY_64 = 2**31 - 2
_U64LE = struct.Struct("<Q")


def fail(message: str, source: str, offset: int) -> CorruptIndexError:
    return CorruptIndexError(message, source=source, offset=offset)


def read_record(buf: np.ndarray, pos: int, end: int, source: str) -> tuple[BitMap | BitMap64, bool, int]:
    """Parse the record starting at ``pos``: its bitmap, whether it is 64-bit, and the offset
    after it."""
    if end - pos < 8:
        raise fail(
            f"deletion vector record needs at least 8 bytes but only {end - pos} remain",
            source,
            pos,
        )
    length = int(buf[pos : pos + 4].view(">i4")[0])
    if length < 4:
        raise fail(f"deletion vector length field {length} is below the 4-byte magic", source, pos)
    if length > end - pos - 8:
        raise fail(
            f"deletion vector length field {length} runs past the end "
            f"({end - pos - 8} bytes available for magic and bitmap)",
            source,
            pos,
        )
    magic_at = pos + 4
    body = buf[magic_at : magic_at + length]
    if int(buf[magic_at : magic_at + 4].view(">i4")[0]) == MAGIC_32:
        bitmap64 = False
    elif int(buf[magic_at : magic_at + 4].view("<i4")[0]) == MAGIC_64:
        bitmap64 = True
    else:
        raise fail(
            f"bad deletion vector magic 0x{bytes(buf[magic_at : magic_at + 4]).hex()} (expected "
            f"{MAGIC_32} big-endian or {MAGIC_64} little-endian)",
            source,
            magic_at,
        )
    crc_at = magic_at + length
    stored = int(buf[crc_at : crc_at + 4].view(">u4")[0])
    actual = zlib.crc32(body)
    if stored != actual:
        raise fail(
            f"deletion vector CRC32 mismatch: stored 0x{stored:08x}, computed 0x{actual:08x}",
            source,
            crc_at,
        )
    bitmap_at, bitmap_end = magic_at + 4, crc_at
    if bitmap64:
        bm: BitMap | BitMap64 = _read_bitmap64(buf, bitmap_at, bitmap_end, source)
    else:
        bm = _read_bitmap32(buf, bitmap_at, bitmap_end, source)
    return bm, bitmap64, crc_at + 4


def _exact_layout(buf: np.ndarray, pos: int, end: int, source: str, what: str) -> PortableLayout:
    try:
        return portable_layout(buf, pos, end)
    except MalformedBitmap as e:
        raise fail(f"{what}: {e}", source, e.offset) from None


def _read_bitmap32(buf: np.ndarray, pos: int, end: int, source: str) -> BitMap:
    layout = _exact_layout(buf, pos, end, source, "32-bit deletion vector bitmap")
    if layout.size != end - pos:
        raise fail(
            f"32-bit bitmap occupies {layout.size} bytes but the length field leaves {end - pos}",
            source,
            pos + layout.size,
        )
    try:
        bm = BitMap.deserialize(buf[pos:end].tobytes())
    except (ValueError, OverflowError, MemoryError) as e:
        raise fail(
            f"32-bit bitmap is not a valid portable Roaring bitmap ({e})", source, pos
        ) from None
    if bm and bm.max() > MAX_POSITION_32:
        raise fail(
            f"32-bit deletion vector holds position {bm.max()} above {MAX_POSITION_32}",
            source,
            pos,
        )
    return bm


def empty_buckets(first: int, stop: int) -> bytes:
    """Empty buckets for keys ``first .. stop-1``: int32 LE key + an empty portable bitmap."""
    records = np.zeros((stop - first, 12), dtype=np.uint8)
    records[:, :4] = np.arange(first, stop, dtype="<i4").view(np.uint8).reshape(-1, 4)
    records[:, 4:] = _EMPTY_BUCKET_TAIL
    return records.tobytes()


_EMPTY_BUCKET_TAIL = np.frombuffer(b"\x3a\x30\x00\x00\x00\x00\x00\x00", dtype=np.uint8)


def _skip_empty_buckets(buf: np.ndarray, p: int, end: int, limit: int, last: int, source: str) -> tuple[int, int]:
    """How many empty buckets (key + the 8-byte empty portable bitmap) start at ``p``.

    Java writes every key from 0 to the highest, so a sparse vector far above 2**32 is
    mostly empty buckets; they are checked in blocks with numpy instead of one by one.
    Returns (buckets skipped, last key seen).
    """
    skipped, block = 0, 64
    while skipped < limit:
        n = min(block, limit - skipped, (end - p) // 12 - skipped)
        if n <= 0:
            break
        records = buf[p + 12 * skipped : p + 12 * (skipped + n)].reshape(n, 12)
        empty = (records[:, 4:] == _EMPTY_BUCKET_TAIL).all(axis=1)
        run = n if empty.all() else int(np.argmin(empty))
        if run:
            keys = records[:run, :4].copy().view("<i4").ravel().astype(np.int64)
            if keys[0] <= last or (run > 1 and not bool(np.all(keys[1:] > keys[:-1]))) or keys[-1] > _MAX_KEY_64:
                break  # let the one-by-one path report the exact problem
            last = int(keys[-1])
            skipped += run
        if run < n:
            break
        block *= 2
    return skipped, last


def _read_bitmap64(buf: np.ndarray, pos: int, end: int, source: str) -> BitMap64:
    if end - pos < 8:
        raise fail("64-bit bitmap needs an 8-byte bucket count", source, pos)
    count = int(buf[pos : pos + 8].view("<i8")[0])
    if count < 0 or count > 2**31 - 1 or count * 12 > end - pos - 8:
        raise fail(
            f"64-bit bitmap bucket count {count} is impossible with {end - pos - 8} bytes left",
            source,
            pos,
        )
    p = pos + 8
    last = -1
    kept: list[bytes] = []
    nonempty = 0
    remaining = count
    while remaining:  # one step per non-empty bucket (2**32 positions); empty runs in bulk
        skipped, last = _skip_empty_buckets(buf, p, end, remaining, last, source)
        p += 12 * skipped
        remaining -= skipped
        if not remaining:
            break
        remaining -= 1
        if end - p < 4:
            raise fail("64-bit bitmap bucket key is truncated", source, p)
        key = int(buf[p : p + 4].view("<i4")[0])
        if key < 0 or key > _MAX_KEY_64:
            raise fail(f"64-bit bitmap bucket key {key} is out of range", source, p)
        if key <= last:
            raise fail(f"64-bit bitmap bucket keys must ascend: {key} follows {last}", source, p)
        layout = _exact_layout(buf, p + 4, end, source, f"64-bit bitmap bucket {key}")
        if layout.keys.size:
            kept.append(buf[p : p + 4 + layout.size].tobytes())
            nonempty += 1
        last = key
        p += 4 + layout.size
    if p != end:
        raise fail(f"{end - p} bytes after the last bucket of the 64-bit bitmap", source, p)
    if not nonempty:
        return BitMap64()
    try:
        return BitMap64.deserialize(b"".join([_U64LE.pack(nonempty), *kept]))
    except (ValueError, OverflowError, MemoryError) as e:
        raise fail(
            f"64-bit bitmap is not a valid portable Roaring bitmap ({e})", source, pos
        ) from None
