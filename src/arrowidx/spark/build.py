"""Indexing on Spark: :func:`build` (index an existing dataset) and :func:`write` (write an indexed dataset)."""

from __future__ import annotations

import difflib
import json
import posixpath
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import ArrowIdxError, OptionError
from ..lake.build import BuildReport, Uploads, index_one_file, plan_build, will_commit
from ..lake.commit import (
    commit_manifest,
    load_manifest,
    require_commit,
    retry_on_conflict,
    with_commit_retries,
)
from ..lake.layout import META_DIR, join, physical
from ..lake.manifest import FileEntry, Manifest
from ..lake.source import discover, open_lake
from ..lake.tombstones import bury
from ..options import check_option_keys, in_manifest_threshold, parse_index_options
from ..storage import Store
from .session import ensure_worker_python

FORMAT_NAME = "arrowidx"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
STAGING_DIR = f"{META_DIR}/staging"
_MANIFEST_ROWS = "path string, entry string"


# --------------------------------------------------------------------------------------
# manifest rows: what tasks send back to the driver (one JSON FileEntry per data file)
# --------------------------------------------------------------------------------------


def _entry_to_json(entry: FileEntry) -> str:
    return json.dumps(entry.to_dict(), sort_keys=True)


def _entry_from_json(text: str) -> FileEntry:
    return FileEntry.from_dict(json.loads(text))  # fingerprint and checksums included


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


def _normalise_options(options: Mapping[str, object] | None, what: str) -> dict[str, str]:
    """``options`` checked on the driver, before any job starts: an unknown key (a typo
    outside ``file-index.*``) or a bad index option is refused naming ``what`` (the call)."""
    check_option_keys(options or {}, what=what)
    options = {str(k): str(v) for k, v in (options or {}).items()}
    parse_index_options(options)
    return options


def _parquet_option_names() -> set[str]:
    """The keyword arguments ``pyarrow.parquet.ParquetWriter`` takes (those of
    ``write_table`` included: its extra ones reach the writer too), but the ones
    :func:`write` sets itself."""
    import inspect

    names = set(inspect.signature(pq.ParquetWriter.__init__).parameters) | set(inspect.signature(pq.write_table).parameters)
    return names - {"self", "where", "schema", "filesystem", "table", "row_group_size", "options", "kwargs"}


