"""The answer of an index: REMAIN (keep the file), SKIP (no row can match) or a row bitmap.

Mirrors Paimon's ``FileIndexResult``: ``&`` and ``|`` combine answers, SKIP short-circuits
AND, REMAIN absorbs OR, and bitmaps are computed lazily so an AND that has already been
decided never materialises the other side.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

_REMAIN, _SKIP, _BITMAP = "remain", "skip", "bitmap"


class IndexResult:
    """One of REMAIN, SKIP or a (lazily computed) pyroaring ``BitMap`` of row positions.

    ``kind`` is ``"remain"``, ``"skip"`` or ``"bitmap"``. ``remain`` is False for SKIP and for
    an empty bitmap: that is what decides whether a file is read at all.
    """

    __slots__ = ("kind", "_bitmap", "_supplier")

    REMAIN: IndexResult
    SKIP: IndexResult

    def __init__(self, kind: str, bitmap: BitMap | None = None, supplier: Callable[[], BitMap] | None = None):
        self.kind = kind
        self._bitmap = bitmap
        self._supplier = supplier

    @classmethod
    def of(cls, bitmap: BitMap | Callable[[], BitMap]) -> IndexResult:
        """A bitmap result, from a ``BitMap`` or a zero-argument function computing one."""
        if isinstance(bitmap, BitMap):
            return cls(_BITMAP, bitmap=bitmap)
        return cls(_BITMAP, supplier=bitmap)

    @property
    def bitmap(self) -> BitMap | None:
        """The selected rows (a pyroaring ``BitMap``), or None for REMAIN and SKIP."""
        if self.kind != _BITMAP:
            return None
        if self._bitmap is None:
            self._bitmap = self._supplier()
            self._supplier = None
        return self._bitmap

    @property
    def remain(self) -> bool:
        """False when no row of the file can match (SKIP or an empty bitmap)."""
        if self.kind == _BITMAP:
            return len(self.bitmap) > 0
        return self.kind == _REMAIN

    def __and__(self, other: IndexResult) -> IndexResult:
        if self.kind == _SKIP or other.kind == _REMAIN:
            return self
        if other.kind == _SKIP or self.kind == _REMAIN:
            return other
        return IndexResult.of(lambda: self.bitmap & other.bitmap)

    def __or__(self, other: IndexResult) -> IndexResult:
        if self.kind == _REMAIN or other.kind == _SKIP:
            return self
        if other.kind == _REMAIN or self.kind == _SKIP:
            return other
        return IndexResult.of(lambda: self.bitmap | other.bitmap)

    def __repr__(self) -> str:
        if self.kind != _BITMAP:
            return f"IndexResult.{self.kind.upper()}"
        return f"IndexResult(bitmap, {len(self.bitmap)} rows)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexResult):
            return NotImplemented
        if self.kind != other.kind:
            return False
        return self.kind != _BITMAP or self.bitmap == other.bitmap

    __hash__ = None  # type: ignore[assignment]

    def to_mask(self, num_rows: int) -> pa.BooleanArray:
        """A ``pa.BooleanArray`` of ``num_rows``: True where a row may match.

        REMAIN is all True, SKIP all False. Positions at or past ``num_rows`` are ignored.
        """
        if self.kind == _REMAIN:
            return _constant_mask(num_rows, True)
        if self.kind == _SKIP:
            return _constant_mask(num_rows, False)
        return bitmap_to_mask(self.bitmap, num_rows)


IndexResult.REMAIN = IndexResult(_REMAIN)
IndexResult.SKIP = IndexResult(_SKIP)

REMAIN = IndexResult.REMAIN
SKIP = IndexResult.SKIP


def _constant_mask(num_rows: int, value: bool) -> pa.BooleanArray:
    nbytes = (num_rows + 7) // 8
    data = np.full(nbytes, 0xFF if value else 0, dtype=np.uint8)
    return pa.BooleanArray.from_buffers(pa.bool_(), num_rows, [None, pa.py_buffer(data)])


def bitmap_to_mask(bitmap: BitMap, num_rows: int) -> pa.BooleanArray:
    """Arrow packed bits for ``bitmap``, written container by container.

    A Roaring bitmap container covers 65,536 rows = 8,192 bytes of Arrow validity-style
    bits (LSB first), so dense containers are copied as they are, array containers are
    OR-ed in with one vectorised reduce, and run containers become byte ranges. The work is
    per container (about 153 for 10M rows), never per row in Python.
    """
    nbytes = (num_rows + 7) // 8
    out = np.zeros(((num_rows + 65535) >> 16) * 8192, dtype=np.uint8)
    if len(bitmap):
        _fill_bits(memoryview(bitmap.serialize()), out)
    data = out[:nbytes]
    if num_rows & 7:
        data[-1] &= (1 << (num_rows & 7)) - 1
    return pa.BooleanArray.from_buffers(pa.bool_(), num_rows, [None, pa.py_buffer(data)])


def _fill_bits(buf: memoryview, out: np.ndarray) -> None:
    """Decode CRoaring's portable serialisation straight into packed bits ``out``."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    cookie = int.from_bytes(buf[0:4], "little")
    if cookie & 0xFFFF == 12347:
        n = (cookie >> 16) + 1
        p = 4
        run_flags = np.unpackbits(raw[p : p + (n + 7) // 8], bitorder="little")[:n].astype(bool)
        p += (n + 7) // 8
        has_offsets = n >= 4
    else:
        n = int.from_bytes(buf[4:8], "little")
        p = 8
        run_flags = np.zeros(n, dtype=bool)
        has_offsets = True
    header = np.frombuffer(buf, dtype="<u2", count=2 * n, offset=p).reshape(n, 2)
    keys = header[:, 0].astype(np.int64)
    cards = header[:, 1].astype(np.int64) + 1
    p += 4 * n
    if has_offsets:
        p += 4 * n
    limit = len(out)
    array_parts: list[np.ndarray] = []
    run_parts: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(n):  # per 65,536-row container
        base = int(keys[i]) * 8192
        if run_flags[i]:
            nruns = int.from_bytes(buf[p : p + 2], "little")
            runs = np.frombuffer(buf, dtype="<u2", count=2 * nruns, offset=p + 2).reshape(nruns, 2)
            p += 2 + 4 * nruns
            if base >= limit:
                continue
            starts = runs[:, 0].astype(np.int64) + (int(keys[i]) << 16)
            run_parts.append((starts, starts + runs[:, 1].astype(np.int64) + 1))
        elif cards[i] > 4096:
            if base < limit:
                chunk = raw[p : p + 8192]
                end = min(base + 8192, limit)
                out[base:end] = chunk[: end - base]
            p += 8192
        else:
            vals = np.frombuffer(buf, dtype="<u2", count=int(cards[i]), offset=p)
            p += 2 * int(cards[i])
            if base < limit:
                array_parts.append(vals.astype(np.int64) + (int(keys[i]) << 16))
    if run_parts:
        _set_ranges(out, np.concatenate([r[0] for r in run_parts]), np.concatenate([r[1] for r in run_parts]))
    if array_parts:
        pos = np.concatenate(array_parts)
        pos = pos[pos < limit * 8]
        _or_positions(out, pos)


def _or_positions(out: np.ndarray, pos: np.ndarray) -> None:
    """Set bits at sorted unique ``pos`` in packed ``out`` (grouped by byte, no Python loop)."""
    if not len(pos):
        return
    byte = pos >> 3
    bits = (np.uint8(1) << (pos & 7).astype(np.uint8)).astype(np.uint8)
    starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
    out[byte[starts]] |= np.bitwise_or.reduceat(bits, starts)


def _set_ranges(out: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """Set bits [start, end) for each range: whole bytes by slicing, ragged edges by bits."""
    limit_bits = len(out) * 8
    ends = np.minimum(ends, limit_bits)
    keep = starts < ends
    starts, ends = starts[keep], ends[keep]
    first_full = (starts + 7) >> 3
    last_full = ends >> 3
    wide = first_full < last_full
    # Whole bytes: mark +1/-1 boundaries and take a running sum (vectorised range fill).
    if wide.any():
        size = len(out) + 1
        delta = np.bincount(first_full[wide], minlength=size) - np.bincount(last_full[wide], minlength=size)
        out[np.cumsum(delta[:-1]) > 0] = 0xFF
    # Ragged edges: [start, first whole byte) and [last whole byte, end); at most 7 bits each.
    lo_end = np.minimum(first_full << 3, ends)
    hi_start = np.maximum(last_full << 3, lo_end)
    pieces = []
    for lo, hi in ((starts, lo_end), (hi_start, ends)):
        lengths = np.maximum(hi - lo, 0)
        if lengths.sum():
            rep = np.repeat(lo, lengths)
            offsets = np.arange(len(rep)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            pieces.append(rep + offsets)
    if pieces:
        _or_positions(out, np.unique(np.concatenate(pieces)))
