"""``arrowidx.paimon.delete``: delete rows from an Apache Paimon table with deletion vectors
that Java Paimon reads.

Specification: Java Paimon's ``DELETE FROM`` (Spark's ``DeleteFromPaimonTableCommand``) on
tables with ``deletion-vectors.enabled``, read, not copied:

1. **Which rows.** The rows of the latest snapshot where ``where`` is TRUE, exactly: SQL text
   with SQL's meaning, a ``pc.Expression`` with pyarrow's, a Polars expression with Polars'
   (``DataFrame.filter``), as reads give them. Partition values, manifest statistics and
   file indexes only rule out whole data files (:meth:`PaimonTable.plan`); every other file's
   rows are evaluated with the whole filter. Rows a file's deletion vector already deletes
   are not deleted again (a file they delete entirely is not read).
2. **How.** Each changed data file's deletion vector becomes its old one plus the new
   positions, 32- or 64-bit as ``deletion-vectors.bitmap64`` says, written into new
   deletion-vectors index files and a new index manifest exactly as Java's maintainers lay
   them out (:mod:`.dvindex`). Data files are never rewritten.
3. **Primary-key tables** (``deduplicate``; Java refuses deletion vectors with ``first-row``,
   ``partial-update`` and ``aggregation`` tables are refused here). Java's ``DELETE`` writes retract records that its commit compacts at
   once (a deletion-vector table waits for the compaction of level 0), which leaves deletion
   vectors on the rows the batch read showed; this writes that end state directly. Versions
   of a deleted key still in level-0 files (written with ``write-only``, not yet compacted:
   batch reads do not see them) are deleted too, as the retract record would: the key stays
   deleted when Java compacts them. No changelog is written, so tables with a
   ``changelog-producer`` are refused.
4. **Commit.** One snapshot through Paimon's protocol (:mod:`.commit`, shared with
   :mod:`.rewrite`): the index files and manifest lists are written under fresh names, the
   snapshot is created only if absent; ``commitKind`` is what Java writes for the delete
   (``OVERWRITE`` from Paimon 1.3 on for append tables, ``COMPACT`` before it and for
   primary-key tables). When another writer commits first, the delete plans again on the new
   snapshot: files it added are read, a file compacted away is not deleted from but its
   successor is read, and the rows found in unchanged files are reused.
"""

from __future__ import annotations

import difflib
import io
import posixpath
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .._faults import fault_point
from ..deletion import DeletionVector, read_deletion_vectors
from ..errors import OptionError, PaimonTableError, UnsupportedTableError
from ..expression import check_expression, expression_columns
from ..filters import require_delete_filter, user_filter
from ..lake.commit import retry_on_conflict
from ..lake.read import expression_mask
from .commit import ManifestLists, commit_snapshot
from .dvindex import IndexFileWriter, apply_changes, read_index_files, target_size
from .metadata import (
    DataFile,
    latest_schema_id,
    plain_name,
    read_avro_file,
    read_bytes,
    read_schema,
    read_snapshot,
)
from .rewrite import default_threads, resolve_table
from .table import PaimonTable

MERGE_ENGINES = ("deduplicate",)  # (Java refuses deletion vectors with first-row; partial-update and aggregation: refused)
POSTPONE_BUCKET = -2


