"""How a data file's indexes read its columns: one column at a time, in passes, in bounded memory.

An index writer (:class:`arrowidx.index.IndexWriter`) takes a column's keys batch by batch
and keeps only what its index needs; one that must see the whole column before it can place
a row (range-bitmap: its distinct values, then each row's code) reads the column twice
(``writer.passes``). :func:`index_columns` feeds the writers of one column, pass after
pass, finishes them and frees them before the next column, so a build holds one column's
batch, its writers and the finished index bytes, never the decoded file.

Where the columns come from:

* :class:`ParquetColumns`: a Parquet file, read again for each pass, one column's row
  groups batch by batch (what ``arrowidx.build``, Spark and the Paimon rewrite index);
* :class:`TableColumns`: a table already in memory (its chunks);
* :func:`index_stream`: a stream read once (a ``RecordBatchReader``, a generator, any
  ``__arrow_c_stream__``): every column's first pass as the batches come; the columns whose
  writers need another pass are kept for it in a :class:`Spill` (in memory up to
  :data:`SPILL_AFTER` bytes, then in a temporary Arrow IPC file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from .index.base import IndexWriter
from .types import PaimonType, column_keys

#: ``{(column, index type): (key type, writer)}``, as :func:`arrowidx.file_index.index_writers` makes them.
Writers = dict[tuple[str, str], tuple[PaimonType, IndexWriter]]
#: ``{(column, index type): index bytes (None: Paimon's empty index)}``.
Built = dict[tuple[str, str], bytes | None]

#: Rows per batch read from a Parquet file (each pass reads one column).
BATCH_ROWS = 256 * 1024
#: Bytes of a column a one-pass stream keeps in memory for a writer's next pass; beyond
#: this the column goes to a temporary file (bench/bench_build_memory.py).
SPILL_AFTER = 64 << 20


class ColumnSource:
    """Columns that can be read again, one at a time, batch by batch."""

    schema: pa.Schema

    def read(self, column: str) -> Iterator[pa.Array]:
        """One pass over ``column``: its arrays, first row to last."""
        raise NotImplementedError


class TableColumns(ColumnSource):
    """The columns of a table in memory (its chunks, as they are)."""

    def __init__(self, table: pa.Table):
        self.table = table
        self.schema = table.schema

    def read(self, column: str) -> Iterator[pa.Array]:
        yield from self.table.column(column).chunks


class ParquetColumns(ColumnSource):
    """The columns of a Parquet file, each pass decoding one column's row groups batch by
    batch; ``cast``: the Arrow type to read a column as (a Paimon table's schema)."""

    def __init__(self, parquet: pq.ParquetFile, cast: dict[str, pa.DataType] | None = None, batch_rows: int = BATCH_ROWS):
        self.parquet = parquet
        self.cast = cast or {}
        self.batch_rows = batch_rows
        schema = parquet.schema_arrow
        self.schema = pa.schema([schema.field(n).with_type(self.cast.get(n, schema.field(n).type)) for n in schema.names])

    def read(self, column: str) -> Iterator[pa.Array]:
        target = self.cast.get(column)
        for group in range(self.parquet.num_row_groups):  # one row group at a time (a reader
            # over several holds the next one too: twice the memory)
            batches = self.parquet.iter_batches(batch_size=self.batch_rows, row_groups=[group], columns=[column], use_threads=False)
            for batch in batches:
                array = batch.column(0)
                yield array if target is None or array.type == target else array.cast(target)


def _by_column(writers: Writers) -> dict[str, list[tuple[str, PaimonType, IndexWriter]]]:
    out: dict[str, list[tuple[str, PaimonType, IndexWriter]]] = {}
    for (column, index_type), (ptype, writer) in writers.items():
        out.setdefault(column, []).append((index_type, ptype, writer))
    return out


def _passes(group: list[tuple[str, PaimonType, IndexWriter]]) -> int:
    return max(w.passes for _, _, w in group)


def _read_pass(group, arrays: Iterable[pa.Array], number: int) -> int:
    """Feed pass ``number`` of one column to the writers that read it; the rows read."""
    ptype = group[0][1]
    active = [w for _, _, w in group if w.passes > number]
    rows = 0
    for array in arrays:  # per batch
        keys = column_keys(array, ptype)
        rows += len(keys)
        for writer in active:
            writer.add(keys)
    return rows


def _next_pass(group, number: int) -> None:
    """Tell the writers that read pass ``number`` that the column starts again."""
    for _, _, writer in group:
        if writer.passes > number:
            writer.next_pass()


def _finish(group, column: str, built: Built) -> None:
    for index_type, _, writer in group:
        built[(column, index_type)] = writer.finish()
    group.clear()  # the writers' state goes now, before the next column
    pa.default_memory_pool().release_unused()  # (Arrow's allocator keeps freed pages otherwise)


def index_columns(source: ColumnSource, writers: Writers) -> tuple[Built, int]:
    """Build every writer's index from ``source``, one column at a time, each column read
    once per pass its writers need; ``(index bytes by (column, type) in the order of
    ``writers``, rows read)``. Takes the writers over (``writers`` is emptied), so each
    column's writers are freed once finished."""
    order = list(writers)
    groups = _by_column(writers)
    writers.clear()
    built: Built = {}
    rows = 0
    for column, group in groups.items():  # per indexed column
        for number in range(_passes(group)):  # per pass over the column
            if number:
                _next_pass(group, number)
            read = _read_pass(group, source.read(column), number)
            rows = rows or read
        _finish(group, column, built)
    return {key: built[key] for key in order}, rows


class Spill:
    """One column's arrays kept for a writer's next pass over a one-pass stream: in memory
    up to ``limit`` bytes, then (all of them) in a temporary Arrow IPC stream file."""

    def __init__(self, field: pa.Field, limit: int):
        self.schema = pa.schema([field])
        self.limit = limit
        self.arrays: list[pa.Array] = []
        self.nbytes = 0
        self.path: str | None = None
        self._sink = self._writer = None

    def append(self, array: pa.Array) -> None:
        if self._writer is None:
            self.arrays.append(array)
            self.nbytes += array.nbytes
            if self.nbytes <= self.limit:
                return
            fd, self.path = tempfile.mkstemp(prefix="arrowidx-spill-", suffix=".arrows")
            os.close(fd)
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_stream(self._sink, self.schema)
            arrays, self.arrays = self.arrays, []
            for a in arrays:
                self._write(a)
            return
        self._write(array)

    def _write(self, array: pa.Array) -> None:
        target = self.schema.field(0).type
        if array.type != target:  # (a plain iterable's batches may differ from its first)
            array = array.cast(target)
        self._writer.write_batch(pa.record_batch([array], schema=self.schema))

    def read(self) -> Iterator[pa.Array]:
        """The arrays appended, in order (the file is read batch by batch)."""
        if self._writer is None:
            yield from self.arrays
            return
        self._writer.close()
        self._sink.close()
        self._writer = None
        with pa.OSFile(self.path, "rb") as f:
            reader = pa.ipc.open_stream(f)
            for batch in reader:
                yield batch.column(0)

    def close(self) -> None:
        self.arrays = []
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None
        if self.path is not None:
            try:
                os.remove(self.path)
            except OSError:
                pass
            self.path = None


def index_stream(
    schema: pa.Schema | None,
    batches: Iterable[pa.RecordBatch],
    writers_for: Callable[[pa.Schema], Writers],
) -> tuple[Built, int] | None:
    """:func:`index_columns` over a stream read once: the first pass of every column as the
    batches come, then, column by column, the further passes from a :class:`Spill`.

    ``writers_for(schema)`` makes the writers (from the first batch's schema when
    ``schema`` is None); None when a stream without a schema has no batch.
    """
    groups = spills = None
    rows = 0
    try:
        for batch in batches:  # per batch of the stream
            if groups is None:
                writers = writers_for(batch.schema if schema is None else schema)
                order, groups = list(writers), _by_column(writers)
                del writers
                spills = {c: Spill(batch.schema.field(c), SPILL_AFTER) for c, g in groups.items() if _passes(g) > 1}
            for column, group in groups.items():
                array = batch.column(column)
                _read_pass(group, [array], 0)
                if column in spills:
                    spills[column].append(array)
            rows += batch.num_rows
        if groups is None:
            if schema is None:
                return None
            writers = writers_for(schema)
            order, groups, spills = list(writers), _by_column(writers), {}
            del writers
        built: Built = {}
        for column, group in groups.items():  # one-pass columns first: their state goes now
            if _passes(group) == 1:
                _finish(group, column, built)
        for column, group in groups.items():  # then, column by column, the other passes
            if not group:
                continue
            spill = spills.get(column)
            for number in range(1, _passes(group)):
                _next_pass(group, number)
                _read_pass(group, spill.read() if spill is not None else [], number)
            if spill is not None:
                spill.close()
            _finish(group, column, built)
        return {key: built[key] for key in order}, rows
    finally:
        for spill in (spills or {}).values():
            spill.close()
