"""``arrowidx.polars.scan`` takes ``pl.scan_parquet``'s arguments and does with them what
Polars does (issue 49); the reference is Polars' own scan of the same files."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import arrowidx
from arrowidx import polars as apl
from arrowidx.errors import OptionError


@pytest.fixture
def lake(tmp_path):
    """Three indexed files of 300 rows, and the files in the order Polars reads them."""
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(7)
    paths = []
    for i in range(3):
        path = root / f"part-{i}.parquet"
        pq.write_table(pa.table({"id": np.arange(i * 300, (i + 1) * 300), "k": rng.integers(0, 20, 300)}), path,
                       row_group_size=100)  # fmt: skip
        paths.append(str(path))
    arrowidx.build(root, {"file-index.bitmap.columns": "k"}, progress=False)
    return root, paths


def test_bytes_and_file_objects_go_to_polars_unchanged():
    buf = io.BytesIO()
    pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}).write_parquet(buf)
    data = buf.getvalue()
    want = pl.scan_parquet(data, n_rows=2, row_index_name="i").collect()
    assert_frame_equal(apl.scan(data, n_rows=2, row_index_name="i").collect(), want)
    assert_frame_equal(apl.scan(io.BytesIO(data), n_rows=2, row_index_name="i").collect(), want)
    assert_frame_equal(apl.scan([data, data]).collect(), pl.scan_parquet([data, data]).collect())


@pytest.mark.parametrize("n_rows", [0, 1, 250, 10_000])
def test_n_rows_is_the_first_rows_before_the_filter(lake, n_rows):
    root, paths = lake
    got = apl.scan(root, n_rows=n_rows).filter(pl.col("k") == 3).collect()
    want = pl.scan_parquet(paths, n_rows=n_rows).filter(pl.col("k") == 3).collect()
    assert_frame_equal(got, want)


@pytest.mark.parametrize("offset", [0, 5])
def test_row_index_numbers_rows_before_the_filter(lake, offset):
    root, paths = lake
    got = apl.scan(root, row_index_name="nr", row_index_offset=offset).filter(pl.col("k") == 3).collect()
    want = pl.scan_parquet(paths, row_index_name="nr", row_index_offset=offset).filter(pl.col("k") == 3).collect()
    assert_frame_equal(got, want)
    both = apl.scan(root, n_rows=400, row_index_name="nr").collect()
    assert_frame_equal(both, pl.scan_parquet(paths, n_rows=400, row_index_name="nr").collect())


def test_reader_settings_are_accepted(lake):
    root, paths = lake
    want = pl.scan_parquet(paths).filter(pl.col("k") < 4).collect()
    got = apl.scan(root, parallel="row_groups", use_statistics=False, low_memory=True, cache=False)
    assert_frame_equal(got.filter(pl.col("k") < 4).collect(), want)


def test_arguments_not_supported_are_refused_by_name(lake):
    root, _ = lake
    with pytest.raises(OptionError, match="extra_columns"):
        apl.scan(root, extra_columns="ignore")
    with pytest.raises(TypeError, match="no_such_argument"):
        apl.scan(root, no_such_argument=1)


@pytest.mark.parametrize("parse_dates", [True, False])
def test_hive_columns_have_polars_types(tmp_path, parse_dates):
    """Hive values typed as Polars types them (Int64, Float64, Date, Datetime, String), not
    as pyarrow or Spark do; the reference is pl.scan_parquet of the same folder."""
    root = tmp_path / "t"
    folders = ["i=1/f=1.5/d=2024-01-02/t=2024-01-02 10%3A00%3A00/s=x", "i=22/f=2/d=2024-02-03/t=2024-02-03 11%3A30%3A00/s=7y"]
    for n, folder in enumerate(folders):
        (root / folder).mkdir(parents=True)
        pq.write_table(pa.table({"v": [n, n + 10]}), root / folder / "0.parquet")
    arrowidx.build(root, {"file-index.bitmap.columns": "v"}, progress=False)
    want = pl.scan_parquet(root, try_parse_hive_dates=parse_dates)
    got = apl.scan(root, try_parse_hive_dates=parse_dates)
    assert got.collect_schema() == want.collect_schema()
    assert_frame_equal(got.collect(), want.collect(), check_row_order=False)
    assert_frame_equal(got.filter(pl.col("i") == 22).collect(), want.filter(pl.col("i") == 22).collect())


def test_discovery_follows_polars(tmp_path):
    """Polars' own rules for what a source names (the reference: pl.scan_parquet of the same
    source): a folder's 0-byte files are skipped, a folder inside a list is its files, a
    path listed twice is read twice, a glob is its files, a non-Parquet file or a folder of
    several kinds fails with Polars' error class at collect()."""
    root = tmp_path / "d"
    (root / "sub").mkdir(parents=True)
    (root / ".hidden").mkdir()
    pl.DataFrame({"x": [1, 2]}).write_parquet(root / "a.parquet")
    pl.DataFrame({"x": [3]}).write_parquet(root / "sub" / "b.parquet")
    pl.DataFrame({"x": [5]}).write_parquet(root / "_c.parquet")  # names starting with _ or . are read by Polars
    pl.DataFrame({"x": [6]}).write_parquet(root / ".hidden" / "d.parquet")
    (root / "empty.parquet").write_bytes(b"")
    for source in (root, [root, root / "a.parquet"], [root / "a.parquet"] * 2, str(root / "**" / "*.parquet")):
        assert_frame_equal(apl.scan(source).collect(), pl.scan_parquet(source).collect(), check_row_order=False)
        for prefixes in (".", ["_", "."]):  # file names starting with these skipped
            want = pl.scan_parquet(source, hidden_file_prefix=prefixes).collect()
            assert_frame_equal(apl.scan(source, hidden_file_prefix=prefixes).collect(), want, check_row_order=False)
    pl.DataFrame({"x": [4]}).write_ipc(root / "c.ipc")
    for source in (root, str(root / "*")):
        with pytest.raises(Exception) as polars_error:
            pl.scan_parquet(source).collect()
        lazy = apl.scan(source)  # no error yet: Polars raises at collect()
        with pytest.raises(type(polars_error.value)):
            lazy.collect()


