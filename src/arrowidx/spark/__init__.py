"""arrowidx on Spark (PySpark 4.1+): build indexes, write indexed datasets, read with pruning.

Four entry points, all working through the filesystem (executors read and write data and
index files themselves; the driver only ever gathers manifest rows):

* :func:`build` indexes an existing Parquet dataset: a DataFrame of relative paths is
  spread over the executors, each task runs the local build's per-file function
  (:func:`arrowidx.lake.build.index_one_file`, which writes ``_arrowidx/index/*.index``)
  inside ``mapInArrow`` and returns manifest rows; the driver commits the manifest. The
  result is the same manifest and the same index files as :func:`arrowidx.build`.
* :func:`write` writes a DataFrame as an indexed dataset: every task writes its Parquet
  file(s) and their indexes under ``_arrowidx/staging/<write id>/`` (invisible to plain
  readers, which skip ``_`` names) and returns manifest rows; the driver moves the files of
  the successful task attempts into place and commits the manifest. Files of failed or
  retried attempts are never moved and are deleted with the staging folder.
* :func:`register` registers the Python data source ``arrowidx``:
  ``spark.read.format("arrowidx").load(path)``. Filters Spark pushes are translated to
  ``pyarrow.compute`` expressions with Spark's semantics; the indexes prune files (a file
  the indexes rule out is not a partition at all) and rows; deletion vectors are applied.
* :func:`apply_deletions_and_index` returns a ``mapInArrow`` function for pipelines that
  read Parquet with Spark's own reader: given ``_metadata.file_path`` and
  ``_metadata.row_index`` it drops deleted rows and rows an index rules out.

See ``docs/spark.md`` for usage, the settings needed and which filters are accepted.
"""

from __future__ import annotations

import dataclasses
import json
import math
import posixpath
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from ..errors import ArrowIdxError
from ..lake.build import BuildReport, commit_build, index_one_file, plan_build
from ..lake.layout import (
    META_DIR,
    CommitConflictError,
    DeletionRef,
    FileEntry,
    IndexRef,
    Manifest,
    commit_manifest,
    discover,
    file_infos,
    join,
    latest_version,
    load_manifest,
    manifest_path,
    read_bytes,
    resolve,
)
from ..lake.scan import IndexedDataset
from ..options import in_manifest_threshold, parse_index_options, parse_memory_size

__all__ = [
    "ArrowIdxDataSource",
    "DeletionAndIndexFilter",
    "WriteReport",
    "apply_deletions_and_index",
    "arrow_to_spark_schema",
    "build",
    "register",
    "translate_filter",
    "with_deletions_and_index",
    "write",
]

FORMAT_NAME = "arrowidx"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
STAGING_DIR = f"{META_DIR}/staging"
_MANIFEST_ROWS = "path string, entry string"

# --------------------------------------------------------------------------------------
# manifest rows: what tasks send back to the driver (one JSON FileEntry per data file)
# --------------------------------------------------------------------------------------


def _entry_to_json(entry: FileEntry) -> str:
    return json.dumps(dataclasses.asdict(entry), sort_keys=True)


def _entry_from_json(text: str) -> FileEntry:
    d = json.loads(text)
    index = IndexRef(**d["index"]) if d.get("index") else None
    deletion = DeletionRef(**d["deletion"]) if d.get("deletion") else None
    return FileEntry(d["path"], d["size"], d["mtime_ns"], d["rows"], index, deletion)


def _manifest_rows(entries: list[FileEntry]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([e.path for e in entries], pa.string()), pa.array([_entry_to_json(e) for e in entries], pa.string())],
        names=["path", "entry"],
    )


def _gather(df) -> list[FileEntry]:
    """Run the job; the driver receives only the (small) manifest rows."""
    table = df.toArrow()
    return sorted((_entry_from_json(t) for t in table.column("entry").to_pylist()), key=lambda e: e.path)


def _parallelism(spark) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return 2


def _normalise_options(options: Mapping[str, object] | None) -> dict[str, str]:
    options = {str(k): str(v) for k, v in (options or {}).items()}
    parse_index_options(options)  # fail on bad options before any job starts
    return options


# --------------------------------------------------------------------------------------
# 1. build
# --------------------------------------------------------------------------------------


class _IndexTask:
    """``mapInArrow`` body of :func:`build`: index the files named in the ``path`` column."""

    def __init__(self, fs: pafs.FileSystem, root: str, options: dict[str, str], threshold: int):
        self.fs, self.root, self.options, self.threshold = fs, root, options, threshold

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            entries = []
            for rel in batch.column("path").to_pylist():  # one iteration per data file
                # Stat just before reading, as the local build does: the entry describes
                # the file the index was built from.
                info = self.fs.get_file_info(join(self.root, rel))
                entries.append(index_one_file(self.fs, self.root, rel, info, self.options, self.threshold))
            if entries:
                yield _manifest_rows(entries)


