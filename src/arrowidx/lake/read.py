"""The per-file read of the scan core, independent of where the plan came from.

Both :class:`arrowidx.lake.scan.IndexedDataset` (an arrowidx manifest) and
:class:`arrowidx.paimon.PaimonTable` (a Paimon snapshot) plan their files their own way,
then hand each surviving file here as a :class:`FileRead`: a pyarrow fragment, the row
groups to read, the index's bitmap answer, the deletion vector, and (for files written
under another schema) how to map its columns to the output. :func:`read_files` does the
rest with late materialisation:

1. the filter's columns of the kept row groups of every file whose index answer is not
   already exact (one pyarrow scan over those files);
2. the exact row mask: index bitmap AND not deleted AND the full filter
   (:func:`expression_mask`, pyarrow.dataset semantics);
3. the other projected columns, only of the row groups that still hold rows, keeping only
   those rows (a second scan, batches filtered as they arrive). pyarrow can only decode
   whole row groups, so where few rows of large row groups of a local file are kept they
   are taken by Polars' Parquet reader instead (:func:`take_with_polars`: a row-index
   filter, whose late materialisation decodes only the pages holding them).

A large local file the index kept whole (no bitmap, nothing deleted) skips all three: when
the filter has an exact Polars form (:func:`polars_filter`), Polars' Parquet reader filters
it with the predicate pushed down (:func:`filter_with_polars`), decoding the other columns
only where the filter columns matched.

:func:`statistics_groups` is Parquet's own row-group pruning (pyarrow's
``ParquetFileFragment.subset(filter=...)``), :func:`bitmap_groups` the row groups holding
rows an index selected; :func:`every_row_group_matches` tells from the footer alone that an
index would keep every row group (so that Polars need not ask it).
"""

from __future__ import annotations

import itertools
import operator
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from .. import facts
from .._lazy import lazy_module
from .._roaring import positions_of
from ..deletion import DeletionVector
from ..predicate import Compare
from ..result import bitmap_to_mask
from ..statistics import statistics_filter
from .polars_filter import polars_filter

ds = lazy_module("pyarrow.dataset")  # it imports pandas: only a pyarrow read pays that


def expression_mask(table: pa.Table | pa.RecordBatch, expr, *, threads: bool = True) -> np.ndarray:
    """Where ``expr`` is TRUE for each row of ``table`` (NULL counts as not selected).

    The one re-filter of the scan core: every row the indexes keep passes through here,
    evaluated with ``pyarrow.dataset`` filter semantics. ``threads=False`` evaluates in the
    calling thread: for a batch taken from a running pyarrow scan, whose thread pool is busy
    decoding the next batches (a threaded evaluation would queue behind them: 8 ms instead
    of 1 ms per 100,000-row batch).
    """
    if expr is None:
        return np.ones(table.num_rows, dtype=bool)
    column = ds.dataset(table).to_table(columns={"m": expr}, use_threads=threads).column("m")
    return boolean_to_numpy(pc.fill_null(column, False).combine_chunks())


