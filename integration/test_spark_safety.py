"""Spark: typos refused on the driver before any job, columns named exactly, deletions kept for
content that leaves and returns (issue 47, items 2, 3 and 5).

Expected rows are the rows written minus the rows deleted."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.errors import OptionError
from arrowidx.expression import UnknownColumnError

pytest.importorskip("pyspark")
from tests.conftest import index_dir  # noqa: E402

import arrowidx.spark  # noqa: E402

SHAPES = Path(__file__).resolve().parents[1] / "tests" / "paimon_tables" / "shapes-0.9.0" / "db.db" / "evolve"
TAKES = "it takes where, filter, on_corrupt, maxPartitionBytes, minPartitions, index_root and storage.<key> (object stores)"


def plain(path, values):
    pq.write_table(pa.table({"id": pa.array(values, pa.int64())}), path, compression="none", use_dictionary=False)


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    plain(os.path.join(root, "a.parquet"), list(range(10)))
    plain(os.path.join(root, "b.parquet"), list(range(10, 20)))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    return root


def ids(df) -> list[int]:
    return sorted(df.toArrow().column("id").to_pylist())


def no_job(spark, call):
    """``call()``'s exception, checked to have started no Spark job."""
    sc = spark.sparkContext
    group = f"issue47-{id(call)}"
    sc.setJobGroup(group, "a refused call")
    try:
        with pytest.raises(Exception) as info:
            call()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert sc.statusTracker().getJobIdsForGroup(group) == []
    return info.value


@pytest.mark.parametrize("key, hint", [("wher", "where"), ("on_corupt", "on_corrupt"), ("minPartition", "minPartitions")])
def test_data_source_refuses_unknown_options_at_load(spark, lake, key, hint):
    arrowidx.spark.register(spark)
    error = no_job(spark, lambda: spark.read.format("arrowidx").option(key, "1").load(lake))
    expected = f'spark.read.format("arrowidx"): unknown option {key.lower()!r} (did you mean {hint!r}?); {TAKES}'
    assert expected in str(error)


def test_data_source_refuses_a_bad_on_corrupt(spark, lake):
    arrowidx.spark.register(spark)
    error = no_job(spark, lambda: spark.read.format("arrowidx").option("on_corrupt", "fallbak").load(lake))
    assert "on_corrupt must be one of raise, fallback, got 'fallbak'" in str(error)
    df = spark.read.format("arrowidx").option("where", "id < 3").option("ON_CORRUPT", "fallback").load(lake)
    assert ids(df) == [0, 1, 2]  # known options in any case, as Spark gives them


def test_read_refuses_unknown_keywords_and_a_filter_given_as_an_option(spark, lake):
    error = no_job(spark, lambda: arrowidx.spark.read(spark, lake, wher="id = 1"))
    assert isinstance(error, OptionError)
    assert str(error) == ("arrowidx.spark.read: unknown option 'wher' (did you mean 'where'?); it takes where, filter,"
                          " on_corrupt, maxPartitionBytes, minPartitions, index_root and storage.<key> (object stores)")  # fmt: skip
    error = no_job(spark, lambda: arrowidx.spark.read(spark, lake, where="id = 1"))
    assert str(error) == "arrowidx.spark.read: give the filter as the third argument, read(spark, path, 'id = 1'), not as where="


def test_read_columns_one_name_and_unknown_names(spark, lake):
    df = arrowidx.spark.read(spark, lake, "id < 3", columns="id")
    assert df.columns == ["id"] and ids(df) == [0, 1, 2]
    error = no_job(spark, lambda: arrowidx.spark.read(spark, lake, "id < 3", columns=["idd"]))
    assert isinstance(error, UnknownColumnError) and isinstance(error, pa.ArrowInvalid)
    assert str(error) == f"{lake}: no column 'idd' in columns= (did you mean 'id'?); the columns are: id"


