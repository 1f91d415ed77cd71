"""``arrowidx.dataset``: an indexed dataset that *is* a ``pyarrow.dataset.FileSystemDataset``
(issue 49, part 3).

:class:`PyarrowDataset` is an :class:`~arrowidx.lake.scan.IndexedDataset` (its Python
methods plan with the indexes and drop deleted rows) and a ``FileSystemDataset`` (pyarrow's
Cython class, subclassed), so whatever takes a pyarrow dataset takes it: ``isinstance``
checks, ``ds.dataset([d1, d2])`` (a ``UnionDataset``), ``ds.write_dataset(d)``,
``Scanner.from_dataset(d)``, acero. Those consumers do not call our methods: they read the
C++ dataset underneath, whose fragments are the data files themselves, read through
:class:`LakeFilesHandler`. **That filesystem refuses a file with deleted rows** (an
:class:`~arrowidx.errors.ArrowIdxError` saying to read through ``scanner()`` /
``to_table()``), so a consumer that bypasses the planner never sees a deleted row; a lake
without deletions reads there exactly as pyarrow reads it. ``ds.write_dataset(d.scanner())``
writes the rows without the deleted ones.

``scanner()`` is a real ``pyarrow.dataset.Scanner`` (``Scanner.from_batches`` over the rows
the planner reads), so pyarrow's projections apply as pyarrow defines them: ``columns=`` as
nested paths (``"s.a"``) and as a dict of expressions, on every read (``to_table``,
``to_batches``, ``head``, ``take``). This module imports ``pyarrow.dataset`` (and pandas with
it): only ``arrowidx.dataset`` loads it; the other adapters use ``IndexedDataset``.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ..errors import ArrowIdxError, OptionError
from ..filters import user_filter
from ..storage import Store
from .dataset_arguments import check_scan_settings
from .layout import join
from .scan import IndexedDataset, dataset_arguments

__all__ = ["LakeFilesHandler", "PyarrowDataset", "dataset"]

#: scan settings ``Scanner.from_batches`` takes (the others never change the rows)
_SCANNER_SETTINGS = ("batch_size", "use_threads", "memory_pool")


class PyarrowDataset(IndexedDataset, ds.FileSystemDataset):
    """An :class:`IndexedDataset` that is a ``pyarrow.dataset.FileSystemDataset``. Create with
    :func:`arrowidx.dataset`.

    Its own methods (``to_table``, ``to_batches``, ``scanner``, ``count_rows``, ``head``,
    ``take``, ``filter``, ``sort_by``, ``join``, ``get_fragments``) read through the indexes
    and minus deleted rows. pyarrow's consumers that read the C++ dataset (a union,
    ``write_dataset(d)``, ``Scanner.from_dataset(d)``) read the data files, and are refused
    a file with deleted rows (see the module's docstring).
    """

    def __init__(self, store: Store, root: str, **options: Any):
        self._filter = options.pop("scan_filter", None)  # Dataset.filter(): applied by every read
        self._discovered: ds.Partitioning | None = None  # (partitioning)
        IndexedDataset.__init__(self, store, root, **options)
        self._options = options
        lake = self.lake
        schema = lake.given_schema if lake.given_schema is not None else self.schema if lake.files else pa.schema([])
        self._arrow_schema = schema
        self._guarded = guarded = pafs.PyFileSystem(LakeFilesHandler(self.fs, root, lake, (store, root, options)))
        # a fragment per file, no I/O (pyarrow opens a file when it reads it): ~2 us each, the
        # loop kept to its least (one path concatenation, the format and partitions looked up once)
        make, prefix, parts = self.format.make_fragment, join(root, ""), lake.partition_expressions
        if parts:
            true = pc.scalar(True)
            self._fragments = [make(prefix + rel, guarded, partition_expression=parts.get(rel, true)) for rel in lake.files]
        else:
            self._fragments = [make(prefix + rel, guarded) for rel in lake.files]
        ds.FileSystemDataset.__init__(self, self._fragments, schema, self.format, guarded)
        self._set_scan_filter()

    def _set_scan_filter(self) -> None:
        """pyarrow's consumers of the C++ dataset apply ``Dataset.filter()``'s expression too."""
        if isinstance(self._filter, pc.Expression):
            self._scan_options = {"filter": self._filter}

    # -- what it shows, as pyarrow shows it -------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """The data files' paths on :attr:`filesystem` (pyarrow's ``FileSystemDataset.files``;
        ``lake.files`` are the paths relative to the root)."""
        return [join(self.root, rel) for rel in self.lake.files]

    @property
    def partitioning(self) -> ds.Partitioning | None:
        """The partitioning of the files: the Hive partitioning found (or given), else what
        pyarrow's discovery gives without one (a ``DirectoryPartitioning`` of no fields)."""
        found = self.lake.partitioning
        if found is None:
            return ds.DirectoryPartitioning(pa.schema([]))
        if self.lake.partitioning_spec == "hive" and self._discovered is None:
            self._discovered = _as_pyarrow_discovers(found, self)
        return self._discovered or found

    def __reduce__(self):
        return _reopen, (self.store, self.root, {**self._options, "scan_filter": self._filter})

    # -- reads: the planner's rows, pyarrow's projections ---------------------------------------
    def _projection(self, columns) -> tuple[Any, Any]:
        """``(the top-level columns to read, pyarrow's projection of them or None when the
        columns read are the answer)``."""
        if columns is None or isinstance(columns, str):
            return columns, None
        if isinstance(columns, dict):
            names: set[str] = set()
            for name, expr in columns.items():
                if not isinstance(expr, pc.Expression):
                    raise TypeError(f"columns={{{name!r}: ...}}: expected a pyarrow.compute.Expression, got {type(expr).__name__}")
                names |= self.lake.columns_of(expr)
            return [n for n in self.schema.names if n in names], columns
        columns = list(columns)
        top = [_top_level(c, self.schema) for c in columns]
        return (columns, None) if top == columns else (list(dict.fromkeys(top)), columns)

    def scanner(self, filter=None, columns=None, **settings: Any) -> ds.Scanner:
        """A ``pyarrow.dataset.Scanner`` of the rows matching ``filter`` minus deleted rows
        (``columns``: names, nested paths ``"s.a"`` or a dict of expressions, as pyarrow
        takes them). Made with ``Scanner.from_batches``: it reads once (make another for a
        second read); ``ds.write_dataset(data.scanner())`` writes exactly these rows."""
        other = self._with_scan_options(settings)
        if other is not None:
            return other.scanner(filter, columns, **settings)
        check_scan_settings(settings, "scanner")
        return self._scanner(_combined(self._filter, filter, lambda: self.schema), columns, settings)

    def _scanner(self, filter, columns, settings: dict[str, Any]) -> ds.Scanner:
        read, projection = self._projection(columns)
        reader = IndexedDataset.scanner(self, filter, read)
        kept = {k: v for k, v in settings.items() if k in _SCANNER_SETTINGS and v is not None}
        return ds.Scanner.from_batches(reader, columns=projection, **kept)

    def _with_scan_options(self, settings: dict[str, Any]) -> PyarrowDataset | None:
        """This dataset read with pyarrow's ``fragment_scan_options`` (taken out of
        ``settings``) as its format's (opened again with that format), or None without them."""
        options = settings.pop("fragment_scan_options", None)
        if options is None:
            return None
        fmt = ds.ParquetFileFormat(read_options=self.format.read_options, default_fragment_scan_options=options)
        return PyarrowDataset(self.store, self.root, **{**self._options, "format": fmt, "scan_filter": self._filter})

    def to_table(self, filter=None, columns=None, **settings: Any) -> pa.Table:
        other = self._with_scan_options(settings)
        if other is not None:
            return other.to_table(filter, columns, **settings)
        check_scan_settings(settings, "to_table")
        filter = _combined(self._filter, filter, lambda: self.schema)
        if self._projection(columns)[1] is None:
            return IndexedDataset.to_table(self, filter, columns)
        return self._scanner(filter, columns, settings).to_table()

    def to_batches(self, filter=None, columns=None, **settings: Any) -> Iterator[pa.RecordBatch]:
        other = self._with_scan_options(settings)
        if other is not None:
            return other.to_batches(filter, columns, **settings)
        check_scan_settings(settings, "to_batches")
        filter = _combined(self._filter, filter, lambda: self.schema)
        if self._projection(columns)[1] is None:
            return IndexedDataset.to_batches(self, filter, columns)
        return self._scanner(filter, columns, settings).to_batches()

    def count_rows(self, filter=None, **settings: Any) -> int:
        other = self._with_scan_options(settings)
        if other is not None:
            return other.count_rows(filter, **settings)
        return IndexedDataset.count_rows(self, _combined(self._filter, filter, lambda: self.schema), **settings)

    def head(self, num_rows: int, columns=None, filter=None, **settings: Any) -> pa.Table:
        """The first ``num_rows`` rows (pyarrow's ``Dataset.head``), reading only as far as needed."""
        return self.scanner(filter, columns, **settings).head(num_rows)

    def take(self, indices, columns=None, filter=None, **settings: Any) -> pa.Table:
        """The rows at ``indices`` of the dataset's rows in order (pyarrow's ``Dataset.take``)."""
        return self.scanner(filter, columns, **settings).take(indices)

    def filter(self, expression) -> PyarrowDataset:
        """This dataset with ``expression`` applied to every read (pyarrow's ``Dataset.filter``)."""
        if expression is None:
            raise TypeError("filter() takes an expression, not None")
        if isinstance(expression, str):  # SQL text: its pyarrow expression, which pyarrow's consumers apply too
            where = user_filter(expression, lambda: self.schema, "filter()")
            if where.residual is not None:
                raise OptionError(f"filter({expression!r}): this SQL needs more than a pyarrow expression to evaluate"
                                  " (functions, arithmetic...); pass it to to_table(filter=...) or scanner(filter=...)")  # fmt: skip
            expression = where.pushdown if where.pushdown is not None else pc.scalar(True)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._filter = _combined(self._filter, expression, None)
        ds.FileSystemDataset.__init__(new, self._fragments, self._arrow_schema, self.format, self._guarded)
        new._set_scan_filter()
        return new

    def sort_by(self, sorting, **kwargs: Any) -> ds.InMemoryDataset:
        """pyarrow's ``Dataset.sort_by``: the rows (minus deleted rows) sorted, in memory."""
        return ds.InMemoryDataset(self.to_table()).sort_by(sorting, **kwargs)

    def join(self, right_dataset, keys, right_keys=None, join_type="left outer", left_suffix=None,
             right_suffix=None, coalesce_keys=True, use_threads=True) -> ds.InMemoryDataset:  # fmt: skip
        """pyarrow's ``Dataset.join``, on the rows minus deleted rows."""
        return ds.InMemoryDataset(self.to_table()).join(_in_memory(right_dataset), keys, right_keys, join_type, left_suffix,
                                                        right_suffix, coalesce_keys, use_threads)  # fmt: skip

    def join_asof(self, right_dataset, on, by, tolerance, right_on=None, right_by=None) -> ds.InMemoryDataset:
        """pyarrow's ``Dataset.join_asof``, on the rows minus deleted rows."""
        return ds.InMemoryDataset(self.to_table()).join_asof(_in_memory(right_dataset), on, by, tolerance, right_on, right_by)

    def replace_schema(self, schema: pa.Schema) -> PyarrowDataset:
        """This dataset read with ``schema`` (pyarrow's ``Dataset.replace_schema``; a union of
        datasets calls it on each with the union's schema)."""
        if schema.equals(self._arrow_schema, check_metadata=True):
            return self
        return PyarrowDataset(self.store, self.root, **{**self._options, "schema": schema, "scan_filter": self._filter})


