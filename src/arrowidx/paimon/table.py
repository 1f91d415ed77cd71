"""``PaimonTable``: plan and read a Paimon table with its statistics, file indexes and
deletion vectors.

Per data file, in the order Paimon applies them:

1. partition values and the manifest's min/max statistics (``_VALUE_STATS``, honouring
   ``_VALUE_STATS_COLS``; anything not decodable keeps the file);
2. the file index: ``_EMBEDDED_FILE_INDEX`` or exactly one ``<data file>.index`` extra file,
   evaluated with :class:`arrowidx.FileIndex` against the file's own column names;
3. Parquet row-group statistics (pyarrow's own), the index's bitmap answer and the file's
   deletion vector;
4. the complete filter on what is read (indexes are inexact), after mapping the file's
   columns to the latest schema by field id.

Steps 3-4 are the scan core's per-file read (:mod:`arrowidx.lake.read`, shared with
``arrowidx.dataset``): this module only says which files and row groups, and how each file's
columns map to the latest schema (:meth:`PaimonTable._file_read`).

Primary-key tables with deletion vectors are read as Java's batch read (level-0 files are
not read); without deletion vectors, ``deduplicate`` and ``first-row`` tables are merged on
read with Arrow kernels.
"""

from __future__ import annotations

import os
import posixpath
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from .. import facts
from ..deletion import DeletionVector, read_deletion_vectors
from ..errors import ArrowIdxError, PaimonTableError, UnsupportedTableError
from ..expression import check_fields, columns_named
from ..file_index import FileIndex
from ..filters import user_columns, user_filter
from ..lake.plan import decide_with_index, settle_status
from ..lake.plans import Explain, FilePlan, decided_why
from ..lake.read import FileRead, FileReader, bitmap_groups, row_group_offsets, statistics_groups
from ..predicate import Node, bind
from ..result import REMAIN
from ..storage import Store, as_store
from .cache import FOOTERS, INDEXES, POLARS_SCANS, file_key
from .metadata import (
    DataFile,
    DeletionRange,
    TableSchema,
    decode_binary_row,
    deletion_ranges,
    escape_partition_text,
    latest_snapshot_id,
    live_files,
    map_bytes,
    read_bytes,
    read_schema,
    read_snapshot,
)
from .stats import ColumnStats, may_match, rename_columns

SYSTEM_COLUMNS = ("_SEQUENCE_NUMBER", "_VALUE_KIND")
KEY_PREFIX = "_KEY_"
POSTPONE_BUCKET = -2
PARQUET = ds.ParquetFileFormat()
RETRACT_KINDS = (1, 3)  # -U, -D (RowKind byte values)
MERGE_ENGINES = ("deduplicate", "first-row")


def _truthy(value: str | None) -> bool:
    return str(value).strip().lower() == "true"


# ----------------------------------------------------------------------------------------
# Plans
# ----------------------------------------------------------------------------------------
#: How many filters a table remembers bound (see :class:`_BoundFilter`).
BOUND_FILTERS = 8


@dataclass
class _BoundFilter:
    """A filter bound to the table's latest schema, and what planning and reading derive
    from it: per file schema the predicate under that schema's column names, per data file
    what planning decided (unless the index answered with a bitmap) and the row groups
    Parquet statistics keep. A table remembers the last ``BOUND_FILTERS``
    (a query repeated on a table is planned and read from them). Safe: a table is one
    snapshot whose files (named by UUID) never change, and a filter is found again only
    by an equal expression (``Expression.equals``: same calls, fields and typed literals)."""

    expr: Any
    node: Node
    columns: frozenset[str]  # the columns the bound predicate reads
    filter_columns: list[str]  # every column the expression names (sorted)
    local: dict[int, Node] = field(default_factory=dict)  # file schema id -> predicate
    decided: dict[tuple[str, int], tuple] = field(default_factory=dict)  # (file, level) -> status, reason, result, exact
    groups: dict[tuple[str, tuple[int, ...]], list[int]] = field(default_factory=dict)  # (file, groups) -> kept


# ----------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------
def _snapshot_id(snapshot: Any) -> int | None:
    """``snapshot`` as given to :func:`open_table`: None or ``"latest"`` (the latest), or an id."""
    if snapshot is None or (isinstance(snapshot, str) and snapshot.strip().lower() == "latest"):
        return None
    if isinstance(snapshot, str) and snapshot.strip().isdigit():
        return int(snapshot)
    if isinstance(snapshot, int) and not isinstance(snapshot, bool) and snapshot > 0:
        return snapshot
    raise PaimonTableError(f"snapshot must be a snapshot id (an int >= 1) or 'latest', got {snapshot!r}")


