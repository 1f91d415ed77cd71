""":func:`arrowidx.spark.read`: which reader reads which file, and Spark's own Parquet reader.

The driver plans the read with the indexes (:meth:`arrowidx.lake.scan.IndexedDataset.plan`,
the planning every arrowidx reader shares) and picks, for the files that survive:

* **The driver** (:data:`LOCAL_MAX_ROWS`, :data:`LOCAL_SELECTIVE_MAX_BYTES`): when the
  indexes answer the filter exactly (row bitmaps that are exactly the matching rows, in
  every file kept) and the answer is small, or when they ruled out at least half of the rows
  and what is left would be small even if every row of it matched (a bloom-filter needle),
  the driver reads those rows with the arrowidx scan core (only the row groups holding
  them; the filter evaluated exactly; deletion vectors applied) and hands Spark the result
  (``spark.createDataFrame``: a local relation). Spark's reader would decode every column
  of every row group holding one of those rows, and a Spark job costs more than the read.
* **The arrowidx data source** (Python) for a selective read of little data
  (:data:`PYTHON_MAX_BYTES`), for files with deletion vectors (see :data:`DELETION_BUDGET`),
  and for what Spark's reader cannot serve exactly: a filter with no exact Spark SQL
  spelling, files whose Parquet types Spark reads otherwise than arrowidx (nanosecond
  timestamps, ...), partition columns, names Spark would take as glob patterns.
* **Spark's Parquet reader** (``spark.read.parquet(*files)``: vectorised decoding, column
  pruning, whole-stage code generation, its own row-group statistics) for every other file.
  The filter goes to Spark as Spark SQL with the same meaning (the Expression, SQL text's
  pushdown included, through :func:`arrowidx.spark.sparksql.to_spark_sql`). Deletion
  vectors, when :data:`DELETION_BUDGET` allows (not by default: it did not pay), become a
  broadcast anti-join: each row's key is its file's number (told apart by
  ``_metadata.file_size``, unique per scan) times 2^40 plus its position in the file
  (``_metadata.row_index``), against a local relation of the deleted keys. Only the rows
  that pass the filter are looked up.

The union is one DataFrame with the dataset's Spark schema (or ``columns``). It is planned
when :func:`arrowidx.spark.read` is called: the files, deletions and manifest version of
that moment, as ``spark.read.parquet`` fixes its file listing when it is called.

Exactness of Spark's reader: the filter Spark evaluates is exact, but its Parquet
statistics pruning (parquet-mr's row-group filter) drops NaN rows of a float column for
``x > v`` and ``x = NaN`` (pyarrow leaves NaN out of min/max; Spark's NaN is the largest
value). So float columns reach the filter through ``nanvl(x, x)`` (the same value), which
Spark does not push into the Parquet reader; other types are pushed as usual. Parquet
dictionary filtering is switched off for these scans (``parquet.filter.dictionary.enabled``):
it reads the dictionary pages of the filter columns to rule out row groups the indexes have
already ruled out, and was the larger part of Spark's time on needles.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa

from ..deletion import DeletionVector
from ..lake.plans import FilePlan
from ..lake.read import column_bytes
from ..lake.scan import IndexedDataset
from .sparksql import quote, string_literal

# The driver reads an exact answer of at most this many rows (and bytes, uncompressed).
LOCAL_MAX_ROWS = 200_000
LOCAL_MAX_BYTES = 32 << 20
# A selective read of very little data is read by the driver: when the indexes ruled out at
# least half of the rows and the row groups left hold at most this many bytes decoded (of
# the columns the query returns), as if every row matched (bench/bench_spark.py: a
# bloom-filter needle, 3 of 20 files, ~15 MB decoded: count() 2.7x Spark alone through the
# data source, where a Spark job's own cost is most of the time).
LOCAL_SELECTIVE_MAX_BYTES = 32 << 20
# A selective read of little data goes to the data source: when the indexes ruled out at
# least half of the rows and the files left hold at most this many bytes (compressed, of the
# columns the query returns, in the row groups that survive), one or two Python tasks cost
# less than a Spark scan job with its anti-join (bench/bench_spark.py: a bloom-filter needle
# over 3 of 20 files, 10 MB, 236 ms through the data source against 699 ms through Spark's
# reader; a broad query over all 20 files, 68 MB, is faster through Spark's reader).
PYTHON_MAX_BYTES = 32 << 20
# Deleted positions one plan lets Spark's reader drop (a broadcast anti-join against a local
# relation, 8 bytes each); files beyond it are read through the data source, which applies
# their deletion vectors itself. 0 by default: on bench/bench_spark.py (deletions in every
# file) the anti-join was never faster than the data source (broad query, toArrow 1,239
# against 1,101 ms, count 729 against 618 ms; needles 1.6-3x slower), so Spark's own reader
# reads the files without deletions. Raise it to let Spark read files with deletions too.
DELETION_BUDGET = 0
# Files per scan with deletion vectors (the row key numbers them: one CASE branch each).
GROUP_MAX_FILES = 64
ROW_KEY = "__arrowidx_deleted_row"
_ROW_BITS = 40  # a row's key: file number * 2^40 + its position in the file
_GLOB = set("*?[]{}\\:")  # Spark globs path strings; Hadoop paths refuse ':'

# Arrow types Spark's Parquet reader reads as arrow_to_spark_schema maps them.
_NATIVE_TYPES = (
    pa.types.is_boolean, pa.types.is_int8, pa.types.is_int16, pa.types.is_int32, pa.types.is_int64,
    pa.types.is_uint8, pa.types.is_uint16, pa.types.is_uint32, pa.types.is_uint64,
    pa.types.is_float32, pa.types.is_float64, pa.types.is_string, pa.types.is_large_string,
    pa.types.is_binary, pa.types.is_large_binary, pa.types.is_date32, pa.types.is_decimal128,
)  # fmt: skip


@dataclass
class Route:
    """How :func:`arrowidx.spark.read` reads one filter: on the driver (``local``), or the
    files Spark's reader reads (with their sizes) and those the data source reads (with why)."""

    version: int
    local: list[FilePlan] = field(default_factory=list)  # read by the driver
    native: list[tuple[str, int]] = field(default_factory=list)  # (path, size)
    deletions: dict[str, DeletionVector] = field(default_factory=dict)  # native path -> its deletion vector
    python: dict[str, str] = field(default_factory=dict)  # path -> why the data source reads it

    def describe(self) -> str:
        parts = [f"{len(self.native)} file(s) by Spark's Parquet reader ({len(self.deletions)} with deletions)"]
        if self.local:
            parts.insert(0, f"{len(self.local)} by the driver (the indexes' exact answer)")
        if self.python:
            parts.append(f"{len(self.python)} by the arrowidx data source ({'; '.join(sorted(set(self.python.values())))})")
        return ", ".join(parts)


