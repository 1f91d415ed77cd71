"""Arrow in: the one place where data and filesystems from other libraries become pyarrow.

Every arrowidx function that takes data accepts, through :func:`record_batches` or
:func:`arrow_table`:

* ``pa.Table``, ``pa.RecordBatch``, ``pa.RecordBatchReader``, an iterable of batches;
* any object with ``__arrow_c_stream__`` (the Arrow PyCapsule stream interface: Polars
  DataFrame/LazyFrame results, pandas >= 2.2 DataFrames, DuckDB relations, nanoarrow, ADBC
  readers), read batch by batch without a full copy when the producer streams;
* any object with ``__arrow_c_array__`` (one batch, or one column such as a Polars Series);
* a pandas DataFrame (through ``pa.Table.from_pandas``) and a ``dict`` of columns.

:func:`as_filesystem` does the same for filesystems: a ``pyarrow.fs.FileSystem`` is used
as is, an fsspec filesystem is wrapped in ``PyFileSystem(FSSpecHandler(fs))``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from .errors import ArrowIdxError

__all__ = ["UnsupportedInputError", "arrow_schema", "arrow_table", "as_filesystem", "record_batches", "without_views"]


class UnsupportedInputError(ArrowIdxError, TypeError):
    """An object arrowidx cannot read as Arrow data (or use as a filesystem)."""


_ACCEPTED = (
    "pa.Table, pa.RecordBatch, pa.RecordBatchReader, an iterable of record batches, or any object with "
    "__arrow_c_stream__ / __arrow_c_array__ (a Polars or pandas DataFrame, a DuckDB relation, nanoarrow)"
)


def _named(column: pa.Array | pa.ChunkedArray, source: Any) -> pa.Table:
    """One column (a Series-like object) as a one-column table named like the source."""
    name = getattr(source, "name", None)
    return pa.table({str(name) if name not in (None, "") else "values": column})


def _from_capsule_stream(data: Any) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    try:
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, reader
    except pa.ArrowInvalid as e:  # a stream of plain arrays (a Series): one column
        if "non-struct" not in str(e):
            raise
        table = _named(pa.chunked_array(data), data)
        return table.schema, table.to_batches()


def record_batches(data: Any, what: str = "data") -> tuple[pa.Schema | None, Iterable[pa.RecordBatch]]:
    """``(schema or None, batches)`` for any Arrow-like ``data`` (see the module docstring).

    The schema is None only for a plain iterable, whose batches are then coerced one by one.
    View types (Polars exports strings as ``string_view``), which pyarrow's kernels do not
    all take, arrive as their plain large types. Raises :class:`UnsupportedInputError`
    naming ``what`` for anything else.
    """
    schema, batches = _record_batches(data, what)
    if schema is None:
        return None, _without_views_each(batches)
    plain = without_views(schema)
    if plain is schema:
        return schema, batches
    return plain, (b.cast(plain) for b in batches)


_VIEWS = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}


def without_views(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``string_view``/``binary_view`` fields (also inside lists and structs)
    as ``large_string``/``large_binary`` (the same object when there are none)."""
    fields = [f.with_type(_plain_type(f.type)) for f in schema]
    if all(f.type == g.type for f, g in zip(fields, schema)):
        return schema
    return pa.schema(fields, metadata=schema.metadata)