def boolean_to_numpy(values: pa.BooleanArray) -> np.ndarray:
    """A null-free Arrow boolean array as a numpy bool array (its bits unpacked at once)."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
    start = values.offset
    return np.unpackbits(bits, count=start + len(values), bitorder="little")[start:].view(bool)


def row_group_offsets(fragment: ds.ParquetFileFragment) -> np.ndarray:
    """First row of each row group of a (metadata-complete) fragment, and the row count at the end."""
    return np.array([0, *itertools.accumulate(rg.num_rows for rg in fragment.row_groups)], dtype=np.int64)


def bitmap_groups(bitmap, offsets: np.ndarray) -> list[int]:
    """The row groups (of the row ranges ``offsets``) holding a row of ``bitmap``."""
    # rank(x) = number of selected rows <= x: a row group holds selected rows iff the rank
    # at its last row exceeds the rank just before its first row.
    return [
        g for g in range(len(offsets) - 1)
        if offsets[g + 1] > offsets[g]
        and bitmap.rank(int(offsets[g + 1]) - 1) > (bitmap.rank(int(offsets[g]) - 1) if offsets[g] else 0)
    ]  # fmt: skip  (per row group)


def statistics_groups(fragment: ds.ParquetFileFragment, expr: pc.Expression, schema: pa.Schema, groups: list[int]) -> list[int]:
    """``groups`` minus those pyarrow's row-group statistics and the fragment's partition
    expression rule out for ``expr`` (evaluated under ``schema``). Statistics judge only the
    part of ``expr`` they can judge soundly (:func:`arrowidx.statistics.statistics_filter`):
    pyarrow's own pruning drops NaN rows, ``0.0`` rows of ``IN (0.0)`` and rows of literals
    of another type."""
    sound = statistics_filter(expr, schema).expression
    if sound is None:
        return groups
    try:
        if len(groups) < fragment.num_row_groups:  # evaluate only the groups the index kept
            fragment = fragment.subset(row_group_ids=groups)
        kept = fragment.subset(filter=sound, schema=schema).row_groups
    except (pa.ArrowException, TypeError, ValueError):
        return groups  # pyarrow cannot prune with it (reading will say why, as pyarrow does)
    ids = {rg.id for rg in kept}
    return [g for g in groups if g in ids]


_RANGE_OPS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def is_numeric_range(node) -> bool:
    """``node`` is one range comparison (``lt``/``le``/``gt``/``ge``) of a column with a
    non-null integer or floating-point literal: what :func:`every_row_group_matches` judges."""
    if not isinstance(node, Compare) or node.op not in _RANGE_OPS or not node.literal.is_valid:
        return False
    return pa.types.is_integer(node.literal.type) or pa.types.is_floating(node.literal.type)


def every_row_group_matches(metadata, node) -> bool:
    """Whether the footer's statistics show a row matching ``node`` in every non-empty row
    group of the file, for ``node`` a range comparison (:class:`~arrowidx.predicate.Compare`
    ``lt``/``le``/``gt``/``ge``) on an integer or floating-point column: a row group's
    minimum (for ``lt``/``le``) or maximum (``gt``/``ge``) is a value one of its rows holds.

    False whenever unsure. This only decides whether an index is worth asking (its bitmap
    would keep every row group); it never prunes, so a wrong answer costs time, not rows.
    """
    if not is_numeric_range(node):
        return False
    bound = node.literal.as_py()  # (a NaN bound, or a NaN minimum, compares False)
    schema = metadata.schema
    leaf = next((j for j in range(metadata.num_columns) if schema.column(j).path == node.column), None)
    if leaf is None or schema.column(leaf).physical_type not in ("INT32", "INT64", "FLOAT", "DOUBLE"):
        return False
    holds = _RANGE_OPS[node.op]
    below = node.op in ("lt", "le")  # an upper bound: the minimum must satisfy it
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        if not group.num_rows:
            continue
        stats = group.column(leaf).statistics
        if stats is None or not stats.has_min_max:
            return False
        value = stats.min if below else stats.max
        if type(value) not in (int, float) or not holds(value, bound):
            return False
    return True


_FORKED_AFTER_POLARS = False


def polars_usable() -> bool:
    """Polars may run in this process: not in a child forked after Polars was loaded.

    Polars' thread pool does not survive ``fork`` (``multiprocessing``'s default on Linux):
    its first query in such a child waits forever. There the scan core reads with pyarrow
    alone, as ``pyarrow.dataset`` would.
    """
    return not _FORKED_AFTER_POLARS


#: The pyarrow read path uses Polars' Parquet reader (:func:`take_with_polars`,
#: :func:`filter_with_polars`) when Polars is already loaded in the process, or when the
#: column bytes it would spare pyarrow decoding reach this: importing Polars costs ~0.3 s
#: (measured, issue 39), which pyarrow spends decoding ~256 MB. A script's one needle
#: query thus never pays Polars' import; a service that reads much does, once.
POLARS_IMPORT_PAYS_BYTES = 256 << 20


def polars_pays(bytes_at_stake: int) -> bool:
    """Whether the read path may use Polars for reads that would make pyarrow decode
    ``bytes_at_stake`` bytes (see :data:`POLARS_IMPORT_PAYS_BYTES`)."""
    return polars_usable() and ("polars" in sys.modules or bytes_at_stake >= POLARS_IMPORT_PAYS_BYTES)


def _after_fork_in_child() -> None:
    global _FORKED_AFTER_POLARS
    if "polars" in sys.modules:
        _FORKED_AFTER_POLARS = True


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass
class FileRead:
    """One planned data file for :func:`read_files`.

    ``fragment(dictionary)`` returns the file's pyarrow fragment (footer loaded); with
    ``dictionary`` one whose format reads the reader's dictionary columns as dictionaries.
    ``bitmap``: the rows the index selected (None: every row); ``exact``: the bitmap is
    exactly the rows matching the filter (no re-filter). ``schema``: the schema to scan the
    file with (None: the reader's); with it, ``source_columns`` names the file's columns to
    read for output columns, and ``adapt(table, columns)`` maps what was read to the output
    columns (renamed columns, added columns as NULL, constants). ``polars_scan()``: the
    file's ``pl.scan_parquet`` made once and reused, for files that never change (Polars
    then resolves the file's metadata once, not per query; ~0.15 ms a file); None: a new
    scan per read.
    """

    name: str
    fragment: Callable[[bool], ds.ParquetFileFragment]
    row_groups: list[int]
    offsets: np.ndarray
    bitmap: Any = None
    deletion: DeletionVector | None = None
    exact: bool = False
    schema: pa.Schema | None = None
    source_columns: Callable[[list[str]], list[str]] | None = None
    adapt: Callable[[pa.Table, list[str]], pa.Table] | None = None
    dictionary: tuple[ds.ParquetFileFormat, set[str]] | None = None  # as FileReader's, for ``schema``
    polars_scan: Callable[[], Any] | None = None

    def position_mask(self, groups: list[int]) -> np.ndarray | None:
        """Index bitmap AND not deleted, over the rows of ``groups`` (None: every row)."""
        offsets = self.offsets
        keep = None
        dv = self.deletion if self.deletion is not None and self.deletion.cardinality else None
        if self.bitmap is not None:
            bitmap = self.bitmap
            if dv is not None and len(bitmap) <= _rows_of(offsets, groups) // 8:
                # few rows selected: drop the deleted ones from them, not from every row
                bitmap, dv = dv.kept(bitmap), None
            keep = _bitmap_mask(bitmap, offsets, groups)
        if dv is not None:
            alive = np.concatenate(
                [dv.keep_mask(int(offsets[g]), int(offsets[g + 1] - offsets[g])).to_numpy(zero_copy_only=False) for g in groups]
            )
            keep = alive if keep is None else keep & alive
        return keep


@dataclass
class FileReader:
    """Reads :class:`FileRead` s with late materialisation (see the module docstring).

    ``schema``: the output schema every read is mapped to (the dataset schema);
    ``dictionary``: a format reading the string columns ``dictionary[1]`` as dictionaries,
    used when a mask drops rows (so dropped rows are never decoded to strings).
    """

    filesystem: pafs.FileSystem
    schema: pa.Schema
    format: ds.ParquetFileFormat
    dictionary: tuple[ds.ParquetFileFormat, set[str]] | None = None

    def __post_init__(self) -> None:
        # Polars reads local files with pyarrow's default Parquet options only
        self._polars_can_read = isinstance(self.filesystem, pafs.LocalFileSystem) and (
            self.format.read_options.equals(ds.ParquetFileFormat().read_options)
        )

    @property
    def polars_takes(self) -> bool:
        """Polars' Parquet reader may take rows of these files (asked per read: a reader
        made before a fork may be used in the child, see :func:`polars_usable`)."""
        return self._polars_can_read and polars_usable()

    def read(
        self, reads: list[FileRead], expr, columns: list[str] | None, filter_columns: list[str], out_schema: pa.Schema,
        *, one_pass: bool = False,
    ) -> Iterator[pa.Table | None]:
        """Per read (in order), its rows matching ``expr`` minus deleted rows (or None).

        ``filter_columns``: the columns ``expr`` reads (read first, for the mask);
        ``out_schema``: the schema of the tables returned (``columns`` of :attr:`schema`).
        ``one_pass``: the indexes pruned nothing, so the filter is probably not selective:
        reads without an index bitmap are read in one pass, every column at once, filtered
        batch by batch as they arrive (what ``pyarrow.dataset`` itself does, plus the
        deletions), instead of filter columns first.
        """  # fmt: skip
        out = list(self.schema.names) if columns is None else list(columns)
        reads = [r for r in reads if r.row_groups]
        if one_pass and expr is not None:
            whole = [r for r in reads if not r.exact and r.bitmap is None and r.schema is None]
            if whole:
                yield from self._read_one_pass(reads, whole, expr, out, filter_columns, out_schema)
                return
        late = [r for r in reads if expr is not None and not r.exact]
        filtered = self._filter_with_polars(late, expr, out, filter_columns)  # read whole, by Polars
        every, reads = reads, [r for r in reads if id(r) not in filtered]
        late = [r for r in late if id(r) not in filtered]
        is_late = {id(r) for r in late}
        # (a filter reading no column, e.g. a constant, still needs the row count: one column)
        names = (list(filter_columns) or self.schema.names[:1]) if late else []
        rest = [c for c in out if c not in names]
        heads: dict[int, pa.Table] = {}
        live: dict[int, tuple[list[int], np.ndarray | None]] = {}
        for r in reads:
            if id(r) not in is_late:
                keep = r.position_mask(r.row_groups)
                live[id(r)] = (r.row_groups, None) if keep is None else _live_groups(r.offsets, r.row_groups, keep)
        firsts = self.scan([(r, r.row_groups) for r in late], names)
        masks = _split(expression_mask(pa.concat_tables(firsts), expr), [t.num_rows for t in firsts]) if late else []
        for r, first, mask in zip(late, firsts, masks):
            keep = r.position_mask(r.row_groups)
            if keep is not None:
                mask &= keep
            live[id(r)] = _live_groups(r.offsets, r.row_groups, mask)
            heads[id(r)] = first.filter(pa.array(mask)).select([c for c in names if c in out])
        exact_reads = [(r, live[id(r)][0]) for r in reads if id(r) not in is_late and live[id(r)][0]]
        late_reads = [(r, live[id(r)][0]) for r in late if live[id(r)][0] and rest]
        tails: dict[int, pa.Table] = {}
        for pairs, cols in ((exact_reads, out), (late_reads, rest)):
            masks = [live[id(r)][1] for r, _ in pairs]
            for (r, _), table in zip(pairs, self.scan(pairs, cols, masks)):
                tails[id(r)] = table
        for r in every:
            if id(r) in filtered:
                table = filtered[id(r)]
                yield _as_schema(table.select(out), out_schema) if table is not None and table.num_rows else None
            elif not live[id(r)][0]:
                yield None
            elif id(r) not in is_late:
                yield tails[id(r)]
            elif not rest:
                yield heads[id(r)].select(out)
            else:
                head, tail = heads[id(r)], tails[id(r)]
                arrays = {c: head.column(c) for c in head.column_names}
                arrays.update({c: tail.column(c) for c in rest})
                yield pa.table([arrays[c] for c in out], schema=out_schema)

    def _filter_with_polars(self, late: list[FileRead], expr, out: list[str], filter_columns: list[str]) -> dict[int, pa.Table | None]:
        """:func:`filter_with_polars` of the ``late`` reads, by ``id`` of the read (empty
        when Polars cannot read these files or the filter has no exact Polars form)."""
        if not self.polars_takes or not late or not filter_columns:
            return {}
        whole = [r for r in late if r.bitmap is None and _rows_of(r.offsets, r.row_groups) >= FILTER_MIN_ROWS]
        if not whole:
            return {}
        if "polars" not in sys.modules and not polars_pays(
            sum(column_bytes(r.fragment(False).metadata, r.row_groups, out) for r in whole if r.schema is None)
        ):
            return {}
        predicate = polars_filter(expr, self.schema)
        if predicate is None:
            return {}
        found = filter_with_polars(late, predicate, filter_columns, out, self.schema)
        return {id(late[i]): table for i, table in found.items()}

    def _read_one_pass(self, reads, whole, expr, out, filter_columns, out_schema) -> Iterator[pa.Table | None]:
        """:meth:`read` with the reads in ``whole`` scanned once (filter applied per batch)
        and the others (index bitmaps, exact answers, own schemas) read as usual."""
        chosen = {id(r) for r in whole}
        names = list(dict.fromkeys(out + [c for c in filter_columns if c in self.schema.names]))
        masks = [r.position_mask(r.row_groups) for r in whole]
        tables = iter(self._scan_one([(r, r.row_groups) for r in whole], names, masks, self.schema, None, expr))
        rest = iter(self.read([r for r in reads if id(r) not in chosen], expr, out, filter_columns, out_schema))
        for r in reads:
            if id(r) not in chosen:
                yield next(rest)
                continue
            table = next(tables)
            yield table.select(out).cast(out_schema) if table.num_rows else None

    def scan(
        self, reads: list[tuple[FileRead, list[int]]], columns: list[str], masks: list[np.ndarray | None] | None = None
    ) -> list[pa.Table]:
        """``columns`` of the given row groups of each file, one table per file in order.

        Files scanned with the reader's schema share one pyarrow scan (its own parallel
        read-ahead); files with a schema of their own are scanned per schema and mapped by
        their ``adapt``. With ``masks`` (one per file, over the rows read, or None), each
        batch is filtered as it arrives, so only the kept rows are ever held."""
        if not reads:
            return []
        out: list[pa.Table | None] = [None] * len(reads)
        if masks is not None and self.polars_takes:
            for i, table in take_with_polars(reads, columns, masks, self.schema).items():
                out[i] = table
        groups: dict[int, list[int]] = {}  # scan schema -> positions in reads
        schemas: dict[int, pa.Schema | None] = {}
        for i, (r, _) in enumerate(reads):
            if out[i] is not None:
                continue
            groups.setdefault(id(r.schema), []).append(i)
            schemas[id(r.schema)] = r.schema
        for key, positions in groups.items():
            part = [reads[i] for i in positions]
            part_masks = None if masks is None else [masks[i] for i in positions]
            if schemas[key] is None:
                tables = self._scan_one(part, columns, part_masks, self.schema, self.dictionary)
            else:
                r0 = part[0][0]
                source = r0.source_columns(columns) if r0.source_columns else columns
                tables = self._scan_one(part, source, part_masks, schemas[key], r0.dictionary)
                tables = [r.adapt(t, columns) if r.adapt else t for (r, _), t in zip(part, tables)]
            for i, t in zip(positions, tables):
                out[i] = t
        return out  # type: ignore[return-value]

    def _scan_one(self, reads, columns, masks, schema: pa.Schema, dictionary_format, expr=None) -> list[pa.Table]:
        """One pyarrow scan of ``columns`` over files sharing the scan ``schema``
        (``dictionary_format``: the format reading its dictionary columns as dictionaries, and those).
        With ``expr``, each batch keeps only the rows where it is TRUE (``columns`` must hold its fields)."""
        as_dictionary = dictionary_format[1] if dictionary_format is not None else set()
        dictionary = masks is not None and bool(as_dictionary & set(columns)) and (
            sum(_rows_of(r.offsets, groups) for r, groups in reads) >= DICTIONARY_MIN_ROWS
        )
        read_schema = schema
        if dictionary:
            read_schema = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in as_dictionary else f for f in schema])
        fragments = [r.fragment(dictionary).subset(row_group_ids=groups) for r, groups in reads]
        fmt = dictionary_format[0] if dictionary else self.format
        data = ds.FileSystemDataset(fragments, read_schema, fmt, self.filesystem)
        index = {f.path: i for i, f in enumerate(fragments)}
        batches: list[list[pa.RecordBatch]] = [[] for _ in fragments]
        seen = [0] * len(fragments)
        for tagged in data.scanner(columns=columns).scan_batches():
            i, batch = index[tagged.fragment.path], tagged.record_batch
            mask = None if masks is None else masks[i]
            m = None
            if mask is not None:
                m = mask[seen[i] : seen[i] + batch.num_rows]
                seen[i] += batch.num_rows
            if expr is not None:
                matches = expression_mask(batch, expr, threads=False)
                m = matches if m is None else m & matches
            if m is not None:
                if not m.any():
                    continue
                if not m.all():
                    batch = batch.filter(pa.array(m))
            batches[i].append(batch)
        scanned = pa.schema([read_schema.field(c) for c in columns])
        if not dictionary:
            return [pa.Table.from_batches(b, schema=scanned) for b in batches]
        plain = pa.schema([schema.field(c) for c in columns])
        return [pa.Table.from_batches(b, schema=scanned).cast(plain) for b in batches]


#: A masked scan reads dictionary-encoded strings as dictionaries (dropped rows never decoded
#: to strings) when it covers at least this many rows; below, decoding them costs less than
#: the dictionary read and the cast back (~0.3 ms for one 2,000-row group, measured).
DICTIONARY_MIN_ROWS = 16_384

#: Rows of a local file are taken by Polars (:func:`take_with_polars`) when the row groups
#: they lie in hold at least this many rows and at most 1/``TAKE_SHARE`` of them are taken,
#: and pyarrow would decode at least ``TAKE_MIN_BYTES`` of the columns read there.
#: Measured per file (2 cores): one row of a 100,000-row group of the demo lake 4.6 ms
#: against 6.2 ms for pyarrow's decode of the group; 1 % of the demo lake's rows 190 ms
#: against 400 ms; below ~30,000 rows per group the two are even, and Polars' fixed cost
#: per file (~1-1.5 ms) loses on lakes of small files and on cheap columns (the demo lake's
#: rare ``status``, 190 kB a file: 59 ms against pyarrow's 48 ms over 20 files).
TAKE_MIN_ROWS = 32_768
TAKE_SHARE = 8
TAKE_MIN_BYTES = 1 << 20
#: At most this many rows of a file are taken as one-row slices, without a row index:
#: 0.8-1.1 ms against ~1.2 ms for one row filtered out of its row group by row index
#: (pl.collect_all of either, called alone; 1.8-1.9 against 2.3-2.6 ms inside a Paimon
#: needle query).
TAKE_SLICED_ROWS = 2
_ROW = "__arrowidx_row"


def take_with_polars(
    reads: list[tuple[FileRead, list[int]]], columns: list[str], masks: list[np.ndarray | None], schema: pa.Schema
) -> dict[int, pa.Table]:
    """The rows ``masks`` keep (over the rows of the given row groups) of the ``reads``
    Polars can take better than pyarrow, by position in ``reads``: one Polars scan per file
    filtering its row index to those rows, or slicing each of at most ``TAKE_SLICED_ROWS``
    rows out (local paths; reads not worth it or holding a
    column whose type could come back different are left out, as is every read if Polars
    fails). Tables are as :meth:`FileReader.scan` returns them: ``columns`` under
    ``schema``, or a file's own schema mapped by its ``adapt``."""
    jobs = []
    stake = 0  # bytes pyarrow would decode for these reads
    for i, ((r, groups), mask) in enumerate(zip(reads, masks)):
        if mask is None or mask.size < TAKE_MIN_ROWS:
            continue
        live = int(np.count_nonzero(mask))
        if not live or live * TAKE_SHARE > mask.size:
            continue
        own = r.schema is not None
        source = r.source_columns(columns) if own and r.source_columns else list(columns)
        fragment = r.fragment(False)
        decoded = column_bytes(fragment.metadata, groups, source)
        if decoded < TAKE_MIN_BYTES:
            continue
        types = _fragment_types(fragment, r.schema if own else schema, source)[0]
        if types is None:
            continue
        rows = _positions(r.offsets, groups, mask)
        if rows[-1] >= 2**32 - 1:
            continue  # beyond Polars' 32-bit row index
        jobs.append((i, r, fragment.path, source, types, rows))
        stake += decoded
    if not jobs or not polars_pays(stake):
        return {}
    import polars as pl

    frames = []
    for _, r, path, source, _, rows in jobs:
        if rows.size <= TAKE_SLICED_ROWS:  # a needle: each row sliced out, no row index
            parts = [_polars_scan(r, path).slice(int(x), 1) for x in rows]
            frames.append((parts[0] if len(parts) == 1 else pl.concat(parts)).select(source))
            continue
        lf = pl.scan_parquet(path, glob=False, hive_partitioning=False, row_index_name=_ROW)
        lf = lf.slice(int(rows[0]), int(rows[-1]) - int(rows[0]) + 1)  # only the row groups spanned
        frames.append(lf.filter(pl.col(_ROW).is_in(pl.Series(rows, dtype=pl.UInt32).implode())).select(source))
    try:
        results = pl.collect_all(frames)
    except (pl.exceptions.PolarsError, OSError):
        return {}
    out: dict[int, pa.Table] = {}
    for (i, r, _, source, types, rows), df in zip(jobs, results):
        if df.height != rows.size:
            continue  # not the rows asked for: pyarrow reads the file
        arrays = [_as_type(df.get_column(c).to_arrow(), t) for c, t in zip(source, types)]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(list(zip(source, types))))
        out[i] = r.adapt(table, columns) if r.schema is not None and r.adapt else table
    return out


