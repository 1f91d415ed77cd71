"""Spark's build and Paimon rewrite read their data files as the local ones do (issue 55): one
column chunk (one column of one row group) at a time, the range bitmap's column once per
pass, never the whole file; shown by a filesystem that notes every read the executors' Python
workers make (``tests/counting_reads.py``, shipped to them by value)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from tests import counting_reads
from tests.counting_reads import CountingReads, chunk_reads

import arrowidx
from arrowidx.storage import SINGLE_WRITER_ENV

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def noted(spark, tmp_path, monkeypatch):
    """A filesystem noting reads to a log; the executors get its code by value."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(counting_reads)
    monkeypatch.setenv(SINGLE_WRITER_ENV, "1")  # (it cannot create a file only if it is absent)
    log = str(tmp_path / "reads.log")
    yield pafs.PyFileSystem(CountingReads(log)), log
    cloudpickle.unregister_pickle_by_value(counting_reads)


def test_spark_build_reads_one_column_chunk_at_a_time(spark, noted, tmp_path):
    fs, log = noted
    lake = tmp_path / "lake"
    lake.mkdir()
    rng = np.random.default_rng(3)
    for i in range(2):
        n = 90_000
        table = pa.table({"id": pa.array(np.arange(n) + i * n), "status": pa.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)]),
                          "amount": pa.array(rng.normal(0, 100, n))})  # fmt: skip
        pq.write_table(table, lake / f"part-{i}.parquet", row_group_size=30_000)
    options = {"file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "amount"}
    report = arrowidx.spark.build(spark, str(lake), options, filesystem=fs)
    assert sorted(report.indexed) == ["part-0.parquet", "part-1.parquet"]
    for i in range(2):
        counts = chunk_reads(log, str(lake / f"part-{i}.parquet"))
        assert counts == {(g, c): {"id": 1, "status": 0, "amount": 2}[c] for g in range(3) for c in ("id", "status", "amount")}
    expr = pc.field("amount") > 250.0
    want = pa.concat_tables(pq.read_table(lake / f"part-{i}.parquet") for i in range(2)).filter(expr)
    assert arrowidx.dataset(str(lake)).to_table(filter=expr).sort_by("id").equals(want.sort_by("id"))


def test_spark_paimon_rewrite_reads_one_column_chunk_at_a_time(spark, noted, tmp_path):
    pytest.importorskip("fastavro")
    from arrowidx import paimon

    fs, log = noted
    path = tmp_path / "t"
    shutil.copytree(ROOT / "tests" / "paimon_tables" / "pypaimon-2.1" / "db.db" / "t", path)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    options = {"file-index.bloom-filter.columns": "name", "file-index.range-bitmap.columns": "amount"}
    # a dry run: the executors build every index (reading the data files) and write nothing
    report = arrowidx.spark.paimon_rewrite_file_index(spark, str(path), options, filesystem=fs, dry_run=True)
    assert report.dry_run and report.rewritten and not report.committed
    table = paimon.open_table(str(path))
    assert len(table.files) == 6
    for f in table.files:
        counts = chunk_reads(log, table.file_path(f))
        assert {c: n for (_, c), n in counts.items()} == {"dt": 0, "id": 0, "name": 1, "status": 0, "amount": 2}