def _native_type(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_timestamp(t):
        return t.unit in ("ms", "us")  # Spark 4 refuses Parquet nanosecond timestamps
    return any(test(t) for test in _NATIVE_TYPES)


def _plain(t: pa.DataType) -> pa.DataType:
    t = t.value_type if pa.types.is_dictionary(t) else t
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    return t


def _schema_reason(data: IndexedDataset, rel: str) -> str | None:
    """Why Spark's reader would read ``rel`` otherwise than the dataset schema says (None:
    it would not)."""
    try:
        file_schema = data.lake.footer(rel).schema.to_arrow_schema()
    except (pa.ArrowException, OSError, ValueError) as e:
        return f"footer not readable as Arrow ({e})"
    for f in data.schema:
        i = file_schema.get_field_index(f.name)
        if i < 0:
            return f"no column {f.name!r}"
        other = file_schema.field(i).type
        if not _native_type(f.type) or not _native_type(other):
            return f"column {f.name!r} of type {other}"
        if _plain(other) != _plain(f.type):
            return f"column {f.name!r} is {other}, the dataset's is {f.type}"
    return None


def _small_exact(data: IndexedDataset, kept: list[FilePlan], columns: Sequence[str]) -> list[FilePlan]:
    """The kept files the indexes answer exactly (a row bitmap that is exactly the matching
    rows), if together at most :data:`LOCAL_MAX_ROWS` rows and :data:`LOCAL_MAX_BYTES`."""
    exact = [p for p in kept if p.exact and p.rows_selected is not None]
    if not exact or sum(p.rows_selected for p in exact) > LOCAL_MAX_ROWS:
        return []
    estimate = 0
    for p in exact:  # uncompressed bytes per row of the output columns, in the groups read
        offsets = p.row_group_offsets
        in_groups = sum(int(offsets[g + 1] - offsets[g]) for g in p.row_groups) if offsets is not None else 0
        if in_groups:
            estimate += column_bytes(data.lake.footer(p.path), p.row_groups, list(columns)) * p.rows_selected // in_groups
    return exact if estimate <= LOCAL_MAX_BYTES else []


def _selective_and_small(
    data: IndexedDataset, plans: list[FilePlan], kept: list[FilePlan], columns: Sequence[str], limit: int,
    *, compressed: bool = True,
) -> bool:  # fmt: skip
    """Whether the indexes ruled out at least half of the rows and the kept row groups hold at
    most ``limit`` bytes of the query's columns (``compressed``: as stored, else decoded)."""
    total = sum(p.rows for p in plans)
    if not total or sum(p.rows for p in kept) * 2 > total:
        return False
    size = 0
    for p in kept:
        size += column_bytes(data.lake.footer(p.path), p.row_groups, list(columns), compressed=compressed)
        if size > limit:
            return False
    return True


def plan_route(data: IndexedDataset, plans: list[FilePlan], *, translatable: bool, columns: Sequence[str]) -> Route:
    """Pick the reader of every file the plans keep (see the module docstring)."""
    route = Route(version=data.manifest.version)
    kept = [p for p in plans if p.row_groups]
    route.local = _small_exact(data, kept, columns)
    local = {p.path for p in route.local}
    kept = [p for p in kept if p.path not in local]
    if "_metadata" in data.schema.names:
        route.python = {p.path: "the dataset has a column named _metadata (Spark's file metadata)" for p in kept}
        return route
    if kept and _selective_and_small(data, plans, kept, columns, LOCAL_SELECTIVE_MAX_BYTES, compressed=False):
        route.local += kept  # small even if every row of the groups matched
        return route
    if kept and translatable and _selective_and_small(data, plans, kept, columns, PYTHON_MAX_BYTES):
        route.python = {p.path: "a selective read of little data (Python tasks cost less than a Spark scan job)" for p in kept}
        return route
    budget = DELETION_BUDGET
    for plan in kept:
        rel = plan.path
        if not translatable:
            route.python[rel] = "the filter has no exact Spark SQL spelling"
            continue
        if _GLOB & set(rel):
            route.python[rel] = "a file name Spark would read as a glob pattern"
            continue
        reason = _schema_reason(data, rel)
        if reason is not None:
            route.python[rel] = reason
            continue
        dv = data.lake.deletion_vector(rel) if plan.deleted else None
        if dv is not None and dv.cardinality:
            if dv.cardinality > budget or dv.max_position >= 1 << _ROW_BITS:
                route.python[rel] = "deleted rows (the data source applies the deletion vector)"
                continue
            budget -= dv.cardinality
            route.deletions[rel] = dv
        route.native.append((rel, planned_size(data, rel)))
    return route


def planned_size(data: IndexedDataset, rel: str) -> int:
    """The file's size as the plan found it: Spark's reader must find the same (its deletion
    vector applies to that file only)."""
    return data.lake.identity(rel)[1]


def spark_uri(path: str, root: str) -> str:
    """The URI Spark's reader opens for ``root`` (the resolved root of ``path``)."""
    parsed = urlparse(str(path))
    if "://" not in str(path) or parsed.scheme == "file":
        return "file://" + os.path.abspath(root)
    if root.startswith("/"):
        return f"{parsed.scheme}://{parsed.netloc}{root}"
    return f"{parsed.scheme}://{root}"


def _groups(files: list[tuple[str, int]], deletions: dict) -> list[list[tuple[str, int]]]:
    """Files without deletions in one scan; files with deletions in scans of distinct sizes
    (the row key tells files apart by ``_metadata.file_size``), at most
    :data:`GROUP_MAX_FILES` each."""
    clean = [f for f in files if f[0] not in deletions]
    groups: list[list] = [clean] if clean else []
    open_groups: list[tuple[set[int], list]] = []
    for f in (f for f in files if f[0] in deletions):
        for sizes, members in open_groups:
            if f[1] not in sizes and len(members) < GROUP_MAX_FILES:
                sizes.add(f[1])
                members.append(f)
                break
        else:
            open_groups.append(({f[1]}, [f]))
    return groups + [members for _, members in open_groups]


def native_frame(spark, base: str, root: str, route: Route, spark_schema, where_sql: str | None, columns: Sequence[str]):
    """Spark's Parquet reader over the route's files (under ``base``, the URI of ``root``),
    filtered by ``where_sql``, deleted rows dropped, with ``columns``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = spark_schema.fieldNames()
    floats = {f.name for f in spark_schema if isinstance(f.dataType, (T.FloatType, T.DoubleType))}
    changed = string_literal(
        f"arrowidx: a data file under {root} changed after arrowidx.spark.read planned this DataFrame"
        " (its deletion vector no longer applies); call arrowidx.spark.read again"
    )
    frames = []
    for group in _groups(route.native, route.deletions):
        reader = spark.read.schema(spark_schema).option("parquet.filter.dictionary.enabled", "false")
        df = reader.parquet(*[f"{base}/{rel}" for rel, _ in group])
        if where_sql is not None:
            if floats:  # nanvl(x, x) is x, and a filter on it is not pushed into parquet-mr
                shielded = [F.nanvl(F.col(quote(n)), F.col(quote(n))).alias(n) if n in floats else F.col(quote(n)) for n in names]
                df = df.select(*shielded, F.col("_metadata"))
            df = df.filter(where_sql)
        if group[0][0] in route.deletions:
            numbers = " ".join(f"WHEN {size} THEN {i}" for i, (_, size) in enumerate(group))
            key = f"shiftleft(CAST(CASE _metadata.file_size {numbers} ELSE raise_error({changed}) END AS BIGINT), {_ROW_BITS}) | _metadata.row_index"
            deleted = np.concatenate(
                [(np.int64(i) << _ROW_BITS) | route.deletions[rel].positions().astype(np.int64) for i, (rel, _) in enumerate(group)]
            )
            keys = spark.createDataFrame(pa.table({ROW_KEY: pa.array(deleted, pa.int64())}))  # a local relation
            df = df.withColumn(ROW_KEY, F.expr(key)).join(F.broadcast(keys), ROW_KEY, "left_anti")
        frames.append(df.select(*[quote(c) for c in columns]))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out