#: A file the index kept whole (no bitmap, nothing deleted) is filtered by Polars' Parquet
#: reader, predicate pushed down, when its kept row groups hold at least this many rows
#: (below it Polars' fixed cost per file loses to one pyarrow scan of many small files).
#: Measured: the clustered benchmark lake's bloom-only needle on `id` (2 files of 500,000
#: rows kept, every column) 20.6 ms against 26.5 ms for pyarrow's filter column first,
#: then the row; a broad filter over such files costs the same either way.
FILTER_MIN_ROWS = TAKE_MIN_ROWS


def filter_with_polars(
    reads: list[FileRead], predicate, filter_columns: list[str], columns: list[str], schema: pa.Schema
) -> dict[int, pa.Table | None]:
    """The rows matching ``predicate`` (:func:`polars_filter`) of the ``reads`` Polars reads
    whole with it pushed down, by position in ``reads``: files the index kept without a
    bitmap, nothing deleted, whose filter and output columns Polars reads back exactly
    (under their names in ``schema``), large enough (``FILTER_MIN_ROWS``); the others, or
    every read if Polars fails, are left out. Tables are ``columns`` under ``schema``; None
    where no row matched."""
    jobs = []
    for i, r in enumerate(reads):
        if r.bitmap is not None or r.exact or (r.deletion is not None and r.deletion.cardinality):
            continue
        if _rows_of(r.offsets, r.row_groups) < FILTER_MIN_ROWS:
            continue
        own = r.schema is not None
        source = r.source_columns(columns) if own and r.source_columns else list(columns)
        if own and (r.source_columns is None or r.source_columns(filter_columns) != list(filter_columns)):
            continue  # a filter column renamed in, or missing from, the file
        fragment = r.fragment(False)
        types, whole = _fragment_types(fragment, r.schema if own else schema, source)
        if types is None or _fragment_types(fragment, schema, filter_columns)[0] is None:
            continue
        jobs.append((i, r, fragment.path, source, types, whole))
    if not jobs:
        return {}
    import polars as pl

    # (a select costs ~20 us a file: left out when the file's columns are ``source``, in order)
    frames = [
        _polars_scan(r, path).filter(predicate) if whole else _polars_scan(r, path).filter(predicate).select(source)
        for _, r, path, source, _, whole in jobs
    ]
    try:
        results = pl.collect_all(frames)
    except (pl.exceptions.PolarsError, OSError):
        return {}
    out: dict[int, pa.Table | None] = {}
    for (i, r, _, source, types, _), df in zip(jobs, results):
        if not df.height:
            out[i] = None  # no row matched: nothing to convert
            continue
        arrays = [_as_type(df.get_column(c).to_arrow(), t) for c, t in zip(source, types)]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(list(zip(source, types))))
        out[i] = r.adapt(table, columns) if r.schema is not None and r.adapt else table
    return out


