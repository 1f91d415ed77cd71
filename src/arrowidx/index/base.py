"""What every index type provides: a writer of its bytes and a reader answering predicates.

An index type is a class with a ``name`` (the Paimon option name, e.g. ``bitmap``), the
per-column ``options`` it accepts, ``check_type`` (raises UnsupportedTypeError), and
``writer`` / ``reader`` factories. Readers answer key-space predicates
(:class:`arrowidx.predicate.KLeaf`) in Java's semantics; the base class answers UNKNOWN
(REMAIN for both TRUE and FALSE) to everything, so a predicate an index does not implement
can never cause a wrong skip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from .._bytes import ByteReader
from ..predicate import UNKNOWN, Answer
from ..result import REMAIN, IndexResult
from ..types import Keys, PaimonType


class IndexWriter:
    """Collects the keys of one column, batch after batch, and serialises the index."""

    def add(self, keys: Keys) -> None:
        raise NotImplementedError

    def finish(self) -> bytes | None:
        """The index bytes (None writes Paimon's empty-index flag in the container)."""
        raise NotImplementedError


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