def _on(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


# ----------------------------------------------------------------------------------------
# The user's filter, in a form any process can evaluate
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Where:
    """``where`` as given: SQL text, a ``pc.Expression`` or a Polars expression (kept in
    Polars' binary serialisation, so it travels to Spark executors)."""

    kind: str  # sql | expression | polars
    text: str
    expression: pc.Expression | None = None
    polars: bytes | None = None
    interface: str = "where="  # how the user gave it, for messages (the CLI: --where)

    def compile(self, schema: pa.Schema) -> Matcher:
        return Matcher(self, schema)


def _given(interface: str, value: Any) -> str:
    """``where=None`` / ``--where ''``: the argument as the user wrote it."""
    return f"{interface}{value!r}" if interface.endswith("=") else f"{interface} {value!r}"


def where_of(where: Any, interface: str = "where=", call: str = "arrowidx.paimon.delete") -> Where:
    """``where`` checked: None or empty text is refused (deleting every row takes an explicit
    TRUE), by the one refusal every delete calls (:func:`arrowidx.filters.require_delete_filter`)."""
    if isinstance(where, Where):
        return where
    require_delete_filter(where, call=call, argument=interface.rstrip("="))
    if isinstance(where, str):
        return Where("sql", where, interface=interface)
    if isinstance(where, pc.Expression):
        return Where("expression", str(where), expression=where)
    if type(where).__module__.startswith("polars") and type(where).__name__ == "Expr":
        try:
            data = where.meta.serialize(format="binary")
        except Exception as e:  # noqa: BLE001 - e.g. a Python UDF has no serialisation
            raise OptionError(f"where={where}: this Polars expression cannot be serialised ({e}); use SQL text or a pc.Expression") from None
        return Where("polars", str(where), polars=data)
    raise OptionError(f"where= takes SQL text (str), a pyarrow.compute.Expression or a Polars expression, not {type(where).__name__}")


class Matcher:
    """A :class:`Where` compiled for a schema: :attr:`pushdown` (TRUE wherever the filter is
    TRUE: it plans), :attr:`columns` (what evaluating it reads; None: every column) and
    :meth:`positions` (the rows of a table where the filter is TRUE, exactly)."""

    def __init__(self, where: Where, schema: pa.Schema):
        self.where, self.schema = where, schema
        self._residual = None
        self._polars = None
        if where.kind == "sql":
            compiled = user_filter(where.text, schema, where.interface)
            self.pushdown = compiled.pushdown
            self._residual = compiled.residual
            cols = expression_columns(self.pushdown)
            self.columns = None if cols is None else sorted(cols | set(self._residual.columns if self._residual else ()))
        elif where.kind == "expression":
            self.pushdown = where.expression
            cols = expression_columns(self.pushdown)
            self.columns = None if cols is None else sorted(cols)
        else:
            import polars as pl

            from ..polars.translate import translate

            self._polars = pl.Expr.deserialize(io.BytesIO(where.polars), format="binary")
            self.pushdown = translate(self._polars, schema).expression
            self.columns = sorted(set(self._polars.meta.root_names()))
        if self.columns is not None:
            missing = [c for c in self.columns if c not in schema.names]
            if missing and where.kind != "polars":  # (Polars names its own missing column)
                close = difflib.get_close_matches(missing[0], schema.names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise OptionError(
                    f"{_given(where.interface, where.text)}: no column {missing[0]!r}{hint} (columns: {', '.join(schema.names)})"
                )

    def check(self) -> None:
        """Fail as evaluating the filter fails, whether or not any row is read."""
        if self.where.kind == "polars":
            self.positions(pa.Table.from_batches([], schema=self.schema) if not len(self.schema) else _one_null_row(self.schema))
        elif self.where.kind == "expression":
            check_expression(self.pushdown, self.schema)

    def positions(self, table: pa.Table) -> np.ndarray:
        """The row numbers of ``table`` where the filter is TRUE (uint64, ascending)."""
        n = table.num_rows
        if self._polars is not None:
            import polars as pl

            cols = [c for c in self.columns if c in table.column_names]
            frame = pl.from_arrow(table.select(cols)) if cols else pl.DataFrame({"__arrowidx_n": np.zeros(n, dtype=np.int8)})
            if not isinstance(frame, pl.DataFrame):
                frame = frame.to_frame()
            found = frame.with_row_index("__arrowidx_pos").filter(self._polars).get_column("__arrowidx_pos")
            return found.to_numpy().astype(np.uint64)
        if not n:
            return np.zeros(0, dtype=np.uint64)
        mask = expression_mask(table, self.pushdown) if self.pushdown is not None else np.ones(n, dtype=bool)
        if self._residual is not None and mask.any():
            extra = pc.fill_null(self._residual.mask(table), False)
            mask &= np.asarray(extra.to_numpy(zero_copy_only=False), dtype=bool)
        return np.flatnonzero(mask).astype(np.uint64)


def _one_null_row(schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema)


# ----------------------------------------------------------------------------------------
# Per data file: the work of a local thread or a Spark task
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MatchTask:
    """One data file to evaluate the filter on: everything the work needs, nothing of the
    driver (picklable)."""

    name: str
    path: str
    rows: int
    columns: tuple[tuple[str, str | None], ...]  # latest column -> the file's name for it (None: absent)
    constants: tuple[tuple[str, Any], ...] = ()  # partition columns and their values
    keys: tuple[str, ...] = ()  # primary-key columns whose values at the matched rows are returned


@dataclass(frozen=True)
class MatchResult:
    """The rows of one data file where the filter is TRUE (and their keys, when asked)."""

    name: str
    positions: np.ndarray
    keys: pa.Table | None = None


def read_columns(fs: pafs.FileSystem, task: MatchTask, wanted: list[str], schema: pa.Schema) -> Iterator[pa.Table]:
    """The data file's rows with the ``wanted`` latest columns, under their latest names and
    types (renamed columns by field id, partition columns as constants, columns the file lacks
    as NULL), one row group at a time: memory bounded by a row group, not the file."""
    mapping = dict(task.columns)
    constants = dict(task.constants)
    source = list(dict.fromkeys(mapping[c] for c in wanted if mapping.get(c) is not None and c not in constants))
    out_schema = pa.schema([schema.field(c) for c in wanted])
    rows = 0
    try:
        with fs.open_input_file(task.path) as f:
            parquet = pq.ParquetFile(f)
            groups = range(parquet.num_row_groups)
            for group in groups:  # per row group
                data = parquet.read_row_group(group, columns=source, use_threads=True)
                rows += data.num_rows
                yield _latest(data, wanted, mapping, constants, schema, out_schema)
    except FileNotFoundError:
        raise PaimonTableError(f"{task.path}: data file not found") from None
    except (OSError, pa.ArrowException) as e:
        raise PaimonTableError(f"{task.path}: unreadable Parquet file: {e}") from None
    if rows != task.rows:
        raise PaimonTableError(f"{task.path}: data file holds {rows} rows, its manifest entry says {task.rows}")


def _latest(data: pa.Table, wanted: list[str], mapping: dict, constants: dict, schema: pa.Schema, out_schema: pa.Schema) -> pa.Table:
    arrays = []
    for c in wanted:
        target = schema.field(c).type
        if c in constants:
            value = constants[c]
            arrays.append(pa.nulls(data.num_rows, target) if value is None else pa.repeat(pa.scalar(value, target), data.num_rows))
        elif mapping.get(c) is not None and mapping[c] in data.column_names:
            col = data.column(mapping[c])
            arrays.append(col if col.type == target else col.cast(target))
        else:
            arrays.append(pa.nulls(data.num_rows, target))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def match_file(fs: pafs.FileSystem, task: MatchTask, matcher: Matcher) -> MatchResult:
    """The rows of ``task``'s data file where the filter is TRUE (read a row group at a time)."""
    wanted = list(matcher.schema.names) if matcher.columns is None else list(matcher.columns)
    wanted = list(dict.fromkeys([*wanted, *task.keys])) or matcher.schema.names[:1]  # (a constant: the row count)
    found, keys, offset = [np.zeros(0, dtype=np.uint64)], [], 0
    for table in read_columns(fs, task, wanted, matcher.schema):  # per row group
        at = matcher.positions(table)
        found.append(at + np.uint64(offset))
        if task.keys:
            keys.append(table.select(list(task.keys)).take(pa.array(at)))
        offset += table.num_rows
    if task.keys and not keys:
        keys.append(pa.schema([matcher.schema.field(k) for k in task.keys]).empty_table())
    return MatchResult(task.name, np.concatenate(found), pa.concat_tables(keys) if task.keys else None)


Runner = Callable[[pafs.FileSystem, list[MatchTask], Where, pa.Schema], list[MatchResult]]


def run_local(threads: int | None = None, progress: bool | None = None) -> Runner:
    """Match files on a thread pool of this process (pyarrow releases the GIL)."""

    def run(fs: pafs.FileSystem, tasks: list[MatchTask], where: Where, schema: pa.Schema) -> list[MatchResult]:
        from ..progress import progress_bar

        matcher = where.compile(schema)
        tick = progress_bar(len(tasks), progress, "arrowidx paimon delete")

        def work(task: MatchTask) -> MatchResult:
            out = match_file(fs, task, matcher)
            tick()
            return out

        workers = max(1, min(len(tasks), threads or default_threads()))
        if workers == 1:
            return [work(t) for t in tasks]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(work, tasks))

    return run


# ----------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------
@dataclass
class DeleteReport:
    """What :func:`delete` did (``print()`` it)."""

    table: str
    where: str
    snapshot_id: int | None = None  # the snapshot committed (or, when nothing was, the latest)
    base_snapshot_id: int | None = None  # the snapshot the rows were found in
    committed: bool = False
    dry_run: bool = False  # counted only (dry_run=True, or confirm said no)
    commit_kind: str = ""
    rows_deleted: int = 0  # rows a read of the table no longer returns
    rows_by_file: dict[str, int] = field(default_factory=dict)  # newly deleted rows per data file
    files_read: int = 0
    files_skipped: int = 0  # ruled out by partition values, statistics or file indexes
    superseded: int = 0  # primary keys: versions of deleted keys in level-0 files, deleted too
    index_files: list[str] = field(default_factory=list)  # deletion-vectors index files written
    attempts: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # seconds planning, finding rows, committing (all attempts)

    def __str__(self) -> str:
        counts = (
            f"{self.rows_deleted:,} row(s) in {len(self.rows_by_file)} data file(s)"
            f" ({self.files_read} read, {self.files_skipped} ruled out by partitions, statistics or indexes)"
        )
        extra = f"; {self.superseded:,} not yet compacted version(s) of the deleted keys too" if self.superseded else ""
        if self.dry_run:
            return f"{self.table}: would delete {counts} where {self.where}{extra}; nothing written"
        if not self.committed:
            return f"{self.table}: no live row matches {self.where}: nothing committed (snapshot {self.snapshot_id})"
        retries = f", {self.attempts} attempts" if self.attempts > 1 else ""
        return (
            f"{self.table}: snapshot {self.snapshot_id} committed ({self.commit_kind}, on snapshot {self.base_snapshot_id}):"
            f" deleted {counts}{extra}, {len(self.index_files)} deletion-vectors index file(s), in {self.seconds:.2f}s{retries}"
        )


# ----------------------------------------------------------------------------------------
# Planning one attempt on the latest snapshot
# ----------------------------------------------------------------------------------------
@dataclass
class _Plan:
    table: PaimonTable
    snapshot: dict | None
    options: dict[str, str]  # the latest schema's
    schema_id: int  # the latest schema's id
    matcher: Matcher
    tasks: list[MatchTask]
    files: dict[str, DataFile]  # every live file by name
    level0: dict[tuple[bytes, int], list[DataFile]]  # primary-key tables: level-0 files per bucket
    skipped: int
    unaware: bool


def check_table(path: str, options: Mapping[str, str], primary_keys: list[str]) -> None:
    """Refuse what this delete cannot do exactly as Java does, saying what to do instead."""
    if not _on(options, "deletion-vectors.enabled"):
        raise UnsupportedTableError(
            f"{path}: the table has no deletion vectors (deletion-vectors.enabled is not true), so rows cannot be"
            " deleted without rewriting its data files. Enable them, e.g. in Spark SQL:"
            " ALTER TABLE <db>.<table> SET TBLPROPERTIES ('deletion-vectors.enabled' = 'true')"
            " (Paimon 1.x asks for 'deletion-vectors.modifiable' = 'true' too; compact a primary-key table fully"
            " first), then run the delete again"
        )
    for key in ("data-evolution.enabled", "row-tracking.enabled"):
        if _on(options, key):
            raise UnsupportedTableError(f"{path}: {key}=true tables are not supported by arrowidx.paimon.delete")
    if _on(options, "index-file-in-data-file-dir"):
        raise UnsupportedTableError(f"{path}: index-file-in-data-file-dir=true is not supported by arrowidx.paimon.delete")
    if options.get("manifest.format", "avro").lower() != "avro":
        raise UnsupportedTableError(f"{path}: manifest.format={options['manifest.format']!r} is not supported (only avro)")
    if str(options.get("bucket", "-1")).strip() == str(POSTPONE_BUCKET):
        raise UnsupportedTableError(f"{path}: bucket=-2 (postpone) tables are not supported by arrowidx.paimon.delete")
    if primary_keys:
        engine = options.get("merge-engine", "deduplicate")
        if engine not in MERGE_ENGINES:
            raise UnsupportedTableError(
                f"{path}: merge-engine={engine!r}: arrowidx.paimon.delete supports {' and '.join(MERGE_ENGINES)}"
                " primary-key tables (delete from this one with Spark's DELETE FROM)"
            )
        if _on(options, "pk-clustering-override"):
            raise UnsupportedTableError(f"{path}: pk-clustering-override=true is not supported by arrowidx.paimon.delete")
        producer = options.get("changelog-producer", "none")
        if producer != "none":
            raise UnsupportedTableError(
                f"{path}: changelog-producer={producer!r}: this delete writes deletion vectors, no retract records, so"
                " readers of the table's changelog would not see it; delete with Spark's DELETE FROM"
            )


def _plan(fs: pafs.FileSystem, path: str, where: Where) -> _Plan:
    table = PaimonTable(fs, path)
    schema_id = latest_schema_id(fs, path)
    options = read_schema(fs, path, schema_id).options if schema_id != table.table_schema.id else dict(table.options)
    keys = list(table.primary_keys)
    check_table(path, options, keys)
    matcher = where.compile(table.schema)
    matcher.check()
    snapshot = None if table.snapshot_id is None else read_snapshot(fs, path, table.snapshot_id)
    dedup = bool(keys)  # (deduplicate: check_table refuses the others)
    unaware = not keys and str(options.get("bucket", "-1")).strip() == "-1"
    if snapshot is None:
        return _Plan(table, None, options, schema_id, matcher, [], {}, {}, 0, unaware)
    explain = table.plan(matcher.pushdown)
    maps: dict[int, tuple[tuple[str, str | None], ...]] = {}

    def columns_of(f: DataFile) -> tuple[tuple[str, str | None], ...]:
        if f.schema_id not in maps:
            old = read_schema(fs, path, f.schema_id) if f.schema_id != table.table_schema.id else table.table_schema
            maps[f.schema_id] = tuple((fld.name, getattr(old.field_by_id(fld.id), "name", None)) for fld in table.table_schema.fields)
        return maps[f.schema_id]

    tasks, skipped = [], 0
    for p in explain.files:
        f = p.file
        if f.external_path:
            raise UnsupportedTableError(f"{path}: data file {f.name} is at an external path ({f.external_path}); not supported")
        if p.skipped:
            skipped += 1
            continue
        if p.deletion is not None and p.deletion.cardinality is not None and p.deletion.cardinality >= f.rows:
            continue  # every row deleted already
        constants = tuple(table.partition_values(f).items())
        tasks.append(MatchTask(f.name, p.path, f.rows, columns_of(f), constants, tuple(keys) if dedup else ()))
    level0: dict[tuple[bytes, int], list[DataFile]] = {}
    if dedup:
        for f in table.files:
            if f.level == 0:
                level0.setdefault((f.partition, f.bucket), []).append(f)
    for f in table.files:
        if f.bucket == POSTPONE_BUCKET:
            raise UnsupportedTableError(f"{path}: {f.name} is in the postpone bucket (not yet compacted): not supported")
    return _Plan(table, snapshot, options, schema_id, matcher, tasks, {f.name: f for f in table.files}, level0, skipped, unaware)


# ----------------------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------------------
class _Vectors:
    """The deletion vectors of the snapshot's files, read on demand (each index file once)."""

    def __init__(self, table: PaimonTable, bitmap64: bool):
        self.table, self.bitmap64 = table, bitmap64
        self.blobs: dict[str, bytes] = {}

    def of(self, name: str) -> DeletionVector | None:
        rng = self.table.deletion_ranges.get(name)
        if rng is None:
            return None
        blob = self.blobs.get(rng.index_file)
        if blob is None:
            blob = self.blobs[rng.index_file] = read_bytes(self.table.fs, rng.index_file)
        return read_deletion_vectors(blob, ranges={name: (rng.offset, rng.length)})[name]

    def merged(self, name: str, positions: np.ndarray) -> tuple[DeletionVector, int]:
        """The file's vector with ``positions`` deleted too, and how many rows that adds."""
        old = self.of(name)
        new = DeletionVector.from_positions(positions, bitmap64=self.bitmap64)
        before = 0
        if old is not None:
            before = old.cardinality
            new.merge(old.with_kind(self.bitmap64))
        return new, new.cardinality - before


def _superseded(fs: pafs.FileSystem, plan: _Plan, bucket_files: list[DataFile], deleted: pa.Table) -> dict[str, np.ndarray]:
    """Positions of the rows of level-0 files holding a deleted key (primary-key tables)."""
    keys = deleted.column_names
    deleted = deleted.group_by(keys).aggregate([])
    out: dict[str, np.ndarray] = {}
    for f in bucket_files:
        old = read_schema(fs, plan.table.path, f.schema_id)
        mapping = tuple((k, getattr(old.field_by_id(plan.table.table_schema.field(k).id), "name", None)) for k in keys)
        task = MatchTask(f.name, plan.table.file_path(f), f.rows, mapping)
        found, offset = [], 0
        for data in read_columns(fs, task, keys, plan.table.schema):  # per row group
            rows = pa.array(np.arange(offset, offset + data.num_rows, dtype=np.uint64))
            found.append(data.append_column("__arrowidx_pos", rows).join(deleted, keys=keys, join_type="inner").column("__arrowidx_pos").to_numpy())
            offset += data.num_rows
        hits = np.concatenate(found) if found else np.zeros(0, np.uint64)
        if len(hits):
            out[f.name] = np.sort(hits)
    return out


def _generation(fs: pafs.FileSystem, path: str, lists: ManifestLists) -> tuple[int, int]:
    """Which Paimon wrote the table's manifests, as far as their fields tell: (0, 9), (1, 0),
    (1, 1) or (1, 3) (Paimon 1.3 and later)."""
    manifests = lists.data_manifests()
    fields = {f["name"] for f in lists.schema_and_codec()[0]["fields"]}
    if manifests:
        name = plain_name(manifests[-1]["_FILE_NAME"], path, "manifest")
        entry = read_avro_file(fs, posixpath.join(path, "manifest", name)).schema
        for f in entry["fields"]:
            fields.add(f["name"])
            if f["name"] == "_FILE":
                fields |= {x["name"] for x in f["type"]["fields"]}
    for marker, version in (("_FIRST_ROW_ID", (1, 3)), ("_MIN_BUCKET", (1, 1)), ("_VALUE_STATS_COLS", (1, 0))):
        if marker in fields:
            return version
    return (0, 9)


def run_delete(
    path: Any,
    where: Any,
    *,
    filesystem: Any,
    storage_options: Mapping[str, Any] | None,
    dry_run: bool,
    confirm: Callable[[DeleteReport], bool] | None,
    runner: Runner,
) -> DeleteReport:
    """:func:`delete` with the rows found by ``runner`` (local threads, or Spark executors in
    :func:`arrowidx.spark.paimon_delete`)."""
    start = time.perf_counter()
    spec = where_of(where)
    fs, table_path = resolve_table(path, filesystem, storage_options)
    report = DeleteReport(table_path, spec.text)
    found: dict[str, MatchResult] = {}  # data files never change: what was found in one is reused
    answers: list[bool] = []

    def clock(phase: str, since: float) -> float:
        now = time.perf_counter()
        report.phases[phase] = report.phases.get(phase, 0.0) + now - since
        return now

    def attempt(n: int) -> DeleteReport:
        report.attempts = n
        mark = time.perf_counter()
        plan = _plan(fs, table_path, spec)
        mark = clock("plan", mark)
        report.base_snapshot_id = report.snapshot_id = plan.table.snapshot_id
        todo = [t for t in plan.tasks if t.name not in found]
        for result in runner(fs, todo, spec, plan.table.schema) if todo else []:
            found[result.name] = result
        report.files_read = len(plan.tasks)
        report.files_skipped = plan.skipped
        bitmap64 = _on(plan.options, "deletion-vectors.bitmap64")
        vectors = _Vectors(plan.table, bitmap64)
        changed: dict[tuple[bytes, int], dict[str, DeletionVector]] = {}
        report.rows_by_file, report.rows_deleted, report.superseded = {}, 0, 0
        deleted_keys: dict[tuple[bytes, int], list[pa.Table]] = {}
        for task in plan.tasks:
            result = found[task.name]
            if not len(result.positions):
                continue
            f = plan.files[task.name]
            dv, added = vectors.merged(f.name, result.positions)
            if added:
                changed.setdefault((f.partition, f.bucket), {})[f.name] = dv
                report.rows_by_file[f.name] = added
                report.rows_deleted += added
            if result.keys is not None and plan.level0.get((f.partition, f.bucket)):
                deleted_keys.setdefault((f.partition, f.bucket), []).append(result.keys)
        for bucket, tables in deleted_keys.items():
            for name, positions in _superseded(fs, plan, plan.level0[bucket], pa.concat_tables(tables)).items():
                dv, added = vectors.merged(name, positions)
                if added:
                    changed.setdefault(bucket, {})[name] = dv
                    report.superseded += added
        mark = clock("find", mark)
        if not changed or dry_run:
            report.dry_run = dry_run
            return report
        if confirm is not None:
            if not answers:
                answers.append(bool(confirm(report)))
            if not answers[0]:
                report.dry_run = True
                return report
        try:
            return _commit(fs, table_path, plan, changed, report)
        finally:
            clock("commit", mark)

    out = retry_on_conflict(attempt)
    out.seconds = time.perf_counter() - start
    return out


def _commit(fs: pafs.FileSystem, path: str, plan: _Plan, changed: dict, report: DeleteReport) -> DeleteReport:
    """Write the index files and commit one snapshot (see the module docstring)."""
    snapshot = plan.snapshot
    manifest_dir = posixpath.join(path, "manifest")

    def avro_list(name: str | None):
        return None if not name else read_avro_file(fs, posixpath.join(manifest_dir, plain_name(name, path, "manifest list")))

    lists = ManifestLists(avro_list(snapshot.get("baseManifestList")), avro_list(snapshot.get("deltaManifestList")))
    generation = _generation(fs, path, lists)
    index = read_index_files(fs, path, snapshot, "Paimon 0.9" if generation == (0, 9) else "Paimon >= 1.0", lists.schema_and_codec()[1])
    bitmap64 = _on(plan.options, "deletion-vectors.bitmap64")
    writer = IndexFileWriter(fs, path, bitmap64, on_write=lambda: fault_point("paimon-dv-written"))
    kind = "COMPACT" if plan.table.primary_keys or generation < (1, 3) else "OVERWRITE"
    try:
        manifest = apply_changes(fs, path, index, changed, unaware=plan.unaware, writer=writer, target=target_size(plan.options))
        report.snapshot_id, _ = commit_snapshot(
            fs, path, snapshot, lists, [], None, plan.schema_id, [], snapshot.get("statistics"),
            index_manifest=manifest, commit_kind=kind,
        )  # fmt: skip
    except BaseException:
        writer.remove_all()  # never referenced by a snapshot
        raise
    report.committed, report.commit_kind = True, kind
    report.index_files = [posixpath.basename(p) for p in writer.written]
    return report


def delete(
    path: Any,
    where: Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    filesystem: Any = None,
    dry_run: bool = False,
    confirm: Callable[[DeleteReport], bool] | None = None,
    threads: int | None = None,
    progress: bool | None = None,
) -> DeleteReport:
    """Delete the rows matching ``where`` from the Paimon table at ``path`` (a table
    directory ``<warehouse>/<db>.db/<table>``, or an object-store URI with
    ``storage_options``), committing one snapshot with deletion vectors Java Paimon reads.

    ``where``: SQL text (SQL's meaning), a ``pyarrow.compute.Expression`` or a Polars
    expression (their meanings), as reads take it; None is refused: deleting every row takes
    ``"TRUE"``. ``dry_run``: find and count the rows, write nothing. ``confirm``: called with
    the counts before anything is written (once, even when the delete plans again after
    another writer's commit); False makes it a dry run. ``threads``: data files read at once
    (default two per core, at most 8). ``progress``: a bar on a terminal.

    The table needs ``deletion-vectors.enabled``; tables this cannot delete from exactly as
    Java does raise :class:`~arrowidx.errors.UnsupportedTableError` saying what to do (see
    docs/paimon.md).
    """
    return run_delete(path, where, filesystem=filesystem, storage_options=storage_options, dry_run=dry_run,
                      confirm=confirm, runner=run_local(threads, progress))  # fmt: skip


__all__ = ["DeleteReport", "MatchResult", "MatchTask", "Where", "delete", "match_file", "run_delete", "where_of"]