def build(
    spark,
    source: Any,
    options: Mapping[str, object],
    *,
    filesystem: pafs.FileSystem | None = None,
    incremental: bool = True,
    partitions: int | None = None,
) -> BuildReport:
    """Index every data file of ``source`` on the Spark cluster; commit the manifest on the driver.

    Same arguments and result as :func:`arrowidx.build` (which it mirrors step for step:
    incremental by default, removed files leave the manifest, deletion vectors of unchanged
    data are kept), but the files are indexed by Spark tasks. ``source`` must be reachable
    under the same path (or URI) from every executor. ``partitions`` is the number of tasks
    (default: two per core, never more than one per file).
    """
    ensure_worker_python(spark)
    plan = plan_build(source, _normalise_options(options), filesystem=filesystem, incremental=incremental)
    built: list[FileEntry] = []
    if plan.todo:
        n = min(len(plan.todo), partitions or 2 * _parallelism(spark))
        paths_df = spark.createDataFrame(pa.table({"path": pa.array(plan.todo, pa.string())})).repartition(n)
        task = _IndexTask(plan.fs, plan.root, plan.options, plan.threshold)
        built = _gather(paths_df.mapInArrow(task, _MANIFEST_ROWS))
    return commit_build(plan, built)


# --------------------------------------------------------------------------------------
# 2. write
# --------------------------------------------------------------------------------------


@dataclass
class WriteReport:
    """What :func:`write` committed."""

    root: str
    version: int
    mode: str
    files: list[str] = field(default_factory=list)
    rows: int = 0
    index_bytes: int = 0
    replaced: list[str] = field(default_factory=list)  # data files removed by mode="overwrite"
    orphans_removed: int = 0  # files of failed or retried task attempts deleted with staging
    seconds: float = 0.0

    def __str__(self) -> str:
        extra = f", replaced {len(self.replaced)} file(s)" if self.mode == "overwrite" else ""
        return (
            f"manifest v{self.version} at {self.root}: wrote {len(self.files)} file(s), {self.rows:,} rows"
            f" ({self.index_bytes:,} index bytes){extra} in {self.seconds:.2f}s"
        )


