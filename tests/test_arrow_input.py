"""Arrow in: data from Polars, pandas, DuckDB and any ``__arrow_c_stream__`` object gives the
same index bytes as the same pa.Table; fsspec filesystems and single .parquet files work."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.arrow_input import UnsupportedInputError, arrow_table, record_batches

from .conftest import index_dir

OPTIONS = {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(3)
    n = 5000
    return pa.table({
        "id": pa.array(rng.permutation(n), pa.int64()),
        "status": pa.array(np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)]),
    })  # fmt: skip


class OnlyStream:
    """Exposes nothing but the Arrow PyCapsule stream interface, in small batches."""

    def __init__(self, table: pa.Table):
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        reader = pa.RecordBatchReader.from_batches(self.table.schema, self.table.to_batches(max_chunksize=700))
        return reader.__arrow_c_stream__(requested_schema)


class OnlyArray:
    def __init__(self, batch: pa.RecordBatch):
        self.batch = batch

    def __arrow_c_array__(self, requested_schema=None):
        return self.batch.__arrow_c_array__(requested_schema)


def test_write_file_index_accepts_any_arrow_producer(table):
    expected = arrowidx.write_file_index(table, OPTIONS)
    producers = {
        "polars": pl.from_arrow(table),
        "pandas": table.to_pandas(),
        "stream only": OnlyStream(table),
        "array only": OnlyArray(table.combine_chunks().to_batches()[0]),
        "reader": pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=999)),
        "batches": iter(table.to_batches(max_chunksize=333)),
        "dict": {"id": table.column("id"), "status": table.column("status")},
    }
    try:
        import duckdb

        producers["duckdb"] = duckdb.from_arrow(table)
    except ImportError:
        pass
    for name, data in producers.items():
        got = arrowidx.write_file_index(data, OPTIONS)
        assert got == expected, name
        index = arrowidx.FileIndex(got, table.schema)
        assert index.evaluate(pc.field("status") == "b").to_mask(table.num_rows).equals(pc.equal(table.column("status"), "b").combine_chunks())


def test_series_and_key_hash_from_polars(table):
    series = pl.from_arrow(table).get_column("id")
    assert arrow_table(series).column_names == ["id"]
    assert arrowidx.paimon_key_hash(pl.from_arrow(table), ["id"]).equals(arrowidx.paimon_key_hash(table, ["id"]))
    assert arrowidx.paimon_key_hash(table.to_pandas(), ["status"]).equals(arrowidx.paimon_key_hash(table, ["status"]))


def test_streams_batch_by_batch(table):
    schema, batches = record_batches(OnlyStream(table))
    assert schema == table.schema and isinstance(batches, pa.RecordBatchReader)
    assert [b.num_rows for b in batches][:2] == [700, 700]


def test_unsupported_input_says_what_to_pass():
    with pytest.raises(UnsupportedInputError, match="__arrow_c_stream__"):
        arrowidx.write_file_index(42, OPTIONS)
    with pytest.raises(arrowidx.ArrowIdxError):
        arrowidx.write_file_index(pd.Series([1, 2]).to_frame("id").pipe(lambda f: 3.5), OPTIONS)


def test_single_parquet_file_and_fsspec_filesystem(tmp_path, table):
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(2):
        pq.write_table(table.slice(i * 2500, 2500), root / f"part-{i}.parquet", row_group_size=500)
    one = str(root / "part-1.parquet")
    report = arrowidx.build(one, OPTIONS, progress=False)
    assert report.indexed == ["part-1.parquet"]
    expr = pc.field("status") == "a"
    got = arrowidx.dataset(one).to_table(filter=expr)
    assert got.equals(ds.dataset(one).to_table(filter=expr))
    fsspec = pytest.importorskip("fsspec")
    local = fsspec.filesystem("file")
    report = arrowidx.build(str(root), OPTIONS, filesystem=local, progress=False)
    assert "part-0.parquet" in report.indexed  # (mtimes differ in precision between filesystems)
    data = arrowidx.dataset(str(root), filesystem=local)
    assert data.to_table(filter=expr).num_rows == ds.dataset(str(root)).count_rows(filter=expr)
    assert os.path.exists(index_dir(root))
