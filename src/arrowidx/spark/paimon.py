"""Rewriting a Paimon table's file indexes on Spark (:func:`paimon_rewrite_file_index`) and
deleting rows from it (:func:`paimon_delete`).

The driver plans from the table's manifests (:mod:`arrowidx.paimon.rewrite`); each planned
data file becomes one row of a DataFrame (the pickled, self-contained
:class:`~arrowidx.paimon.rewrite.FileTask`: paths, columns, options); executors read their
files and build the indexes from Arrow batches inside ``mapInArrow``, write the ``.index``
files beside the data files (created only if absent) and return the new manifest fields; the
driver commits them once. The work is the local function's (:func:`arrowidx.paimon.rewrite.index_file`)
and depends on nothing of the driver process, so the result is the same, byte for byte, as
:func:`arrowidx.paimon.rewrite_file_index`, on a local session or a cluster whose executors
reach the table under the same path (or URI) and can import arrowidx.

:func:`paimon_delete` works the same way: the driver plans (:mod:`arrowidx.paimon.delete_rows`),
each task evaluates the filter on its data files (:func:`~arrowidx.paimon.delete_rows.match_file`,
the local function) and returns the matching row positions, and the driver merges them into
the deletion vectors and commits once: the same vectors, byte for byte, as
:func:`arrowidx.paimon.delete`.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ..paimon.delete_rows import (
    DeleteReport,
    MatchResult,
    MatchTask,
    Where,
    match_file,
    run_delete,
    where_of,
)
from ..paimon.rewrite import FileResult, FileTask, RewriteReport, index_files, rewrite
from .session import ensure_worker_python

_RESULT_ROWS = "key string, result binary"
TASK_THREADS = 2  # files a task indexes at once: one file's reading and writing overlap another's work


class _RewriteTask:
    """``mapInArrow`` body: index the pickled tasks of the ``task`` column."""

    def __init__(self, fs: pafs.FileSystem, write: bool):
        self.fs, self.write = fs, write

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            tasks = [pickle.loads(t) for t in batch.column("task").to_pylist()]
            results = index_files(self.fs, tasks, self.write, TASK_THREADS)
            if results:
                yield pa.RecordBatch.from_arrays(
                    [pa.array([r.key for r in results], pa.string()), pa.array([pickle.dumps(r) for r in results], pa.binary())],
                    names=["key", "result"],
                )


def _groups(tasks: list, n: int) -> list[list]:
    """``tasks`` in ``n`` groups of about equal rows: the largest file first, each to the
    group with the fewest rows so far."""
    groups: list[list[FileTask]] = [[] for _ in range(n)]
    load = [0] * n
    for task in sorted(tasks, key=lambda t: -t.rows):
        i = load.index(min(load))
        groups[i].append(task)
        load[i] += max(1, task.rows)
    return [g for g in groups if g]


def _run_tasks(spark, partitions: int | None, tasks: list, task_fn, result_schema) -> list:
    """``tasks`` spread over the session's cores in ``mapInArrow`` (``task_fn`` runs each group
    on an executor), their pickled results brought back to the driver."""
    try:
        parallelism = max(1, int(spark.sparkContext.defaultParallelism))
        classic = True
    except Exception:  # Spark Connect has no SparkContext
        parallelism, classic = 2, False
    n = max(1, min(len(tasks), partitions or parallelism))
    # one Arrow batch of tasks per group: Spark makes its partitions of whole batches (one
    # per core), so the files are spread without a shuffle (Spark Connect: repartitioned)
    batches = [pa.record_batch([pa.array([pickle.dumps(t) for t in g], pa.binary())], names=["task"]) for g in _groups(tasks, n)]
    df = spark.createDataFrame(pa.Table.from_batches(batches))
    if not classic:
        df = df.repartition(len(batches))
    out = df.mapInArrow(task_fn, result_schema).toArrow()
    return [pickle.loads(b) for b in out.column("result").to_pylist()]


def _runner(spark, partitions: int | None):
    def run(fs: pafs.FileSystem, tasks: list[FileTask], write: bool) -> list[FileResult]:
        return _run_tasks(spark, partitions, tasks, _RewriteTask(fs, write), _RESULT_ROWS)

    return run


def paimon_rewrite_file_index(
    spark,
    path: Any,
    options: Mapping[str, Any] | None = None,
    *,
    partitions: Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None,
    filesystem: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    tasks: int | None = None,
) -> RewriteReport:
    """:func:`arrowidx.paimon.rewrite_file_index` with the data files indexed by Spark tasks
    (``tasks``: how many groups of files, of about equal rows; default one per core, at most one per file). Same arguments, same
    report, same files and snapshot."""
    ensure_worker_python(spark)
    return rewrite(
        path, options, partitions=partitions, filesystem=filesystem, storage_options=storage_options,
        dry_run=dry_run, runner=_runner(spark, tasks),
    )  # fmt: skip


# ----------------------------------------------------------------------------------------
# Deleting rows: executors find them, the driver commits
# ----------------------------------------------------------------------------------------
_MATCH_ROWS = "name string, result binary"


class _MatchTask:
    """``mapInArrow`` body: the matching rows of the pickled tasks of the ``task`` column."""

    def __init__(self, fs: pafs.FileSystem, where: Where, schema: pa.Schema):
        self.fs, self.where, self.schema = fs, where, schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        matcher = self.where.compile(self.schema)
        for batch in batches:
            tasks = [pickle.loads(t) for t in batch.column("task").to_pylist()]
            results = [match_file(self.fs, t, matcher) for t in tasks]
            if results:
                yield pa.RecordBatch.from_arrays(
                    [pa.array([r.name for r in results], pa.string()), pa.array([pickle.dumps(r) for r in results], pa.binary())],
                    names=["name", "result"],
                )


def _delete_runner(spark, partitions: int | None):
    def run(fs: pafs.FileSystem, tasks: list[MatchTask], where: Where, schema: pa.Schema) -> list[MatchResult]:
        return _run_tasks(spark, partitions, tasks, _MatchTask(fs, where, schema), _MATCH_ROWS)

    return run


def paimon_delete(
    spark,
    path: Any,
    where: Any,
    *,
    filesystem: Any = None,
    storage_options: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    tasks: int | None = None,
) -> DeleteReport:
    """:func:`arrowidx.paimon.delete` with the data files read by Spark tasks (``tasks``: how
    many groups of files, of about equal rows; default one per core, at most one per file):
    the driver plans, the executors find the matching rows, the driver commits once. Same
    arguments and report, the same deletion vectors and snapshot."""
    where = where_of(where, call="arrowidx.spark.paimon_delete")  # no filter: refused before the session is touched
    ensure_worker_python(spark)
    return run_delete(path, where, filesystem=filesystem, storage_options=storage_options, dry_run=dry_run,
                      confirm=None, runner=_delete_runner(spark, tasks))  # fmt: skip
