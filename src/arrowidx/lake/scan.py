"""The public dataset: :func:`dataset` and :class:`IndexedDataset`, a thin facade over the
lake's layers. Every adapter (pyarrow, Polars, Spark) reads through the same ones:

* :class:`~arrowidx.lake.files.LakeFiles` (``data.lake``): the snapshot's files and what
  the process knows of them;
* :class:`~arrowidx.lake.plan.Planner` (``data.planner``): which files, row groups and rows
  a filter needs (partitions, lake-level structures, each file's index, statistics);
* :mod:`arrowidx.lake.read`: reading what the plan keeps.

Read:

* When the indexes prune nothing and nothing is deleted, the whole scan is handed to
  ``pyarrow.dataset`` (one scanner over the planned fragments), so it costs what pyarrow
  costs.
* Otherwise each surviving file is read with *late materialisation*: the predicate columns
  of the surviving row groups first; the exact row mask (index bitmap AND not deleted AND
  the full filter, :func:`expression_mask`); then the other projected columns only of the
  row groups that still hold rows, keeping only those rows (few rows of large row groups of
  local files taken by Polars' reader, :func:`arrowidx.lake.read.take_with_polars`).

Reads go through ``pyarrow.dataset.Scanner.from_fragment`` with the dataset schema, so
partition columns (Hive layouts), columns missing from a file (NULL) and type
unification behave exactly as in ``pyarrow.dataset``. The result equals
``pyarrow.dataset.dataset(...).to_table(filter=, columns=)`` minus deleted rows.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .. import facts
from .._lazy import lazy_module
from ..deletion import DeletionVector
from ..errors import ArrowIdxError
from ..file_index import FileIndex
from ..filters import user_columns, user_filter
from ..statistics import statistics_filter
from ..storage import ObjectChangedError, Store, as_store
from .dataset_arguments import (
    check_format,
    check_scan_settings,
    check_schema,
    discovered_files,
    filesystem_of,
    partitioning_of,
)
from .files import LakeFiles
from .freshness import check_stale_option
from .layout import lake_store
from .manifest import FileEntry, Manifest
from .partitions import PolarsHive, hive_base, with_partition_fields
from .plan import Planner, Route, index_pruned
from .plans import Explain, FilePlan
from .read import FileRead, FileReader, expression_mask
from .source import index_path, manifest_root, resolve

ds = lazy_module("pyarrow.dataset")  # it imports pandas: only a pyarrow read pays that

__all__ = ["Explain", "FilePlan", "IndexedDataset", "dataset", "expression_mask"]


class IndexedDataset:
    """A Parquet dataset read through its arrowidx manifest. Create with :func:`dataset`.

    ``on_corrupt``: ``"raise"`` (default) raises the ``CorruptIndexError`` of a damaged
    index or deletion file; ``"fallback"`` reads that file in full instead (a damaged
    deletion file still raises: ignoring it would return deleted rows).

    ``on_stale_deletions``: ``"raise"`` (default) raises ``StaleDeletionError`` for a data
    file whose content changed after rows were deleted from it; ``"read-full"`` reads it in
    full as it is now (its deleted rows come back).

    ``source``: the ``pyarrow.dataset.FileSystemDataset`` it was opened from, if any; its
    files, schema, format and partitioning are used as they are (so partition columns of a
    Hive layout are columns here too). Without one, the dataset is what
    ``pyarrow.dataset.dataset(root, format="parquet")`` would find (``only``: these files).

    ``lake`` holds the snapshot's files and their facts, ``planner`` plans reads of them.
    """

    def __init__(
        self,
        filesystem: pafs.FileSystem | Store,
        root: str,
        *,
        on_corrupt: str = "raise",
        threads: int = 2,
        source: ds.FileSystemDataset | None = None,
        on_stale_deletions: str = "raise",
        partitioning: Any = "hive",
        only: list[str] | None = None,
        schema: pa.Schema | None = None,
        format: Any = None,
    ):
        if on_corrupt not in ("raise", "fallback"):
            raise ValueError("on_corrupt must be 'raise' or 'fallback'")
        self.store = lake_store(as_store(filesystem), root)
        self.fs = self.store.fs
        self.root = root
        self.threads = threads
        self.lake = LakeFiles(self.store, root, on_stale_deletions=on_stale_deletions, source=source,
                              partitioning=partitioning, only=only, schema=schema, format=format)  # fmt: skip
        self.fs = self.lake.fs  # (conditional reads where planned from the manifest: lake/conditional.py)
        self.planner = Planner(self.lake, on_corrupt=on_corrupt)
        self._handover_dataset: tuple[tuple, Any] = ((), None)
        self._cast: frozenset[str] | None = None  # (_cast_columns)

    # -- what it shows -------------------------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """Data files (relative paths) in read order, as found when opened (or refreshed).

        Like ``pyarrow.dataset.dataset(root)``: every Parquet file under the root, whether
        the manifest knows it or not (files added after the last build are read in full).
        A dataset opened from a ``pyarrow.dataset.Dataset`` has that dataset's files.
        """
        return self.lake.files

    @property
    def manifest(self) -> Manifest:
        """The manifest version the dataset shows."""
        return self.lake.manifest

    @manifest.setter
    def manifest(self, manifest: Manifest) -> None:
        self.lake.manifest = manifest

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema, as pyarrow.dataset infers it (from the first file, plus the
        partition fields of a source dataset)."""
        return self.lake.schema

    @property
    def partitioning(self) -> ds.Partitioning | None:
        """The Hive partitioning of the files (None: no partition folders)."""
        return self.lake.partitioning

    @property
    def source(self) -> ds.FileSystemDataset | None:
        return self.lake.source

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem of the data files (pyarrow's ``Dataset.filesystem``)."""
        return self.fs

    def __reduce__(self):
        # pickled as what opens it again (the manifest and files as they are where it is unpickled)
        lake = self.lake
        return (_reopen, (self.store, self.root, {
            "on_corrupt": self.on_corrupt, "threads": self.threads, "source": lake.source,
            "on_stale_deletions": lake.on_stale_deletions, "partitioning": lake.partitioning_spec, "only": lake.only,
            **self._given(),
        }))  # fmt: skip

    def _given(self) -> dict[str, Any]:
        """The ``schema=`` and ``format=`` it was opened with (when given)."""
        lake = self.lake
        given = {"schema": lake.given_schema, "format": lake.given_format}
        return {k: v for k, v in given.items() if v is not None}

    @property
    def on_corrupt(self) -> str:
        return self.planner.on_corrupt

    @property
    def on_stale_deletions(self) -> str:
        return self.lake.on_stale_deletions

    @on_stale_deletions.setter
    def on_stale_deletions(self, value: str) -> None:
        self.lake.on_stale_deletions = check_stale_option(value)

    @property
    def format(self) -> ds.ParquetFileFormat:
        """The ``ParquetFileFormat`` the files are read with."""
        return self.lake.format

    def file_index(self, entry: FileEntry) -> FileIndex | None:
        """A manifest entry's opened :class:`~arrowidx.FileIndex` (None: no index)."""
        return self.lake.file_index(entry)

    def deletion_vector(self, rel: str) -> DeletionVector | None:
        """The deletion vector of a fresh data file (None: nothing deleted, or stale)."""
        return self.lake.deletion_vector(rel)

    def footer(self, rel: str) -> pq.FileMetaData:
        """The data file's parsed Parquet footer."""
        return self.lake.footer(rel)

    def row_count(self, rel: str) -> int:
        """The data file's rows, from its footer."""
        return self.lake.row_count(rel)

    def refresh(self, listing: bool = False) -> None:
        """Re-read the committed manifest (when its version changed), the file list and the
        files' sizes and times. On an object store the files are the manifest's (no
        listing); ``listing=True`` lists the folder, so files not indexed yet are read too."""
        self.lake.refresh(listing)

    def restat(self, rels: list[str]) -> None:
        """Stat the files ``rels`` again now (only those)."""
        self.lake.restat(rels)

    # -- planning ------------------------------------------------------------------------------
    def plan(self, expr, *, statistics: bool | Any = True) -> list[FilePlan]:
        """One :class:`FilePlan` per data file, in read order (:meth:`Planner.plan
        <arrowidx.lake.plan.Planner.plan>`)."""
        return self.planner.plan(expr, statistics=statistics)

    def plan_file(self, rel: str, expr, bound: dict | None = None, *, statistics: bool | Any = True) -> FilePlan:
        """One file's plan (:meth:`Planner.plan_file <arrowidx.lake.plan.Planner.plan_file>`)."""
        return self.planner.plan_file(rel, expr, bound, statistics=statistics)

    def explain(self, filter=None) -> Explain:
        """What the indexes do for ``filter``: per file, skipped by which index, rows and row groups kept."""
        return self.planner.explain(filter)

    def __repr__(self) -> str:
        indexed = sum(1 for rel in self.lake.files if rel in self.manifest.files)
        options = ", ".join(f"{k[len('file-index.'):-len('.columns')]}: {v}" for k, v in sorted(self.manifest.options.items()) if k.endswith(".columns"))
        return (
            f"IndexedDataset({self.root!r}, manifest v{self.manifest.version}, {len(self.files)} file(s),"
            f" {indexed} in the manifest, indexes: {options or 'none'})"
        )

    # -- reading ---------------------------------------------------------------------------------
    def _scan(self, rel: str, groups: list[int], columns: list[str], filter=None) -> pa.Table:
        """``columns`` of row groups ``groups`` of one file, read by pyarrow with the dataset
        schema (partition columns filled, missing columns NULL), optionally filtered."""
        fragment = self.lake.fragment(rel).subset(row_group_ids=groups)
        scanner = ds.Scanner.from_fragment(fragment, schema=self.schema, columns=columns, filter=filter)
        return scanner.to_table()

    def _file_read(self, plan: FilePlan, *, apply_deletions: bool = True) -> FileRead:
        """The planned file as the scan core's :class:`~arrowidx.lake.read.FileRead`."""
        dv = self.lake.deletion_vector(plan.path) if apply_deletions and plan.deleted else None
        return FileRead(
            plan.path, lambda dictionary: self.lake.fragment(plan.path, dictionary=dictionary), plan.row_groups,
            plan.row_group_offsets, plan.result.bitmap if plan.result.kind == "bitmap" else None, dv, plan.exact,
        )  # fmt: skip

    def _position_mask(self, plan: FilePlan, groups: list[int], apply_deletions: bool = True) -> np.ndarray | None:
        """Index bitmap AND not deleted, over the rows of ``groups`` (None: every row)."""
        return self._file_read(plan, apply_deletions=apply_deletions).position_mask(groups)

    def read_rows(
        self, plan: FilePlan, columns: list[str] | None, *, apply_deletions: bool = True, row_numbers: bool = False
    ) -> tuple[pa.Table, np.ndarray | None] | None:
        """The rows of one file that its index kept (and deletions did not drop), without
        applying the filter. Returns ``(table, file row numbers or None)``, or None."""
        if not plan.row_groups:
            return None
        groups = plan.row_groups
        table = self._scan(plan.path, groups, list(self.schema.names) if columns is None else list(columns))
        keep = self._position_mask(plan, groups, apply_deletions)
        numbers = None
        if row_numbers:
            offsets = plan.row_group_offsets
            numbers = np.concatenate([np.arange(offsets[g], offsets[g + 1], dtype=np.uint64) for g in groups])
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            numbers = numbers[keep] if numbers is not None else None
        return table, numbers

    def read_plan(self, plan: FilePlan, expr, columns: list[str] | None, *, one_pass: bool | None = None) -> pa.Table | None:
        """The rows of one planned file that match ``expr`` (deleted rows dropped), or None.
        ``one_pass``: as :meth:`read_plans` (None: decided from this plan alone)."""
        tables = [t for t in self.read_plans([plan], expr, columns, one_pass=one_pass) if t is not None]
        return tables[0] if tables else None

    def read_plans(
        self, plans: list[FilePlan], expr, columns: list[str] | None, *, one_pass: bool | None = None
    ) -> Iterator[pa.Table | None]:
        """Per planned file (in order), its rows matching ``expr`` minus deleted rows (or None).

        Late materialisation: for files whose index answer is not already exact, the
        predicate columns of the kept row groups are read first (one pyarrow scan over all
        those files); the row mask is index bitmap AND not deleted AND ``expr``
        (:func:`expression_mask`); then the other projected columns are read only for the
        row groups still holding rows (a second scan), keeping only those rows.

        When the indexes pruned nothing (``one_pass`` None: no plan skipped or narrowed to
        rows; the caller passes the plans it skipped too), the filter is probably not
        selective and the files are read in one pass instead, as ``pyarrow.dataset`` would.
        """
        if one_pass is None:
            one_pass = not index_pruned(plans)
        reader = FileReader(self.fs, self.schema, self.lake.format, self.lake.dictionary_format())
        reads = [self._file_read(p) for p in plans if p.row_groups]
        filter_columns = sorted(self.lake.columns_of(expr)) if expr is not None else []
        out_schema = self._output_schema(columns)
        tables = iter(reader.read(reads, expr, columns, filter_columns, out_schema, one_pass=one_pass))
        for p in plans:
            if p.row_groups:
                yield next(tables)

    def to_batches(self, filter=None, columns: list[str] | None = None, **settings: Any) -> Iterator[pa.RecordBatch]:
        """Record batches of the rows matching ``filter`` (minus deleted rows), in file order.

        When the indexes cannot prune and nothing is deleted, ``pyarrow.dataset`` scans the
        files itself (its own statistics pruning, same cost); otherwise the surviving row
        groups are read with late materialisation (:meth:`read_plans`). ``filter``: a
        ``pc.Expression`` (pyarrow's meaning) or SQL text (SQL's meaning, :mod:`arrowidx.filters`).
        ``columns``: names (one ``str`` is one column); an unknown one raises
        :class:`~arrowidx.expression.UnknownColumnError` here, as pyarrow raises. pyarrow's
        scan settings that never change the rows (``use_threads``, ``batch_size``...) are accepted.
        """
        check_scan_settings(settings, "to_batches")
        return self._batches(filter, self._user_columns(columns))

    def _user_columns(self, columns) -> list[str] | None:
        """``columns=`` as a list of this dataset's column names (:func:`arrowidx.filters.user_columns`)."""
        return user_columns(columns, self.schema, self.root) if columns is not None else None

    def _batches(self, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """:meth:`_batches_once`; planned from the manifest (an object store), a data file
        found replaced or gone when read is stat'ed and the query planned again, so it is
        read as it is now (before the first batch is handed out; after it, the error)."""
        for attempt in range(CHANGED_RETRIES + 1):
            handed_out = False
            try:
                for batch in self._batches_once(filter, columns):
                    handed_out = True
                    yield batch
                return
            except (ObjectChangedError, FileNotFoundError) as e:
                if handed_out or attempt == CHANGED_RETRIES or not self.object_changed(e):
                    raise

    def object_changed(self, error: Exception) -> bool:
        """Whether ``error`` (a conditional read's) names a data file of this snapshot, now
        stat'ed again (then the query is planned again)."""
        path = getattr(error, "path", None) or getattr(error, "filename", None) or (error.args[0] if error.args else None)
        return self.lake.from_manifest and isinstance(path, str) and self.lake.object_changed(path)

    def _batches_once(self, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            yield from where.apply(self._batches_once(where.pushdown, where.read_columns(columns)), columns)
            return
        filter = where.pushdown
        if self._cast_filter(filter):  # (the files' indexes and statistics cannot judge it)
            names = self._with_filter_columns(filter, columns)
            yield from _masked(self._batches_once(None, names), filter, names, columns)
            return
        route = self.planner.route(filter)
        if route.handover is not None:
            yield from self._scan_handed_over(self._pyarrow_dataset(route.handover), filter, columns)
        else:
            yield from _batches_of(self._read_route(route, filter, columns))

    def _scan_handed_over(self, data: ds.Dataset, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        """The rows of ``data`` (the whole dataset, handed over to pyarrow) matching ``filter``.

        pyarrow's scanner filters with the part of ``filter`` its statistics may judge
        (:func:`~arrowidx.statistics.statistics_filter`); when that part means less than the
        whole filter, the whole filter is applied to every batch by the kernel, so the
        answer is ``Table.filter``'s even where pyarrow.dataset's is not."""
        sound = statistics_filter(filter, self.schema)
        if sound.exact:
            yield from data.scanner(filter=sound.expression, columns=columns).to_batches()
            return
        names = self._with_filter_columns(filter, columns)
        yield from _masked(data.scanner(filter=sound.expression, columns=names).to_batches(), filter, names, columns)

    def _with_filter_columns(self, filter, columns: list[str] | None) -> list[str]:
        """``columns`` (None: all), then the other columns ``filter`` reads."""
        out = list(self.schema.names) if columns is None else list(columns)
        return out + [c for c in sorted(self.lake.columns_of(filter)) if c not in out]

    def _cast_filter(self, filter) -> bool:
        """Whether ``filter`` reads a column that ``dataset(schema=)`` (or a ``format=``'s read
        options: INT96 units...) gives another type than the files have (or that they lack):
        their indexes and statistics, made of the files' values, do not judge it; the filter is
        applied to the rows read, cast (pyarrow's meaning). Read as a dictionary is no cast."""
        lake = self.lake
        if (lake.given_schema is None and lake.given_format is None) or filter is None or not lake.files:
            return False
        if self._cast is None:
            found = with_partition_fields(lake.footer(lake.files[0]).schema.to_arrow_schema(), lake.partitioning)
            self._cast = frozenset(f.name for f in self.schema if found.get_field_index(f.name) < 0
                                   or not _same_values(found.field(f.name).type, f.type))  # fmt: skip
        return bool(self._cast & self.lake.columns_of(filter))

    def _read_route(self, route: Route, filter, columns: list[str] | None) -> Iterator[pa.Table | None]:
        """The tables of a planned route, in file order."""
        if route.plans:
            yield from self.read_plans(route.plans, filter, columns, one_pass=route.one_pass)

    def _pyarrow_dataset(self, files: list[str]) -> ds.FileSystemDataset:
        """``files`` as one pyarrow dataset (fragments shared with their footers: those the
        process has not read yet are read on the I/O pool)."""
        lake = self.lake
        keys = tuple(lake.identity(rel) for rel in files)
        if self._handover_dataset[0] != keys:
            fragments = facts.parallel(lake.fragment, files)
            self._handover_dataset = (keys, ds.FileSystemDataset(fragments, self.schema, lake.format, self.fs))
        return self._handover_dataset[1]

    def _output_schema(self, columns: list[str] | None) -> pa.Schema:
        return self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])

    def scanner(self, filter=None, columns: list[str] | None = None, **settings: Any) -> pa.RecordBatchReader:
        """A streaming ``pyarrow.RecordBatchReader`` of the rows matching ``filter`` (minus
        deleted rows): hand it to DuckDB, ``pl.from_arrow``, DataFusion (``__arrow_c_stream__``)."""
        check_scan_settings(settings, "scanner")
        columns = self._user_columns(columns)
        schema = self._output_schema(columns)
        filter = user_filter(filter, lambda: self.schema)

        def batches() -> Iterator[pa.RecordBatch]:
            for b in self._batches(filter, columns):
                yield b if b.schema.equals(schema) else pa.RecordBatch.from_arrays(b.columns, schema=schema)

        return pa.RecordBatchReader.from_batches(schema, batches())

    def fragments(self, filter=None) -> list[ds.ParquetFileFragment]:
        """pyarrow fragments of the files that may hold rows matching ``filter``, each
        restricted to the row groups the indexes and statistics keep.

        The fragments hold a superset of the matching rows: scan them with the same filter
        (``ds.FileSystemDataset(fragments, ...)`` or ``Scanner.from_fragment``). Fragments
        cannot carry deletion vectors, so files with deleted rows raise ``ArrowIdxError``
        naming them; read those through :meth:`scanner`/:meth:`to_table` instead.
        """
        plans = self.planner.plan(user_filter(filter, lambda: self.schema).pushdown)
        deleted = [p.path for p in plans if p.row_groups and p.deleted]
        if deleted:
            raise ArrowIdxError(
                f"{self.root}: {len(deleted)} file(s) have deleted rows, which pyarrow fragments cannot"
                f" carry: {', '.join(deleted[:5])}{' ...' if len(deleted) > 5 else ''}; use scanner() or to_table()"
            )
        return [self.lake.fragment(p.path).subset(row_group_ids=p.row_groups) for p in plans if p.row_groups]

    def get_fragments(self, filter=None) -> Iterator[ds.ParquetFileFragment]:
        """pyarrow's ``Dataset.get_fragments``: the whole files' fragments whose partition may
        match ``filter`` (pyarrow's own answer on the same files). A fragment cannot carry a
        deletion vector: files with deleted rows raise ``ArrowIdxError`` naming them (read
        them through :meth:`to_table` or :meth:`scanner`)."""
        found = list(self._pyarrow_dataset(list(self.lake.files)).get_fragments(filter=filter))
        deleted = [f.path for f in found if self.lake.deletion_vector(posixpath.relpath(f.path, self.root)) is not None]
        if deleted:
            raise ArrowIdxError(f"{self.root}: {len(deleted)} file(s) have deleted rows, which pyarrow fragments cannot"
                                f" carry: {', '.join(deleted[:5])}; use scanner() or to_table()")  # fmt: skip
        return iter(found)  # (an iterator, as pyarrow's)

    def to_table(self, filter=None, columns: list[str] | None = None, **settings: Any) -> pa.Table:
        """Like ``pyarrow.dataset.Dataset.to_table(filter=, columns=)``, minus deleted rows
        (``filter``: a ``pc.Expression``, or SQL text; ``columns``: names, one ``str`` is one column;
        pyarrow's scan settings that never change the rows accepted: ``use_threads``...)."""
        check_scan_settings(settings, "to_table")
        for attempt in range(CHANGED_RETRIES + 1):  # (a data file replaced since planned: see _batches)
            try:
                return self._to_table(filter, columns)
            except (ObjectChangedError, FileNotFoundError) as e:
                if attempt == CHANGED_RETRIES or not self.object_changed(e):
                    raise
        raise AssertionError("unreachable")

    def _to_table(self, filter, columns) -> pa.Table:
        columns = self._user_columns(columns)
        schema = self._output_schema(columns)
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            return where.apply_table(self.to_table(where.pushdown, where.read_columns(columns)), columns)
        filter = where.pushdown
        route = None if self._cast_filter(filter) else self.planner.route(filter)
        if route is None:
            batches = [b for b in self._batches(filter, columns) if b.num_rows]
        elif route.handover is not None:
            handed = self._pyarrow_dataset(route.handover)
            sound = statistics_filter(filter, self.schema)
            if sound.exact:
                return handed.to_table(filter=sound.expression, columns=columns)
            batches = list(self._scan_handed_over(handed, filter, columns))
        else:
            batches = [b for b in _batches_of(self._read_route(route, filter, columns)) if b.num_rows]
        if not batches:
            return schema.empty_table()
        if all(b.schema.equals(schema) for b in batches):
            return pa.Table.from_batches(batches, schema)
        return pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches], schema)

    def count_rows(self, filter=None, **settings: Any) -> int:
        """Rows matching ``filter`` minus deleted rows; with no filter, from metadata alone."""
        check_scan_settings(settings, "count_rows")
        where = user_filter(filter, lambda: self.schema)
        if where.residual is not None:
            return sum(b.num_rows for b in self._batches(where, where.residual.columns or [self.schema.names[0]]))
        filter = where.pushdown
        if filter is None:
            lake = self.lake
            lake.forget_file_infos()
            total = 0
            for rel in lake.files:
                entry = lake.manifest.files.get(rel)
                dv = lake.deletion_vector(rel)
                total += (entry.rows if lake.fresh(entry) else lake.row_count(rel)) - (dv.cardinality if dv else 0)
            return total
        columns = sorted(self.lake.columns_of(filter)) or [self.schema.names[0]]
        return sum(b.num_rows for b in self._batches(filter, columns))


