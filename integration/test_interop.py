"""Indexing is invisible to every other reader of a folder (issue 49, part 1).

The matrix: a lake, flat and Hive-partitioned, on a local disk and on S3 (a moto server),
read by engines that know nothing of arrowidx (Polars' ``scan_parquet`` / ``read_parquet``
with Hive discovery on and off, pandas, ``pyarrow.dataset``, DuckDB's
``read_parquet('<folder>/**/*.parquet')``, Spark's ``read.parquet``) before
``arrowidx.build``, after it, and after ``arrowidx.delete``. Each reader must return the same
rows at every step, as it did before the lake was indexed: plain readers do not apply
deletion vectors, so a delete changes nothing for them either. The reference is each
engine's own answer on the folder before arrowidx touched it, and that answer is checked
against the rows written.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3_support import ACCESS_KEY, REGION, SECRET_KEY, S3Server  # noqa: E402

OPTIONS = {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}
FILES, ROWS = 3, 400
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


def _table() -> pa.Table:
    rng = np.random.default_rng(49)
    n = FILES * ROWS
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "status": pa.array(rng.choice(["new", "paid", "lost"], n)),
        "amount": pa.array(rng.integers(0, 1000, n).astype(np.float64)),
    })  # fmt: skip


def _write(table: pa.Table, fs: pafs.FileSystem, root: str, layout: str) -> None:
    for i in range(FILES):
        part = table.slice(i * ROWS, ROWS)
        folder = root if layout == "flat" else f"{root}/dt={DAYS[i]}/region=eu"
        fs.create_dir(folder, recursive=True)
        pq.write_table(part, f"{folder}/part-{i}.parquet", filesystem=fs, row_group_size=100)


# -- where the lake is --------------------------------------------------------------------------


class Local:
    name = "local"

    def __init__(self, root: Path):
        self.root = root
        self.fs = pafs.LocalFileSystem()

    def lake(self, layout: str) -> tuple[str, str]:
        """(the lake's path for the writers and readers, its path in ``self.fs``)"""
        path = str(self.root / layout)
        return path, path

    def arrowidx_kwargs(self) -> dict:
        return {}


_BUCKETS = iter(range(10**6))


class S3:
    name = "s3"

    def __init__(self, server: S3Server):
        self.server = server
        self.fs = pafs.S3FileSystem(endpoint_override=server.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                                    region=REGION, scheme="http")  # fmt: skip

    def lake(self, layout: str) -> tuple[str, str]:
        bucket = f"interop-{layout}-{os.getpid()}-{next(_BUCKETS)}"
        self.server.create_bucket(bucket)
        return f"s3://{bucket}/lake", f"{bucket}/lake"

    def arrowidx_kwargs(self) -> dict:
        return {"storage_options": self.server.storage_options()}

    def polars_options(self) -> dict:
        return {"aws_endpoint_url": self.server.endpoint, "aws_access_key_id": ACCESS_KEY,
                "aws_secret_access_key": SECRET_KEY, "aws_region": REGION, "aws_allow_http": "true"}  # fmt: skip


@pytest.fixture(scope="module")
def s3_server(s3):
    return s3


# -- the readers that know nothing of arrowidx --------------------------------------------------


def _polars(read: str, hive: bool) -> Callable:
    def reader(where, uri: str, fs_path: str, spark) -> pa.Table:
        import polars as pl

        options = {"storage_options": where.polars_options()} if where.name == "s3" else {}
        if where.name == "s3":
            uri = uri + "/"  # (Polars takes an object-store path without a trailing / for one file)
        if read == "scan":
            frame = pl.scan_parquet(uri, hive_partitioning=hive, **options).collect()
        else:
            frame = pl.read_parquet(uri, hive_partitioning=hive, **options)
        return frame.to_arrow()

    return reader


def _pandas(where, uri: str, fs_path: str, spark) -> pa.Table:
    import pandas as pd

    if where.name == "s3":
        frame = pd.read_parquet(fs_path, filesystem=where.fs)
    else:
        frame = pd.read_parquet(uri)
    return pa.Table.from_pandas(frame, preserve_index=False)


def _pyarrow(where, uri: str, fs_path: str, spark) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(fs_path, filesystem=where.fs, format="parquet", partitioning="hive").to_table()


def _duckdb(where, uri: str, fs_path: str, spark) -> pa.Table:
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is a benchmark extra: pip install -e '.[bench]'")
    if where.name == "s3":
        pytest.skip("DuckDB reads S3 through its httpfs extension, which is downloaded on first use (no network here)")
    con = duckdb.connect()
    try:
        return con.sql(f"SELECT * FROM read_parquet('{uri}/**/*.parquet', hive_partitioning = true)").to_arrow_table()
    finally:
        con.close()


def _spark(where, uri: str, fs_path: str, spark) -> pa.Table:
    if where.name == "s3":
        pytest.skip("Spark reads S3 through hadoop-aws, whose jars are not installed with PySpark")
    return spark.getOrCreate().read.parquet(uri).toArrow()


READERS = {
    "polars-scan-hive": _polars("scan", True),
    "polars-scan-no-hive": _polars("scan", False),
    "polars-read-hive": _polars("read", True),
    "polars-read-no-hive": _polars("read", False),
    "pandas": _pandas,
    "pyarrow-dataset": _pyarrow,
    "duckdb-glob": _duckdb,
    "spark": _spark,
}


class _LazySpark:
    """The session-wide local Spark session, started only for the Spark column."""

    def __init__(self, request: pytest.FixtureRequest):
        self.request = request

    def getOrCreate(self):  # noqa: N802 - Spark's own name
        return self.request.getfixturevalue("spark")


def _rows(table: pa.Table) -> pa.Table:
    """``table`` in one order (by id), its columns by name, partition columns as strings
    (engines type Hive values each their own way; the comparison is per engine anyway)."""
    columns = sorted(table.column_names)
    table = table.select(columns)
    arrays = [pc.cast(c, pa.string()) if name in ("dt", "region") else c for name, c in zip(columns, table.columns)]
    table = pa.table(arrays, names=columns)
    return table.sort_by("id").combine_chunks()


def _check_written(table: pa.Table, written: pa.Table, layout: str) -> None:
    """The engine's answer before indexing is the rows written (and, in a Hive layout, the
    partition values of their folders when the engine reads them)."""
    data = table.select(["amount", "id", "status"])
    want = written.select(["amount", "id", "status"]).sort_by("id")
    assert data.num_rows == want.num_rows and data.cast(want.schema).equals(want)
    if layout == "hive" and "dt" in table.column_names:
        days = np.repeat(DAYS, ROWS)
        assert table["dt"].to_pylist() == [d[:10] for d in days]


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("layout", ["flat", "hive"])
@pytest.mark.parametrize("store", ["local", "s3"])
def test_indexing_changes_nothing_for_other_readers(store, layout, reader, tmp_path, request):
    """Each engine reads the same rows before ``build``, after it and after ``delete``."""
    where = Local(tmp_path) if store == "local" else S3(request.getfixturevalue("s3_server"))
    uri, fs_path = where.lake(layout)
    written = _table()
    _write(written, where.fs, fs_path, layout)
    read = READERS[reader]
    spark = _LazySpark(request)

    before = _rows(read(where, uri, fs_path, spark))
    _check_written(before, written, layout)

    arrowidx.build(uri, OPTIONS, progress=False, **where.arrowidx_kwargs())
    after_build = _rows(read(where, uri, fs_path, spark))
    assert after_build.equals(before), f"{reader} reads other rows after arrowidx.build"

    report = arrowidx.delete(uri, pc.field("status") == "lost", progress=False, **where.arrowidx_kwargs())
    assert report.rows_deleted > 0
    after_delete = _rows(read(where, uri, fs_path, spark))
    assert after_delete.equals(before), f"{reader} reads other rows after arrowidx.delete"

    # arrowidx itself still finds its indexes and deletions from the folder's path
    live = arrowidx.dataset(uri, **where.arrowidx_kwargs()).to_table(columns=["id"])
    assert live.num_rows == written.num_rows - report.rows_deleted