class LakeFilesHandler(pafs.FileSystemHandler):
    """The filesystem pyarrow's own consumers read a :class:`PyarrowDataset`'s files through:
    the lake's filesystem, read-only, refusing to open a data file with deleted rows (it
    would return them). Only opening passes through Python; reads are pyarrow's own."""

    def __init__(self, fs: pafs.FileSystem, root: str, lake: Any, recipe: tuple):
        self.fs, self.root, self.lake, self.recipe = fs, root, lake, recipe

    def __reduce__(self):  # (pickled with a union of datasets: opens the lake again where unpickled)
        return _handler, self.recipe

    def _check(self, path: str) -> None:
        rel = posixpath.relpath(path, self.root)
        entry = self.lake.manifest.files.get(rel)
        if entry is not None and entry.deletion is not None:
            raise ArrowIdxError(
                f"{path}: the file has deleted rows (arrowidx), which a reader of the file itself returns;"
                " read the dataset through its to_table(), to_batches() or scanner()"
                " (ds.write_dataset(data.scanner()) writes the rows without them)"
            )

    def open_input_file(self, path: str):
        self._check(path)
        return self.fs.open_input_file(path)

    def open_input_stream(self, path: str):
        self._check(path)
        return self.fs.open_input_stream(path)

    def get_type_name(self) -> str:
        return "arrowidx-lake"

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(selector)

    def _read_only(self, *args: Any) -> None:
        raise ArrowIdxError(f"{self.root}: an arrowidx dataset's files are read-only through the dataset")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LakeFilesHandler) and other.lake is self.lake

    def __hash__(self) -> int:
        return id(self.lake)