#: How many times a query is planned again after finding data files replaced since planned.
CHANGED_RETRIES = 3


def _batches_of(tables) -> Iterator[pa.RecordBatch]:
    for table in tables:
        if table is not None and table.num_rows:
            yield from table.to_batches()


def _same_values(found: pa.DataType, read: pa.DataType) -> bool:
    """Whether a file's column of type ``found`` read as ``read`` keeps its values."""
    return read.equals(found) or (pa.types.is_dictionary(read) and read.value_type.equals(found))


def _masked(batches: Iterator[pa.RecordBatch], filter, names: list[str], columns: list[str] | None) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` (columns ``names``) matching ``filter`` (``Table.filter``'s
    meaning), the first ``len(columns)`` columns kept (all of ``names`` when None)."""
    keep = len(names) if columns is None else len(columns)
    for batch in batches:
        mask = expression_mask(batch, filter, threads=False)
        if mask.any():
            batch = batch if mask.all() else batch.filter(pa.array(mask))
            yield batch if keep == len(names) else batch.select(names[:keep])


def _reopen(store: Store, root: str, options: dict[str, Any]) -> IndexedDataset:
    return IndexedDataset(store, root, **options)


def dataset(source: Any, *, filesystem: pafs.FileSystem | None = None, on_corrupt: str = "raise",
            on_stale_deletions: str = "raise", storage_options: dict[str, Any] | None = None,
            partitioning: Any = "hive", index_root: Any = None, format: Any = None,
            schema: pa.Schema | None = None, ignore_prefixes: list[str] | None = None,
            exclude_invalid_files: bool = False) -> IndexedDataset:  # fmt: skip
    """Open an indexed Parquet dataset: a directory or URI (``s3://bucket/lake`` with
    ``storage_options``, see docs/object-stores.md), a ``.parquet`` file or list of files, or
    a ``pyarrow.dataset.FileSystemDataset`` (whose files, schema and partitioning are kept:
    ``ds.dataset(root, partitioning="hive")`` exposes and prunes by its partition columns, as
    pyarrow does).

    ``partitioning``: Hive folders (``dt=2024-01-02/``) are partition columns, discovered by
    default (``"hive"``); ``None`` turns that off, a ``pa.Schema`` or ``{name: type}`` gives
    their types (:mod:`arrowidx.lake.partitions`).

    ``index_root``: where the indexes are when not in the sidecar folder beside the data
    folder (``_<folder>.arrowidx/``, found from the path; docs/guide.md, "Layout on disk"):
    the same ``index_root=`` given to :func:`arrowidx.build`. ``format``: ``"parquet"`` (or a
    ``ParquetFileFormat``, whose read options are used), as pyarrow takes it; ``schema``: the
    dataset schema, files read cast to it (pyarrow's ``schema=``); ``ignore_prefixes``,
    ``exclude_invalid_files``: pyarrow's discovery (given, the files found are fixed); ``filesystem``
    may be a URI string and ``partitioning`` pyarrow's partitioning factory, as pyarrow takes them
    (:mod:`arrowidx.lake.dataset_arguments`).

    ``arrowidx.dataset`` is this dataset as a ``pyarrow.dataset.FileSystemDataset``
    (:func:`arrowidx.lake.dataset_pyarrow.dataset`)."""
    store, root, options = dataset_arguments(source, filesystem=filesystem, on_corrupt=on_corrupt,
                                             on_stale_deletions=on_stale_deletions, storage_options=storage_options,
                                             partitioning=partitioning, index_root=index_root, format=format,
                                             schema=schema, ignore_prefixes=ignore_prefixes,
                                             exclude_invalid_files=exclude_invalid_files)  # fmt: skip
    return IndexedDataset(store, root, **options)


def dataset_arguments(source: Any, *, filesystem: Any, on_corrupt: str, on_stale_deletions: str, storage_options: Any,
                      partitioning: Any, index_root: Any, format: Any, schema: Any, ignore_prefixes: Any = None,
                      exclude_invalid_files: bool = False) -> tuple[Store, str, dict[str, Any]]:  # fmt: skip
    """:func:`dataset`'s arguments as ``(store, root, options)`` of :class:`IndexedDataset`."""
    check_format(format)
    check_schema(schema)
    given = {"schema": schema, "format": format if format is not None and not isinstance(format, str) else None}
    filesystem = filesystem_of(filesystem)
    partitioning = partitioning_of(partitioning, source, filesystem)
    store, root, explicit = resolve(source, filesystem, storage_options)
    if "pyarrow.dataset" in sys.modules and isinstance(source, ds.FileSystemDataset) and explicit and index_root is None:
        root = manifest_root(store, root)
    elif explicit and isinstance(partitioning, PolarsHive):  # Polars reads the key=value folders above a file too
        root = hive_base(root)
    store = lake_store(store, root, index_path(store, index_root, storage_options))
    options: dict[str, Any] = {"on_corrupt": on_corrupt, "on_stale_deletions": on_stale_deletions,
                               **{k: v for k, v in given.items() if v is not None}}  # fmt: skip
    if "pyarrow.dataset" in sys.modules and isinstance(source, ds.FileSystemDataset):  # (else it cannot be one)
        return store, root, {**options, "source": source}
    explicit = discovered_files(store, root, explicit, ignore_prefixes, exclude_invalid_files, given["format"])
    only = [posixpath.relpath(p, root) for p in explicit] if explicit is not None else None  # a file or a list of files: only those, in the order given (as pyarrow and Polars read them)
    return store, root, {**options, "partitioning": partitioning, "only": only}
