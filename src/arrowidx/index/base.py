"""What every index type provides: a writer of its bytes and a reader answering predicates.

An index type is a class with a ``name`` (the Paimon option name, e.g. ``bitmap``), the
per-column ``options`` it accepts, ``check_type`` (raises UnsupportedTypeError), and
``writer`` / ``reader`` factories. Readers answer key-space predicates
(:class:`arrowidx.predicate.KLeaf`) in Java's semantics; the base class answers UNKNOWN
(REMAIN for both TRUE and FALSE) to everything, so a predicate an index does not implement
can never cause a wrong skip.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import ClassVar

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from .._bytes import ByteReader
from ..predicate import UNKNOWN, Answer
from ..result import REMAIN, IndexResult
from ..types import Keys, PaimonType


class IndexWriter:
    """Collects the keys of one column, batch after batch, and serialises the index.

    A writer keeps what its index needs, not the keys: memory is bounded by a block of rows
    and the index itself. ``passes`` is how many times it reads the column: a writer that
    needs the whole column before it can place a row (range-bitmap: its distinct values
    first, then each row's code) reads it twice; :meth:`next_pass` starts the next reading,
    whose :meth:`add` calls give the column again from its first row.
    """

    passes: ClassVar[int] = 1

    def add(self, keys: Keys) -> None:
        raise NotImplementedError

    def next_pass(self) -> None:
        """The column is read again from its first row (writers with ``passes > 1``)."""
        raise NotImplementedError

    def finish(self) -> bytes | bytearray | None:
        """The index bytes (None writes Paimon's empty-index flag in the container)."""
        raise NotImplementedError


#: Rows a writer works on at once: 16 Roaring containers of 65,536 rows, whose vectorised
#: work is cheap per row and whose temporaries stay a few MB (bench/bench_build_memory.py).
BLOCK_ROWS = 1 << 20


def slice_keys(keys: Keys, start: int, stop: int) -> Keys:
    """Rows ``[start, stop)`` of ``keys`` (views, no copy)."""
    nulls = keys.nulls[start:stop] if keys.nulls is not None else None
    return Keys(keys.values[start:stop], nulls)


def concat_keys(parts: list[Keys]) -> Keys:
    """``parts`` one after the other (one copy)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0].values
    values = pa.concat_arrays([p.values for p in parts]) if isinstance(first, pa.Array) else np.concatenate([p.values for p in parts])
    if all(p.nulls is None for p in parts):
        return Keys(values, None)
    return Keys(values, np.concatenate([p.nulls if p.nulls is not None else np.zeros(len(p), bool) for p in parts]))


def join_parts(parts: list, out: bytearray | None = None, at: int = 0) -> bytearray:
    """``b"".join(parts)`` (or the parts copied into ``out`` from byte ``at``), emptying
    ``parts`` as it goes: each part is dropped once copied, so an index made of many parts
    is never held twice over."""
    if out is None:
        out = bytearray(sum(len(p) for p in parts))
    parts.reverse()
    while parts:  # per part
        part = parts.pop()
        out[at : at + len(part)] = part
        at += len(part)
    return out


class Blocks:
    """Keys as they come, given back in blocks of ``rows`` rows (a multiple of 65,536; the
    last block shorter), each with its first row, a multiple of ``rows``.

    A writer then works on a bounded, vectorised amount at a time whatever the batches are
    (Spark hands 10,000 rows, a table one chunk of millions), and the Roaring containers it
    builds for a block never straddle two blocks::

        for block, first_row in self.blocks.add(keys):  # and .flush() after the last keys
            ...
    """

    def __init__(self, rows: int | None = None):
        self.rows = rows or BLOCK_ROWS
        self.pending: list[Keys] = []
        self.pending_rows = 0
        self.start = 0  # row number of the first pending row

    def add(self, keys: Keys) -> Iterator[tuple[Keys, int]]:
        at, n = 0, len(keys)
        while at < n:  # per block
            take = min(n - at, self.rows - self.pending_rows)
            self.pending.append(slice_keys(keys, at, at + take) if (at, take) != (0, n) else keys)
            self.pending_rows += take
            at += take
            if self.pending_rows == self.rows:
                yield self._take()

    def flush(self) -> Iterator[tuple[Keys, int]]:
        if self.pending_rows:
            yield self._take()

    def _take(self) -> tuple[Keys, int]:
        block, start = concat_keys(self.pending), self.start
        self.pending, self.start, self.pending_rows = [], start + self.pending_rows, 0
        return block, start


class IndexReader:
    """Answers key-space predicates for one column from one index's bytes.

    ``answer(op, keys)`` gets ``op`` in eq, in, lt, le, gt, ge, is_null with the key(s) in
    ``keys``; it returns an :class:`Answer`: supersets of the rows where the predicate is
    TRUE and where it is FALSE (a NULL row is neither, as in SQL).
    """

    exact_ops: ClassVar[frozenset[str]] = frozenset()  # ops whose TRUE side is exact
    cost: ClassVar[int] = 1  # readers of one column are asked cheapest first (a SKIP ends it)
    index_type: str = "?"  # the container's name for this index (set when opened)
    lists_keys: bool = False  # distinct_keys() lists every key (a key directory can stand in)

    def answer(self, op: str, keys: tuple) -> Answer:
        return UNKNOWN

    def top_n(self, descending: bool, nulls_first: bool, limit: int, strict: bool, candidates: IndexResult) -> IndexResult:
        """The rows of the top ``limit`` among ``candidates``; REMAIN if not supported."""
        return REMAIN

    def describe(self) -> dict:
        """A few facts for ``arrowidx inspect`` (row count, cardinality, ...)."""
        return {}

    def distinct_keys(self):
        """Every key the index holds, ascending, as int64 order values (``None``: it cannot
        list them; only such a list lets a key directory stand in for the reader)."""
        return None


class ExactIndexReader(IndexReader):
    """A reader that knows the exact rows for the ops in ``exact_ops``.

    Subclasses give the NULL rows, the non-NULL rows and ``matching_rows(op, keys)`` (Java key
    semantics); the FALSE side of every answer is then the non-NULL rows minus the TRUE side,
    computed only if a ``~`` asks for it.
    """

    exact_ops: ClassVar[frozenset[str]] = frozenset({"is_null"})

    def null_rows(self) -> BitMap:
        raise NotImplementedError

    def non_null_rows(self) -> BitMap:
        raise NotImplementedError

    def matching_rows(self, op: str, keys: tuple) -> BitMap:
        raise NotImplementedError

    def answer(self, op: str, keys: tuple) -> Answer:
        if op == "is_null":
            return Answer(IndexResult.of(self.null_rows), IndexResult.of(self.non_null_rows))
        if op not in self.exact_ops or None in keys or (not keys and op != "in"):
            return UNKNOWN
        # Every use of a leaf needs its TRUE side (the FALSE side is derived from it), so
        # it is computed now; the FALSE side only if a ``~`` asks.
        t = IndexResult.of(self.matching_rows(op, keys))
        return Answer(t, IndexResult.of(lambda: self.non_null_rows() - t.bitmap))


class IndexType:
    """One index format. Subclasses set ``name``, ``options`` and the factories."""

    name: ClassVar[str]
    options: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def check_type(cls, ptype: PaimonType) -> None:
        """Raise :class:`~arrowidx.errors.UnsupportedTypeError` if this index cannot hold ``ptype``."""

    @classmethod
    def check_options(cls, column: str, options: Mapping[str, str]) -> None:
        """Raise :class:`~arrowidx.errors.OptionError` for an invalid option value."""

    @classmethod
    def writer(cls, ptype: PaimonType, options: Mapping[str, str]) -> IndexWriter:
        raise NotImplementedError

    @classmethod
    def reader(cls, data: ByteReader, ptype: PaimonType, arrow_type: pa.DataType) -> IndexReader:
        raise NotImplementedError


class EmptyIndexReader(IndexReader):
    """An entry written with Paimon's empty-index flag (start -1): the column holds no value.

    As Java's ``EmptyFileIndexReader``: no row can equal, compare to or IN a value and no
    row is non-null; everything else is unknown.
    """

    def answer(self, op: str, keys: tuple) -> Answer:
        from ..result import SKIP

        if op == "is_null":
            return Answer(REMAIN, SKIP)
        return Answer(SKIP, REMAIN)

    lists_keys = True

    def distinct_keys(self):
        return np.empty(0, np.int64)  # no key: no row equals anything (as :meth:`answer`)