class _WriteTask:
    """``mapInArrow`` body of :func:`write`: Parquet file(s) + indexes under staging, manifest rows out."""

    def __init__(self, fs, staging, options, threshold, row_group_size, max_rows_per_file, parquet_options, hook):
        self.fs, self.staging, self.options, self.threshold = fs, staging, options, threshold
        self.row_group_size, self.max_rows_per_file = row_group_size, max_rows_per_file
        self.parquet_options, self.hook = parquet_options, hook

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        written: list[str] = []
        writer: pq.ParquetWriter | None = None
        pending: list[pa.RecordBatch] = []
        pending_rows = in_file = 0
        rg = self.row_group_size

        def flush(final: bool) -> None:
            nonlocal pending, pending_rows
            if not pending_rows:
                return
            table = pa.Table.from_batches(pending)
            cut = pending_rows if final else (pending_rows // rg) * rg
            if cut:
                writer.write_table(table.slice(0, cut), row_group_size=rg)
            rest = table.slice(cut)
            pending, pending_rows = rest.to_batches(), rest.num_rows

        for batch in batches:  # per batch (10,000 rows by default), never per row
            offset = 0
            while offset < batch.num_rows:
                if writer is None:
                    rel = f"part-{partition:05d}-{uuid.uuid4().hex}.parquet"
                    sink = self.fs.open_output_stream(join(self.staging, rel))
                    writer = pq.ParquetWriter(sink, batch.schema, **self.parquet_options)
                    written.append(rel)
                take = batch.num_rows - offset
                if self.max_rows_per_file:
                    take = min(take, self.max_rows_per_file - in_file)
                pending.append(batch.slice(offset, take))
                pending_rows += take
                in_file += take
                offset += take
                if pending_rows >= rg:
                    flush(final=False)
                if self.max_rows_per_file and in_file >= self.max_rows_per_file:
                    flush(final=True)
                    writer.close()
                    sink.close()
                    writer, in_file = None, 0
        if writer is not None:
            flush(final=True)
            writer.close()
            sink.close()
        entries = []
        for rel in written:
            info = self.fs.get_file_info(join(self.staging, rel))
            entries.append(index_one_file(self.fs, self.staging, rel, info, self.options, self.threshold))
        if self.hook is not None:  # testing: fail an attempt after its files exist
            self.hook(partition, attempt)
        if entries:
            yield _manifest_rows(entries)


def write(
    df,
    path: Any,
    options: Mapping[str, object] | None = None,
    mode: str = "append",
    *,
    filesystem: pafs.FileSystem | None = None,
    row_group_size: int = 100_000,
    max_rows_per_file: int | None = None,
    parquet_options: Mapping[str, Any] | None = None,
    _task_hook: Callable[[int, int], None] | None = None,
) -> WriteReport:
    """Write ``df`` as Parquet files with their indexes, and commit them in one manifest version.

    Every non-empty partition of ``df`` becomes one file (or several, with
    ``max_rows_per_file``) named ``part-<partition>-<uuid>.parquet``, written with
    ``row_group_size`` rows per row group, and is indexed in the same task with the local
    build's per-file function. ``options`` are the ``file-index.*`` keys; ``None`` means the
    options the dataset was indexed with. ``mode``:

    * ``"append"``: the new files join the committed ones. The dataset's options must be the
      same (or ``None``), and every data file under ``path`` must already be in the manifest
      (run :func:`build` first), so that plain readers and arrowidx see the same files.
    * ``"overwrite"``: the new manifest holds only the new files; after the commit the data
      files, index files and deletion files of the previous version are deleted.

    A failed or retried task attempt contributes nothing: only the manifest rows of the
    attempts Spark accepted are committed, and their files are the only ones moved out of
    ``_arrowidx/staging/<write id>/``; that folder (with any orphan files) is deleted at the
    end, whether the write succeeds or fails.
    """
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', got {mode!r}")
    if row_group_size < 1 or (max_rows_per_file is not None and max_rows_per_file < 1):
        raise ValueError("row_group_size and max_rows_per_file must be positive")
    ensure_worker_python(df.sparkSession)
    start = time.perf_counter()
    fs, root, explicit = resolve(path, filesystem)
    if explicit is not None:
        raise ArrowIdxError("write needs one dataset directory, not a list of files")
    fs.create_dir(root, recursive=True)
    current = load_manifest(fs, root)
    if options is None:
        options = dict(current.options)
    options = _normalise_options(options)
    if mode == "append":
        if current.files and current.options != options:
            raise ArrowIdxError(
                f"{root} is indexed with other options ({current.options}); append with those"
                " (pass options=None), or re-index with arrowidx.spark.build first"
            )
        unmanaged = sorted(set(posixpath.relpath(p, root) for p in discover(fs, root)) - set(current.files))
        if unmanaged:
            raise ArrowIdxError(
                f"{root} holds {len(unmanaged)} data file(s) the manifest does not list (e.g."
                f" {unmanaged[0]}); run arrowidx.spark.build(spark, path, options) first, or write"
                " with mode='overwrite'"
            )
    threshold = in_manifest_threshold(options)
    staging = join(root, f"{STAGING_DIR}/{uuid.uuid4().hex}")
    fs.create_dir(staging, recursive=True)
    report = WriteReport(root=root, version=current.version, mode=mode)
    task = _WriteTask(fs, staging, options, threshold, row_group_size, max_rows_per_file, dict(parquet_options or {}), _task_hook)
    moved: list[str] = []
    try:
        entries = _gather(df.mapInArrow(task, _MANIFEST_ROWS))
        for entry in entries:  # only the files of successful attempts: move them into place
            for rel in [entry.path] + ([entry.index.file] if entry.index and entry.index.file else []):
                dst = join(root, rel)
                fs.create_dir(posixpath.dirname(dst), recursive=True)
                fs.move(join(staging, rel), dst)
                moved.append(dst)
            info = fs.get_file_info(join(root, entry.path))
            if info.size != entry.size:
                raise ArrowIdxError(f"{entry.path} changed while it was being committed")
            entry.mtime_ns = info.mtime_ns  # a move may be a copy (object stores): new mtime
        new = {e.path: e for e in entries}
        manifest, previous = _commit_files(fs, root, new, options, mode)
    except BaseException:
        for dst in moved:  # not committed: take the moved files back out of the dataset
            _delete_quietly(fs, dst)
        raise
    finally:
        report.orphans_removed = _remove_staging(fs, root, staging)
    if mode == "overwrite":
        report.replaced = _delete_replaced(fs, root, previous, manifest)
    report.version = manifest.version
    report.files = sorted(new)
    report.rows = sum(e.rows for e in entries)
    report.index_bytes = sum(e.index.size for e in entries if e.index)
    report.seconds = time.perf_counter() - start
    return report


def _commit_files(fs, root: str, new: dict[str, FileEntry], options: dict[str, str], mode: str, attempts: int = 5):
    """Commit ``new`` on top of the latest manifest (retrying if another writer got in first)."""
    for attempt in range(attempts):
        previous = load_manifest(fs, root)
        if mode == "append" and not new:
            return previous, previous
        files = dict(new) if mode == "overwrite" else {**previous.files, **new}
        manifest = Manifest(files={rel: files[rel] for rel in sorted(files)}, options=options)
        try:
            return commit_manifest(fs, root, manifest, previous.version), previous
        except CommitConflictError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _delete_quietly(fs, path: str) -> bool:
    try:
        fs.delete_file(path)
        return True
    except OSError:
        return False


def _remove_staging(fs, root: str, staging: str) -> int:
    """Delete this write's staging folder (and the staging parent when it is empty)."""
    leftovers = 0
    try:
        leftovers = sum(1 for i in fs.get_file_info(pafs.FileSelector(staging, recursive=True)) if i.type == pafs.FileType.File)
        fs.delete_dir(staging)
    except OSError:
        pass
    parent = join(root, STAGING_DIR)
    try:
        if not fs.get_file_info(pafs.FileSelector(parent)):
            fs.delete_dir(parent)
    except OSError:
        pass
    return leftovers


def _delete_replaced(fs, root: str, previous: Manifest, manifest: Manifest) -> list[str]:
    """After an overwrite: delete data files no longer listed, and the old index and deletion files."""
    keep = set(manifest.files)
    data = {posixpath.relpath(p, root) for p in discover(fs, root)} | set(previous.files)
    replaced = sorted(rel for rel in data - keep if _delete_quietly(fs, join(root, rel)))
    side = set()
    for entry in previous.files.values():
        if entry.path in keep:
            continue
        if entry.index is not None and entry.index.file:
            side.add(entry.index.file)
        if entry.deletion is not None:
            side.add(entry.deletion.file)
    for e in manifest.files.values():  # never delete what the new version references
        side.discard(e.index.file if e.index else None)
        side.discard(e.deletion.file if e.deletion else None)
    for rel in side:
        _delete_quietly(fs, join(root, rel))
    return replaced


# --------------------------------------------------------------------------------------
# datasets pinned to a manifest version (shared by the reader and the mapInArrow filter)
# --------------------------------------------------------------------------------------

_DATASETS: dict[tuple, IndexedDataset] = {}
_DATASETS_LOCK = threading.Lock()


def _dataset_at(fs: pafs.FileSystem, root: str, version: int, on_corrupt: str = "raise") -> IndexedDataset:
    """An :class:`IndexedDataset` showing manifest ``version`` (cached per worker process).

    Its indexes, footers and deletion vectors are cached by (file, size, mtime), so a cached
    dataset is reused across tasks and queries; file sizes and times are re-read per task
    (:func:`_refresh`), so staleness is still detected.
    """
    key = (fs.type_name, root, version, on_corrupt)
    with _DATASETS_LOCK:
        data = _DATASETS.get(key)
    if data is None:
        data = IndexedDataset(fs, root, on_corrupt=on_corrupt, threads=1)
        if data.manifest.version != version:
            if version == 0:
                data.manifest = Manifest()
            else:
                source = join(root, manifest_path(version))
                data.manifest = Manifest.from_json(read_bytes(fs, source).decode(), source)
        with _DATASETS_LOCK:
            if len(_DATASETS) > 16:
                _DATASETS.clear()
            _DATASETS[key] = data
    return data


def _refresh(data: IndexedDataset, rels: list[str]) -> None:
    """Re-stat ``rels`` (only those) before planning them.

    ``IndexedDataset`` otherwise stats every file of the manifest on first use and keeps the
    answers; here only the files a task reads are looked at, and freshly.
    """
    data._infos.update(file_infos(data.fs, data.root, rels))


# --------------------------------------------------------------------------------------
# 3. the data source: schema, filter translation, partitions, read
# --------------------------------------------------------------------------------------


def _spark_type(t: pa.DataType):
    from pyspark.sql import types as T

    if pa.types.is_dictionary(t):
        return _spark_type(t.value_type)
    simple = [
        (pa.types.is_boolean, T.BooleanType),
        (pa.types.is_int8, T.ByteType),
        (pa.types.is_int16, T.ShortType),
        (pa.types.is_int32, T.IntegerType),
        (pa.types.is_int64, T.LongType),
        (pa.types.is_uint8, T.ShortType),  # as Spark's Parquet reader maps unsigned types
        (pa.types.is_uint16, T.IntegerType),
        (pa.types.is_uint32, T.LongType),
        (pa.types.is_float16, T.FloatType),
        (pa.types.is_float32, T.FloatType),
        (pa.types.is_float64, T.DoubleType),
        (pa.types.is_date, T.DateType),
    ]
    for test, spark_type in simple:
        if test(t):
            return spark_type()
    if pa.types.is_uint64(t):
        return T.DecimalType(20, 0)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return T.StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return T.BinaryType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_decimal(t) and t.precision <= 38:
        return T.DecimalType(t.precision, t.scale)
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return from_arrow_type(t, prefer_timestamp_ntz=True)
    except Exception as e:
        raise ArrowIdxError(f"arrowidx cannot hand Arrow type {t} to Spark: {e}") from None


def arrow_to_spark_schema(schema: pa.Schema):
    """The Spark ``StructType`` for an Arrow schema, as Spark's own Parquet reader infers it.

    Timestamps with a time zone become ``TIMESTAMP``, without one ``TIMESTAMP_NTZ``
    (Spark's ``spark.sql.parquet.inferTimestampNTZ.enabled`` default); unsigned integers
    widen as in Spark. Every field is nullable.
    """
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, _spark_type(f.type), True) for f in schema])


