"""arrowidx on a real Spark standalone cluster (``spark_cluster`` in conftest.py).

The driver is its own Python process with its own working directory, the executor another
JVM in the worker's directory with its own Python workers: ``build``, ``write``, ``read`` (both
spellings) and ``apply_deletions_and_index`` run there, with dataset paths relative to the
driver's working directory, and every answer must equal the local one (arrowidx itself on
the same files, in this process). The functions named ``job_*`` run in the driver process.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.lake.commit import load_manifest
from arrowidx.lake.source import resolve

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


def _write_lake(root: Path, files: int = 4, rows: int = 1500, seed: int = 3) -> None:
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(files * rows * 2)[: files * rows]
    for i in range(files):
        pq.write_table(_table(rng, ids[i * rows : (i + 1) * rows]), root / f"part-{i}.parquet", row_group_size=300)


def _rows(table: pa.Table) -> list[tuple]:
    """Rows sorted by id, NaN comparable, Arrow type widths ignored."""
    table = table.sort_by("id")
    columns = []
    for name in table.column_names:
        values = table.column(name).to_pylist()
        columns.append(["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values])
    return list(zip(*columns))


def _unsuffixed(index):
    """An IndexRef with its file name cut to ``<data file>.<xxh64>.index``."""
    if index is None or index.file is None:
        return index
    return dataclasses.replace(index, file=re.sub(r"-[0-9a-f]+\.index$", ".index", index.file))


def _expected(root: str, condition) -> pa.Table:
    """arrowidx itself, in this process (SQL text or an Expression, as the Python API takes them)."""
    return arrowidx.dataset(root).to_table(filter=condition)


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
    _write_lake(lake)
    local = tmp_path / "local"
    shutil.copytree(lake, local)

    # build: the same manifest entries and index files as the local build
    assert sorted(driver.call(job_build, rel, OPTIONS)) == [f"part-{i}.parquet" for i in range(4)]
    arrowidx.build(str(local), OPTIONS, progress=False)
    (fs_a, root_a, _), (fs_b, root_b, _) = resolve(str(local)), resolve(str(lake))
    ours, theirs = load_manifest(fs_a, root_a), load_manifest(fs_b, root_b)
    # (index files are named <data file>.<xxh64>-<writer>.index: equal up to the writer's suffix)
    assert {k: (e.size, e.rows, _unsuffixed(e.index)) for k, e in ours.files.items()} == {
        k: (e.size, e.rows, _unsuffixed(e.index)) for k, e in theirs.files.items()
    }
    for k, e in ours.files.items():
        mine, executor = e.index.file, theirs.files[k].index.file
        if mine is not None:  # (relative to the root)
            assert (local / mine).read_bytes() == (lake / executor).read_bytes(), mine

    # deletions in every file, then read: both spellings, SQL text and Expressions
    deleted = pc.bit_wise_and(pc.field("id"), 15) == 0
    arrowidx.delete(str(lake), deleted, progress=False)
    results = driver.call(job_read, rel, READS)
    for condition, got in zip(READS, results):
        expected = _expected(str(lake), condition)
        assert _rows(got["table"]) == _rows(expected), condition
        assert got["count"] == expected.num_rows, condition
    assert results[1]["spark files"] < 4  # the needle: the bloom filters ruled files out
    assert results[-2]["spark files"] == 0  # id & 7: no Spark spelling, the data source read it
    expected = _expected(str(lake), "status = 'LOST'").select(["amount", "id"])
    assert _rows(results[-1]["table"]) == _rows(expected) and results[-1]["count"] == expected.num_rows

    formats = driver.call(job_format, rel)
    assert _rows(formats["all"]) == _rows(_expected(str(lake), None))
    assert _rows(formats["filtered"]) == _rows(formats["where"]) == _rows(_expected(str(lake), "status = 'LOST'"))
    # the DataFrame loaded without a filter said once, in the driver's Spark output, how to prune
    assert driver.output(tail=10**7).count("has no load-time filter") == 1

    pipeline = driver.call(job_pipeline, rel)
    assert _rows(pipeline["deletions"]) == _rows(_expected(str(lake), None))
    assert _rows(pipeline["lost"]) == _rows(_expected(str(lake), "status = 'LOST'"))

    # write: the files the executors wrote, read back here
    source = _table(np.random.default_rng(8), np.arange(50_000, 52_000, dtype=np.int64))
    files = driver.call(job_write, f"lakes/{tmp_path.name}/written", source, OPTIONS)
    written = driver.cwd / f"lakes/{tmp_path.name}/written"
    assert sorted(p.name for p in written.glob("*.parquet")) == sorted(files) and len(files) == 3
    assert _rows(arrowidx.dataset(str(written)).to_table()) == _rows(source)

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