def _as_type(values: pa.Array, to_type: pa.DataType) -> pa.Array:
    """``values.cast(to_type)``, without the call when the type is already ``to_type``."""
    return values if values.type == to_type else values.cast(to_type)


def _as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table.cast(schema)``, without casting column by column when ``table`` already has
    exactly ``schema`` (metadata included) and no field is non-nullable (whose cast checks
    for NULLs)."""
    if table.schema.equals(schema, check_metadata=True) and all(f.nullable for f in schema):
        return table
    return table.cast(schema)


def _polars_scan(r: FileRead, path: str):
    """The read's Polars scan of the file at ``path``: its own (:attr:`FileRead.polars_scan`), else a new one."""
    if r.polars_scan is not None:
        return r.polars_scan()
    import polars as pl

    return pl.scan_parquet(path, glob=False, hive_partitioning=False)


def column_bytes(metadata, groups: list[int], columns: list[str], *, compressed: bool = False) -> int:
    """Bytes of ``columns`` (and their nested leaves) in row groups ``groups``, from the
    footer: uncompressed, what pyarrow decodes to read them, or ``compressed``, what is
    read from storage."""
    wanted = set(columns)
    schema = metadata.schema
    leaves = [j for j in range(metadata.num_columns) if schema.column(j).path.split(".", 1)[0] in wanted]
    total = 0
    for g in groups:
        group = metadata.row_group(g)
        chunks = (group.column(j) for j in leaves)
        total += sum(c.total_compressed_size if compressed else c.total_uncompressed_size for c in chunks)
    return total