def _to_spark_arrow(table: pa.Table, target: pa.Schema) -> pa.Table:
    """``table`` in the exact Arrow schema Spark expects from a Python data source."""
    arrays = []
    for f in target:
        column = table.column(f.name)
        if column.type != f.type:
            unsafe = pa.types.is_timestamp(column.type) and column.type.unit == "ns"  # Spark keeps micros
            column = pc.cast(column, f.type, safe=not unsafe)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=target)


_NULL = pc.scalar(pa.scalar(None, pa.bool_()))


def _column(attribute: tuple, schema: pa.Schema) -> pa.Field | None:
    if len(attribute) != 1:
        return None  # nested field: not pushed
    name = attribute[0]
    if schema.get_field_index(name) >= 0:
        return schema.field(name)
    matches = [f for f in schema if f.name.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _literal(value: Any, t: pa.DataType) -> pa.Scalar | None:
    """Spark's filter value (a Python object) as a scalar of column type ``t``, or None."""
    import datetime
    import decimal

    if value is None:
        return None
    try:
        if pa.types.is_boolean(t):
            return pa.scalar(value, t) if isinstance(value, bool) else None
        if pa.types.is_signed_integer(t):
            return pa.scalar(value, t) if isinstance(value, int) and not isinstance(value, bool) else None
        if pa.types.is_floating(t) and not pa.types.is_float16(t):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return pa.scalar(float(value), t)
            return None
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return pa.scalar(value, t) if isinstance(value, str) else None
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return pa.scalar(bytes(value), t) if isinstance(value, (bytes, bytearray)) else None
        if pa.types.is_date32(t):
            ok = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
            return pa.scalar(value, t) if ok else None
        if pa.types.is_timestamp(t):
            if not isinstance(value, datetime.datetime) or t.unit == "ns":
                return None  # Spark sees ns timestamps truncated to micros: no exact filter
            if (value.tzinfo is None) != (t.tz is None):
                return None
            # Spark's literal is microseconds; compare at that precision (pyarrow compares
            # across units exactly), the index binds it to the column's unit when exact.
            return pa.scalar(value, pa.timestamp("us", tz=t.tz))
        if pa.types.is_decimal(t):
            return pa.scalar(value, t) if isinstance(value, decimal.Decimal) else None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return None
    return None


@dataclass
class Translated:
    """A Spark filter as pyarrow Expressions.

    ``exact``: evaluates, under pyarrow's three-valued logic, to exactly what Spark's filter
    evaluates to (TRUE/FALSE/NULL) for every row; None if no such expression is known (the
    filter is then returned to Spark). ``prune``: what the indexes are asked; each is either
    ``exact`` itself or an expression the indexes answer soundly for Spark's semantics
    (float comparisons: arrowidx's predicate evaluation keeps every row IEEE *or* Java
    ordering selects, and Spark = IEEE on zeros, Java on NaN).
    """

    exact: pc.Expression | None
    prune: pc.Expression | None


def _float_compare(op: str, x: pc.Expression, lit: pa.Scalar) -> pc.Expression:
    """``x <op> lit`` with Spark's float semantics: NaN = NaN, NaN is larger than any number."""
    nan = pc.is_nan(x)  # NULL for NULL rows, so the result stays NULL there, as in Spark
    if math.isnan(lit.as_py()):
        return {"eq": nan, "ge": nan, "gt": x > lit, "lt": ~nan, "le": nan | ~nan}[op]
    plain = {"eq": x == lit, "lt": x < lit, "le": x <= lit, "gt": x > lit, "ge": x >= lit}[op]
    return plain | nan if op in ("gt", "ge") else plain


def _compare(op: str, x: pc.Expression, lit: pa.Scalar, is_float: bool) -> Translated:
    plain = {"eq": x == lit, "lt": x < lit, "le": x <= lit, "gt": x > lit, "ge": x >= lit}[op]
    if is_float:
        return Translated(_float_compare(op, x, lit), plain)
    return Translated(plain, plain)


def _prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (ASCII tail only)."""
    if not prefix or ord(prefix[-1]) >= 0x7F:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


_OPS = {EqualTo: "eq", GreaterThan: "gt", GreaterThanOrEqual: "ge", LessThan: "lt", LessThanOrEqual: "le"}
_UNSUPPORTED = Translated(None, None)


def translate_filter(f, schema: pa.Schema) -> Translated:
    """Translate one ``pyspark.sql.datasource`` filter against the dataset's Arrow schema."""
    if isinstance(f, Not):
        inner = translate_filter(f.child, schema)
        return Translated(
            ~inner.exact if inner.exact is not None else None,
            ~inner.prune if inner.prune is not None else None,
        )
    fld = _column(getattr(f, "attribute", ()), schema)
    if fld is None:
        return _UNSUPPORTED
    t = fld.type
    if pa.types.is_dictionary(t) or pa.types.is_unsigned_integer(t) or pa.types.is_float16(t):
        return _UNSUPPORTED
    x = pc.field(fld.name)
    is_float = pa.types.is_floating(t)
    if isinstance(f, IsNull):
        return Translated(x.is_null(), x.is_null())
    if isinstance(f, IsNotNull):
        return Translated(x.is_valid(), x.is_valid())
    if type(f) in _OPS:
        lit = _literal(f.value, t)
        return _UNSUPPORTED if lit is None else _compare(_OPS[type(f)], x, lit, is_float)
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return Translated(x.is_null(), x.is_null())
        lit = _literal(f.value, t)
        if lit is None:
            return _UNSUPPORTED
        eq = _compare("eq", x, lit, is_float)
        return Translated(eq.exact & x.is_valid(), eq.prune & x.is_valid())
    if isinstance(f, In):
        values = list(f.value)
        has_null = any(v is None for v in values)
        lits = [_literal(v, t) for v in values if v is not None]
        if any(lit is None for lit in lits):
            return _UNSUPPORTED
        if is_float and any(lit.as_py() == 0.0 for lit in lits):  # Spark: -0.0 = 0.0 (is_in tells them apart)
            lits += [pa.scalar(0.0, t), pa.scalar(-0.0, t)]
        try:  # literals keep their own type (timestamps: micros); is_in casts as needed
            value_set = pa.array([lit.as_py() for lit in lits], lits[0].type if lits else t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return _UNSUPPORTED
        # is_in never yields NULL; Spark's IN is NULL for a NULL value or when the list holds
        # NULL and nothing matched. NaN in the set matches NaN, as in Spark.
        found = pc.is_in(x, value_set=value_set, skip_nulls=True)
        expr = found | _NULL if has_null else found | (x.is_null() & _NULL)
        return Translated(expr, expr)
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or not isinstance(f.value, str):
            return _UNSUPPORTED
        if isinstance(f, StringEndsWith):
            expr = pc.ends_with(x, pattern=f.value)
            return Translated(expr, expr)
        if isinstance(f, StringContains):
            expr = pc.match_substring(x, pattern=f.value)
            return Translated(expr, expr)
        expr = pc.starts_with(x, pattern=f.value)
        # Over UTF-8 bytes (the order of both Spark and Arrow), "starts with p" is exactly
        # p <= x < successor(p): a range the indexes can answer.
        succ = _prefix_successor(f.value)
        prune = (x >= pa.scalar(f.value, t)) & (x < pa.scalar(succ, t)) if succ is not None else expr
        return Translated(expr, prune)
    return _UNSUPPORTED


def _and_all(exprs: list[pc.Expression]) -> pc.Expression | None:
    out = None
    for e in exprs:
        out = e if out is None else out & e
    return out


class FilePartition(InputPartition):
    """Data files to read in one task, at the manifest version the query was planned on."""

    def __init__(self, paths: tuple[str, ...], version: int):
        super().__init__((paths, version))
        self.paths = paths
        self.version = version


DEFAULT_MAX_PARTITION_BYTES = 128 << 20  # as Spark's spark.sql.files.maxPartitionBytes
MIN_PARTITION_BYTES = 16 << 20
OPEN_COST_BYTES = 1 << 20


def _pack(files: list[tuple[str, int]], max_bytes: int, min_partitions: int) -> list[tuple[str, ...]]:
    """Group ``(path, bytes to read)`` into partitions, in path order, as Spark packs files.

    A Spark task costs far more than opening one more file (a Python worker round trip per
    partition), so surviving files are packed up to ``max(16 MiB, total / min_partitions)``
    bytes per partition (each file also counts 1 MiB), capped at ``max_bytes``. A file is
    never split, so ``max_bytes`` of 1 gives one file per partition.
    """
    total = sum(size + OPEN_COST_BYTES for _, size in files)
    target = min(max_bytes, max(MIN_PARTITION_BYTES, -(-total // max(1, min_partitions))))
    groups: list[list[str]] = []
    current, used = [], 0
    for path, size in files:
        cost = size + OPEN_COST_BYTES
        if current and used + cost > target:
            groups.append(current)
            current, used = [], 0
        current.append(path)
        used += cost
    if current:
        groups.append(current)
    return [tuple(g) for g in groups]


class _Reader(DataSourceReader):
    """Reads the planned files; state set by ``pushFilters`` travels to the executors."""

    def __init__(self, path: str, schema, options: Mapping[str, str]):
        import os

        self.path = path
        self.schema = schema  # pyspark StructType of the output
        self.on_corrupt = options.get("on_corrupt", "raise")
        self.max_partition_bytes = parse_memory_size(
            str(options.get("maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES)), "maxPartitionBytes"
        )
        self.min_partitions = int(options.get("minPartitions", 2 * (os.cpu_count() or 1)))
        self.exact: list[pc.Expression] = []  # accepted filters (applied exactly by read_plan)
        self.prune: list[pc.Expression] = []  # everything the indexes may use

    def _open(self) -> IndexedDataset:
        fs, root, _ = resolve(self.path)
        return IndexedDataset(fs, root, on_corrupt=self.on_corrupt)

    def partitions(self) -> list[FilePartition]:
        data = self._open()
        prune = _and_all(self.prune)
        if prune is None:
            files = [(rel, data.manifest.files[rel].size) for rel in data.files]
        else:
            files = []
            for plan in data.plan(prune):
                if plan.skipped:
                    continue
                share = len(plan.row_groups) / plan.row_groups_total if plan.row_groups_total else 1.0
                files.append((plan.path, int(data.manifest.files[plan.path].size * share)))
        version = data.manifest.version
        return [FilePartition(group, version) for group in _pack(files, self.max_partition_bytes, self.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FilePartition):
            return  # Spark's placeholder when nothing survived pruning
        fs, root, _ = resolve(self.path)
        data = _dataset_at(fs, root, partition.version, self.on_corrupt)
        _refresh(data, list(partition.paths))
        prune, exact = _and_all(self.prune), _and_all(self.exact)
        names = self.schema.fieldNames()
        columns = None if names == data.schema.names else names
        target = to_arrow_schema(self.schema, timezone="UTC")
        for rel in partition.paths:
            plan = data.plan_file(rel, prune)
            if plan.skipped:
                continue
            table = data.read_plan(plan, exact, columns)
            if table is None or table.num_rows == 0:
                continue
            yield from _to_spark_arrow(table, target).to_batches(max_chunksize=64 * 1024)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list) -> list:
        """Accept the filters ``read_plan`` applies exactly; hand the others back to Spark."""
        data = self._open()
        schema = data.schema if data.files else pa.schema([])
        rejected = []
        for f in filters:
            tr = translate_filter(f, schema)
            if tr.prune is not None:
                self.prune.append(tr.prune)
            if tr.exact is not None:
                self.exact.append(tr.exact)
            else:
                rejected.append(f)
        return rejected


class ArrowIdxDataSource(DataSource):
    """``spark.read.format("arrowidx").load(path)``: an indexed Parquet dataset.

    Options: ``on_corrupt`` (``raise``, default, or ``fallback``: read a file whose index is
    damaged in full), ``pushdown`` (``true`` by default; ``false`` reads without filter
    pushdown, for sessions where ``spark.sql.python.filterPushdown.enabled`` is off),
    ``maxPartitionBytes`` (default ``128mb``) and ``minPartitions`` (default twice the
    driver's cores): how the files that survive pruning are packed into Spark partitions.
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _path(self) -> str:
        path = self.options.get("path")
        if not path:
            raise ArrowIdxError('give the dataset path: spark.read.format("arrowidx").load(path)')
        return path

    def schema(self):
        fs, root, _ = resolve(self._path())
        return arrow_to_spark_schema(IndexedDataset(fs, root).schema)

    def reader(self, schema) -> DataSourceReader:
        if str(self.options.get("pushdown", "true")).lower() == "false":
            return _Reader(self._path(), schema, self.options)
        return _PushdownReader(self._path(), schema, self.options)


def ensure_worker_python(spark) -> None:
    """In local mode, make Python workers run an interpreter that has arrowidx.

    With no ``PYSPARK_PYTHON`` / ``spark.pyspark.python`` set, workers would start
    ``python3`` from the PATH (often without arrowidx: ``ModuleNotFoundError`` in every
    task); they get this interpreter (``sys.executable``) instead. An interpreter the user
    set is checked once and, if it cannot import arrowidx, an error says what to do.
    Clusters are left alone (install arrowidx on the executors).
    """
    import os
    import subprocess
    import sys

    try:
        sc = spark.sparkContext
        master = str(sc.master)
    except Exception:  # Spark Connect: no SparkContext on the client
        return
    if not master.startswith("local"):
        return
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python", None)
    if not chosen:
        sc.pythonExec = sys.executable  # read by every Python function registered from now on
        os.environ["PYSPARK_PYTHON"] = sys.executable
        return
    if os.path.realpath(str(chosen)) == os.path.realpath(sys.executable) or getattr(sc, "_arrowidx_python_ok", False):
        return
    try:
        ok = subprocess.run([str(chosen), "-c", "import arrowidx"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise ArrowIdxError(
            f"Spark's Python workers run {chosen} (PYSPARK_PYTHON / spark.pyspark.python), which cannot"
            f" import arrowidx: set PYSPARK_PYTHON={sys.executable} before creating the session, or"
            " create it with arrowidx.spark.local_session()"
        )
    sc._arrowidx_python_ok = True


def register(spark) -> None:
    """Register the ``arrowidx`` data source and turn on Python filter pushdown.

    Sets ``spark.sql.python.filterPushdown.enabled=true`` for the session (without it Spark
    refuses a reader that implements ``pushFilters``); where the session does not allow
    setting it, a warning says so and ``.option("pushdown", "false")`` still reads. In local
    mode the workers run this interpreter unless one was set (:func:`ensure_worker_python`).
    """
    ensure_worker_python(spark)
    spark.dataSource.register(ArrowIdxDataSource)
    try:
        spark.conf.set(PUSHDOWN_CONF, "true")
    except Exception as e:  # e.g. a Connect server that forbids it
        warnings.warn(
            f"could not set {PUSHDOWN_CONF}=true ({e}); set it when creating the session, or read"
            ' with .option("pushdown", "false") (no index pruning)',
            stacklevel=2,
        )


def local_session(master: str = "local[2]", app_name: str = "arrowidx", **conf: str):
    """A local ``SparkSession`` ready for arrowidx, with the data source registered.

    Its Python workers run this interpreter (``sys.executable``), the one arrowidx is
    installed in; on a cluster, install arrowidx on the executors instead. ``conf`` adds
    Spark settings (``spark_sql_shuffle_partitions="2"`` sets ``spark.sql.shuffle.partitions``).
    """
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master(master).appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(PUSHDOWN_CONF, "true")
    )  # fmt: skip
    for key, value in conf.items():
        builder = builder.config(key.replace("_", "."), value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


# --------------------------------------------------------------------------------------
# 4. existing pipelines: a mapInArrow function over _metadata.file_path / row_index
# --------------------------------------------------------------------------------------


def _uri_path(uri: str) -> str:
    """The filesystem path in Spark's ``_metadata.file_path`` (a URI, percent-encoded)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path)
    return unquote(parsed.netloc + parsed.path)  # s3a://bucket/key -> bucket/key, as pyarrow names it


class DeletionAndIndexFilter:
    """A ``mapInArrow`` function: drop deleted rows and the rows an index rules out.

    Built by :func:`apply_deletions_and_index`; picklable, holds no data. Per batch the rows
    are grouped by file (``dictionary_encode`` of the path column) and each file's keep mask
    is looked up with numpy fancy indexing on the row positions; per file and task the
    deletion vector and index answer are computed once.
    """

    def __init__(
        self,
        path: Any,
        filter: pc.Expression | None = None,
        *,
        filesystem: pafs.FileSystem | None = None,
        file_path_column: str = "file_path",
        row_index_column: str = "row_index",
        drop_metadata: bool = False,
    ):
        self.fs, self.root, _ = resolve(path, filesystem)
        self.version = latest_version(self.fs, self.root)
        self.filter = filter
        self.file_path_column = file_path_column
        self.row_index_column = row_index_column
        self.drop_metadata = drop_metadata

    def _file_rule(self, data: IndexedDataset, uri: str):
        """None (keep every row), or ``f(positions) -> keep mask`` for one data file."""
        local = _uri_path(uri)
        root = self.root.rstrip("/")
        if not local.startswith(root + "/"):
            return None
        rel = local[len(root) + 1 :]
        if rel not in data.manifest.files:
            return None  # not managed by arrowidx: nothing to apply
        _refresh(data, [rel])
        plan = data.plan_file(rel, self.filter)
        if plan.status == "stale":
            return None  # changed since indexed: its index and deletions no longer apply
        if plan.skipped:
            return lambda positions: np.zeros(len(positions), dtype=bool)
        selected = None
        if plan.result.kind == "bitmap":
            selected = plan.result.to_mask(plan.rows).to_numpy(zero_copy_only=False)
        dv = data.deletion_vector(rel)
        if selected is None and (dv is None or not dv.cardinality):
            return None

        def keep(positions: np.ndarray) -> np.ndarray:
            mask = np.ones(len(positions), dtype=bool)
            if selected is not None:
                inside = positions < len(selected)
                mask[inside] = selected[positions[inside]]
            if dv is not None and dv.cardinality:
                mask &= ~dv.is_deleted(positions)
            return mask

        return keep

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        data = _dataset_at(self.fs, self.root, self.version)
        rules: dict[str, Any] = {}
        drop = [self.file_path_column, self.row_index_column] if self.drop_metadata else []
        for batch in batches:
            if batch.num_rows:
                encoded = pc.dictionary_encode(batch.column(self.file_path_column))
                codes = encoded.indices.to_numpy(zero_copy_only=False)
                positions = batch.column(self.row_index_column).to_numpy(zero_copy_only=False).astype(np.int64)
                keep = None
                for code, uri in enumerate(encoded.dictionary.to_pylist()):  # per file in the batch
                    if uri not in rules:
                        rules[uri] = self._file_rule(data, uri)
                    rule = rules[uri]
                    if rule is None:
                        continue
                    if keep is None:
                        keep = np.ones(batch.num_rows, dtype=bool)
                    if len(encoded.dictionary) == 1:
                        keep &= rule(positions)
                    else:
                        rows = np.flatnonzero(codes == code)
                        keep[rows] = rule(positions[rows])
                if keep is not None and not keep.all():
                    batch = batch.filter(pa.array(keep))
            yield batch.drop_columns(drop) if drop else batch


def apply_deletions_and_index(
    path: Any,
    filter: pc.Expression | None = None,
    *,
    filesystem: pafs.FileSystem | None = None,
    file_path_column: str = "file_path",
    row_index_column: str = "row_index",
    drop_metadata: bool = False,
) -> DeletionAndIndexFilter:
    """A function for ``mapInArrow`` that applies ``path``'s deletion vectors and indexes.

    Use it on Spark's own Parquet reader::

        df = spark.read.parquet(path).filter(spark_condition)
        sel = df.select("*", "_metadata.file_path", "_metadata.row_index")
        out = sel.mapInArrow(apply_deletions_and_index(path, filter=arrow_condition), sel.schema)

    ``filter`` (a ``pyarrow.compute.Expression``, optional) is only used to ask the indexes
    which rows cannot match; Spark's own filter must still be applied (rows the index keeps
    may not match). The manifest version is fixed when the function is made (on the
    driver). Files the manifest does not list, or that changed since they were indexed, pass
    through untouched. ``drop_metadata=True`` removes the two metadata columns (then give
    ``mapInArrow`` the schema without them).
    """
    return DeletionAndIndexFilter(
        path,
        filter,
        filesystem=filesystem,
        file_path_column=file_path_column,
        row_index_column=row_index_column,
        drop_metadata=drop_metadata,
    )


def with_deletions_and_index(df, path: Any, filter: pc.Expression | None = None, *, filesystem=None):
    """``df`` (read by ``spark.read.parquet(path)``) minus deleted rows and rows the index rules out.

    The same columns and schema as ``df``; a shortcut for the select + ``mapInArrow`` of
    :func:`apply_deletions_and_index`.
    """
    from pyspark.sql import functions as F

    fp, ri = "__arrowidx_file_path", "__arrowidx_row_index"
    selected = df.select("*", F.col("_metadata.file_path").alias(fp), F.col("_metadata.row_index").alias(ri))
    fn = apply_deletions_and_index(
        path, filter, filesystem=filesystem, file_path_column=fp, row_index_column=ri, drop_metadata=True
    )
    return selected.mapInArrow(fn, df.schema)
