"""Reading an indexed Parquet dataset: prune files and row groups with the indexes, then
apply row masks, deletion vectors and the full filter.

Per data file (in path order, like ``pyarrow.dataset``):

1. A file whose content changed since it was indexed is *stale*: its index is ignored and
   the file is read in full (if rows were deleted from it: ``StaleDeletionError``).
2. Otherwise its container answers the filter: SKIP means the file is never opened; a
   bitmap means only the row groups holding selected rows are read (row-group row ranges
   come from the Parquet footer), then the rows outside the bitmap are dropped.
3. Deleted positions are dropped, and the complete filter is applied to what is left
   (bloom filters are inexact and an index may not answer every part of a filter).

So the result equals ``pyarrow.dataset.dataset(root).to_table(filter=, columns=)`` minus
deleted rows, row for row.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..deletion import DeletionVector
from ..errors import ArrowIdxError
from ..file_index import FileIndex
from ..predicate import bind, is_exact
from ..result import REMAIN, IndexResult
from .footer import Footer, read_footer
from .layout import (
    FileEntry,
    Manifest,
    check_stale_option,
    discover,
    entry_is_fresh,
    file_infos,
    join,
    load_deletion_vector,
    load_index_bytes,
    load_manifest,
    resolve,
)


def expression_mask(table: pa.Table, expr) -> np.ndarray:
    """Where ``expr`` is TRUE for each row of ``table`` (NULL counts as not selected)."""
    if expr is None:
        return np.ones(table.num_rows, dtype=bool)
    column = ds.dataset(table).to_table(columns={"m": expr}).column("m")
    mask = column.to_numpy(zero_copy_only=False)
    if column.null_count:
        mask = np.where(pa.compute.is_null(column).to_numpy(zero_copy_only=False), False, mask)
    return mask.astype(bool, copy=False)


@dataclass
class FilePlan:
    """What the indexes decided for one data file."""

    path: str  # relative to the dataset root
    rows: int
    status: str  # skipped | bitmap | remain | stale | no index | fallback
    result: IndexResult = field(default_factory=lambda: REMAIN)
    index_types: list[str] = field(default_factory=list)
    row_groups: list[int] = field(default_factory=list)
    row_groups_total: int = 0
    rows_selected: int | None = None
    deleted: int = 0
    note: str = ""
    row_group_offsets: np.ndarray | None = None
    exact: bool = False  # the bitmap is exactly the matching rows: no need to filter again

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"


@dataclass
class Explain:
    """Per-file decisions for one filter, and the totals. ``print()`` it for a table."""

    filter: str
    files: list[FilePlan]

    @property
    def files_skipped(self) -> int:
        return sum(p.skipped for p in self.files)

    @property
    def rows_total(self) -> int:
        return sum(p.rows for p in self.files)

    @property
    def rows_read(self) -> int:
        """Rows in the row groups that will be read."""
        total = 0
        for p in self.files:
            if p.skipped:
                continue
            if p.row_group_offsets is None:
                total += p.rows
            else:
                offs = p.row_group_offsets
                total += int(sum(offs[g + 1] - offs[g] for g in p.row_groups))
        return total

    def to_dict(self) -> dict:
        return {
            "filter": self.filter,
            "files": [
                {
                    "path": p.path, "status": p.status, "index_types": p.index_types, "rows": p.rows,
                    "rows_selected": p.rows_selected, "row_groups_read": len(p.row_groups),
                    "row_groups_total": p.row_groups_total, "deleted": p.deleted, "note": p.note,
                }  # fmt: skip
                for p in self.files
            ],
            "files_total": len(self.files),
            "files_skipped": self.files_skipped,
            "rows_total": self.rows_total,
            "rows_read": self.rows_read,
        }

    def __str__(self) -> str:
        lines = [f"filter: {self.filter}"]
        lines.append(f"{'file':32} {'decision':10} {'by':26} {'rows':>10} {'selected':>10} {'row groups':>11} {'deleted':>8}")
        for p in self.files:
            selected = "-" if p.rows_selected is None else f"{p.rows_selected:,}"
            groups = "-" if p.skipped else f"{len(p.row_groups)}/{p.row_groups_total}"
            by = ",".join(p.index_types) or p.note
            lines.append(f"{p.path[-32:]:32} {p.status:10} {by[:26]:26} {p.rows:>10,} {selected:>10} {groups:>11} {p.deleted:>8,}")
        lines.append(
            f"total: {len(self.files)} files, {self.files_skipped} skipped; rows read {self.rows_read:,}"
            f" of {self.rows_total:,}"
        )
        return "\n".join(lines)


class IndexedDataset:
    """A Parquet dataset read through its arrowidx manifest. Create with :func:`dataset`.

    ``on_corrupt``: ``"raise"`` (default) raises the ``CorruptIndexError`` of a damaged
    index or deletion file; ``"fallback"`` reads that file in full instead (a damaged
    deletion file still raises: ignoring it would return deleted rows).

    ``on_stale_deletions``: ``"raise"`` (default) raises ``StaleDeletionError`` for a data
    file whose content changed after rows were deleted from it; ``"read-full"`` reads it in
    full as it is now (its deleted rows come back).
    """

    def __init__(self, filesystem: pafs.FileSystem, root: str, *, on_corrupt: str = "raise", threads: int = 2,
                 on_stale_deletions: str = "raise"):  # fmt: skip
        if on_corrupt not in ("raise", "fallback"):
            raise ValueError("on_corrupt must be 'raise' or 'fallback'")
        self.on_stale_deletions = check_stale_option(on_stale_deletions)
        self.fs = filesystem
        self.root = root
        self.on_corrupt = on_corrupt
        self.threads = threads
        self.manifest: Manifest = load_manifest(filesystem, root)
        self._files = self._discover()
        self._lock = threading.Lock()
        self._indexes: dict[tuple, FileIndex] = {}
        self._footers: dict[tuple, pq.FileMetaData] = {}
        self._deletions: dict[tuple, DeletionVector] = {}
        self._deletion_files: dict[str, bytes] = {}
        self._infos: dict[str, pafs.FileInfo] = {}
        self._schema: pa.Schema | None = None
        self._warm = False

    # -- files -------------------------------------------------------------------------------
    @property
    def files(self) -> list[str]:
        """Data files (relative paths) in read order, as found when opened (or refreshed).

        Like ``pyarrow.dataset.dataset(root)``: every Parquet file under the root, whether
        the manifest knows it or not (files added after the last build are read in full).
        """
        return self._files

    def _discover(self) -> list[str]:
        return sorted(posixpath.relpath(p, self.root) for p in discover(self.fs, self.root))

    def refresh(self) -> None:
        """Re-read the committed manifest, the file list and the files' sizes and times."""
        self.manifest = load_manifest(self.fs, self.root)
        self._files = self._discover()
        self._infos = {}
        self._warm = False

    def _info(self, rel: str) -> pafs.FileInfo:
        if rel not in self._infos:
            self._infos.update(file_infos(self.fs, self.root, self.files))
        return self._infos[rel]

    def _fresh(self, entry: FileEntry | None) -> bool:
        if entry is None:
            return False
        return entry_is_fresh(entry, self._info(entry.path), self.read_footer(entry.path),
                              on_stale_deletions=self.on_stale_deletions)  # fmt: skip

    def _key(self, rel: str) -> tuple:
        info = self._info(rel)
        return (rel, info.size, info.mtime_ns)

    def read_footer(self, rel: str) -> Footer:
        """The data file's footer and fingerprint, read once per file identity."""
        key = self._key(rel)
        if key not in self._footers:
            self._footers[key] = read_footer(self.fs, join(self.root, rel), self._info(rel).size)
        return self._footers[key]

    def footer(self, rel: str) -> pq.FileMetaData:
        return self.read_footer(rel).metadata

    def row_count(self, rel: str) -> int:
        return self.footer(rel).num_rows

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema, as pyarrow.dataset infers it from the first file."""
        if self._schema is None:
            if not self.files:
                raise ArrowIdxError(f"{self.root} has no indexed data files; run arrowidx.build first")
            self._schema = self.footer(self.files[0]).schema.to_arrow_schema()
        return self._schema

    def bind_columns(self, expr) -> set[str]:
        return bind(expr, self.schema).columns() | _expression_fields(expr, self.schema)

    # -- indexes and deletion vectors ------------------------------------------------------------
    def file_index(self, entry: FileEntry) -> FileIndex | None:
        """The opened container of a fresh file (cached), or None if it has none."""
        ref = entry.index
        if ref is None:
            return None
        key = (*self._key(entry.path), ref.size, ref.file, ref.embedded is not None)
        with self._lock:
            cached = self._indexes.get(key)
        if cached is not None:
            return cached
        source = f"{entry.path} (embedded index)" if ref.embedded is not None else join(self.root, ref.file)
        data = load_index_bytes(self.fs, self.root, entry)
        index = FileIndex(data, ref.arrow_schema(), name=source) if data else None
        with self._lock:
            self._indexes[key] = index
        return index

    def deletion_vector(self, rel: str) -> DeletionVector | None:
        """The deletion vector of a fresh file (None if it has none or is stale)."""
        entry = self.manifest.files.get(rel)
        if entry is None or entry.deletion is None or not self._fresh(entry):
            return None
        ref = entry.deletion
        key = (*self._key(rel), ref.file, ref.offset)
        with self._lock:
            cached = self._deletions.get(key)
        if cached is None:
            cached = load_deletion_vector(self.fs, self.root, entry, self._deletion_files)
            with self._lock:
                self._deletions[key] = cached
        return cached

    # -- planning --------------------------------------------------------------------------------
    def plan_file(self, rel: str, expr, bound: dict | None = None) -> FilePlan:
        """Ask one file's index about ``expr``; decide which row groups to read.

        ``bound`` caches ``expr`` bound per index schema across the files of one plan, so
        the Expression is parsed once per query rather than once per file.
        """
        entry = self.manifest.files.get(rel)
        plan = FilePlan(rel, entry.rows if entry else 0, "remain")
        if entry is None:
            plan.status, plan.note = "no index", "not in the manifest"
            plan.rows = self.row_count(rel)
        elif not self._fresh(entry):
            plan.status, plan.note = "stale", "changed since indexed"
            plan.rows = self.row_count(rel)
        elif entry.index is None:
            plan.status, plan.note = "no index", ""
        elif expr is not None:
            try:
                index = self.file_index(entry)
                if index is None:
                    plan.status, plan.note = "no index", "index file rewritten"
                else:
                    bound = {} if bound is None else bound
                    node = bound.get(entry.index.schema)
                    if node is None:
                        node = bound[entry.index.schema] = bind(expr, index.schema)
                    plan.result = index.evaluate(node)
                    plan.index_types = sorted({t for c in node.columns() for t in index.columns.get(c, [])})
                    plan.exact = plan.result.kind == "bitmap" and is_exact(node, index.schema, index.readers)
            except ArrowIdxError:
                if self.on_corrupt == "raise":
                    raise
                plan.status, plan.note = "fallback", "corrupt index ignored"
        if plan.status == "remain" and not plan.result.remain:
            plan.status = "skipped"
            plan.rows_selected = 0
            return plan
        if plan.result.kind == "bitmap":
            plan.status = "bitmap"
            plan.rows_selected = len(plan.result.bitmap)
        dv = self.deletion_vector(rel)
        plan.deleted = dv.cardinality if dv is not None else 0
        footer = self.footer(rel)
        counts = [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        plan.row_group_offsets = offsets
        plan.row_groups_total = len(counts)
        if plan.result.kind == "bitmap":
            bitmap = plan.result.bitmap
            # rank(x) = number of selected rows <= x: a row group holds selected rows iff
            # the rank at its last row exceeds the rank just before its first row.
            plan.row_groups = [
                g for g in range(len(counts))
                if counts[g] and bitmap.rank(int(offsets[g + 1]) - 1) > (bitmap.rank(int(offsets[g]) - 1) if offsets[g] else 0)
            ]  # fmt: skip  (per row group)
            if not plan.row_groups:
                plan.status = "skipped"
        else:
            plan.row_groups = [g for g in range(len(counts)) if counts[g]]
        return plan

    def plan(self, expr) -> list[FilePlan]:
        """One :class:`FilePlan` per data file, in read order.

        The first plan loads index files on a thread pool; once they are cached, planning
        runs inline (a pool costs more than evaluating warm indexes).
        """
        self._infos = {}
        bound: dict = {}
        if self._warm:
            return [self.plan_file(rel, expr, bound) for rel in self.files]
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            plans = list(pool.map(lambda rel: self.plan_file(rel, expr, bound), self.files))
        self._warm = expr is not None
        return plans

    def explain(self, filter=None) -> Explain:
        """What the indexes do for ``filter``: per file, skipped by which index, rows and row groups kept."""
        plans = self.plan(filter)
        for plan in plans:  # name the index types that, alone, rule a skipped file out
            entry = self.manifest.files.get(plan.path)
            if plan.skipped and plan.index_types and entry is not None:
                index = self.file_index(entry)
                if index is not None:
                    plan.index_types = index.deciding_index_types(filter) or plan.index_types
        return Explain(" ".join(str(filter).split()), plans)

    # -- reading ---------------------------------------------------------------------------------
    def read_rows(
        self, plan: FilePlan, columns: list[str] | None, *, apply_deletions: bool = True, row_numbers: bool = False
    ) -> tuple[pa.Table, np.ndarray | None] | None:
        """The rows of one file that its index kept (and deletions did not drop).

        Returns ``(table, file row numbers or None)``, or None if nothing is left to read.
        Dictionary-encoded string columns are read as dictionaries and decoded only for the
        rows that survive the masks.
        """
        if plan.skipped or not plan.row_groups:
            return None
        footer = self.footer(plan.path)
        schema = footer.schema.to_arrow_schema()
        wanted = schema.names if columns is None else columns
        as_dictionary = [c for c in wanted if _dictionary_strings(footer, schema, c, plan.row_groups)]
        with self.fs.open_input_file(join(self.root, plan.path)) as f:
            parquet = pq.ParquetFile(f, metadata=footer, read_dictionary=as_dictionary or None)
            table = parquet.read_row_groups(plan.row_groups, columns=columns, use_threads=True)
        offsets = plan.row_group_offsets
        ranges = [(int(offsets[g]), int(offsets[g + 1])) for g in plan.row_groups]
        keep = None
        if plan.result.kind == "bitmap":
            full = plan.result.to_mask(plan.rows).to_numpy(zero_copy_only=False)
            keep = full[ranges[0][0] : ranges[0][1]] if len(ranges) == 1 else np.concatenate([full[a:b] for a, b in ranges])
        if apply_deletions:
            dv = self.deletion_vector(plan.path)
            if dv is not None and dv.cardinality:
                alive = np.concatenate([dv.keep_mask(a, b - a).to_numpy(zero_copy_only=False) for a, b in ranges])
                keep = alive if keep is None else keep & alive
        numbers = None
        if row_numbers:
            numbers = np.concatenate([np.arange(a, b, dtype=np.uint64) for a, b in ranges])
        if keep is not None and not keep.all():
            table = table.filter(pa.array(keep))
            numbers = numbers[keep] if numbers is not None else None
        if as_dictionary:
            table = table.cast(pa.schema([schema.field(n) for n in table.column_names]))
        return table, numbers

    def read_plan(self, plan: FilePlan, expr, columns: list[str] | None) -> pa.Table | None:
        """The rows of one planned file that match ``expr`` (deleted rows dropped), or None."""
        needed = None
        if columns is not None:
            needed = list(dict.fromkeys(list(columns) + sorted(self.bind_columns(expr)))) if expr is not None else list(columns)
        read = self.read_rows(plan, needed)
        if read is None:
            return None
        table = read[0]
        if expr is not None and not plan.exact:
            table = table.filter(expr)
        return table.select(columns) if columns is not None else table

    def to_batches(self, filter=None, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Record batches of the rows matching ``filter`` (minus deleted rows), file by file."""
        plans = [p for p in self.plan(filter) if not p.skipped]
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            for table in pool.map(lambda p: self.read_plan(p, filter, columns), plans):
                if table is not None:
                    yield from table.to_batches()

    def to_table(self, filter=None, columns: list[str] | None = None) -> pa.Table:
        """Like ``pyarrow.dataset.Dataset.to_table(filter=, columns=)``, minus deleted rows."""
        schema = self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        batches = [b for b in self.to_batches(filter, columns) if b.num_rows]
        if not batches:
            return schema.empty_table()
        return pa.Table.from_batches(batches).cast(schema) if batches[0].schema != schema else pa.Table.from_batches(batches, schema)

    def count_rows(self, filter=None) -> int:
        """Rows matching ``filter`` minus deleted rows; with no filter, from metadata alone."""
        if filter is None:
            self._infos = {}
            total = 0
            for rel in self.files:
                entry = self.manifest.files.get(rel)
                dv = self.deletion_vector(rel)
                total += (entry.rows if self._fresh(entry) else self.row_count(rel)) - (dv.cardinality if dv else 0)
            return total
        columns = sorted(self.bind_columns(filter)) or [self.schema.names[0]]
        return sum(b.num_rows for b in self.to_batches(filter, columns))