def _fragment_types(fragment: ds.ParquetFileFragment, schema: pa.Schema, columns: list[str]) -> tuple[list[pa.DataType] | None, bool]:
    """:func:`_polars_types` of the fragment's file, and whether ``columns`` are all of its
    columns in file order (a Polars scan of it then needs no select). Remembered per
    fragment and schema object (~50 us a file per query otherwise): a fragment's physical
    schema is loaded once and never changes, and the entry holds both objects, so their
    ``id`` cannot be reused while it stands."""
    key = ("fragment types", id(fragment), id(schema), tuple(columns))

    def make() -> tuple[tuple, int]:
        physical = fragment.physical_schema
        return (fragment, schema, _polars_types(physical, schema, columns), list(columns) == physical.names), 256

    hit = facts.DERIVED.get(key, make)  # (kept in arrowidx.facts)
    if hit[0] is not fragment or hit[1] is not schema:  # (not kept: ARROWIDX_CACHE_MB=0)
        hit = make()[0]
    return hit[2], hit[3]


def _polars_types(physical: pa.Schema, schema: pa.Schema, columns: list[str]) -> list[pa.DataType] | None:
    """The types of ``columns`` when Polars reads each of them back to exactly what pyarrow
    would (a plain column of the file, of the same type in ``schema``, of a type Polars
    holds losslessly), else None."""
    types = []
    for c in columns:
        i = physical.get_field_index(c)
        if i < 0 or schema.get_field_index(c) < 0:
            return None  # missing from the file (NULL), a partition column, or ambiguous
        t = physical.field(i).type
        if t != schema.field(c).type or not _polars_holds(t):
            return None
        types.append(t)
    return types