def test_include_file_paths_as_polars(lake):
    """Each row's file path, as pl.scan_parquet gives it, with the row index, a row limit
    and a filter the indexes prune with."""
    root, _ = lake
    for kwargs in ({"include_file_paths": "path"}, {"include_file_paths": "path", "row_index_name": "i", "n_rows": 450}):
        want = pl.scan_parquet(root, **kwargs)
        got = apl.scan(root, **kwargs)
        assert got.collect_schema() == want.collect_schema()
        assert_frame_equal(got.collect(), want.collect())
        assert_frame_equal(got.filter(pl.col("k") == 3).collect(), want.filter(pl.col("k") == 3).collect())


def test_missing_columns_as_polars(tmp_path):
    """A column missing from a later file: Polars' error by default, NULLs with
    missing_columns='insert' (the reference: pl.scan_parquet of the same folder)."""
    root = tmp_path / "m"
    root.mkdir()
    pl.DataFrame({"a": [1, 2], "b": [5, 6]}).write_parquet(root / "1.parquet")
    pl.DataFrame({"a": [3]}).write_parquet(root / "2.parquet")
    arrowidx.build(root, {"file-index.bitmap.columns": "a,b"}, progress=False)
    for where in (pl.lit(True), pl.col("b").is_null(), pl.col("b") == 5, pl.col("a") == 3):
        want = pl.scan_parquet(root, missing_columns="insert").filter(where).collect()
        assert_frame_equal(apl.scan(root, missing_columns="insert").filter(where).collect(), want)
    with pytest.raises(Exception) as polars_error:
        pl.scan_parquet(root).collect()
    with pytest.raises(type(polars_error.value)):
        apl.scan(root).collect()
