"""The scan core's per-file read (arrowidx.lake.read), as PaimonTable and IndexedDataset use it:
index bitmap, deletion vector, filter, late materialisation, a file read under its own schema
and mapped to the output's, and Parquet row-group statistics pruning. Reference: pyarrow
reading the whole file and filtering by row number and the same expression."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyroaring import BitMap

from arrowidx.deletion import DeletionVector
from arrowidx.lake.read import (
    FileRead,
    FileReader,
    bitmap_groups,
    row_group_offsets,
    statistics_groups,
)

N = 10_000


@pytest.fixture()
def data_file(tmp_path):
    rng = np.random.default_rng(7)
    table = pa.table({
        "id": pa.array(np.arange(N, dtype=np.int64)),
        "k": pa.array(rng.integers(0, 50, N)),
        "s": pa.array([f"v{i % 97}" if i % 11 else None for i in range(N)]),
    })  # fmt: skip
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=1_000)
    return path, table


def _read(path, expr, columns, *, bitmap=None, deleted=(), exact=False, schema=None, adapt=None, source=None):
    fs = pafs.LocalFileSystem()
    fragment = ds.ParquetFileFormat().make_fragment(path, fs)
    fragment.ensure_complete_metadata()
    offsets = row_group_offsets(fragment)
    groups = bitmap_groups(bitmap, offsets) if bitmap is not None else list(range(len(offsets) - 1))
    dv = DeletionVector.from_positions(list(deleted)) if deleted else None
    out_schema = pa.schema([pa.field("id", pa.int64()), pa.field("key", pa.int64()), pa.field("s", pa.string())])
    reader_schema = out_schema if schema is not None else fragment.physical_schema
    read = FileRead(path, lambda d: fragment, groups, offsets, bitmap, dv, exact, schema, source, adapt)
    reader = FileReader(fs, reader_schema, ds.ParquetFileFormat())
    names = sorted({"k"} if schema is None else {"key"}) if expr is not None else []
    want = pa.schema([reader_schema.field(c) for c in columns])
    tables = [t for t in reader.read([read], expr, columns, names, want) if t is not None]
    return pa.concat_tables(tables) if tables else want.empty_table()


def _reference(table, expr, columns, keep):
    t = table.filter(pa.array(keep))
    return (t.filter(expr) if expr is not None else t).select(columns)


@pytest.mark.parametrize("expr", [None, pc.field("k") == 3, pc.field("k") < 10])
def test_bitmap_deletions_and_filter_equal_pyarrow(data_file, expr, row_takes):
    path, table = data_file
    rows = np.random.default_rng(1).choice(N, 1_500, replace=False)
    bitmap = BitMap(rows.tolist())
    deleted = rows[::3].tolist() + list(range(4_000, 4_100))
    keep = np.zeros(N, bool)
    keep[rows] = True
    keep[deleted] = False
    got = _read(path, expr, ["id", "s"], bitmap=bitmap, deleted=deleted)
    assert got.equals(_reference(table, expr, ["id", "s"], keep))


def test_file_schema_mapped_to_output(data_file, row_takes):
    """A file read with its own column names (``k``) mapped to the output's (``key``), as a
    Paimon file written before a rename; the filter names the output column."""
    path, table = data_file
    fragment_schema = pq.read_schema(path)
    mapping = {"id": "id", "key": "k", "s": "s"}

    def adapt(t, columns):
        return pa.table({c: t.column(mapping[c]) for c in columns})

    expr = pc.field("key") == 7
    got = _read(path, expr, ["id", "key"], schema=fragment_schema, adapt=adapt, source=lambda cols: [mapping[c] for c in cols])
    ref = table.filter(pc.field("k") == 7).select(["id", "k"]).rename_columns(["id", "key"])
    assert got.equals(ref)


def test_statistics_groups_match_pyarrow(data_file):
    path, _ = data_file
    fragment = ds.ParquetFileFormat().make_fragment(path, pafs.LocalFileSystem())
    fragment.ensure_complete_metadata()
    expr = (pc.field("id") >= 2_500) & (pc.field("id") < 4_200)
    kept = statistics_groups(fragment, expr, fragment.physical_schema, list(range(10)))
    assert kept == [rg.id for rg in fragment.subset(filter=expr).row_groups] == [2, 3, 4]
    assert statistics_groups(fragment, expr, fragment.physical_schema, [0, 3, 9]) == [3]