def _polars_holds(t: pa.DataType) -> bool:
    """Polars reads a Parquet column of Arrow type ``t`` to the same values (cast back to ``t``)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_float32(t)
        or pa.types.is_float64(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_date32(t)
        or (pa.types.is_timestamp(t) and t.unit in ("ms", "us"))  # INT96 / ns: range semantics differ
        or pa.types.is_decimal128(t)
    )


def _positions(offsets: np.ndarray, groups: list[int], mask: np.ndarray) -> np.ndarray:
    """File row positions of the rows ``mask`` keeps (``mask`` over the rows of ``groups``)."""
    first, sizes, starts = _layout(offsets, groups)
    kept = np.flatnonzero(mask)
    which = np.searchsorted(starts, kept, side="right") - 1
    return first[which] + kept - starts[which]


def _layout(offsets: np.ndarray, groups: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the rows of ``groups`` read one after another: each group's first file row, its
    row count, and where it starts in the concatenation."""
    first = np.asarray([offsets[g] for g in groups], dtype=np.int64)
    sizes = np.asarray([offsets[g + 1] - offsets[g] for g in groups], dtype=np.int64)
    return first, sizes, np.concatenate(([0], np.cumsum(sizes)[:-1]))


def _slices(values: np.ndarray, offsets: np.ndarray, groups: list[int]) -> np.ndarray:
    """``values`` over the rows of ``groups`` (row ranges from ``offsets``), concatenated."""
    if len(groups) == 1:
        g = groups[0]
        return values[offsets[g] : offsets[g + 1]]
    return np.concatenate([values[offsets[g] : offsets[g + 1]] for g in groups])


