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

from ._roaring import packed_window

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
    """Arrow packed bits for ``bitmap``, decoded container by container (see
    :func:`arrowidx._roaring.packed_window`); positions at or past ``num_rows`` are ignored."""
    if len(bitmap) and bitmap.max() >= num_rows:
        bitmap = bitmap.intersection(BitMap(range(num_rows)))
    data = packed_window(bitmap, 0, num_rows)
    return pa.BooleanArray.from_buffers(pa.bool_(), num_rows, [None, pa.py_buffer(data)])
