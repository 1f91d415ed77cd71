"""arrowidx on a real Spark standalone cluster (``spark_cluster`` in conftest.py).

The driver is its own Python process with its own working directory, the executor another
JVM in the worker's directory with its own Python workers: ``build``, ``write``, ``read`` (both
spellings) and ``apply_deletions_and_index`` run there, with dataset paths relative to the
driver's working directory. Every answer is compared with an independent reference: a
pyarrow Expression with ``Table.filter`` on the rows written (in memory, here), SQL text
with Spark's own Parquet reader on the same files on the cluster (filter pushdown off,
deleted rows removed by the delete's own condition); floats by their bits (``-0.0`` is not
``0.0``). Index files and manifest entries are compared with a local build's. The
functions named ``job_*`` run in the driver process.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.lake.commit import load_manifest
from arrowidx.lake.layout import physical
from arrowidx.lake.source import open_lake

pytest.importorskip("arrowidx.spark")

OPTIONS = {
    "file-index.bitmap.columns": "status,k",
    "file-index.bloom-filter.columns": "id",
    "file-index.in-manifest-threshold": "500 bytes",
}
STATUSES = ["PAID", "NEW", "SHIPPED", "LOST"]
READS = [
    None,
    "id = 1234",
    "status = 'LOST'",
    "k IN (1, 2) AND amount > 50",
    "amount > 90",  # NaN rows match in SQL
    "NOT (status = 'PAID') OR amount IS NULL",
    pc.field("id") == 2345,
    (pc.field("amount") > 90.0) & (pc.field("k") != 3),  # NaN rows do not match in pyarrow
    pc.field("status").isin(["NEW", None]),  # NULL matches a NULL in the set: no exact Spark SQL? (it has)
    pc.bit_wise_and(pc.field("id"), 7) == 3,  # no Spark spelling: read through the data source
]


def _table(rng: np.random.Generator, ids: np.ndarray) -> pa.Table:
    n = len(ids)
    amount = rng.gamma(2.0, 20.0, n)
    amount[rng.random(n) < 0.03] = np.nan
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(rng.integers(0, 5, n).astype(np.int32), pa.int32()),
            "status": pa.array(rng.choice(STATUSES, n, p=[0.6, 0.3, 0.09, 0.01]), pa.string(), mask=rng.random(n) < 0.02),
            "amount": pa.array(amount, pa.float64(), mask=rng.random(n) < 0.02),
        }
    )


def _write_lake(root: Path, files: int = 4, rows: int = 1500, seed: int = 3) -> pa.Table:
    """Writes the lake; returns its rows (in memory: the reference for Expressions)."""
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows * 2)[: files * rows]
    tables = []
    for i in range(files):
        tables.append(_table(rng, ids[i * rows : (i + 1) * rows]))
        tables[-1] = tables[-1].set_column(3, "amount", _signed_zeros(tables[-1].column("amount"), i))
        pq.write_table(tables[-1], root / f"part-{i}.parquet", row_group_size=300)
    return pa.concat_tables(tables)


def _signed_zeros(amount: pa.ChunkedArray, i: int) -> pa.Array:
    """A few -0.0 and 0.0 amounts (a reader turning one into the other must be seen)."""
    values = amount.combine_chunks()
    raw = values.fill_null(1.0).to_numpy(zero_copy_only=False).copy()
    raw[i::97] = -0.0
    raw[i + 1 :: 97] = 0.0
    return pa.array(raw, pa.float64(), mask=values.is_null().to_numpy(zero_copy_only=False))


def _value(v):
    """A comparable value: NaN equals NaN, floats by their bits (-0.0 differs from 0.0)."""
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else struct.pack(">d", v)
    return v


def _rows(table: pa.Table) -> list[tuple]:
    """Rows sorted by id, floats by bits, Arrow type widths ignored."""
    table = table.sort_by("id")
    return list(zip(*([_value(v) for v in table.column(name).to_pylist()] for name in table.column_names)))


def _unsuffixed(index):
    """An IndexRef with its file name cut to ``<data file>.<xxh64>.index``."""
    if index is None or index.file is None:
        return index
    return dataclasses.replace(index, file=re.sub(r"-[0-9a-f]+\.index$", ".index", index.file))


DELETED = pc.bit_wise_and(pc.field("id"), 15) == 0
DELETED_SQL = "(id & 15) = 0"


def _alive(rows: pa.Table) -> pa.Table:
    return rows.filter(~DELETED)  # (id is never NULL)


# ------------------------------------------------------------------------------------------
# run in the driver process on the cluster (dataset paths relative to its working directory)
# ------------------------------------------------------------------------------------------


def job_where_am_i(spark) -> dict:
    """The driver's and the executor's process and working directory."""

    def here(_):
        return os.getpid(), os.getcwd()

    executor = spark.sparkContext.parallelize([0], 1).map(here).collect()[0]
    return {"master": spark.sparkContext.master, "driver": (os.getpid(), os.getcwd()), "executor": executor}


def job_build(spark, path: str, options: dict) -> list[str]:
    import arrowidx.spark

    return arrowidx.spark.build(spark, path, options).indexed


def job_read(spark, path: str, conditions: list) -> list[dict]:
    import arrowidx.spark

    out = []
    for condition in conditions:
        df = arrowidx.spark.read(spark, path, condition)
        out.append({"table": df.toArrow(), "spark files": len(df.inputFiles()), "count": df.count()})
    narrow = arrowidx.spark.read(spark, path, "status = 'LOST'", columns=["amount", "id"])
    out.append({"table": narrow.toArrow(), "count": narrow.count()})
    return out


def job_spark_reader(spark, path: str, conditions: list[str | None], columns: list[str] | None = None) -> list[pa.Table]:
    """Spark's own Parquet reader on the lake's files (filter pushdown off: its row-group
    statistics are not the reference), the deleted rows removed by the delete's condition,
    then each SQL condition."""
    key = "spark.sql.parquet.filterPushdown"
    before = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        alive = spark.read.parquet(path).filter(f"NOT ({DELETED_SQL})")
        out = []
        for condition in conditions:
            df = alive if condition is None else alive.filter(condition)
            out.append((df if columns is None else df.select(*columns)).toArrow())
        return out
    finally:
        spark.conf.set(key, before)


def job_format(spark, path: str) -> dict:
    import arrowidx.spark

    arrowidx.spark.register(spark)
    plain = spark.read.format("arrowidx").load(path)
    return {
        "all": plain.toArrow(),
        "filtered": plain.filter("status = 'LOST'").toArrow(),
        "where": spark.read.format("arrowidx").option("where", "status = 'LOST'").load(path).toArrow(),
    }


def job_pipeline(spark, path: str) -> dict:
    import arrowidx.spark

    df = spark.read.parquet(path)
    selected = df.select("*", "_metadata.file_path", "_metadata.row_index")
    fn = arrowidx.spark.apply_deletions_and_index(path, pc.field("status") == "LOST")
    with_index = selected.mapInArrow(fn, selected.schema).drop("file_path", "row_index")
    return {
        "deletions": arrowidx.spark.with_deletions_and_index(df, path).toArrow(),
        "lost": with_index.filter("status = 'LOST'").toArrow(),
    }


def job_write(spark, path: str, table: pa.Table, options: dict) -> list[str]:
    import arrowidx.spark

    df = spark.createDataFrame(table).repartition(3)
    return arrowidx.spark.write(df, path, options, row_group_size=400).files


def job_paimon_rewrite(spark, path: str, options: dict) -> tuple[int, int]:
    import arrowidx.spark

    report = arrowidx.spark.paimon_rewrite_file_index(spark, path, options)
    return len(report.rewritten), int(bool(report.committed))


# ------------------------------------------------------------------------------------------
# the test: one application on the cluster for all of it
# ------------------------------------------------------------------------------------------


def test_cluster_answers_equal_local(spark_cluster, tmp_path):
    driver = spark_cluster.driver()
    where = driver.call(job_where_am_i)
    assert where["master"] == spark_cluster.master_url
    assert where["executor"][0] != where["driver"][0] and where["executor"][0] != os.getpid()
    assert Path(where["executor"][1]) != Path(where["driver"][1]) != Path.cwd()

    rel = f"lakes/{tmp_path.name}/orders"  # relative to the driver's working directory
    lake = driver.cwd / rel
    written = _write_lake(lake)
    local = tmp_path / "local"
    shutil.copytree(lake, local)

    # build: the same manifest entries and index files as the local build
    assert sorted(driver.call(job_build, rel, OPTIONS)) == [f"part-{i}.parquet" for i in range(4)]
    arrowidx.build(str(local), OPTIONS, progress=False)
    (fs_a, root_a, _), (fs_b, root_b, _) = open_lake(str(local)), open_lake(str(lake))
    ours, theirs = load_manifest(fs_a, root_a), load_manifest(fs_b, root_b)
    # (index files are named <data file>.<xxh64>-<writer>.index: equal up to the writer's suffix)
    assert {k: (e.size, e.rows, _unsuffixed(e.index)) for k, e in ours.files.items()} == {
        k: (e.size, e.rows, _unsuffixed(e.index)) for k, e in theirs.files.items()
    }
    for k, e in ours.files.items():
        mine, executor = e.index.file, theirs.files[k].index.file
        if mine is not None:  # (relative to the root)
            assert Path(physical(fs_a, f"{root_a}/{mine}")).read_bytes() == Path(physical(fs_b, f"{root_b}/{executor}")).read_bytes(), mine

    # deletions in every file, then read: both spellings, SQL text and Expressions
    arrowidx.delete(str(lake), DELETED, progress=False)
    alive = _alive(written)
    sql = [c for c in READS if isinstance(c, str)]
    by_spark = dict(zip(sql, driver.call(job_spark_reader, rel, sql)))
    results = driver.call(job_read, rel, READS)
    for condition, got in zip(READS, results):
        if condition is None:
            expected = alive
        elif isinstance(condition, str):
            expected = by_spark[condition]
        else:
            expected = alive.filter(condition)
        assert _rows(got["table"]) == _rows(expected), condition
        assert got["count"] == expected.num_rows, condition
    assert by_spark["amount > 90"].filter(pc.is_nan(pc.field("amount"))).num_rows > 0  # SQL: NaN > 90
    assert alive.filter(pc.field("amount") == 0.0).num_rows > 0  # -0.0 and 0.0 rows are read
    assert results[1]["spark files"] < 4  # the needle: the bloom filters ruled files out
    assert results[-2]["spark files"] == 0  # id & 7: no Spark spelling, the data source read it
    (lost,) = driver.call(job_spark_reader, rel, ["status = 'LOST'"])
    expected = lost.select(["amount", "id"])
    assert _rows(results[-1]["table"]) == _rows(expected) and results[-1]["count"] == expected.num_rows

    formats = driver.call(job_format, rel)
    assert _rows(formats["all"]) == _rows(alive)
    assert _rows(formats["filtered"]) == _rows(formats["where"]) == _rows(lost)
    # the DataFrame loaded without a filter said once, in the driver's Spark output, how to prune
    assert driver.output(tail=10**7).count("has no load-time filter") == 1

    pipeline = driver.call(job_pipeline, rel)
    assert _rows(pipeline["deletions"]) == _rows(alive)
    assert _rows(pipeline["lost"]) == _rows(lost)

    # write: the files the executors wrote, read back here
    source = _table(np.random.default_rng(8), np.arange(50_000, 52_000, dtype=np.int64))
    files = driver.call(job_write, f"lakes/{tmp_path.name}/written", source, OPTIONS)
    written_to = driver.cwd / f"lakes/{tmp_path.name}/written"
    assert sorted(p.name for p in written_to.glob("*.parquet")) == sorted(files) and len(files) == 3
    assert _rows(pa.concat_tables([pq.read_table(p) for p in sorted(written_to.glob("*.parquet"))])) == _rows(source)

    # the Paimon index rewrite: the executors' index files and the driver's commit equal the
    # local function's, byte for byte (a Paimon table written by Java Paimon 0.9.0)
    from test_paimon_rewrite_spark import PAIMON_OPTIONS, _copy, _state

    from arrowidx import paimon

    table_rel = f"lakes/{tmp_path.name}/paimon-evolve"
    on_cluster, local_table = _copy(driver.cwd / table_rel), _copy(tmp_path / "paimon-local")
    rewritten, committed = driver.call(job_paimon_rewrite, table_rel, PAIMON_OPTIONS)
    assert committed and rewritten
    paimon.rewrite_file_index(local_table, PAIMON_OPTIONS)
    assert _state(on_cluster) == _state(local_table)
