"""Issue 38, part 4: every mistake a new user made gets an arrowidx error naming the file,
option or argument (or, where the input is valid, the right answer), never a raw library
error; in the CLI one line and exit status 2 (usage) or 1 (data)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.paimon
from arrowidx.arrow_input import UnsupportedInputError
from arrowidx.cli import main
from arrowidx.deletion import DeletionVector
from arrowidx.errors import (
    AccessDeniedError,
    ArrowIdxError,
    CorruptIndexError,
    OptionError,
    PaimonTableError,
    StorageError,
    StoreUnavailableError,
)
from arrowidx.lake.commit import load_manifest
from arrowidx.lake.source import open_lake
from arrowidx.storage import storage_error

PAIMON_TABLE = os.path.join(os.path.dirname(__file__), "paimon_tables", "shapes-0.9.0", "db.db", "evolve")


@pytest.fixture
def lake(tmp_path):
    root = str(tmp_path / "lake")
    os.makedirs(root)
    for i in range(2):
        n = 100
        t = pa.table({"id": pa.array(np.arange(i * n, (i + 1) * n)), "status": pa.array(["ok", "LOST"] * (n // 2))})
        pq.write_table(t, os.path.join(root, f"part-{i}.parquet"))
    arrowidx.build(root, {"file-index.bitmap.columns": "status"}, progress=False)
    return root


def test_a_file_that_is_not_parquet_is_named_by_build(lake, capsys):
    bad = os.path.join(lake, "notes.parquet")
    with open(bad, "w") as f:
        f.write("not parquet at all")
    with pytest.raises(CorruptIndexError, match="notes.parquet"):
        arrowidx.build(lake, progress=False)
    assert main(["build", lake]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "notes.parquet" in err and "Traceback" not in err and "internal error" not in err


def test_delete_by_a_partition_column_of_a_pyarrow_dataset(tmp_path):
    root = str(tmp_path)
    frames = []
    for day in ("2024-01-01", "2024-01-02"):
        os.makedirs(os.path.join(root, f"dt={day}"))
        t = pa.table({"id": [1, 2, 3]})
        pq.write_table(t, os.path.join(root, f"dt={day}", "f.parquet"))
        frames.append(t.append_column("dt", pa.array([day] * 3)))
    arrowidx.build(root, {"file-index.bitmap.columns": "id"}, progress=False)
    where = pc.field("dt") == "2024-01-01"
    report = arrowidx.delete(ds.dataset(root, partitioning="hive"), where, progress=False)
    assert report.rows_deleted == pa.concat_tables(frames).filter(where).num_rows == 3
    assert arrowidx.dataset(ds.dataset(root, partitioning="hive")).count_rows() == 3


def test_deletion_vectors_apply_to_polars_frames_with_strings():
    frame = pl.DataFrame({"s": ["a", "b", "c", "d"], "i": [1, 2, 3, 4]})
    dv = DeletionVector.from_positions(np.array([1, 3], dtype=np.uint64))
    kept = pa.Table.from_batches(list(arrowidx.apply_deletion_vector(frame, dv)))
    assert kept.column("s").to_pylist() == ["a", "c"]
    assert dv.apply(frame).column("i").to_pylist() == [1, 3]


@pytest.mark.parametrize("where,rows", [
    ("id > 9999999999999999999999", 0), ("id < 9999999999999999999999", 200),
    ("id = -9999999999999999999999", 0), ("id <> 99999999999999999999999", 200),
    ("id IN (99999999999999999999999, 5)", 1),
])  # fmt: skip
def test_a_where_literal_beyond_the_column_type_means_what_sql_means(lake, capsys, where, rows):
    assert main(["query", lake, "--where", where, "--format", "csv"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) - 1 == rows  # a header, then the rows


def test_file_index_needs_a_schema(lake):
    t = pa.table({"a": [1, 2, 3]})
    data = arrowidx.write_file_index(t, {"file-index.bitmap.columns": "a"})
    with pytest.raises(UnsupportedInputError, match="schema"):
        arrowidx.FileIndex(data, None)
    index = arrowidx.FileIndex(data, pl.DataFrame({"a": [1]}).schema)  # a Polars schema works
    assert index.evaluate(pc.field("a") == 2).to_mask(3).to_pylist() == [False, True, False]


def test_paimon_snapshot_argument():
    assert arrowidx.paimon.open_table(PAIMON_TABLE, snapshot="latest").snapshot_id == arrowidx.paimon.open_table(PAIMON_TABLE).snapshot_id
    with pytest.raises(PaimonTableError, match="snapshot"):
        arrowidx.paimon.open_table(PAIMON_TABLE, snapshot="newest")


def test_build_of_a_dataframe_says_what_to_call():
    with pytest.raises(UnsupportedInputError, match="write_file_index"):
        arrowidx.build(pd.DataFrame({"a": [1]}))


def test_write_file_index_of_a_pandas_series():
    built = arrowidx.write_file_index(pd.Series([1, 2, 3], name="a"), {"file-index.bitmap.columns": "a"})
    assert arrowidx.FileIndex(built, pa.schema([("a", pa.int64())])).evaluate(pc.field("a") == 2).kind == "bitmap"
    with pytest.raises(OptionError, match="'a'"):
        arrowidx.write_file_index(pd.Series([1, 2, 3]), {"file-index.bitmap.columns": "a"})


@pytest.mark.parametrize("key,hint", [
    ("file_index.bloom-filter.columns", "file-index.bloom-filter.columns"),
    ("deletion-vectors.bitmap-64", None),
    ("foo.bar", None),
    ("file-index.bloomfilter.columns", "file-index.bloom-filter.columns"),
])  # fmt: skip
def test_unknown_option_keys_are_refused_before_anything_is_written(lake, key, hint):
    version = load_manifest(*open_lake(lake)[:2]).version
    with pytest.raises(OptionError, match=key.replace(".", r"\.")) as e:
        arrowidx.build(lake, {key: "id"}, progress=False)
    if hint:
        assert f"did you mean {hint!r}" in str(e.value)
    assert load_manifest(*open_lake(lake)[:2]).version == version


def test_delete_option_typo_is_refused(lake):
    with pytest.raises(OptionError, match="did you mean 'deletion-vectors.bitmap64'"):
        arrowidx.delete(lake, pc.field("id") == 1, options={"deletion-vectors.bitmap-64": "true"}, progress=False)
    assert arrowidx.dataset(lake).count_rows() == 200


def test_an_index_on_a_column_no_file_has_is_refused(lake):
    version = load_manifest(*open_lake(lake)[:2]).version
    with pytest.raises(OptionError, match="did you mean 'id'"):
        arrowidx.build(lake, {"file-index.bloom-filter.columns": "idd"}, progress=False)
    assert load_manifest(*open_lake(lake)[:2]).version == version


class _Refusing(pafs.FileSystemHandler):
    """A filesystem whose reads fail as a store fails them (``error``), listing and stats as local."""

    def __init__(self, error: Exception):
        self.local = pafs.LocalFileSystem()
        self.error = error

    def get_type_name(self):
        return "refusing"

    def get_file_info(self, paths):
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.local.get_file_info(selector)

    def open_input_stream(self, path):
        raise self.error

    def open_input_file(self, path):
        raise self.error

    def normalize_path(self, path):
        return path

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def create_dir(self, *a): raise NotImplementedError  # noqa: E704
    def delete_dir(self, *a): raise NotImplementedError  # noqa: E704
    def delete_dir_contents(self, *a, **k): raise NotImplementedError  # noqa: E704
    def delete_root_dir_contents(self): raise NotImplementedError  # noqa: E704
    def delete_file(self, *a): raise NotImplementedError  # noqa: E704
    def move(self, *a): raise NotImplementedError  # noqa: E704
    def copy_file(self, *a): raise NotImplementedError  # noqa: E704
    def open_output_stream(self, *a): raise NotImplementedError  # noqa: E704
    def open_append_stream(self, *a): raise NotImplementedError  # noqa: E704


@pytest.mark.parametrize("error,kind,words", [
    (OSError("When reading information for key 'lake/_arrowidx/manifest-00000001.json': AWS Error ACCESS_DENIED during HeadObject operation: No response body."), AccessDeniedError, "denied"),
    (PermissionError(13, "Permission denied"), AccessDeniedError, "denied"),
    (OSError("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 7, Couldn't connect to server"), StoreUnavailableError, "could not be reached"),
    (OSError("disk on fire"), StorageError, "cannot read"),
])  # fmt: skip
def test_storage_failures_are_not_reported_as_damage(lake, error, kind, words):
    refusing = pafs.PyFileSystem(_Refusing(error))
    with pytest.raises(kind, match=words) as e:
        arrowidx.dataset(lake, filesystem=refusing).to_table(filter=pc.field("status") == "LOST")
    assert not isinstance(e.value, CorruptIndexError)
    assert ".arrowidx/manifest" in str(e.value) or ".parquet" in str(e.value)  # names the object (the sidecar's manifest)
    assert type(storage_error(error, "x")) is kind


def test_vacuum_of_a_missing_dataset_fails(tmp_path, capsys):
    with pytest.raises(ArrowIdxError, match="no such dataset"):
        arrowidx.vacuum(str(tmp_path / "nonexistent"))
    assert main(["vacuum", str(tmp_path / "nonexistent")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
