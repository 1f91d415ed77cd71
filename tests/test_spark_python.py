"""Spark in local mode runs its Python workers with an interpreter that has arrowidx.

A fake session stands in for Spark here (the real one is in integration/test_spark.py):
what is checked is which interpreter the workers get and the message when it is wrong.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pyspark")

from arrowidx.errors import ArrowIdxError  # noqa: E402
from arrowidx.spark import ensure_worker_python  # noqa: E402


class _Conf(dict):
    def get(self, key, default=None):
        return super().get(key, default)


class _Context:
    def __init__(self, master: str, conf: dict | None = None):
        self.master = master
        self.pythonExec = "python3"
        self._conf = _Conf(conf or {})

    def getConf(self):
        return self._conf


class _Session:
    def __init__(self, master: str, conf: dict | None = None):
        self.sparkContext = _Context(master, conf)


def test_local_session_without_a_python_gets_this_interpreter(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = _Session("local[2]")
    ensure_worker_python(session)
    assert session.sparkContext.pythonExec == sys.executable


def test_a_python_without_arrowidx_fails_at_once_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    fake = tmp_path / "python-without-arrowidx"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    session = _Session("local[*]", {"spark.pyspark.python": str(fake)})
    with pytest.raises(ArrowIdxError, match="PYSPARK_PYTHON.*local_session"):
        ensure_worker_python(session)


def test_clusters_are_left_alone(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = _Session("spark://cluster:7077")
    ensure_worker_python(session)
    assert session.sparkContext.pythonExec == "python3"


# --------------------------------------------------------------------------------------
# how the data source packs the files that survive pruning into Spark partitions
# --------------------------------------------------------------------------------------
MiB = 1 << 20


def test_small_reads_are_packed_into_about_as_many_partitions_as_spark_has_cores():
    """Spark's rule (FilePartition.maxSplitBytes): at most max(openCost 4 MiB, total /
    parallelism) bytes per partition, each file counting 4 MiB more, capped at 128 MiB.
    20 files of 200 KiB on 2 cores: 20 x 4.2 MiB / 2 = 42 MiB a partition, 10 files each."""
    from arrowidx.spark.source import _pack

    files = [(f"part-{i:02}.parquet", 200 << 10) for i in range(20)]
    assert _pack(files, 128 * MiB, 2) == [tuple(p for p, _ in files[:10]), tuple(p for p, _ in files[10:])]
    assert [len(g) for g in _pack(files, 128 * MiB, 4)] == [5, 5, 5, 5]
    assert _pack(files[:1], 128 * MiB, 2) == [("part-00.parquet",)]
    # 3 files on 4 cores: 3 x 4.2 MiB / 4 is below the 4 MiB floor, which one file fills
    assert _pack(files[:3], 128 * MiB, 4) == [("part-00.parquet",), ("part-01.parquet",), ("part-02.parquet",)]


def test_large_reads_are_capped_at_max_partition_bytes_and_one_byte_gives_a_partition_per_file():
    """20 files of 17 MiB on 2 cores: 20 x 21 MiB / 2 = 210 MiB, capped at 128 MiB: six
    files (126 MiB) a partition, in path order; a file is never split."""
    from arrowidx.spark.source import _pack

    files = [(f"part-{i:02}.parquet", 17 * MiB) for i in range(20)]
    assert [len(g) for g in _pack(files, 128 * MiB, 2)] == [6, 6, 6, 2]
    assert [g[0] for g in _pack(files, 128 * MiB, 2)] == ["part-00.parquet", "part-06.parquet", "part-12.parquet", "part-18.parquet"]
    assert _pack(files, 1, 2) == [(p,) for p, _ in files]
    assert _pack([("huge.parquet", 512 * MiB)], 128 * MiB, 2) == [("huge.parquet",)]


def test_a_surviving_file_costs_the_bytes_of_the_columns_the_query_reads(tmp_path):
    """The planner weighs each surviving file by the compressed bytes of the output and
    filter columns in its surviving row groups, not by the whole file: a count over a small
    column packs into fewer partitions than a read of every column, and the partitions hold
    exactly the files the index keeps."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import StringType, StructField, StructType

    import arrowidx
    from arrowidx.spark.source import _Reader
    from arrowidx.spark.translate import arrow_to_spark_schema

    rng = np.random.default_rng(3)
    n = 200_000
    for i in range(6):
        status = np.where(np.arange(n) % 1000 == i, "LOST", "PAID")
        noise = rng.integers(0, 1 << 62, n)  # incompressible: each file ~1.6 MB of it
        pq.write_table(pa.table({"status": status, "noise": noise}), tmp_path / f"part-{i}.parquet", row_group_size=50_000)
    pq.write_table(pa.table({"status": ["PAID"] * 10, "noise": list(range(10))}), tmp_path / "part-9.parquet")
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "status"}, progress=False)
    everything = arrow_to_spark_schema(pq.read_schema(tmp_path / "part-0.parquet"))
    one_column = StructType([StructField("status", StringType())])
    options = {"where": "status = 'LOST'", "minPartitions": "1", "maxPartitionBytes": str(26 * MiB)}
    narrow = _Reader(str(tmp_path), one_column, options).partitions()
    wide = _Reader(str(tmp_path), everything, options).partitions()
    kept = [f"part-{i}.parquet" for i in range(6)]  # part-9 holds no LOST row: ruled out
    assert [p for part in narrow for p in part.paths] == kept == [p for part in wide for p in part.paths]
    # each file: 4 MiB to open + its status column (~1 KB) or + ~1.6 MB of noise as well
    assert len(narrow) == 1 and len(wide) == 2