def _check_parquet_options(parquet_options: Mapping[str, Any]) -> None:
    """Refuse on the driver a ``parquet_options`` key the Parquet writer does not take (the
    tasks would fail with a TypeError, after the job started)."""
    accepted = _parquet_option_names()
    for key in parquet_options:
        if key not in accepted:
            close = difflib.get_close_matches(str(key), sorted(accepted), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            extra = " (give it as row_group_size= of write)" if key == "row_group_size" else ""
            raise OptionError(f"arrowidx.spark.write: parquet_options: {key!r} is not an option of"
                              f" pyarrow.parquet.ParquetWriter{hint}{extra}")  # fmt: skip


# --------------------------------------------------------------------------------------
# 1. build
# --------------------------------------------------------------------------------------


class _IndexTask:
    """``mapInArrow`` body of :func:`build`: index the files named in the ``path`` column.
    Carries the Store (an object store re-opens itself on the executor with its options)."""

    def __init__(self, store: Store, root: str, options: dict[str, str], threshold: int, writer: str | None = None):
        self.store = store
        self.root, self.options, self.threshold, self.writer = root, options, threshold, writer

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = self.store
        for batch in batches:
            entries = []
            for rel in batch.column("path").to_pylist():  # one iteration per data file
                # Stat just before reading, as the local build does: the entry describes
                # the file the index was built from (with the store's change stamp).
                info = store.stat([join(self.root, rel)])[0]
                if info is None:
                    raise ArrowIdxError(f"{join(self.root, rel)}: the data file disappeared while indexing")
                entries.append(index_one_file(store, self.root, rel, info, self.options, self.threshold, self.writer))
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
    storage_options: Mapping[str, Any] | None = None,
    index_root: Any = None,
) -> BuildReport:
    """Index every data file of ``source`` on the Spark cluster; commit the manifest on the driver.

    Same arguments and result as :func:`arrowidx.build` (which it mirrors step for step:
    incremental by default, removed files leave the manifest, deletion vectors of unchanged
    data are kept), but the files are indexed by Spark tasks. ``source`` must be reachable
    under the same path (or URI) from every executor. ``partitions`` is the number of tasks
    (default: two per core, never more than one per file). ``storage_options``: endpoint,
    region and credentials of an object-store URI (docs/object-stores.md). ``index_root``: where
    the indexes go when not beside the data folder (as for :func:`arrowidx.build`).

    When another writer commits first, the build plans again and commits on top of it,
    reusing the files already indexed (no second Spark job for them); a build that fails for
    good removes the index files it wrote.
    """
    options = _normalise_options(options, "arrowidx.spark.build")
    ensure_worker_python(spark)
    uploads = Uploads()

    def attempt() -> BuildReport:
        plan = plan_build(source, options, filesystem=filesystem, incremental=incremental, storage_options=storage_options,
                          index_root=index_root)  # fmt: skip
        if will_commit(plan):
            require_commit(plan.store, plan.root)  # a store that cannot commit refuses before any upload
        built: list[FileEntry] = []
        todo = []
        for rel in plan.todo:
            entry = uploads.built(plan, rel)
            (built.append(entry) if entry is not None else todo.append(rel))
        if todo:
            n = min(len(todo), partitions or 2 * _parallelism(spark))
            paths_df = spark.createDataFrame(pa.table({"path": pa.array(todo, pa.string())})).repartition(n)
            task = _IndexTask(plan.store, plan.root, plan.options, plan.threshold, uploads.writer)
            for entry in _gather(paths_df.mapInArrow(task, _MANIFEST_ROWS)):
                uploads.add(plan, entry.path, entry)
                built.append(entry)
        return uploads.commit(plan, built)

    try:
        return with_commit_retries(attempt)
    except BaseException:
        uploads.remove()
        raise


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
    """``mapInArrow`` body of :func:`write`: Parquet file(s) + indexes under staging, manifest rows
    out. Carries the Store; pyarrow writes the Parquet files through its filesystem."""

    def __init__(self, store: Store, staging, options, threshold, row_group_size, max_rows_per_file, parquet_options, hook):
        self.store, self.staging, self.options, self.threshold = store, staging, options, threshold
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
                    sink = self.store.fs.open_output_stream(join(self.staging, rel))
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
            info = self.store.stat([join(self.staging, rel)])[0]
            entries.append(index_one_file(self.store, self.staging, rel, info, self.options, self.threshold))
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
    storage_options: Mapping[str, Any] | None = None,
    index_root: Any = None,
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
    if options is not None:
        check_option_keys(options, what="arrowidx.spark.write")
    _check_parquet_options(parquet_options or {})
    ensure_worker_python(df.sparkSession)
    start = time.perf_counter()
    store, root, explicit = open_lake(path, filesystem, storage_options, index_root, writing=True)
    fs = store.fs  # pyarrow writes and moves the data files through it
    if explicit is not None:
        raise ArrowIdxError("write needs one dataset directory, not a list of files")
    require_commit(store, root)  # a store that cannot commit refuses before the job writes anything
    fs.create_dir(root, recursive=True)
    current = load_manifest(store, root)
    if options is None:
        options = dict(current.options)
    options = _normalise_options(options, "arrowidx.spark.write")
    if mode == "append":
        if current.files and current.options != options:
            raise ArrowIdxError(
                f"{root} is indexed with other options ({current.options}); append with those"
                " (pass options=None), or re-index with arrowidx.spark.build first"
            )
        unmanaged = sorted(set(posixpath.relpath(p, root) for p in discover(store, root)) - set(current.files))
        if unmanaged:
            raise ArrowIdxError(
                f"{root} holds {len(unmanaged)} data file(s) the manifest does not list (e.g."
                f" {unmanaged[0]}); run arrowidx.spark.build(spark, path, options) first, or write"
                " with mode='overwrite'"
            )
    threshold = in_manifest_threshold(options)
    staging = physical(store, join(root, f"{STAGING_DIR}/{uuid.uuid4().hex}"))  # in the index root
    fs.create_dir(staging, recursive=True)
    report = WriteReport(root=root, version=current.version, mode=mode)
    staging_parent = physical(store, join(root, STAGING_DIR))
    task = _WriteTask(store, staging, options, threshold, row_group_size, max_rows_per_file, dict(parquet_options or {}), _task_hook)
    moved: list[str] = []
    try:
        entries = _gather(df.mapInArrow(task, _MANIFEST_ROWS))
        for entry in entries:  # only the files of successful attempts: move them into place
            for rel in [entry.path] + ([entry.index.file] if entry.index and entry.index.file else []):
                dst = physical(store, join(root, rel))  # (an index file: in the index root)
                fs.create_dir(posixpath.dirname(dst), recursive=True)
                fs.move(join(staging, rel), dst)
                moved.append(dst)
            info = store.stat([join(root, entry.path)])[0]
            if info is None or info.size != entry.size:
                raise ArrowIdxError(f"{entry.path} changed while it was being committed")
            entry.mtime_ns = info.mtime_ns  # a move may be a copy (object stores): new mtime
            entry.stamp = info.stamp  # and a new change stamp (readers then need no footer to trust it)
        new = {e.path: e for e in entries}
        manifest, previous = _commit_files(store, root, new, options, mode)
    except BaseException:
        for dst in moved:  # not committed: take the moved files back out of the dataset
            _delete_quietly(store, dst)
        raise
    finally:
        report.orphans_removed = _remove_staging(fs, staging_parent, staging)
    if mode == "overwrite":
        report.replaced = _delete_replaced(store, root, previous, manifest)
    report.version = manifest.version
    report.files = sorted(new)
    report.rows = sum(e.rows for e in entries)
    report.index_bytes = sum(e.index.size for e in entries if e.index)
    report.seconds = time.perf_counter() - start
    return report


