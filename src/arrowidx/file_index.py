"""The public face of one data file's index: build it (:func:`write_file_index`) and query
it (:class:`FileIndex`).

``write_file_index`` streams Arrow data through one writer per (column, index type), column
by column (:mod:`arrowidx.passes`), and packs the results into a container; ``FileIndex`` opens a container lazily (header first,
one reader per column when a predicate needs it) and answers Expressions with an
:class:`~arrowidx.result.IndexResult`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ._bytes import as_buffer
from .arrow_input import arrow_schema, record_batches, without_views
from .errors import ArrowIdxError, OptionError, UnsupportedTypeError
from .expression import UnknownColumnError, check_fields  # noqa: F401 (UnknownColumnError: importable here too)
from .index import INDEX_TYPES, EmptyIndexReader, IndexReader
from .index.container import Container, java_hashmap_order, write_container
from .options import ColumnIndexSpec, parse_index_options, require_mapping
from .passes import ColumnSource, TableColumns, index_columns, index_stream
from .predicate import bind, evaluate, is_exact
from .result import REMAIN, SKIP, IndexResult
from .types import index_schema, paimon_type

Data = pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]


def _batches(data: Data) -> tuple[pa.Schema | None, Iterable[pa.RecordBatch]]:
    return record_batches(data, "write_file_index")


def index_writers(schema: pa.Schema, specs: list[ColumnIndexSpec]) -> dict[tuple[str, str], Any]:
    """One writer per requested (column, index type), checking columns and types up front."""
    writers = {}
    for spec in specs:
        if schema.get_field_index(spec.column) < 0:
            raise OptionError(
                f"file-index.{spec.index_type}.columns names {spec.column!r}, which is not a column"
                f" (columns: {', '.join(schema.names)})"
            )
        index_type = INDEX_TYPES[spec.index_type]
        try:
            ptype = paimon_type(schema.field(spec.column).type)
            index_type.check_type(ptype)
        except UnsupportedTypeError as e:
            raise UnsupportedTypeError(f"{spec.index_type} index on column {spec.column!r}"
                                       f" ({schema.field(spec.column).type}): {e}") from None  # fmt: skip
        writers[(spec.column, spec.index_type)] = (ptype, index_type.writer(ptype, spec.options))
    return writers


def write_file_index(data: Data, options: Mapping[str, object]) -> bytes:
    """Build the indexes ``options`` asks for over ``data`` and return the container bytes.

    ``data`` is a ``pa.Table``, a ``pa.RecordBatch``, a ``pa.RecordBatchReader``, an iterable
    of batches, or any object with ``__arrow_c_stream__``/``__arrow_c_array__`` (Polars,
    pandas, DuckDB, ...; see :mod:`arrowidx.arrow_input`), streamed: row numbers continue
    across batches, and a stream is read once, in memory bounded by its batches and the
    indexes (a range bitmap's second pass reads its column back from a temporary file when
    the column is large; see :mod:`arrowidx.passes`). ``options`` uses Paimon's keys, e.g.
    ``{"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.fpp": "0.01"}``.
    """
    require_mapping(options, "write_file_index")
    specs = parse_index_options(options)
    if isinstance(data, (pa.Table, pa.RecordBatch)):  # in memory: read column by column
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        plain = without_views(table.schema)
        return index_container(TableColumns(table if plain is table.schema else table.cast(plain)), specs)
    schema, batches = _batches(data)
    result = index_stream(schema, batches, lambda s: index_writers(s, specs))
    if result is None:  # an empty iterable: no schema to check against
        if specs:
            raise OptionError("write_file_index got no batches; pass a pa.Table (possibly empty) instead")
        return write_container({})
    return write_container(_java_layout(result[0]))


def index_container(source: ColumnSource, specs: list[ColumnIndexSpec] | Mapping[str, object]) -> bytes:
    """:func:`write_file_index` over columns that can be read again (a Parquet file,
    :class:`arrowidx.passes.ParquetColumns`): one column at a time, a pass per read."""
    if not isinstance(specs, list):
        specs = parse_index_options(specs)
    built, _ = index_columns(source, index_writers(source.schema, specs))
    return write_container(_java_layout(built))


def _java_layout(built: dict[tuple[str, str], bytes | None]) -> dict[str, dict[str, bytes | None]]:
    """``{column: {type: bytes}}`` in the order Java's ``DataFileIndexWriter`` produces.

    Java fills HashMaps (index type -> column -> writer, then column -> type -> bytes), so
    emulating their iteration order makes multi-index containers byte-identical too.
    """
    types = java_hashmap_order([t for _, t in built])
    inserted_columns: list[str] = []
    per_type_columns = {t: java_hashmap_order([c for c, tt in built if tt == t]) for t in types}
    for t in types:
        inserted_columns.extend(per_type_columns[t])
    layout: dict[str, dict[str, bytes | None]] = {}
    for column in java_hashmap_order(inserted_columns):
        column_types = [t for t in types if (column, t) in built]
        layout[column] = {t: built[(column, t)] for t in java_hashmap_order(column_types)}
    return layout


class FileIndex:
    """An opened file-index container for one data file.

    ``source``: container bytes, a path or a binary file object (``name`` overrides how
    errors refer to it). ``schema``: the data
    file's ``pa.Schema`` (index keys are read with the column types). ``.columns`` lists the
    indexes; ``.evaluate(expr)`` answers a ``pyarrow.compute.Expression``.
    """

    def __init__(self, source: Any, schema: pa.Schema, *, name: str | None = None):
        if isinstance(source, Container):
            container = source
            name = name or source.source
        else:
            data, found_name = as_buffer(source)
            name = name or found_name
            container = Container(data, name)
        self.source = name
        self.schema = index_schema(arrow_schema(schema, "FileIndex(source, schema)"))  # dictionaries as values, ...
        self.container = container
        self._readers: dict[str, list[IndexReader]] = {}
        self._types: dict[frozenset, list[str]] = {}

    def load(self, columns) -> None:
        """Fetch the index bytes of ``columns`` now (a container built from a manifest's
        layout fetches them lazily otherwise; a whole container holds them already)."""
        self.container.load(columns)

    @property
    def columns(self) -> dict[str, list[str]]:
        """``{column: [index types]}`` as stored in the container."""
        return {c: list(by_type) for c, by_type in self.container.entries.items()}

    def index_types(self, columns) -> list[str]:
        """The index types stored on any of ``columns``, sorted (remembered: a scan asks
        every file's index about the same columns, query after query)."""
        key = frozenset(columns)
        found = self._types.get(key)
        if found is None:
            entries = self.container.entries
            found = self._types[key] = sorted({t for c in key for t in entries.get(c, {})})
        return found

    def readers(self, column: str) -> list[IndexReader]:
        """The readers of every index type on ``column`` that arrowidx knows (opened once).

        Unknown index types, and columns missing from the schema, contribute no reader:
        they cannot answer, so the result for them is REMAIN.
        """
        if column not in self._readers:
            readers: list[IndexReader] = []
            field_index = self.schema.get_field_index(column)
            for entry in self.container.entries.get(column, {}).values():
                index_type = INDEX_TYPES.get(entry.index_type)
                if index_type is None or field_index < 0:
                    continue
                if entry.empty:
                    readers.append(EmptyIndexReader())
                    continue
                arrow_type = self.schema.field(column).type
                reader = index_type.reader(self.container.window(entry), paimon_type(arrow_type), arrow_type)
                reader.index_type = entry.index_type
                readers.append(reader)
            readers.sort(key=lambda r: r.cost)  # cheap answers first: a SKIP ends the AND
            self._readers[column] = readers
        return self._readers[column]

    def __repr__(self) -> str:
        columns = "; ".join(f"{c}: {'+'.join(t)}" for c, t in self.columns.items())
        return f"FileIndex({self.source!r}, {sum(len(t) for t in self.columns.values())} index(es): {columns or 'none'})"

    def _check_fields(self, expr) -> None:
        """A ``pc.Expression`` naming a column the schema lacks is an error (pyarrow would
        raise on the data too); a column that merely has no index answers REMAIN."""
        check_fields(expr, self.schema, self.source or "FileIndex")

    def evaluate(self, expr) -> IndexResult:
        """REMAIN, SKIP or the bitmap of rows that may satisfy ``expr``.

        Every row ``pyarrow`` would select for ``expr`` is kept; parts of ``expr`` no index
        can answer (a column without an index, an index type arrowidx does not know) count
        as REMAIN. A column that is not in ``schema`` at all raises
        :class:`UnknownColumnError`, as pyarrow does when filtering the data.
        """
        if expr is None:
            return REMAIN
        self._check_fields(expr)
        node = bind(expr, self.schema)
        return evaluate(node, self.schema, self.readers).t

    def answers_by_type(self, expr) -> dict[str, IndexResult]:
        """``{index type: its answer alone}`` for the index types on the columns of ``expr``
        (for explain: which index kept a file, and how)."""
        node = bind(expr, self.schema)
        types = self.index_types(node.columns())
        out = {}
        for t in types:
            only = lambda column, t=t: [r for r in self.readers(column) if getattr(r, "index_type", None) == t]  # noqa: E731
            out[t] = evaluate(node, self.schema, only).t
        return out

    def deciding_index_types(self, expr) -> list[str]:
        """The index types that on their own rule out every row for ``expr`` (for explain)."""
        node = bind(expr, self.schema)
        types = self.index_types(node.columns())
        out = []
        for t in types:
            only = lambda column, t=t: [r for r in self.readers(column) if getattr(r, "index_type", None) == t]  # noqa: E731
            if not evaluate(node, self.schema, only).t.remain:
                out.append(t)
        return out

    def evaluate_top_n(
        self,
        sort_keys: list[tuple[str, str]],
        limit: int,
        *,
        null_placement: str = "at_end",
        filter=None,
    ) -> IndexResult:
        """The rows of the top ``limit`` by ``sort_keys`` (pyarrow's ``[(column, order)]``).

        As Paimon's ``FileIndexPredicate.evaluateTopN``: ``filter``'s result narrows the
        candidates first; an index that implements TopN on the first sort key (range-bitmap)
        picks among them. With one sort key the answer has exactly ``limit`` rows (ties broken
        as Java does); with several, or a key that only bounds the value (``time64[us]``
        keyed on milliseconds), every tie of the first key is kept. Without such an index
        the filter's result is returned unchanged, and so it is when ``filter`` has a part no
        index answers exactly (the top rows of a superset could miss matching rows).
        """
        if not sort_keys:
            raise ValueError("sort_keys must name at least one column")
        if null_placement not in ("at_start", "at_end"):
            raise ValueError(f"null_placement must be 'at_start' or 'at_end', got {null_placement!r}")
        column, order = sort_keys[0]
        if order not in ("ascending", "descending"):
            raise ValueError(f"sort order must be 'ascending' or 'descending', got {order!r}")
        if limit == 0:
            return SKIP
        candidates = self.evaluate(filter) if filter is not None else REMAIN
        if not candidates.remain or limit < 0:
            return candidates
        if filter is not None and not is_exact(bind(filter, self.schema), self.schema, self.readers):
            # The top rows of a superset of the matching rows may miss matching rows.
            return candidates
        if candidates.kind == "bitmap" and len(candidates.bitmap) <= limit:
            return candidates
        # Exactly ``limit`` rows only when the key is the value: a lossy key (time64[us] keyed
        # on milliseconds, timestamp[ns] on micros) keeps every row tied on the key.
        strict = len(sort_keys) == 1 and not _lossy(self.schema, column)
        for reader in self.readers(column):
            answer = reader.top_n(order == "descending", null_placement == "at_start", limit, strict, candidates)
            if answer.kind != "remain":
                return answer
        return candidates

    def describe(self) -> list[dict]:
        """One row per stored index: column, type, size in bytes and what its reader reports."""
        rows = []
        for entry in self.container.all_entries():
            row = {"column": entry.column, "index": entry.index_type, "bytes": entry.length, "empty": entry.empty}
            known = entry.index_type in INDEX_TYPES and self.schema.get_field_index(entry.column) >= 0
            if known and not entry.empty:
                arrow_type = self.schema.field(entry.column).type
                reader = INDEX_TYPES[entry.index_type].reader(self.container.window(entry), paimon_type(arrow_type), arrow_type)
                row.update(reader.describe())
            rows.append(row)
        return rows


def _lossy(schema: pa.Schema, column: str) -> bool:
    """Whether the index keys of ``column`` only bound its values (several values per key)."""
    try:
        return schema.get_field_index(column) < 0 or paimon_type(schema.field(column).type).lossy
    except ArrowIdxError:
        return True