def test_write_and_build_refuse_typos_before_any_job(spark, lake, tmp_path):
    df = spark.createDataFrame(pa.table({"id": pa.array(range(5), pa.int64())}))
    out = str(tmp_path / "written")
    error = no_job(spark, lambda: arrowidx.spark.write(df, out, {"file_index.bloom-filter.columns": "id"}))
    assert str(error) == ("arrowidx.spark.write: unknown option 'file_index.bloom-filter.columns' (did you mean"
                          " 'file-index.bloom-filter.columns'?); it takes file-index.* keys")  # fmt: skip
    error = no_job(spark, lambda: arrowidx.spark.write(df, out, {"file-index.bloom-filter.columns": "id"},
                                                      parquet_options={"compresion": "zstd"}))  # fmt: skip
    assert str(error) == ("arrowidx.spark.write: parquet_options: 'compresion' is not an option of"
                          " pyarrow.parquet.ParquetWriter (did you mean 'compression'?)")  # fmt: skip
    assert not os.path.exists(os.path.join(out, "_arrowidx")) and not os.path.exists(index_dir(out))  # nothing written
    error = no_job(spark, lambda: arrowidx.spark.build(spark, lake, {"file-index.bitmap.colums": "id"}))
    assert "unknown option 'file-index.bitmap.colums'" in str(error)
    error = no_job(spark, lambda: arrowidx.spark.build(spark, lake, {"file_index.bitmap.columns": "id"}))
    assert str(error).startswith("arrowidx.spark.build: unknown option 'file_index.bitmap.columns'")


def test_paimon_rewrite_refuses_typos_before_any_job(spark, tmp_path):
    table = str(tmp_path / "evolve")
    shutil.copytree(SHAPES, table)
    for options, expected in (({"file-index.bloom-filter.colums": "id"}, "unknown option 'file-index.bloom-filter.colums'"),
                              ({"file_index.bloom-filter.columns": "id"}, "only file-index.* keys can be set here")):  # fmt: skip
        error = no_job(spark, lambda o=options: arrowidx.spark.paimon_rewrite_file_index(spark, table, o))
        assert isinstance(error, OptionError) and expected in str(error)
    error = no_job(spark, lambda: arrowidx.spark.paimon_rewrite_file_index(spark, table, {}, partitions={"dtt": "x"}))
    assert "'dtt' is not a partition key" in str(error)


def test_spark_build_keeps_and_reapplies_deletions(spark, lake, tmp_path):
    away = str(tmp_path / "a.parquet")
    arrowidx.delete(lake, "id < 5", progress=False)
    shutil.move(os.path.join(lake, "a.parquet"), away)
    gone = arrowidx.spark.build(spark, lake, {})
    assert (gone.removed, gone.tombstoned) == (["a.parquet"], {"a.parquet": 5})
    shutil.move(away, os.path.join(lake, "a.parquet"))
    # read before the next build: the driver and the executors see the deletions
    assert ids(arrowidx.spark.read(spark, lake, "id >= 0")) == list(range(5, 20))
    assert ids(spark.read.format("arrowidx").option("where", "id >= 0").load(lake)) == list(range(5, 20))
    back = arrowidx.spark.build(spark, lake, {})
    assert (back.indexed, back.restored) == (["a.parquet"], {"a.parquet": 5})
    assert ids(arrowidx.spark.read(spark, lake, "id >= 0")) == list(range(5, 20))


def test_spark_overwrite_keeps_the_deletions_of_what_it_replaces(spark, tmp_path):
    root = str(tmp_path / "written")
    first = spark.createDataFrame(pa.table({"id": pa.array(range(10), pa.int64())})).coalesce(1)
    arrowidx.spark.write(first, root, {"file-index.bloom-filter.columns": "id"})
    arrowidx.delete(root, "id < 5", progress=False)
    (name,) = [n for n in os.listdir(root) if n.endswith(".parquet")]
    backup = str(tmp_path / "backup.parquet")
    shutil.copy(os.path.join(root, name), backup)
    second = spark.createDataFrame(pa.table({"id": pa.array(range(100, 103), pa.int64())})).coalesce(1)
    arrowidx.spark.write(second, root, None, mode="overwrite")
    assert ids(arrowidx.spark.read(spark, root, "id >= 0")) == [100, 101, 102]
    shutil.copy(backup, os.path.join(root, "restored.parquet"))  # the replaced content, back from a backup
    assert sorted(arrowidx.dataset(root).to_table().column("id").to_pylist()) == [5, 6, 7, 8, 9, 100, 101, 102]
    assert arrowidx.build(root, progress=False).restored == {"restored.parquet": 5}