def _dictionary_strings(footer: pq.FileMetaData, schema: pa.Schema, column: str, row_groups: list[int]) -> bool:
    """True for a string column stored dictionary-encoded in every row group to be read."""
    index = schema.get_field_index(column)
    if index < 0 or not pa.types.is_string(schema.field(index).type):
        return False
    # Parquet leaf columns line up with top-level fields when there is no nesting.
    if footer.num_columns != len(schema):
        return False
    return all(footer.row_group(g).column(index).has_dictionary_page for g in row_groups)


def _expression_fields(expr, schema: pa.Schema) -> set[str]:
    """Every schema column named anywhere in ``expr`` (also inside parts no index answers)."""
    if expr is None:
        return set()
    from ..predicate import _Call, _Field, parse

    out: set[str] = set()

    def walk(t):
        if isinstance(t, _Field):
            out.add(t.name)
        elif isinstance(t, _Call):
            for a in t.args:
                walk(a)

    try:
        walk(parse(expr))
    except Exception:
        return set(schema.names)
    if any(schema.get_field_index(name) < 0 for name in out):
        return set(schema.names)
    return out


def dataset(source: Any, *, filesystem: pafs.FileSystem | None = None, on_corrupt: str = "raise",
            on_stale_deletions: str = "raise") -> IndexedDataset:  # fmt: skip
    """Open an indexed Parquet dataset (a directory, or a ``pyarrow.dataset.Dataset``)."""
    fs, root, _ = resolve(source, filesystem)
    return IndexedDataset(fs, root, on_corrupt=on_corrupt, on_stale_deletions=on_stale_deletions)