def _as_pyarrow_discovers(found: ds.Partitioning, data: PyarrowDataset) -> ds.Partitioning | None:
    """The Hive partitioning pyarrow's discovery makes of the same files (with the values
    found, its ``dictionaries``), when it has the schema arrowidx found; else None."""
    options = ds.FileSystemFactoryOptions(partition_base_dir=data.root)
    options.partitioning_factory = ds.HivePartitioning.discover()
    try:
        made = ds.FileSystemDatasetFactory(data.fs, data.files, data.format, options).finish().partitioning
    except (OSError, pa.ArrowException):
        return None
    return made if made is not None and made.schema.equals(found.schema) else None


def _top_level(column: str, schema: pa.Schema) -> str:
    """The dataset column that ``column`` (a name, or pyarrow's nested path ``"s.a"``) reads."""
    if schema.get_field_index(column) >= 0 or "." not in column:
        return column
    first = column.lstrip(".").split(".", 1)[0]
    return first if schema.get_field_index(first) >= 0 else column


def _combined(first: pc.Expression | None, second: Any, schema: Any) -> Any:
    """A dataset's filter (an Expression, or None) and a read's (an Expression or SQL text), as
    one: both must hold, the SQL text with its own meaning (``schema``: the dataset's)."""
    if first is None or second is None:
        return second if first is None else first
    if isinstance(second, pc.Expression):
        return first & second
    where = user_filter(second, schema)
    return dataclasses.replace(where, pushdown=first if where.pushdown is None else first & where.pushdown)


