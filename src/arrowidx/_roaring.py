"""pyroaring helpers: bulk conversion from numpy and Java-compatible (de)serialisation.

Java's ``RoaringBitmap32.serialize`` always run-optimises first, so :func:`to_portable`
does too; the portable format is the one CRoaring, Java RoaringBitmap and Iceberg share.
"""

from __future__ import annotations

import array

import numpy as np
from pyroaring import BitMap

from ._bytes import ByteReader


def bitmap_of(positions: np.ndarray) -> BitMap:
    """A ``BitMap`` of uint32 positions, via ``array.array`` (pyroaring's fast bulk path)."""
    buf = array.array("I")
    buf.frombytes(memoryview(np.ascontiguousarray(positions, dtype=np.uint32)).cast("B"))
    return BitMap(buf)


def positions_of(bitmap: BitMap) -> np.ndarray:
    """The sorted positions of ``bitmap`` as a uint32 numpy array (no per-element Python)."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)


def to_portable(bitmap: BitMap) -> bytes:
    """Portable serialisation after run optimisation, byte-identical to Java's."""
    bitmap = BitMap(bitmap)  # never mutate the caller's bitmap
    bitmap.run_optimize()
    return bitmap.serialize()


def read_portable(reader: ByteReader, length: int, what: str) -> BitMap:
    """Deserialise a portable bitmap occupying exactly ``length`` bytes of ``reader``."""
    at = reader.pos
    raw = reader.raw(length, what)
    try:
        bitmap = BitMap.deserialize(bytes(raw))
    except (ValueError, IndexError) as e:
        raise reader.fail(f"{what} is not a valid portable Roaring bitmap ({e})", at) from None
    return bitmap


def read_portable_unsized(reader: ByteReader, what: str) -> BitMap:
    """Deserialise a portable bitmap whose length is only known from its own header."""
    at = reader.pos
    length = portable_size(reader.data, at, reader.end)
    if length is None:
        raise reader.fail(f"{what} has a bad portable Roaring header", at)
    return read_portable(reader, length, what)


_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347


def portable_size(data: memoryview, start: int, end: int) -> int | None:
    """Size in bytes of the portable bitmap at ``data[start:]``, or None if malformed.

    Reads only the header (and run counts), as CRoaring's
    ``roaring_bitmap_portable_deserialize_size`` does.
    """
    def u16(p: int) -> int:
        return int.from_bytes(data[p : p + 2], "little")

    def u32(p: int) -> int:
        return int.from_bytes(data[p : p + 4], "little")

    p = start
    if end - p < 4:
        return None
    cookie = u32(p)
    if cookie & 0xFFFF == _COOKIE_RUN:
        n = (cookie >> 16) + 1
        p += 4
        run_flag_bytes = (n + 7) // 8
        if end - p < run_flag_bytes:
            return None
        run_flags = bytes(data[p : p + run_flag_bytes])
        p += run_flag_bytes
    elif cookie == _COOKIE_NO_RUN:
        if end - p < 8:
            return None
        n = u32(p + 4)
        p += 8
        run_flags = b""
    else:
        return None
    if n > 65536 or end - p < 4 * n:
        return None
    header = p
    p += 4 * n
    has_offsets = cookie == _COOKIE_NO_RUN or n >= 4  # NO_OFFSET_THRESHOLD
    if has_offsets:
        if end - p < 4 * n:
            return None
        p += 4 * n
    for i in range(n):
        card = u16(header + 4 * i + 2) + 1
        is_run = bool(run_flags) and (run_flags[i // 8] >> (i % 8)) & 1
        if is_run:
            if end - p < 2:
                return None
            p += 2 + 4 * u16(p)
        elif card > 4096:
            p += 8192
        else:
            p += 2 * card
        if p > end:
            return None
    return p - start