class PaimonTable:
    """One snapshot of a Paimon table (see :func:`open_table`)."""

    def __init__(self, fs: pafs.FileSystem | Store, path: str, snapshot: int | None = None, threads: int | None = None):
        self.store = as_store(fs)  # what metadata and index files are read through
        self.fs = fs = self.store.fs  # pyarrow reads the data files through it
        self.path = path.rstrip("/")
        self.threads = threads or min(8, os.cpu_count() or 1)
        snapshot = _snapshot_id(snapshot)
        sid = latest_snapshot_id(fs, self.path) if snapshot is None else snapshot
        self._snapshot = None if sid is None else read_snapshot(fs, self.path, sid)
        self._schemas: dict[int, TableSchema] = {}
        if self._snapshot is None:  # a table without any commit: its latest schema
            ids = _schema_ids(fs, self.path)
            if not ids:
                raise PaimonTableError(f"{self.path}: not a Paimon table (no snapshot/ and no schema/schema-N)")
            self.table_schema = self._schema(ids[-1])
        else:
            self.table_schema = self._schema(int(self._snapshot["schemaId"]))
        self.options = self.table_schema.options
        self.schema: pa.Schema = self.table_schema.arrow_schema()
        self.primary_keys = self.table_schema.primary_keys
        self.deletion_vectors = _truthy(self.options.get("deletion-vectors.enabled"))
        self.merge_engine = self.options.get("merge-engine", "deduplicate")
        if self.primary_keys and not self.deletion_vectors:
            if self.merge_engine not in MERGE_ENGINES:
                raise UnsupportedTableError(
                    f"{self.path}: merge-engine={self.merge_engine!r} is not supported without deletion vectors"
                    f" (supported: {', '.join(MERGE_ENGINES)}; or set deletion-vectors.enabled=true)"
                )
            for option in ("sequence.field", "partial-update", "fields.default-aggregate-function"):
                if option in self.options:
                    raise UnsupportedTableError(f"{self.path}: option {option!r} is not supported for merge-on-read")
        self._files: list[DataFile] | None = None
        self._dv_ranges: dict[str, DeletionRange] | None = None
        self._name_index: dict[str, str] | None = None
        self._lock = threading.Lock()
        self._blobs: dict[str, bytes] = {}  # deletion-vector index files, read once
        self._indexes: dict[tuple[str, int], tuple[FileIndex | None, str]] = {}
        self._maps: dict[tuple[int, bool], dict[str, str | None]] = {}
        self._fragments: dict[Any, ds.ParquetFileFragment] = {}
        self._scan_schemas: dict[tuple, pa.Schema] = {}
        self._stats_cache: dict[tuple, dict[str, ColumnStats]] = {}
        self._dictionary_formats: dict[tuple, tuple[ds.ParquetFileFormat, set[str]] | None] = {}
        self._paths: dict[str, str] = {}  # data file name -> file_path
        self._offsets: dict[str, np.ndarray] = {}  # data file name -> row_group_offsets
        self._bound_filters: list[_BoundFilter] = []  # the latest first
        self._polars_scans: dict[str, Any] = {}  # data file name -> its pl.scan_parquet

    def __repr__(self) -> str:
        snapshot = "no snapshot" if self._snapshot is None else f"snapshot {self.snapshot_id}"
        keys = f", primary key {', '.join(self.primary_keys)}" if self.primary_keys else ""
        return f"PaimonTable({self.path!r}, {snapshot}, schema {self.table_schema.id}{keys}: {', '.join(self.schema.names)})"

    @property
    def snapshot_id(self) -> int | None:
        return None if self._snapshot is None else int(self._snapshot["id"])

    @property
    def merge_on_read(self) -> bool:
        return bool(self.primary_keys) and not self.deletion_vectors

    def _schema(self, schema_id: int) -> TableSchema:
        if schema_id not in self._schemas:
            self._schemas[schema_id] = read_schema(self.fs, self.path, schema_id)
        return self._schemas[schema_id]

    # -- metadata -------------------------------------------------------------------------------
    @property
    def files(self) -> list[DataFile]:
        """The live data files of the snapshot (manifest ADD/DELETE merged)."""
        if self._files is None:
            self._files = [] if self._snapshot is None else live_files(self.fs, self.path, self._snapshot)
        return self._files

    @property
    def deletion_ranges(self) -> dict[str, DeletionRange]:
        if self._dv_ranges is None:
            self._dv_ranges = {} if self._snapshot is None else deletion_ranges(self.fs, self.path, self._snapshot)
        return self._dv_ranges

    def partition_values(self, f: DataFile) -> dict[str, Any]:
        keys = self.table_schema.partition_keys
        if not keys:
            return {}
        schema = self._schema(f.schema_id)
        types = [schema.field(k).type if k in [x.name for x in schema.fields] else self.table_schema.field(k).type for k in keys]
        values = decode_binary_row(f.partition, types)
        if values is None:
            raise PaimonTableError(f"{self.path}: partition of {f.name} does not decode ({len(keys)} keys expected)")
        return dict(zip(keys, values))

    def file_path(self, f: DataFile) -> str:
        """Where the data file is: its external path, else ``<table>/<partition dirs>/bucket-N/<name>``
        (computed once per file)."""
        path = self._paths.get(f.name)
        if path is None:
            path = self._paths[f.name] = self._compute_file_path(f)
        return path

    def _compute_file_path(self, f: DataFile) -> str:
        if f.external_path:
            return f.external_path
        parts = []
        default = self.options.get("partition.default-name", "__DEFAULT_PARTITION__")
        for k, v in self.partition_values(f).items():
            text = default if v is None else ("true" if v is True else "false" if v is False else str(v))
            parts.append(f"{escape_partition_text(k)}={escape_partition_text(text)}")
        bucket = "bucket-postpone" if f.bucket == POSTPONE_BUCKET else f"bucket-{f.bucket}"
        return posixpath.join(self.path, *parts, bucket, f.name)

    def _dictionary_fragment(self, f: DataFile, fmt: ds.ParquetFileFormat) -> ds.ParquetFileFragment:
        """The data file's fragment read by ``fmt`` (string columns as dictionaries)."""
        with self._lock:
            fragment = self._fragments.get((f.name, "dictionary"))
        if fragment is None:
            fragment = fmt.make_fragment(self._fragment(f).path, self.fs)
            fragment.ensure_complete_metadata()
            with self._lock:
                self._fragments[(f.name, "dictionary")] = fragment
        return fragment

    def _dictionary_format(self, fragment: ds.ParquetFileFragment) -> tuple[ds.ParquetFileFormat, set[str]] | None:
        """A format reading the string columns this file stores dictionary-encoded as
        dictionaries (as :class:`~arrowidx.lake.scan.IndexedDataset` does): rows a mask drops
        are then never decoded to strings."""
        metadata = fragment.metadata
        arrow = fragment.physical_schema
        if not metadata.num_row_groups or metadata.num_columns != len(arrow):
            return None
        group = metadata.row_group(0)
        names = {f.name for i, f in enumerate(arrow) if pa.types.is_string(f.type) and group.column(i).has_dictionary_page}
        if not names:
            return None
        return ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=sorted(names))), names

    def _fragment(self, f: DataFile) -> ds.ParquetFileFragment:
        """The data file's pyarrow fragment (footer loaded), at its computed path, else where
        a listing of the table finds it (partition values this code does not format as
        Paimon does); created once per file."""
        with self._lock:
            fragment = self._fragments.get(f.name)
        if fragment is not None:
            return fragment
        if not f.name.endswith(".parquet"):
            raise UnsupportedTableError(f"{self.path}: data file {f.name} is not Parquet (only file.format=parquet is read)")
        path = self.file_path(f)

        def footer() -> tuple[ds.ParquetFileFragment, int]:
            where = path
            for attempt in (0, 1):
                fragment = PARQUET.make_fragment(where, self.fs)
                try:
                    fragment.ensure_complete_metadata()
                    return fragment, fragment.metadata.serialized_size
                except FileNotFoundError:
                    if attempt or f.external_path:
                        raise PaimonTableError(f"{where}: data file of snapshot {self.snapshot_id} not found") from None
                    where = self._locate(f)
                except (OSError, pa.ArrowException) as e:
                    raise PaimonTableError(f"{where}: unreadable Parquet file: {e}") from None
            raise AssertionError("unreachable")

        fragment = FOOTERS.get(self._footer_key(f), footer)
        with self._lock:
            self._fragments[f.name] = fragment
        return fragment

    def _footer_key(self, f: DataFile) -> tuple | None:
        """The data file's key in :data:`FOOTERS` (its footer is parsed once per process): its
        computed path and the size the manifest records."""
        return file_key(self.fs, self.file_path(f), f.size)

    def _locate(self, f: DataFile) -> str:
        """Where a listing of the table finds the file's name."""
        path = self.file_path(f)
        if self._name_index is None:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path, recursive=True))
            self._name_index = {i.base_name: i.path for i in infos if i.type == pafs.FileType.File}
        found = self._name_index.get(f.name)
        if found is None:
            raise PaimonTableError(f"{path}: data file {f.name} of snapshot {self.snapshot_id} not found")
        return found

    def _column_map(self, f: DataFile, *, same_type: bool = True) -> dict[str, str | None]:
        """latest column name -> the file's name for it, matched by field id (None: absent;
        with ``same_type``, also when the type changed since: its stats and index are not used)."""
        key = (f.schema_id, same_type)
        if key in self._maps:
            return self._maps[key]
        old = self._schema(f.schema_id)
        out: dict[str, str | None] = {}
        for fld in self.table_schema.fields:
            o = old.field_by_id(fld.id)
            usable = o is not None and (not same_type or _same_type(o.type, fld.type))
            out[fld.name] = o.name if usable else None
        self._maps[key] = out
        return out

    def _stats(self, f: DataFile, columns: frozenset[str]) -> dict[str, ColumnStats]:
        """Min/max/null-count per latest column name, from partition values and _VALUE_STATS
        (decoded once per file and column set, and kept with the manifest entry for the
        table objects of the process that share it, in :data:`arrowidx.facts.DERIVED`:
        manifest entries are shared by the table objects of a process, so a table opened
        again does not decode them again)."""
        key = (f.name, f.level, columns)
        stats = self._stats_cache.get(key)
        if stats is None:
            # by the entry's id: the entry is held with them, so the id stays its own
            held = facts.DERIVED.get(("paimon stats", id(f)), lambda: ((f, {}), 1024))
            if held[0] is not f:  # (not kept: ARROWIDX_CACHE_MB=0)
                held = (f, {})
            decoded = held[1]
            shared = (self.path, self.table_schema.id, self.merge_on_read, columns)
            stats = decoded.get(shared)
            if stats is None:
                stats = decoded[shared] = self._decode_stats(f, columns)
            self._stats_cache[key] = stats
        return stats

    def _decode_stats(self, f: DataFile, columns: set[str]) -> dict[str, ColumnStats]:
        out: dict[str, ColumnStats] = {}
        old = self._schema(f.schema_id)
        mapping = self._column_map(f)
        if f.value_stats is not None and not self.merge_on_read:
            names = f.value_stats_cols if f.value_stats_cols is not None else [x.name for x in old.fields]
            old_types = {x.name: x.type for x in old.fields}
            if all(n in old_types for n in names):
                types = [old_types[n] for n in names]
                by_old = {n: i for i, n in enumerate(names)}
                wanted = {by_old[o] for c, o in mapping.items() if c in columns and o in by_old}
                mins = decode_binary_row(f.value_stats[0], types, wanted)
                maxs = decode_binary_row(f.value_stats[1], types, wanted)
                nulls = f.value_stats[2]
                if mins is not None and maxs is not None:
                    for latest, old_name in mapping.items():
                        if latest not in columns or old_name is None or old_name not in by_old:
                            continue
                        i = by_old[old_name]
                        nc = nulls[i] if nulls is not None and i < len(nulls) else None
                        out[latest] = ColumnStats(mins[i], maxs[i], nc, f.rows)
        for k, v in self.partition_values(f).items():
            if k in columns:
                out[k] = ColumnStats(v, v, f.rows if v is None else 0, f.rows)
        return out

    def _file_index(self, f: DataFile, path: str) -> tuple[FileIndex | None, str]:
        """The file's index (embedded, or its one ``.index`` extra file), opened once."""
        key = (f.name, f.level)
        if key not in self._indexes:
            self._indexes[key] = self._open_file_index(f, path)
        return self._indexes[key]

    def _open_file_index(self, f: DataFile, path: str) -> tuple[FileIndex | None, str]:
        """The file's index, parsed once per process (:data:`~arrowidx.paimon.cache.INDEXES`):
        an index file is keyed by its path, the data file's size and schema id, an embedded
        index by its bytes."""
        if f.embedded_index:
            where, data = "embedded", f.embedded_index
            name = f"{path} (embedded index)"
        else:
            extras = [e for e in f.extra_files if e.endswith(".index")]
            if len(extras) != 1:
                return None, ""
            where, data = "index file", None
            name = posixpath.join(posixpath.dirname(path), extras[0])

        def parse() -> tuple[FileIndex, int]:
            source = data if data is not None else map_bytes(self.fs, name)
            return FileIndex(source, self._schema(f.schema_id).arrow_schema(), name=name), len(source)

        if data is not None:  # (by its bytes: an embedded index is as the manifest holds it)
            key = (self.fs.type_name, path, "embedded", data, f.schema_id)
        else:
            key = file_key(self.fs, name, f.size, f.schema_id)
        return INDEXES.get(key, parse), where

    def plan(self, filter=None) -> Explain:
        """Which files are read for ``filter`` (a ``pc.Expression`` or SQL text) and why (see :class:`Explain`)."""
        where = user_filter(filter, self.schema)
        explain = self._plan(where.pushdown, self._bound(where.pushdown))
        explain.filter = where.describe(explain.filter)
        for plan in explain.files:
            plan.why = decided_why(plan) if where.pushdown is not None else "no filter"
        return explain

    def _plan(self, filter, bound: _BoundFilter | None) -> Explain:
        todo: list[DataFile] = []
        not_read: list[tuple[str, str]] = []
        for f in self.files:
            if f.write_cols is not None:
                raise UnsupportedTableError(
                    f"{self.path}: {f.name} holds only columns {f.write_cols} (data-evolution.enabled"
                    " tables, whose rows span several files, are not supported)"
                )
            if f.bucket == POSTPONE_BUCKET:
                not_read.append((f.name, "postpone bucket (not yet compacted)"))
                continue
            if self.primary_keys and self.deletion_vectors and f.level == 0:
                not_read.append((f.name, "level 0 of a deletion-vector table"))
                continue
            todo.append(f)
        plans = [self._plan_file(f, bound) for f in todo]
        text = " ".join(str(filter).split()) if filter is not None else "None"
        return Explain(text, plans, snapshot_id=self.snapshot_id, not_read=not_read)

    def _bound(self, filter) -> _BoundFilter | None:
        """``filter`` bound (see :class:`_BoundFilter`); None for no filter."""
        if filter is None:
            return None
        expression = isinstance(filter, pc.Expression)
        if expression:
            with self._lock:
                for bound in self._bound_filters:
                    if bound.expr is filter or bound.expr.equals(filter):
                        return bound
            check_fields(filter, self.schema, self.path)  # a misspelt column names itself (an ArrowInvalid, as pyarrow's)
        node = bind(filter, self.schema)
        bound = _BoundFilter(filter, node, frozenset(node.columns()), sorted(_filter_columns(filter, self.schema)))
        if expression:
            with self._lock:
                self._bound_filters = [bound, *self._bound_filters[: BOUND_FILTERS - 1]]
        return bound

    def _plan_file(self, f: DataFile, bound: _BoundFilter | None) -> FilePlan:
        deletion = self.deletion_ranges.get(f.name)
        plan = FilePlan(self.file_path(f), f.rows, "remain", file=f, deletion=deletion)
        plan.deleted = (deletion.cardinality or 0) if deletion is not None else 0
        if bound is None:
            return plan
        key = (f.name, f.level)
        decided = bound.decided.get(key)
        if decided is not None:
            plan.status, plan.reason, plan.result, plan.exact, plan.index_types, plan.rows_selected = decided
            return plan
        self._decide(plan, bound)
        if plan.result.kind != "bitmap":  # (a bitmap is mutable: decided again per query)
            bound.decided[key] = (plan.status, plan.reason, plan.result, plan.exact, plan.index_types, plan.rows_selected)
        return plan

    def _decide(self, plan: FilePlan, bound: _BoundFilter) -> None:
        """Set ``plan``'s status, reason, result and exactness: partition values and
        statistics, then the file index (the decision every planner makes,
        :func:`arrowidx.lake.plan.decide_with_index`, under the file's own column names)."""
        f, node = plan.file, bound.node
        stats = self._stats(f, bound.columns)
        if not may_match(node, stats)[0]:
            partition_only = {k: v for k, v in stats.items() if k in self.table_schema.partition_keys}
            plan.status, plan.rows_selected = "skipped", 0
            plan.reason = "partition" if not may_match(node, partition_only)[0] else "stats"
            return
        if self.merge_on_read:
            return  # a newer file may change a row: only partitions prune before merging
        local = bound.local.get(f.schema_id)
        if local is None:
            local = bound.local[f.schema_id] = rename_columns(node, self._column_map(f))
        try:
            index, where = self._file_index(f, plan.path)
            if index is not None:
                decide_with_index(plan, index, local)
                plan.exact = plan.exact and local.columns() == node.columns()  # (a column renamed away: not exact)
        except ArrowIdxError:
            plan.result, plan.index_types, plan.exact = REMAIN, [], False  # a broken index only costs speed
        settle_status(plan)

    def explain(self, filter=None) -> Explain:
        return self.plan(filter)

    # -- reading ---------------------------------------------------------------------------------
    def _deletion_vector(self, rng: DeletionRange | None, name: str) -> DeletionVector | None:
        if rng is None:
            return None
        with self._lock:
            data = self._blobs.get(rng.index_file)
        if data is None:
            data = read_bytes(self.fs, rng.index_file)
            with self._lock:
                self._blobs[rng.index_file] = data
        return read_deletion_vectors(data, ranges={name: (rng.offset, rng.length)})[name]

    def _check_columns(self, columns: list[str] | None) -> list[str] | None:
        """``columns=`` as a list of the table's column names (one ``str`` is one column; an
        unknown name raises :class:`~arrowidx.expression.UnknownColumnError`)."""
        return user_columns(columns, self.schema, self.path)

    def _file_read(self, plan: FilePlan, bound: _BoundFilter | None, reader_schema: pa.Schema, *, system: bool = False) -> FileRead:
        """One planned file for the scan core (:mod:`arrowidx.lake.read`): its row groups
        holding index-selected rows, minus those Parquet statistics rule out for the filter,
        its deletion vector, and the mapping of its own columns (field ids) to the latest
        schema (renamed columns, added ones NULL, partition values; ``system``: also
        ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, for merge-on-read)."""
        f = plan.file
        fragment = self._fragment(f)
        physical = fragment.physical_schema
        offsets = self._row_group_offsets(f, fragment)
        bitmap = plan.result.bitmap if plan.result.kind == "bitmap" else None
        if bitmap is not None:
            groups = bitmap_groups(bitmap, offsets)
        else:
            groups = [g for g in range(len(offsets) - 1) if offsets[g + 1] > offsets[g]]
        mapping = dict(self._column_map(f, same_type=False))
        if system:
            mapping.update({c: c for c in SYSTEM_COLUMNS})
        if bound is not None and groups and self._statistics_usable(f, bound.filter_columns, physical):
            key = (f.name, tuple(groups))
            kept = bound.groups.get(key)
            if kept is None:
                kept = bound.groups[key] = statistics_groups(fragment, bound.expr, physical, groups)
            groups = list(kept)
        partition = self.partition_values(f)
        names = set(physical.names)
        key = (f.schema_id, system, physical)
        scan_schema = self._scan_schemas.get(key)
        if scan_schema is None:  # one object per file schema: files sharing it share one scan
            scan_schema = self._scan_schemas[key] = pa.schema(list(physical), metadata=physical.metadata)
            self._dictionary_formats[key] = self._dictionary_format(fragment)
        dictionary = self._dictionary_formats[key]

        def source_columns(columns: list[str]) -> list[str]:
            return list(dict.fromkeys(mapping[c] for c in columns if mapping.get(c) in names))

        def adapt(data: pa.Table, columns: list[str]) -> pa.Table:
            return _to_latest(reader_schema, data, columns, mapping, partition)

        dv = self._deletion_vector(plan.deletion, f.name)
        def fragment_for(as_dictionary: bool) -> ds.ParquetFileFragment:
            return self._dictionary_fragment(f, dictionary[0]) if as_dictionary and dictionary else fragment

        return FileRead(
            plan.path, fragment_for, groups, offsets, bitmap, dv, plan.exact, scan_schema, source_columns, adapt, dictionary,
            lambda: self._polars_scan(f, fragment.path),
        )  # fmt: skip

    def _polars_scan(self, f: DataFile, path: str):
        """The data file's Polars scan, made once per process (:data:`POLARS_SCANS`, keyed
        as its footer is): Polars resolves a scan's file metadata once and keeps it, which is
        safe only because a data file never changes."""
        scan = self._polars_scans.get(f.name)
        if scan is None:
            import polars as pl

            def make():
                scan = pl.scan_parquet(path, glob=False, hive_partitioning=False)
                return scan, self._fragment(f).metadata.serialized_size

            scan = self._polars_scans[f.name] = POLARS_SCANS.get(file_key(self.fs, path, f.size), make)
        return scan

    def _row_group_offsets(self, f: DataFile, fragment: ds.ParquetFileFragment) -> np.ndarray:
        """:func:`row_group_offsets` of the data file, computed once (read-only: shared by
        every read of the file)."""
        offsets = self._offsets.get(f.name)
        if offsets is None:
            offsets = row_group_offsets(fragment)
            offsets.flags.writeable = False
            self._offsets[f.name] = offsets
        return offsets

    def _statistics_usable(self, f: DataFile, filter_columns: list[str], physical: pa.Schema) -> bool:
        """Parquet statistics may prune the file's row groups for a filter reading
        ``filter_columns``: each is in the file under its latest name and type."""
        mapping = self._column_map(f)
        for c in filter_columns:
            i = physical.get_field_index(c)
            if mapping.get(c) != c or i < 0 or physical.field(i).type != self.schema.field(c).type:
                return False
        return True

    def _file_reads(self, plans: list[FilePlan], bound: _BoundFilter | None, reader_schema: pa.Schema, *, system: bool = False) -> list[FileRead]:
        unread = [p for p in plans if p.file.name not in self._fragments and not FOOTERS.holds(self._footer_key(p.file))]
        # Footers of an object store's files are read on threads (a round trip each); a local
        # footer takes ~0.1 ms, less than starting threads that contend for the GIL. Inline, a
        # new needle's 3-7 files not seen yet cost 1-2 instead of 3-7 ms; a process's first
        # needle and full read, 45 and 536 ms instead of 46 and 560 (medians of 9 processes).
        if len(unread) > 1 and not isinstance(self.fs, pafs.LocalFileSystem):
            with ThreadPoolExecutor(max_workers=self.threads) as pool:
                list(pool.map(lambda p: self._fragment(p.file), unread))
        return [self._file_read(p, bound, reader_schema, system=system) for p in plans]

    def _tables(self, filter, columns: list[str] | None) -> Iterator[pa.Table]:
        columns = self._check_columns(columns)
        bound = self._bound(filter)
        explain = self._plan(filter, bound)
        plans = [p for p in explain.files if not p.skipped]
        out_schema = pa.schema([self.schema.field(c) for c in (columns or self.schema.names)])
        if self.merge_on_read:
            yield self._merge(plans, filter, columns, out_schema)
            return
        reader = FileReader(self.fs, self.schema, PARQUET)
        filter_columns = bound.filter_columns if bound is not None else []
        reads = self._file_reads(plans, bound, self.schema)
        for t in reader.read(reads, filter, columns, filter_columns, out_schema):
            if t is not None and t.num_rows:
                yield t if t.schema.equals(out_schema) else t.select(out_schema.names).cast(out_schema)

    def _merge(self, plans, filter, columns, out_schema) -> pa.Table:
        """Merge-on-read: every planned file's rows with their sequence numbers and row kinds,
        merged per key (:func:`merge_rows`), then filtered."""
        keys = list(self.primary_keys)
        needed = list(columns or self.schema.names) + (sorted(_filter_columns(filter, self.schema)) if filter is not None else [])
        want = list(dict.fromkeys(needed + keys))
        schema = pa.schema([self.schema.field(c) for c in want] + [pa.field(c, pa.int64()) for c in SYSTEM_COLUMNS])
        reader = FileReader(self.fs, schema, PARQUET)
        reads = self._file_reads(plans, None, schema, system=True)
        parts = [t for t in reader.read(reads, None, schema.names, [], schema) if t is not None]
        if not parts:
            return out_schema.empty_table()
        table = pa.concat_tables([t.select(schema.names).cast(schema) for t in parts])
        return merge_rows(table, keys, self.merge_engine).filter(filter if filter is not None else pc.scalar(True)).select(out_schema.names).cast(out_schema)

    def to_batches(self, filter=None, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Record batches of the rows matching ``filter`` (a ``pc.Expression`` or SQL text;
        deleted and merged-away rows dropped)."""
        return self._batches(filter, self._check_columns(columns))

    def _batches(self, filter, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        where = user_filter(filter, self.schema)
        if where.residual is not None:
            yield from where.apply(self._batches(where.pushdown, where.read_columns(columns)), columns)
            return
        filter = where.pushdown
        for t in self._tables(filter, columns):
            yield from t.to_batches()

    def scanner(self, filter=None, columns: list[str] | None = None) -> pa.RecordBatchReader:
        columns = self._check_columns(columns)
        schema = pa.schema([self.schema.field(c) for c in (columns or self.schema.names)])
        return pa.RecordBatchReader.from_batches(schema, self._batches(user_filter(filter, self.schema), columns))

    def to_table(self, filter=None, columns: list[str] | None = None) -> pa.Table:
        """Like ``pyarrow.dataset.Dataset.to_table(filter=, columns=)`` over the table as Java reads it."""
        columns = self._check_columns(columns)
        schema = pa.schema([self.schema.field(c) for c in (columns or self.schema.names)])
        where = user_filter(filter, self.schema)
        if where.residual is not None:
            return where.apply_table(self.to_table(where.pushdown, where.read_columns(columns)), columns)
        tables = list(self._tables(where.pushdown, columns))
        return pa.concat_tables(tables) if tables else schema.empty_table()

    def count_rows(self, filter=None) -> int:
        where = user_filter(filter, self.schema)
        if where.residual is not None:
            return sum(b.num_rows for b in self._batches(where, where.residual.columns or [self.schema.names[0]]))
        filter = where.pushdown
        if filter is None and not self.merge_on_read:
            total = 0
            for p in self.plan(None).files:
                card = p.deletion.cardinality if p.deletion is not None else None
                if p.deletion is not None and card is None:
                    card = self._deletion_vector(p.deletion, p.file.name).cardinality
                total += p.file.rows - (card or 0)
            return total
        cols = sorted(_filter_columns(filter, self.schema)) if filter is not None else []
        cols = cols or [self.schema.names[0]]
        return sum(t.num_rows for t in self._tables(filter, cols))


def _to_latest(schema: pa.Schema, data: pa.Table, columns: list[str], mapping, partition) -> pa.Table:
    """A file's columns (as read) under ``schema``'s names and types: renamed columns by
    ``mapping``, partition values as constants, columns the file lacks as NULL."""
    arrays, fields = [], []
    for c in columns:
        fld = schema.field(c)
        old = mapping.get(c)
        if old is not None and old in data.column_names:
            col = data.column(old)
            if col.type != fld.type:
                col = col.cast(fld.type)
        elif c in partition:
            col = pa.repeat(pa.scalar(partition[c], fld.type), data.num_rows)
        else:
            col = pa.nulls(data.num_rows, fld.type)
        arrays.append(col)
        fields.append(fld)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def merge_rows(table: pa.Table, keys: list[str], engine: str) -> pa.Table:
    """Merge-on-read of a primary-key table: per key the row with the highest sequence
    number (``deduplicate``, retractions dropped) or the first insert (``first-row``)."""
    if engine == "first-row":
        kind = table.column("_VALUE_KIND")
        table = table.filter(pc.invert(pc.is_in(kind, pa.array(RETRACT_KINDS, pa.int64()))))
    order = [(k, "ascending") for k in keys] + [("_SEQUENCE_NUMBER", "ascending")]
    table = table.take(pc.sort_indices(table, sort_keys=order))
    n = table.num_rows
    if n == 0:
        return table
    change = np.zeros(n - 1, dtype=bool)
    for k in keys:
        col = table.column(k)
        ne = pc.not_equal(col.slice(1), col.slice(0, n - 1))
        change |= pc.fill_null(ne, True).to_numpy(zero_copy_only=False)
    if engine == "first-row":
        pick = np.concatenate(([True], change))
        return table.filter(pa.array(pick))
    pick = np.concatenate((change, [True]))
    table = table.filter(pa.array(pick))
    kind = table.column("_VALUE_KIND")
    return table.filter(pc.invert(pc.is_in(kind, pa.array(RETRACT_KINDS, pa.int64()))))


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def _same_type(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return a == b
    strip = lambda t: " ".join(str(t).upper().replace(" NOT NULL", "").split())  # noqa: E731
    return strip(a) == strip(b)


def _schema_ids(fs: pafs.FileSystem, table: str) -> list[int]:
    infos = fs.get_file_info(pafs.FileSelector(posixpath.join(table, "schema"), allow_not_found=True))
    return sorted(int(i.base_name[len("schema-") :]) for i in infos if i.base_name.startswith("schema-") and i.base_name[7:].isdigit())


def _filter_columns(filter, schema: pa.Schema) -> set[str]:
    return columns_named(filter, schema)


def open_table(path: Any, *, snapshot: int | str | None = None, filesystem: pafs.FileSystem | None = None,
               storage_options: dict[str, Any] | None = None) -> PaimonTable:  # fmt: skip
    """Open a Paimon table directory (``<warehouse>/<db>.db/<table>``) at its latest
    snapshot (``snapshot=None`` or ``"latest"``), or at ``snapshot`` (an id). An object-store
    URI (``s3://bucket/warehouse/db.db/t``) takes ``storage_options`` (docs/object-stores.md)."""
    path = os.fspath(path)
    from ..objectstore import is_object_store_uri

    if is_object_store_uri(path) or storage_options:
        from ..lake.source import resolve

        store, path, _ = resolve(path, filesystem, storage_options)
        return PaimonTable(store, path, snapshot)
    if filesystem is None:
        if "://" in path:
            filesystem, path = pafs.FileSystem.from_uri(path)
        else:
            filesystem, path = pafs.LocalFileSystem(), os.path.abspath(path)
    return PaimonTable(filesystem, path, snapshot)