def _rows_of(offsets: np.ndarray, groups: list[int]) -> int:
    return int(sum(int(offsets[g + 1] - offsets[g]) for g in groups))


def _bitmap_mask(bitmap, offsets: np.ndarray, groups: list[int]) -> np.ndarray:
    """The bitmap's rows as a mask over the rows of ``groups`` (concatenated)."""
    first, sizes, starts = _layout(offsets, groups)
    total = int(sizes.sum())
    mask = np.zeros(total, dtype=bool)
    if len(bitmap) <= total // 8:  # few rows: place them one by one (vectorised)
        rows = positions_of(bitmap).astype(np.int64)
        which = np.searchsorted(first, rows, side="right") - 1
        ok = (which >= 0) & (rows < first[np.maximum(which, 0)] + sizes[np.maximum(which, 0)])
        mask[starts[which[ok]] + rows[ok] - first[which[ok]]] = True
        return mask
    full = bitmap_to_mask(bitmap, int(offsets[-1])).to_numpy(zero_copy_only=False)
    return _slices(full, offsets, groups)


def _live_groups(offsets: np.ndarray, groups: list[int], mask: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The groups where ``mask`` (over the rows of ``groups``) keeps a row, and the mask
    over the rows of those groups only."""
    _, sizes, starts = _layout(offsets, groups)
    live = np.logical_or.reduceat(mask, starts) if mask.size else np.zeros(len(groups), bool)
    if live.all():
        return groups, mask
    return [g for g, k in zip(groups, live) if k], mask[np.repeat(live, sizes)]


def _split(values: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    return np.split(values, np.cumsum(lengths)[:-1]) if lengths else []
