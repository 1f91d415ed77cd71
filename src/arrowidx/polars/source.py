"""The Polars IO source: :func:`scan` and the reader it registers."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .. import facts
from .._roaring import bitmap_of, positions_of
from ..errors import NotParquetError
from ..lake.layout import join
from ..lake.partitions import HivePathError, partition_values, polars_semantics, same_columns
from ..lake.plan import index_pruned
from ..lake.plans import FilePlan
from ..lake.scan import CHANGED_RETRIES, IndexedDataset
from ..statistics import opaque_polars, polars_parts
from ..storage import ObjectChangedError
from .arguments import UNSET, ScanArguments, engine_source, polars_decides
from .count import asked_for, count_frames, live_rows, source_schema, with_count_column
from .deletion_files import PositionDeletes, polars_applies
from .explain import ScanReport
from .plan import open_dataset, plan_scan, polars_schema

log = logging.getLogger("arrowidx.polars")
_ROW_INDEX = "__arrowidx_row"


def scan(
    source: Any,
    *,
    n_rows: int | None = None,
    row_index_name: str | None = None,
    row_index_offset: int = 0,
    parallel: str = "auto",
    use_statistics: bool = True,
    hive_partitioning: bool | None = None,
    glob: bool = True,
    hidden_file_prefix: Any = None,
    schema: Any = None,
    hive_schema: Any = None,
    try_parse_hive_dates: bool = True,
    low_memory: bool = False,
    cache: bool = True,
    storage_options: dict[str, Any] | None = None,
    credential_provider: Any = "auto",
    include_file_paths: str | None = None,
    missing_columns: str = "raise",
    extra_columns: str = "raise",
    cast_options: Any = None,
    decryption: Any = None,
    filesystem: pafs.FileSystem | None = None,
    on_corrupt: str = "raise",
    reader: str = "auto",
    on_scan: Callable[[ScanReport], None] | None = None,
    partitioning: Any = UNSET,
    index_root: Any = None,
    **private: Any,
) -> pl.LazyFrame:
    """A ``pl.LazyFrame`` over an indexed Parquet dataset (see the module docstring).

    Takes ``pl.scan_parquet``'s arguments, by name, with its defaults (what each does here:
    :mod:`arrowidx.polars.arguments`; bytes and file objects go to ``pl.scan_parquet``
    unchanged). arrowidx's own:

    ``reader``: ``"polars"`` reads the kept row groups with Polars' Parquet reader (local
    files only), ``"pyarrow"`` with pyarrow (any ``pyarrow.fs`` filesystem), ``"auto"``
    picks Polars for local files. ``on_scan`` is called with a :class:`ScanReport` after each
    execution; every execution also logs its summary at INFO on ``arrowidx.polars``.
    ``storage_options``: endpoint, region and credentials of an object-store URI
    (``s3://bucket/lake``; see docs/object-stores.md). ``partitioning``: Hive folders
    (``dt=2024-01-02/``) are columns by default, as in ``pl.scan_parquet(hive_partitioning=True)``;
    None turns that off, a ``pa.Schema`` or ``{name: type}`` gives their types (see
    :func:`arrowidx.dataset`); by default, as ``hive_partitioning`` says. ``index_root``:
    where the indexes are when not beside the data folder (as given to :func:`arrowidx.build`).
    """
    arguments = ScanArguments.of({
        "n_rows": n_rows, "row_index_name": row_index_name, "row_index_offset": row_index_offset,
        "parallel": parallel, "use_statistics": use_statistics, "hive_partitioning": hive_partitioning,
        "glob": glob, "hidden_file_prefix": hidden_file_prefix, "schema": schema, "hive_schema": hive_schema,
        "try_parse_hive_dates": try_parse_hive_dates, "low_memory": low_memory, "cache": cache,
        "storage_options": storage_options, "credential_provider": credential_provider,
        "include_file_paths": include_file_paths, "missing_columns": missing_columns,
        "extra_columns": extra_columns, "cast_options": cast_options, "decryption": decryption, **private,
    })  # fmt: skip
    if engine_source(source) or polars_decides(source, glob, arguments.hidden_prefixes) or arguments.hive_refused(source):
        return pl.scan_parquet(source, **arguments.polars_kwargs())  # data, or nothing to plan: Polars' own answer or error
    arguments.check_supported()
    partitioning = arguments.partitioning(source, partitioning)
    try:
        data = (
            source
            if isinstance(source, IndexedDataset)
            else open_dataset(source, filesystem, on_corrupt, storage_options, partitioning, index_root, arguments.hidden_prefixes,
                              arguments.missing_columns)  # fmt: skip
        )
    except HivePathError:  # Hive folders Polars refuses: its own error, at collect()
        return pl.scan_parquet(source, **arguments.polars_kwargs())
    if reader not in ("auto", "polars", "pyarrow"):
        raise ValueError("reader must be 'auto', 'polars' or 'pyarrow'")
    if polars_applies(arguments.deletion_files, data):  # Puffin deletion vectors, a Delta callback, nothing deleted here
        return pl.scan_parquet(source, **arguments.polars_kwargs())
    deletes = PositionDeletes.of(arguments.deletion_files, storage_options)
    if arguments.file_paths is not None:  # each row's file: one scan per file, in the lake's order
        return arguments.shape(_with_file_paths(data, arguments.file_paths, source, deletes, reader=reader, on_scan=on_scan))
    local = isinstance(data.fs, pafs.LocalFileSystem)
    if reader == "polars" and not local:
        raise ValueError(
            "reader='polars' reads local files only; use reader='pyarrow' for other filesystems"
        )
    try:
        src = _Source(data, native=local and reader != "pyarrow", on_scan=on_scan, deletes=deletes)
    except NotParquetError:
        if isinstance(source, IndexedDataset):
            raise
        return pl.scan_parquet(source, **arguments.polars_kwargs())  # its schema is not Parquet: Polars' own error, at collect()
    kwargs: dict[str, Any] = {"schema": source_schema(src.schema), "validate_schema": False}
    params = _io_source_parameters()
    if "is_pure" in params:  # one read per query plan; repeated scans may share it
        kwargs["is_pure"] = True
    if "explain_name" in params:
        kwargs["explain_name"] = "arrowidx"
        kwargs["explain_detail"] = data.root
    lf = pl.io.plugins.register_io_source(src, **kwargs).select(list(src.schema))  # (without COUNT_COLUMN)
    return arguments.shape(lf)


def _with_file_paths(data: IndexedDataset, name: str, source: Any, deletes: PositionDeletes | None, **options: Any) -> pl.LazyFrame:
    """The lake's rows with a column ``name`` holding each row's file path (Polars'
    ``include_file_paths``: a file named in ``source`` as it was spelt there, a file found
    in a folder or by a glob by its full path): the files scanned one by one (each planned
    with the indexes) and concatenated in the lake's order."""
    if name in data.schema.names:
        raise pl.exceptions.DuplicateError(f'column name for file paths "{name}" conflicts with column name from file')
    items = source if isinstance(source, (list, tuple)) else [source]
    spelt = {}
    for item in items:
        if isinstance(item, (str, os.PathLike)) and isinstance(os.fspath(item), str):
            text = os.fspath(item)
            local = text[len("file://") :] if text.startswith("file://") else text
            spelt.setdefault(os.path.abspath(local) if "://" not in local else local, text)
    uris = any(text.startswith("file://") for text in spelt.values())
    if uris:
        spelt = {k: v if v.startswith("file://") else "file://" + k for k, v in spelt.items()}
    lake = data.lake
    full = polars_schema(data, isinstance(data.fs, pafs.LocalFileSystem) and options.get("reader") != "pyarrow")
    parts = []
    for i, rel in enumerate(data.lake.files):
        if deletes is not None and deletes.files.get(i):  # (the file's deletes, as the first of its scan)
            options["_deletion_files"] = ("iceberg", ({0: list(deletes.files[i])}, {}))
        else:
            options.pop("_deletion_files", None)
        one = IndexedDataset(data.store, data.root, on_corrupt=data.on_corrupt, on_stale_deletions=lake.on_stale_deletions,
                             partitioning=same_columns(lake.partitioning_spec, lake.partitioning), only=[rel])  # fmt: skip
        path = join(data.root, rel)
        shown = spelt.get(path, "file://" + path if uris else path)  # (a list with a file:// URI: Polars shows URIs)
        part = scan(one, **options)
        if lake.missing_columns == "insert":  # the file's frame in the lake's columns, those it lacks NULL (as Polars)
            have = part.collect_schema()
            part = part.with_columns([pl.lit(None, full[c]).alias(c) for c in full if c not in have]).select(list(full))
        parts.append(part.with_columns(pl.lit(shown, pl.String).alias(name)))
    if not parts:
        return pl.LazyFrame(schema={**polars_schema(data, False), name: pl.String})
    return pl.concat(parts, how="vertical_relaxed")


@functools.cache
def _io_source_parameters() -> frozenset[str]:
    """The keyword arguments this Polars' ``register_io_source`` takes (asked once)."""
    return frozenset(inspect.signature(pl.io.plugins.register_io_source).parameters)


@dataclass
class _Read:
    """One file to read: row ranges ``[a, b)`` and the deleted positions to drop in them."""

    plan: FilePlan
    runs: list[tuple[int, int]]
    deleted: np.ndarray  # sorted positions (int64) within the runs that can change the answer
    deleted_elsewhere: int = 0  # deleted rows within the runs outside the index's bitmap (never matched)

    @property
    def rows(self) -> int:
        return sum(b - a for a, b in self.runs)

    @property
    def whole(self) -> bool:
        """Every row of the file is read (deleted rows aside)."""
        return self.runs == [(0, self.plan.rows)]


_FEW_ROWS = 2  # bitmaps this small are read row by row rather than by row group (each row is one Polars scan)
_NARROW_SHARE = 4  # whole files are narrowed (_Source._narrow) when they hold at most 1/4 of the lake's rows


class PolarsNotParquetError(NotParquetError, pl.exceptions.ComputeError):
    """A data file that is not Parquet, in a Polars scan: arrowidx's error naming the file,
    and Polars' own class for it (``pl.scan_parquet`` raises ``ComputeError``)."""


def _polars_errors(frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """``frames``, a data file that is not Parquet raised as Polars raises it too."""
    try:
        yield from frames
    except PolarsNotParquetError:
        raise
    except NotParquetError as e:
        raise PolarsNotParquetError(e.detail, source=e.source) from None


class _Source:
    """The IO source Polars calls: ``(with_columns, predicate, n_rows, batch_size)``."""

    WAVE_ROWS = 32_000_000  # rows read per parallel wave (bounds memory with the streaming engine)

    def __init__(self, data: IndexedDataset, *, native: bool, on_scan, deletes: PositionDeletes | None = None):
        self.data = data
        self.deletes = deletes  # Polars' _deletion_files: rows deleted by position besides arrowidx's
        self.native = native
        self.on_scan = on_scan
        self.arrow_schema = data.schema
        self.schema = polars_schema(data, native)

    def __call__(self, with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        at, columns = asked_for(with_columns, self.schema)
        if columns == [] and predicate is None:  # pl.len(): no column is read (see arrowidx.polars.count)
            return with_count_column(_polars_errors(self._count(n_rows)), at)
        frames = _polars_errors(self._run_again_if_changed(columns, predicate, n_rows, batch_size))
        return with_count_column(frames, at)

    def _count(self, n_rows) -> Iterator[pl.DataFrame]:
        """The live rows (the first ``n_rows``) as frames of no column of the dataset: the
        files' row counts (the manifest's, else their footers') minus their deleted rows."""
        start = time.perf_counter()
        listening = self.on_scan is not None or log.isEnabledFor(logging.INFO)
        planned = self._plan(None, always=listening)  # (plans only when something is deleted, or to report)
        rows = live_rows(self.data, planned, n_rows)
        yield from count_frames(rows)
        if listening:
            report = ScanReport(self.data.root, None, planned.translation, planned.plans, with_columns=[], n_rows=n_rows,
                                rows_returned=rows, seconds=time.perf_counter() - start)  # fmt: skip
            if log.isEnabledFor(logging.INFO):
                log.info("%s", report.summary())
            if self.on_scan is not None:
                self.on_scan(report)

    def _run_again_if_changed(self, with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        """:meth:`_run`; a data file found replaced or gone when read (planned from the
        manifest: an object store) is stat'ed and the scan planned again, as
        ``IndexedDataset.to_batches`` does (before the first frame is handed out)."""
        for attempt in range(CHANGED_RETRIES + 1):
            handed_out = False
            try:
                for frame in self._run(with_columns, predicate, n_rows, batch_size):
                    handed_out = True
                    yield frame
                return
            except (ObjectChangedError, FileNotFoundError) as e:
                if handed_out or attempt == CHANGED_RETRIES or not self.data.object_changed(e):
                    raise

    # -- planning --------------------------------------------------------------------------------
    def _plan(self, predicate, *, always: bool, partitions: bool = True):
        """:func:`plan_scan`, with Polars' positional deletes (``_deletion_files``) added to the
        deletion vectors (every file planned then)."""
        if self.deletes is None:
            return plan_scan(self.data, predicate, always=always, partitions=partitions)
        return self.deletes.merged(plan_scan(self.data, predicate, always=True, partitions=partitions), self.data.lake.files)

    def _reads(self, plans, vectors, n_rows, predicate) -> list[_Read]:
        """The row ranges to read per file, cut at the first ``n_rows`` live rows."""
        remaining = n_rows
        reads = []
        for plan in plans:
            if remaining is not None and remaining <= 0:
                break
            dv = vectors.get(plan.path)
            deleted = (
                dv.positions().astype(np.int64)
                if dv is not None and dv.cardinality
                else np.zeros(0, np.int64)
            )
            cutoff = plan.rows
            if remaining is not None:
                live = plan.rows - deleted.size
                if live > remaining:  # the row limit ends inside this file
                    gaps = deleted - np.arange(deleted.size)  # live rows before each deleted one
                    cutoff = remaining + int(np.searchsorted(gaps, remaining - 1, side="right"))
                    remaining = 0
                else:
                    remaining -= live
            if plan.skipped or not plan.row_groups or deleted.size >= plan.rows:
                continue  # (a file whose every row is deleted is not opened)
            offsets = plan.row_group_offsets
            if plan.result.kind == "bitmap" and len(plan.result.bitmap) <= _FEW_ROWS:
                # A handful of rows: slice just them (Polars then decodes less than a row group).
                spans = [(row, row + 1) for row in plan.result.bitmap if row < cutoff]
            else:
                spans = [(int(offsets[g]), min(int(offsets[g + 1]), cutoff)) for g in plan.row_groups]
            runs = _merged([(a, b) for a, b in spans if a < b])
            if not runs:
                continue
            if deleted.size:
                deleted = deleted[_within(deleted, runs)]
            elsewhere = 0
            if deleted.size and plan.result.kind == "bitmap" and deleted[-1] < 1 << 32:
                # Rows outside the index's bitmap never match the predicate, so only deleted
                # rows inside it can change the answer; often none is, and the file is then
                # read without a row index (Polars' own late materialisation intact).
                relevant = positions_of(bitmap_of(deleted) & plan.result.bitmap).astype(np.int64)
                elsewhere, deleted = deleted.size - relevant.size, relevant
            reads.append(_Read(plan, runs, deleted, elsewhere))
        return reads

    # -- running ---------------------------------------------------------------------------------
    def _run(self, with_columns, predicate, n_rows, batch_size) -> Iterator[pl.DataFrame]:
        start = time.perf_counter()
        columns = list(self.schema) if with_columns is None else list(with_columns)
        needed = list(
            dict.fromkeys(columns + [c for c in _root_names(predicate) if c in self.schema])
        )
        if not needed:  # rows of no column with a predicate on none: read one column for the row count
            needed = [next(iter(self.schema))]
        listening = self.on_scan is not None or log.isEnabledFor(logging.INFO)
        # A report lists every file's plan; without one, a scan the indexes cannot prune
        # (and with nothing deleted) goes to Polars whole, no file planned.
        always = listening or not self.native or n_rows is not None
        _check_predicate(predicate, self.schema)  # an invalid predicate fails whether or not an index decides
        planned = self._plan(predicate, always=always, partitions=n_rows is None)
        scan_filter = _ScanFilter.of(predicate, self.schema)  # what Polars' reader may prune with, and the rest
        plans = planned.plans
        report = None
        if plans is None:  # the predicate is applied inside; files their Hive folders rule out are not read
            frames = self._whole_files(scan_filter, columns or needed, self.data.lake.files if planned.files is None else planned.files)
        else:
            selective = bool(planned.ruled_files) or index_pruned(plans)
            reads = self._reads(plans, planned.vectors, n_rows, predicate)
            if listening:  # (then every file has a plan: always)
                report = ScanReport(
                    self.data.root, None if predicate is None else str(predicate), planned.translation, plans,
                    with_columns=with_columns, n_rows=n_rows, files_read=len(reads),
                    row_groups_read=sum(_groups(r) for r in reads),
                    rows_read=sum(r.rows - r.deleted.size - r.deleted_elsewhere for r in reads),
                )  # fmt: skip
            exact = planned.translation is not None and planned.translation.exact
            frames = (
                self._native(reads, scan_filter, needed, selective, sum(p.rows for p in plans) + planned.ruled_rows, exact)
                if self.native
                else self._pyarrow(reads, predicate, needed)
            )
        returned = 0
        for df in frames:
            if df.columns != columns:  # a select of a many-chunk frame is not free (~7 ms for 1,000 files)
                df = df.select(columns) if columns else df.drop(df.columns)
            if df.dtypes != [self.schema[c] for c in columns]:
                df = df.cast({c: self.schema[c] for c in columns})
            if not df.height:
                continue
            returned += df.height
            yield from _batches(df, batch_size)
        if not returned:
            yield pl.DataFrame(schema={c: self.schema[c] for c in columns})
        if report is None:
            return
        report.rows_returned = returned
        report.seconds = time.perf_counter() - start
        if log.isEnabledFor(logging.INFO):
            log.info("%s", report.summary())
        if self.on_scan is not None:
            self.on_scan(report)

    def _whole_files(self, predicate, needed: list[str], files: list[str]) -> Iterator[pl.DataFrame]:
        """Every non-empty file of ``files`` read whole by Polars (nothing to prune, nothing deleted), in
        waves of at most ``WAVE_ROWS`` rows. Sized from the manifest; footers are read only
        for files it lacks or lists as empty. Per file this is a dict lookup and its stat
        (one call for all: the files' identities key the Polars scan kept for them,
        :func:`_files_scan`): a lake of 1,000 files pays no planning objects."""
        manifest = self.data.manifest.files

        def read(rels: list[str]) -> pl.DataFrame:
            return _finish(_files_scan(self.data, rels), predicate, needed).collect()

        wave: list[str] = []
        rows = 0
        for rel in files:
            entry = manifest.get(rel)
            n = entry.rows if entry is not None and entry.rows else self.data.lake.row_count(rel)
            if not n:
                continue  # empty files are left out, as planning leaves them out
            if wave and rows + n > self.WAVE_ROWS:
                yield read(wave)
                wave, rows = [], 0
            wave.append(rel)
            rows += n
        if wave:
            yield read(wave)

    def _waves(self, reads: list[_Read]) -> Iterator[list[_Read]]:
        wave, rows = [], 0
        for r in reads:
            n = r.rows
            if wave and rows + n > self.WAVE_ROWS:
                yield wave
                wave, rows = [], 0
            wave.append(r)
            rows += n
        if wave:
            yield wave

    def _native(
        self, reads: list[_Read], predicate, needed: list[str], selective: bool, lake_rows: int, exact: bool
    ) -> Iterator[pl.DataFrame]:
        """Kept row ranges read by Polars (its own row-group statistics and late
        materialisation apply), deleted rows dropped by row position, predicate applied.
        ``selective``: the indexes pruned, so few rows are expected to match (whole files an
        inexact index kept are then narrowed first, :meth:`_narrow`). ``exact``: the
        predicate's translation has its exact semantics (see :meth:`_scan_whole`)."""
        # narrowing is decided for the whole scan (its waves share the budget)
        narrow = selective and sum(r.rows for r in reads if _narrowable(r)) * _NARROW_SHARE <= lake_rows
        for wave in self._waves(reads):
            if narrow:
                wave = self._narrow(wave, predicate, needed)
                if not wave:
                    continue
            queries: list[tuple[pl.LazyFrame, Callable[[pl.DataFrame], pl.DataFrame] | None]] = []
            whole: list[_Read] = []  # consecutive files read in full: one Polars scan
            for r in wave:
                if r.whole:
                    whole.append(r)
                    continue
                if whole:
                    queries.append(self._scan_whole(whole, predicate, needed, selective, exact))
                    whole = []
                parts = [self._run_query(a, b, r, predicate, needed) for a, b in r.runs]
                queries.append((parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical"), None))
            if whole:
                queries.append(self._scan_whole(whole, predicate, needed, selective, exact))
            frames = pl.collect_all([q for q, _ in queries]) if len(queries) > 1 else [queries[0][0].collect()]
            for df, (_, after) in zip(frames, queries):
                yield df if after is None else after(df)

    def _narrow(self, wave: list[_Read], predicate, needed: list[str]) -> list[_Read]:
        """``wave`` with the whole files an inexact index (a bloom filter) kept narrowed to
        their matching rows' row groups, or to the rows themselves when at most
        ``_FEW_ROWS`` match (files with none are dropped), as a bitmap would narrow them.

        The matches are found by Polars scans of the predicate's columns alone. Reading a
        kept file whole, even with Polars' late materialisation, decodes every column's
        dictionary pages in every row group: for a needle in a 500,000-row file that is
        7.3 ms, against 3.7 ms for the predicate column plus ~2 ms for the matching row.
        :meth:`_native` calls it only when the files to narrow hold at most
        1/``_NARROW_SHARE`` of the lake's rows, so a kept file with many matches costs that
        scan of its predicate columns more, never more than the engine's scan of the whole
        lake. If the scan fails (a file lacking a column, say), the files are read as they were.
        """
        names = [c for c in _root_names(predicate.predicate if predicate is not None else None) if c in self.schema]
        if not names or not set(needed) - set(names):
            return wave  # nothing but the predicate's columns to read anyway
        todo = [r for r in wave if _narrowable(r)]
        if not todo:
            return wave
        frames = [
            _finish(_file_scan(self.data, r.plan.path, row_index=True).select(_ROW_INDEX, *names), predicate, [_ROW_INDEX])
            for r in todo
        ]
        try:
            found = pl.collect_all(frames)
        except pl.exceptions.PolarsError:
            return wave
        narrowed: dict[int, _Read | None] = {}
        for r, hits in zip(todo, found):
            narrowed[id(r)] = _rows_read(r, hits.to_series().cast(pl.Int64).to_numpy())
        out = []
        for r in wave:
            n = narrowed.get(id(r), r)
            if n is not None:
                out.append(n)
        return out

    def _scan_whole(self, reads: list[_Read], predicate, needed: list[str], selective: bool, exact: bool):
        """One Polars scan of whole files, and what to do to its result (None: nothing).

        Deleted rows are found by a row index over the files in order (the file's row
        offset plus the position). When the indexes pruned (``selective``), the predicate
        runs alone in Polars' reader (its late materialisation intact) and the deleted rows
        are dropped from the few rows it returns; otherwise both run in the one filter.

        When every file's index bitmap is exactly its matching rows (``exact``: the
        predicate translated exactly, each plan exact), no row index is needed: Polars
        returns the bitmaps' rows in file order, so a deleted row's place in the result is
        its rank in its file's bitmap. A row index costs Polars ~5 % of a scan. If the
        result does not hold as many rows as the bitmaps, the query runs again with the
        row index (the bitmaps being supersets, an equal count means the same rows).
        """
        rels = [r.plan.path for r in reads]
        starts = np.cumsum([0] + [r.plan.rows for r in reads[:-1]])
        deleted = np.concatenate([r.deleted + start for r, start in zip(reads, starts)])
        if not deleted.size:
            return _finish(_files_scan(self.data, rels), predicate, needed), None
        alive = ~pl.col(_ROW_INDEX).cast(pl.Int64).is_in(_collection(deleted))
        if not selective:
            lf = _files_scan(self.data, rels, row_index=True)
            return _finish(lf, predicate, needed, extra=alive), None

        def with_row_index() -> pl.LazyFrame:
            return _finish(_files_scan(self.data, rels, row_index=True), predicate, [*needed, _ROW_INDEX])

        def drop_by_row_index(df: pl.DataFrame) -> pl.DataFrame:
            return df.filter(alive).drop(_ROW_INDEX)

        if not (exact and all(r.plan.exact for r in reads)):
            return with_row_index(), drop_by_row_index
        places, matching = _places_in_bitmaps(reads)

        def drop_by_place(df: pl.DataFrame) -> pl.DataFrame:
            if df.height != matching:
                return drop_by_row_index(with_row_index().collect())
            keep = np.ones(df.height, dtype=bool)
            keep[places] = False
            return df.filter(pl.Series(keep))

        return _finish(_files_scan(self.data, rels), predicate, needed), drop_by_place

    def _run_query(self, a: int, b: int, r: _Read, predicate, needed) -> pl.LazyFrame:
        """Rows ``[a, b)`` of the read's file (its kept Polars scan), deleted rows dropped, predicate applied."""
        deleted = r.deleted[(r.deleted >= a) & (r.deleted < b)]
        if not deleted.size:
            lf = _file_scan(self.data, r.plan.path)
            if (a, b) != (0, r.plan.rows):
                lf = lf.slice(a, b - a)
            return _finish(lf, predicate, needed)
        lf = _file_scan(self.data, r.plan.path, row_index=True)
        if (a, b) != (0, r.plan.rows):
            lf = lf.slice(a, b - a)
        row = pl.col(_ROW_INDEX).cast(pl.Int64)
        if deleted.size * 2 <= b - a:
            keep = ~row.is_in(_collection(deleted))
        else:
            alive = np.setdiff1d(np.arange(a, b, dtype=np.int64), deleted, assume_unique=True)
            keep = row.is_in(_collection(alive))
        return _finish(lf, predicate, needed, extra=keep)

    def _pyarrow(self, reads: list[_Read], predicate, needed: list[str]) -> Iterator[pl.DataFrame]:
        """Kept row groups read by pyarrow (any filesystem), deleted rows dropped, predicate applied."""
        partition = set(self.data.partitioning.schema.names) if self.data.partitioning is not None else set()
        fields = [c for c in needed if self.arrow_schema.get_field_index(c) >= 0 and c not in partition]

        def read(r: _Read) -> pl.DataFrame:
            plan = r.plan
            offsets = plan.row_group_offsets
            groups = [
                g
                for g in plan.row_groups
                if any(a < offsets[g + 1] and offsets[g] < b for a, b in r.runs)
            ]
            with self.data.lake.open_data(plan.path) as f:  # (conditional where planned from the manifest)
                table = pq.ParquetFile(f, metadata=self.data.lake.footer(plan.path)).read_row_groups(
                    groups, columns=fields
                )
            positions = np.concatenate(
                [np.arange(offsets[g], offsets[g + 1], dtype=np.int64) for g in groups]
            )
            keep = _within(positions, r.runs)
            if r.deleted.size:
                keep &= ~np.isin(positions, r.deleted, assume_unique=True)
            if not keep.all():
                table = table.filter(pa.array(keep))
            for c, value in partition_values(self.data.lake.partition_expressions.get(plan.path, pc.scalar(True))).items():
                if c in needed and c not in table.column_names:
                    t = self.arrow_schema.field(c).type
                    table = table.append_column(c, pa.repeat(pa.scalar(value, t), table.num_rows))
            df = pl.from_arrow(table)
            df = df.cast({c: self.schema[c] for c in df.columns if df.schema[c] != self.schema[c]})
            return df if predicate is None else df.filter(predicate)

        for wave in self._waves(reads):
            futures = [_pool().submit(read, r) for r in wave]
            try:
                for future in futures:
                    yield future.result()
            finally:  # Polars may stop early (a row limit): drop what was not started
                for future in futures:
                    future.cancel()


def _file_scan(data: IndexedDataset, rel: str, *, row_index: bool = False) -> pl.LazyFrame:
    """:func:`_files_scan` of one data file."""
    return _files_scan(data, [rel], row_index=row_index)


def _files_scan(data: IndexedDataset, rels: list[str], *, row_index: bool = False) -> pl.LazyFrame:
    """One ``pl.scan_parquet`` of the data files ``rels`` in order (with the row index
    column), made once per file identities (path, size, modification time and stamp,
    stat'ed by every execution) and kept in :data:`arrowidx.facts.POLARS_SCANS`: Polars
    reads the files' metadata when the scan first runs and keeps it in the scan, so files
    read again are not resolved again (~0.1-0.4 ms a file)."""
    lake = data.lake
    partitions = None if data.partitioning is None else str(data.partitioning.schema)
    missing = lake.missing_columns  # Polars' missing_columns: "raise" (its default) or "insert"
    key = ("polars scan", data.store.key, data.root, tuple(lake.identity(rel) for rel in rels), row_index, partitions, missing)

    def make() -> tuple[pl.LazyFrame, int]:
        extra = {"row_index_name": _ROW_INDEX} if row_index else {}
        paths = [join(data.root, rel) for rel in rels]
        if data.partitioning is not None:  # Hive partition columns: each file's values as literals
            scan = _partitioned_scan(data, rels, paths, row_index)
        else:
            if missing == "insert":  # every file read against the lake's columns, the missing ones NULL
                extra["schema"] = polars_schema(data, True)
            scan = pl.scan_parquet(paths if len(paths) > 1 else paths[0], glob=False, hive_partitioning=False,
                                   missing_columns=missing, **extra)  # fmt: skip
        return scan, 4096 * len(rels)

    return facts.POLARS_SCANS.get(key, make)


def _partitioned_scan(data: IndexedDataset, rels: list[str], paths: list[str], row_index: bool) -> pl.LazyFrame:
    """Files of a Hive layout, each with its partition values as columns (in the dataset's
    types), one after the other, with the row index over them all."""
    fields = [f for f in data.partitioning.schema if f.name in data.schema.names]
    replace = polars_semantics(data.lake.partitioning_spec)  # Polars: a column the file holds takes the folder's value
    extra: dict[str, Any] = {}
    if data.lake.missing_columns == "insert":  # every file read against the first file's columns, those it lacks NULL
        first = join(data.root, data.lake.files[0])
        extra = {"missing_columns": "insert", "schema": dict(pl.scan_parquet(first, glob=False, hive_partitioning=False).collect_schema())}
    frames = []
    for rel, path in zip(rels, paths):
        values = partition_values(data.lake.partition_expressions.get(rel, pc.scalar(True)))
        lf = pl.scan_parquet(path, glob=False, hive_partitioning=False, **extra)
        constants = [pl.lit(pl.from_arrow(pa.array([values.get(f.name)], f.type))).first().alias(f.name) for f in fields
                     if replace or f.name not in lf.collect_schema()]  # fmt: skip
        frames.append(lf.with_columns(constants) if constants else lf)
    scan = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
    return scan.with_row_index(_ROW_INDEX) if row_index else scan


def _narrowable(r: _Read) -> bool:
    """A file read whole that no bitmap narrowed (an inexact index, or none, kept it)."""
    return r.whole and r.plan.result.kind != "bitmap"


def _rows_read(r: _Read, rows: np.ndarray) -> _Read | None:
    """``r`` restricted to sorted file positions ``rows`` that are not deleted: those rows
    when at most ``_FEW_ROWS``, else the row groups holding them; None when none is left."""
    if r.deleted.size:  # (both sorted: np.isin / np.unique would import numpy.ma, ~10 ms, at a first query)
        rows = rows[r.deleted[np.minimum(np.searchsorted(r.deleted, rows), r.deleted.size - 1)] != rows]
    if not rows.size:
        return None
    offsets = r.plan.row_group_offsets
    if rows.size <= _FEW_ROWS:
        spans = [(int(x), int(x) + 1) for x in rows]
    else:
        groups = (g := np.searchsorted(offsets, rows, side="right") - 1)[np.concatenate(([True], g[1:] != g[:-1]))]
        spans = [(int(offsets[g]), int(offsets[g + 1])) for g in groups]
    runs = _merged(spans)
    return _Read(r.plan, runs, r.deleted[_within(r.deleted, runs)])


def _places_in_bitmaps(reads: list[_Read]) -> tuple[np.ndarray, int]:
    """Where the deleted rows of ``reads`` (files read whole) that their files' bitmaps hold
    fall among all the bitmaps' rows in file order, and how many rows the bitmaps hold."""
    places = [np.zeros(0, np.int64)]
    offset = 0
    for r in reads:
        bitmap = r.plan.result.bitmap
        if r.deleted.size:
            rows = positions_of(bitmap)
            at = np.searchsorted(rows, r.deleted)
            inside = at < rows.size
            inside[inside] = rows[at[inside]] == r.deleted[inside]  # a row outside matches nothing
            places.append(at[inside] + offset)
        offset += len(bitmap)
    return np.concatenate(places), offset


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Row ranges ``spans`` (in order, non-empty) with adjacent ones joined."""
    runs: list[tuple[int, int]] = []
    for a, b in spans:
        if runs and runs[-1][1] == a:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((a, b))
    return runs


def _within(positions: np.ndarray, runs: list[tuple[int, int]]) -> np.ndarray:
    """Whether each of ``positions`` lies in one of the row ranges ``runs``."""
    inside = np.zeros(positions.size, dtype=bool)
    for a, b in runs:
        inside |= (positions >= a) & (positions < b)
    return inside


def _pool() -> ThreadPoolExecutor:
    """Threads for the pyarrow reader (pyarrow releases the GIL while it decodes)."""
    return facts.interned(
        ("polars pyarrow reader pool", os.getpid()),
        lambda: ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 2), thread_name_prefix="arrowidx-polars"),
    )


def _batches(df: pl.DataFrame, size: int | None) -> Iterator[pl.DataFrame]:
    """``df`` in slices of at most ``size`` rows (Polars' batch size hint), cut where its
    chunks end, so Polars does not get more (smaller) chunks than the reader made."""
    if not size or df.height <= size:
        yield df
        return
    lengths = df.to_series(0).chunk_lengths() if df.width else [df.height]
    if df.width and any(df.to_series(i).chunk_lengths() != lengths for i in range(1, df.width)):
        lengths = [df.height]
    start = length = 0
    for n in lengths:
        if length and length + n > size:
            yield from df.slice(start, length).iter_slices(size)
            start, length = start + length, 0
        length += n
    if length:
        yield from df.slice(start, length).iter_slices(size)


def _check_predicate(predicate, schema: dict) -> None:
    """Raise what Polars raises filtering a frame of ``schema`` with ``predicate`` (types
    that do not compare, a time zone against none), even when the indexes decide every file
    and Polars evaluates nothing: checked on an empty frame of the schema (remembered for
    the last predicates, by ``meta.eq``)."""
    if predicate is None:
        return
    if facts.POLARS_VALID.find(lambda known: known[1] is schema and known[0].meta.eq(predicate)):
        return
    pl.DataFrame(schema=schema).filter(predicate)
    facts.POLARS_VALID.add((predicate, schema), True)


@dataclass(frozen=True)
class _ScanFilter:
    """A query's predicate as Polars' Parquet reader gets it: the conjuncts its statistics
    may judge (:func:`arrowidx.statistics.polars_parts`), pushed into the reader, and the
    rest applied to the rows read, in memory (an answer Polars' scan statistics would get
    wrong is then never asked of them)."""

    predicate: Any  # the whole predicate, as Polars gave it
    pushed: Any  # None: nothing to push
    rest: Any  # None: nothing left

    @classmethod
    def of(cls, predicate, schema) -> _ScanFilter | None:
        if predicate is None:
            return None
        pushed, rest = polars_parts(predicate, schema)
        return cls(predicate, pushed, None if rest is None else opaque_polars(rest))

    def apply(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        if self.pushed is not None:
            lf = lf.filter(self.pushed)
        return lf if self.rest is None else lf.filter(self.rest)


def _finish(lf: pl.LazyFrame, predicate: _ScanFilter | None, needed: list[str], extra=None) -> pl.LazyFrame:
    """``lf`` filtered by ``extra`` (rows to keep by row index) and the predicate, projected."""
    if extra is not None:
        lf = lf.filter(extra)
    if predicate is not None:
        lf = predicate.apply(lf)
    return lf.select(needed)


def _collection(values: np.ndarray) -> Any:
    return pl.Series(values, dtype=pl.Int64).implode()  # one list: the set to look in


def _root_names(predicate) -> list[str]:
    if predicate is None:
        return []
    try:
        return predicate.meta.root_names()
    except Exception:  # noqa: BLE001
        return []


def _groups(r: _Read) -> int:
    offsets = r.plan.row_group_offsets
    return sum(
        1
        for g in r.plan.row_groups
        if any(a < offsets[g + 1] and offsets[g] < b for a, b in r.runs)
    )