def _in_memory(data: Any) -> Any:
    return ds.InMemoryDataset(data.to_table()) if isinstance(data, IndexedDataset) else data


def _reopen(store: Store, root: str, options: dict[str, Any]) -> PyarrowDataset:
    return PyarrowDataset(store, root, **options)


def _handler(store: Store, root: str, options: dict[str, Any]) -> LakeFilesHandler:
    data = IndexedDataset(store, root, **options)
    return LakeFilesHandler(data.fs, root, data.lake, (store, root, options))


def dataset(source: Any, *, filesystem: pafs.FileSystem | None = None, on_corrupt: str = "raise",
            on_stale_deletions: str = "raise", storage_options: dict[str, Any] | None = None,
            partitioning: Any = "hive", index_root: Any = None, format: Any = None,
            schema: pa.Schema | None = None, ignore_prefixes: list[str] | None = None,
            exclude_invalid_files: bool = False) -> PyarrowDataset:  # fmt: skip
    """Open an indexed Parquet dataset as a ``pyarrow.dataset.FileSystemDataset``
    (:class:`PyarrowDataset`); the arguments are :func:`arrowidx.lake.scan.dataset`'s."""
    store, root, options = dataset_arguments(source, filesystem=filesystem, on_corrupt=on_corrupt,
                                             on_stale_deletions=on_stale_deletions, storage_options=storage_options,
                                             partitioning=partitioning, index_root=index_root, format=format,
                                             schema=schema, ignore_prefixes=ignore_prefixes,
                                             exclude_invalid_files=exclude_invalid_files)  # fmt: skip
    return PyarrowDataset(store, root, **options)