def _plain_type(t: pa.DataType) -> pa.DataType:
    if t in _VIEWS:
        return _VIEWS[t]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        item = t.value_field.with_type(_plain_type(t.value_type))
        return pa.large_list(item) if pa.types.is_large_list(t) or pa.types.is_large_list_view(t) else pa.list_(item)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_plain_type(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _without_views_each(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for b in batches:
        plain = without_views(b.schema)
        yield b if plain is b.schema else b.cast(plain)


def _record_batches(data: Any, what: str) -> tuple[pa.Schema | None, Iterable[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        table = _named(data, data) if not pa.types.is_struct(data.type) else pa.Table.from_struct_array(data)
        return table.schema, table.to_batches()
    if hasattr(data, "__arrow_c_stream__"):
        return _from_capsule_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        try:
            batch = pa.record_batch(data)
            return batch.schema, [batch]
        except (pa.ArrowInvalid, TypeError):
            table = _named(pa.array(data), data)
            return table.schema, table.to_batches()
    if type(data).__module__.startswith("pandas") and hasattr(data, "columns"):
        table = pa.Table.from_pandas(data, preserve_index=False)
        return table.schema, table.to_batches()
    if type(data).__module__.startswith("pandas") and hasattr(data, "dtype"):  # a Series: one column
        try:
            table = _named(pa.Array.from_pandas(data), data)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise UnsupportedInputError(f"{what}: a pandas Series Arrow cannot hold ({e})") from None
        return table.schema, table.to_batches()
    if isinstance(data, Mapping):
        try:
            table = pa.table(dict(data))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise UnsupportedInputError(f"{what}: a dict that is not a table of columns ({e})") from None
        return table.schema, table.to_batches()
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes)):
        return None, _each_batch(data, what)
    raise UnsupportedInputError(f"{what}: cannot read a {type(data).__name__} as Arrow data; pass {_ACCEPTED}")


def _each_batch(items: Iterable[Any], what: str) -> Iterator[pa.RecordBatch]:
    for item in items:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        _, batches = record_batches(item, what)
        if _ is None:
            raise UnsupportedInputError(f"{what}: an iterable of {type(item).__name__}; pass {_ACCEPTED}")
        yield from batches


def arrow_table(data: Any, what: str = "data") -> pa.Table:
    """Any Arrow-like ``data`` as one ``pa.Table`` (for functions that need all rows at once)."""
    if isinstance(data, pa.Table):
        return data
    schema, batches = record_batches(data, what)
    batches = list(batches)
    if schema is None:
        if not batches:
            raise UnsupportedInputError(f"{what}: no batches (pass a pa.Table, possibly empty)")
        schema = batches[0].schema
    return pa.Table.from_batches(batches, schema=schema)


def as_filesystem(filesystem: Any) -> pafs.FileSystem | None:
    """A ``pyarrow.fs.FileSystem`` for ``filesystem``: None, a pyarrow filesystem, or an fsspec
    filesystem (wrapped with ``PyFileSystem(FSSpecHandler(...))``)."""
    if filesystem is None or isinstance(filesystem, pafs.FileSystem):
        return filesystem
    try:
        import fsspec
    except ImportError:
        fsspec = None
    if fsspec is not None and isinstance(filesystem, fsspec.AbstractFileSystem):
        return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    raise UnsupportedInputError(
        f"filesystem: a {type(filesystem).__name__} is not a filesystem; pass a pyarrow.fs.FileSystem"
        " or an fsspec filesystem (or a URI such as s3://bucket/path as the source)"
    )


def arrow_schema(schema: Any, what: str = "schema") -> pa.Schema:
    """A ``pa.Schema`` for ``schema``: a pyarrow schema, anything with ``__arrow_c_schema__``,
    or a Polars schema (``df.schema``); else :class:`UnsupportedInputError` naming ``what``."""
    if isinstance(schema, pa.Schema):
        return schema
    if hasattr(schema, "__arrow_c_schema__"):
        try:
            return pa.schema(schema)
        except (pa.ArrowInvalid, TypeError, ValueError):
            pass
    if type(schema).__module__.startswith("polars"):
        import polars as pl

        return without_views(pl.DataFrame(schema=schema).to_arrow().schema)
    raise UnsupportedInputError(
        f"{what}: expected the data's pyarrow.Schema (or a Polars schema), got"
        f" {'None' if schema is None else type(schema).__name__}; e.g. table.schema or"
        " pyarrow.parquet.read_schema(path)"
    )
