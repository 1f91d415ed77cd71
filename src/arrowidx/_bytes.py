"""Bounds-checked big-endian byte reading, Java modified UTF-8, and atomic file writes.

Every parser in arrowidx reads through :class:`ByteReader`, so a truncated or lying
file becomes a :class:`~arrowidx.errors.CorruptIndexError` naming the source and the
offset, never an ``IndexError``, a hang or a giant allocation.
"""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any

import numpy as np

from .errors import CorruptIndexError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


class ByteReader:
    """Reads big-endian values from a window of a buffer, checking every length.

    ``offset`` is absolute within ``data``; ``end`` bounds the window (an index entry
    inside a container, for instance), so one entry cannot read into the next.
    """

    __slots__ = ("data", "pos", "end", "source")

    def __init__(self, data: Any, source: str = "<bytes>", start: int = 0, end: int | None = None):
        self.data = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.pos = start
        self.end = len(self.data) if end is None else end
        self.source = source
        if not 0 <= start <= self.end <= len(self.data):
            raise CorruptIndexError(
                f"window [{start}, {end}) lies outside the {len(self.data)} available bytes",
                source=source,
                offset=start,
            )

    # -- errors -----------------------------------------------------------------
    def fail(self, message: str, offset: int | None = None) -> CorruptIndexError:
        """An error for this source at ``offset`` (default: the current position)."""
        return CorruptIndexError(message, source=self.source, offset=self.pos if offset is None else offset)

    def _need(self, n: int, what: str) -> int:
        if n < 0:
            raise self.fail(f"negative length {n} for {what}")
        if self.pos + n > self.end:
            raise self.fail(f"{what} needs {n} bytes but only {self.end - self.pos} remain")
        start = self.pos
        self.pos += n
        return start

    # -- positioning ------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def seek(self, pos: int, what: str = "seek") -> None:
        if not 0 <= pos <= self.end:
            raise self.fail(f"{what} to {pos} is outside [0, {self.end}]")
        self.pos = pos

    def sub(self, length: int, what: str) -> ByteReader:
        """A reader over the next ``length`` bytes; this reader skips past them."""
        start = self._need(length, what)
        return ByteReader(self.data, self.source, start, start + length)

    # -- scalar reads -------------------------------------------------------------
    def u8(self, what: str = "byte") -> int:
        return self.data[self._need(1, what)]

    def i8(self, what: str = "byte") -> int:
        return _I8.unpack_from(self.data, self._need(1, what))[0]

    def boolean(self, what: str = "boolean") -> bool:
        return self.data[self._need(1, what)] != 0

    def i16(self, what: str = "short") -> int:
        return _I16.unpack_from(self.data, self._need(2, what))[0]

    def i32(self, what: str = "int") -> int:
        return _I32.unpack_from(self.data, self._need(4, what))[0]

    def i64(self, what: str = "long") -> int:
        return _I64.unpack_from(self.data, self._need(8, what))[0]

    def f32(self, what: str = "float") -> float:
        return _F32.unpack_from(self.data, self._need(4, what))[0]

    def f64(self, what: str = "double") -> float:
        return _F64.unpack_from(self.data, self._need(8, what))[0]

    def count(self, what: str, item_size: int = 1) -> int:
        """An int32 count of items that must each take ``item_size`` bytes of what remains.

        Rejects negative counts and counts the rest of the window cannot possibly hold,
        before anything is allocated for them.
        """
        at = self.pos
        n = self.i32(what)
        if n < 0 or n * item_size > self.remaining:
            raise self.fail(f"{what} {n} is impossible with {self.remaining} bytes left", at)
        return n

    def raw(self, n: int, what: str = "bytes") -> memoryview:
        start = self._need(n, what)
        return self.data[start : start + n]

    def array(self, dtype: str, n: int, what: str = "array") -> np.ndarray:
        """``n`` values of a numpy dtype (e.g. ``'>i4'``) as a read-only array view."""
        size = np.dtype(dtype).itemsize
        if n < 0:
            raise self.fail(f"negative count {n} for {what}")
        start = self._need(n * size, what)
        return np.frombuffer(self.data, dtype=dtype, count=n, offset=start)

    def utf(self, what: str = "string") -> str:
        """A Java ``DataOutput.writeUTF`` string: u16 length then modified UTF-8."""
        at = self.pos
        n = _I16.unpack_from(self.data, self._need(2, what))[0] & 0xFFFF
        raw = bytes(self.raw(n, what))
        try:
            return decode_modified_utf8(raw)
        except ValueError as e:
            raise self.fail(f"{what} is not valid modified UTF-8: {e}", at) from None


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: NUL as C0 80, supplementary characters as surrogate pairs."""
    out = bytearray()
    for unit in _utf16_units(text):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            out += bytes((0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)))
    return bytes(out)


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def decode_modified_utf8(raw: bytes) -> str:
    if raw.isascii():  # the common case (column and index type names): the same bytes in ASCII
        return raw.decode("ascii")
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110 and i + 1 < n and raw[i + 1] >> 6 == 0b10:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif b >> 4 == 0b1110 and i + 2 < n and raw[i + 1] >> 6 == 0b10 and raw[i + 2] >> 6 == 0b10:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError(f"bad byte 0x{b:02x} at {i}")
    data = b"".join(u.to_bytes(2, "big") for u in units)
    return data.decode("utf-16-be", "surrogatepass")


def write_utf(text: str) -> bytes:
    """``DataOutput.writeUTF``: u16 length prefix plus modified UTF-8."""
    body = encode_modified_utf8(text)
    if len(body) > 0xFFFF:
        raise ValueError(f"name too long for a Java UTF string ({len(body)} bytes)")
    return len(body).to_bytes(2, "big") + body


def as_buffer(source: Any) -> tuple[Any, str]:
    """Bytes from bytes-like, a path or a binary file object, plus a name for errors."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source, "<bytes>"
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            return f.read(), os.fspath(source)
    if hasattr(source, "read"):
        name = getattr(source, "name", None)
        return source.read(), str(name) if name is not None else "<file object>"
    raise TypeError(f"expected bytes, a path or a binary file object, got {type(source).__name__}")


def atomic_write(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place.

    Readers see either the old file or the complete new one, never half of it.
    """
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