def _commit_files(store: Store, root: str, new: dict[str, FileEntry], options: dict[str, str], mode: str):
    """Commit ``new`` on top of the latest manifest (planned again if another writer got in
    first: :func:`~arrowidx.lake.commit.retry_on_conflict`). The tombstones of the previous
    version stay; with ``mode="overwrite"`` the deletions of the entries it replaces become
    tombstones too (deletions belong to content: :mod:`arrowidx.lake.tombstones`). Written
    files are new data: no tombstone applies to them."""

    def attempt(_: int) -> tuple[Manifest, Manifest]:
        previous = load_manifest(store, root)
        if mode == "append" and not new:
            return previous, previous
        files = dict(new) if mode == "overwrite" else {**previous.files, **new}
        manifest = Manifest(files={rel: files[rel] for rel in sorted(files)}, options=options,
                            tombstones=list(previous.tombstones))  # fmt: skip
        for rel, entry in previous.files.items():
            if files.get(rel) is not entry:  # replaced (overwrite): its deletions stay with its content
                bury(manifest, entry, previous.version + 1)
        return commit_manifest(store, root, manifest, previous.version), previous

    return retry_on_conflict(attempt)


def _delete_quietly(store: Store, path: str) -> bool:
    try:
        return store.delete(path)
    except (OSError, ArrowIdxError):
        return False


def _remove_staging(fs, parent: str, staging: str) -> int:
    """Delete this write's staging folder (and the staging ``parent`` when it is empty)."""
    leftovers = 0
    try:
        leftovers = sum(1 for i in fs.get_file_info(pafs.FileSelector(staging, recursive=True)) if i.type == pafs.FileType.File)
        fs.delete_dir(staging)
    except OSError:
        pass
    try:
        if not fs.get_file_info(pafs.FileSelector(parent)):
            fs.delete_dir(parent)
    except OSError:
        pass
    return leftovers


def _delete_replaced(store: Store, root: str, previous: Manifest, manifest: Manifest) -> list[str]:
    """After an overwrite: delete data files no longer listed, and the old index and deletion files."""
    keep = set(manifest.files)
    data = {posixpath.relpath(p, root) for p in discover(store, root)} | set(previous.files)
    replaced = sorted(rel for rel in data - keep if _delete_quietly(store, join(root, rel)))
    side = set()
    for entry in previous.files.values():
        if entry.path in keep:
            continue
        if entry.index is not None and entry.index.file:
            side.add(entry.index.file)
        if entry.deletion is not None:
            side.add(entry.deletion.file)
    side -= manifest.referenced_files()  # never delete what the new version references (tombstones too)
    for rel in side:
        _delete_quietly(store, join(root, rel))
    return replaced


