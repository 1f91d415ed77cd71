"""``arrowidx.polars.scan`` reads Hive folders as ``pl.scan_parquet`` reads them (issue 49):
the same columns, types, values and errors. The reference is always Polars' own scan of the
same source, with the same arguments."""

from __future__ import annotations

import os

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import arrowidx
from arrowidx import polars as apl
from arrowidx.polars import ScanReport


def _write(root, folder: str, frame: pl.DataFrame, name: str = "data.parquet"):
    path = root / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path


def _same(source, *, filters=(), projections=(), **kwargs):
    """``apl.scan(source, **kwargs)`` equals ``pl.scan_parquet(source, **kwargs)``: schema,
    rows, each filter and each projection."""
    want, got = pl.scan_parquet(source, **kwargs), apl.scan(source, **kwargs)
    assert got.collect_schema() == want.collect_schema()
    assert_frame_equal(got.collect(), want.collect(), check_row_order=False)
    for f in filters:
        assert_frame_equal(got.filter(f).collect(), want.filter(f).collect(), check_row_order=False)
    for columns in projections:
        assert_frame_equal(got.select(columns).collect(), want.select(columns).collect(), check_row_order=False)


@pytest.mark.parametrize("dates", [True, False])
def test_hive_values_typed_and_read_as_polars(tmp_path, dates):
    """Polars' inference (Boolean, Int64, Float64, Date, Datetime, a date mixed with a
    datetime as String), NULL partitions, empty and percent-escaped values."""
    root = tmp_path / "t"
    folders = [
        "b=true/i=1/f=1/d=2024-01-02/t=2024-01-02 10%3A00%3A00/m=2024-01-02/s=x",
        "b=False/i=-22/f=1.5/d=__HIVE_DEFAULT_PARTITION__/t=2024-02-03 11%3A30%3A00.000001/m=2024-01-02 10%3A00%3A00/s=%41%20b",
        "b=__HIVE_DEFAULT_PARTITION__/i=/f=NaN/d=2024-03-04/t=__HIVE_DEFAULT_PARTITION__/m=x/s=+1",
    ]
    for n, folder in enumerate(folders):
        _write(root, folder, pl.DataFrame({"v": [n, n + 10]}))
    arrowidx.build(root, {"file-index.bitmap.columns": "v"}, progress=False)
    _same(root, try_parse_hive_dates=dates,
          filters=[pl.col("i") == -22, pl.col("b"), pl.col("d").is_null(), pl.col("v") == 11])  # fmt: skip


def test_a_column_the_file_holds_takes_the_folders_value(tmp_path):
    """A Hive column the file also holds: its value from the folder (not the file's), typed
    as the first file's column (or as hive_schema says), in the file's place; a file
    without it gets it after its own columns. Filters on it are never judged by the file's
    index or statistics of the column (they describe the file's values, not the folder's)."""
    root = tmp_path / "t"
    schema = {"x": pl.Int32, "a": pl.Int8, "b": pl.Int16, "y": pl.Int32}
    _write(root, "a=1/b=2", pl.DataFrame({"x": [1, 2], "a": [5, 6], "b": [2, 7], "y": [3, 4]}, schema=schema))
    _write(root, "a=2/b=3", pl.DataFrame({"x": [3, 4], "a": [1, 1], "b": [3, 3], "y": [5, 6]}, schema=schema))
    arrowidx.build(root, {"file-index.bitmap.columns": "a,b,x"}, progress=False)
    filters = [pl.col("a") == 1, pl.col("a") == 5, (pl.col("a") == 1) & (pl.col("x") == 2), pl.col("b") > 2]
    for kwargs in ({}, {"hive_schema": {"a": pl.String, "b": pl.String}}, {"try_parse_hive_dates": False}):
        _same(root, **kwargs, filters=filters if not kwargs.get("hive_schema") else [pl.col("a") == "1"],
              projections=[["a"], ["y", "a"], ["b", "x"]])  # fmt: skip
        reports: list[ScanReport] = []
        got = apl.scan(root, on_scan=reports.append, **kwargs).filter(pl.col("x") == 2).collect()
        assert_frame_equal(got, pl.scan_parquet(root, **kwargs).filter(pl.col("x") == 2).collect())
        _same(root, include_file_paths="path", **kwargs)  # (the files scanned one by one: the lake's Hive columns)
        assert_frame_equal(apl.scan(root, reader="pyarrow", **kwargs).filter(pl.col("x") > 1).collect(),
                           pl.scan_parquet(root, **kwargs).filter(pl.col("x") > 1).collect(), check_row_order=False)  # fmt: skip
    one = root / "a=1/b=2/data.parquet"
    partial = _write(root, "a=1/b=2", pl.DataFrame({"x": [9], "b": [4], "y": [1]},
                                                     schema={"x": pl.Int32, "b": pl.Int16, "y": pl.Int32}), "p.parquet")  # fmt: skip
    for source in (one, partial):
        for kwargs in ({}, {"hive_schema": {"a": pl.String, "b": pl.String}}):
            _same(source, hive_partitioning=True, **kwargs, projections=[["a"], ["b", "y"]])
            assert_frame_equal(apl.scan(source, hive_partitioning=True, **kwargs).with_row_index().collect(),
                               pl.scan_parquet(source, hive_partitioning=True, **kwargs).with_row_index().collect())  # fmt: skip


def test_a_list_of_partition_folders_has_the_columns_below_each(tmp_path):
    """A list of folders: only the key=value folders below each are columns (Polars'
    hive_start_idx); a file or glob among the sources: every key=value folder of its path;
    folders of different levels with hive_partitioning=True: Polars' own error."""
    for a in (1, 22):
        for b in (1, 2):
            _write(tmp_path, f"a={a}/b={b}", pl.DataFrame({"x": [a * 10 + b] * 3}), "data.bin")
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "x"}, progress=False)
    folders = [tmp_path / "a=1", tmp_path / "a=22"]
    _same(folders, hive_partitioning=True, filters=[pl.col("b") == 2])
    _same(folders, hive_partitioning=True, hive_schema={"b": pl.Int8})
    _same(folders)
    _same([tmp_path / "a=1/b=1/data.bin", tmp_path / "a=22/b=2/data.bin"], hive_partitioning=True)
    _same([tmp_path / "a=1", tmp_path / "a=22/b=1/data.bin"], filters=[pl.col("x") == 12])
    _same(str(tmp_path / "a=1" / "**" / "*.bin"), hive_partitioning=True)
    for levels in ([tmp_path / "a=1", tmp_path / "a=22/b=1"], [tmp_path / "a=1", tmp_path / "a=22/b=1/data.bin"]):
        with pytest.raises(pl.exceptions.InvalidOperationError):
            pl.scan_parquet(levels, hive_partitioning=True).collect()
        lazy = apl.scan(levels, hive_partitioning=True)
        with pytest.raises(pl.exceptions.InvalidOperationError):
            lazy.collect()


def test_hive_folders_polars_refuses_raise_its_error(tmp_path):
    """A folder key hive_schema lacks, a value that does not parse as hive_schema's type:
    the error Polars raises (its class), when Polars raises it (at collect())."""
    for a in (1, 2):
        _write(tmp_path, f"a={a}/c=x", pl.DataFrame({"v": [a]}))
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "v"}, progress=False)
    for source, kwargs in ((str(tmp_path / "**" / "*.parquet"), {"hive_schema": {"nonexistent": pl.Int32}}),
                           (tmp_path, {"hive_schema": {"a": pl.Int64}}),
                           (tmp_path, {"hive_schema": {"a": pl.Int64, "c": pl.Date}})):  # fmt: skip
        with pytest.raises(pl.exceptions.PolarsError) as polars_error:
            pl.scan_parquet(source, hive_partitioning=True, **kwargs).collect()
        lazy = apl.scan(source, hive_partitioning=True, **kwargs)
        with pytest.raises(type(polars_error.value)):
            lazy.collect()


@pytest.mark.parametrize("listening", [False, True])
def test_files_pruned_by_their_folders_are_never_read(tmp_path, listening):
    """A filter on a Hive column rules files out by their folders before their footers are
    read, as Polars does: a file that is no Parquet file, in a folder the filter rules out,
    is never opened (the answer is Polars')."""
    for day in ("2024-01-01", "2024-01-02"):
        _write(tmp_path, f"date={day}", pl.DataFrame({"x": [1, 2], "k": [day[-1], "z"]}), "1")
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    (tmp_path / "date=2024-01-03").mkdir()
    (tmp_path / "date=2024-01-03" / "1").write_text("not a parquet file")
    reports: list[ScanReport] = []
    options = {"on_scan": reports.append} if listening else {}
    for f in (pl.col("date") < pl.date(2024, 1, 3), (pl.col("date") == pl.date(2024, 1, 2)) & (pl.col("k") == "2")):
        got = apl.scan(tmp_path, **options).filter(f).collect()
        assert_frame_equal(got, pl.scan_parquet(tmp_path).filter(f).collect(), check_row_order=False)
    if listening:
        pruned = [p.path for p in reports[-1].plans if p.status == "pruned"]
        assert os.path.join("date=2024-01-03", "1") in pruned


@pytest.mark.parametrize("folders", [["a=99999999999999999999", "a=1"], ["s=", "s=x"], ["s=", "s=1"], ["t=10:00:00"],
                                     ["a=1/b=x", "a=2"], ["a=%FF"], ["a=1.5", "a=2"], ["a=x*y"]])  # fmt: skip
def test_edge_values_as_polars(tmp_path, folders):
    """Values at the edges of Polars' Hive reading: an integer past Int64 (Int128, which
    arrowidx leaves to Polars), an empty value ("" for a string, NULL otherwise), a time of
    day (Polars' error), a key only some files have (Polars' error), a value not UTF-8 once
    decoded (no column), an Int64 and a Float64 (Float64), a glob character (no column)."""
    for n, folder in enumerate(folders):
        _write(tmp_path, folder, pl.DataFrame({"x": [n]}))
    try:
        want = pl.scan_parquet(tmp_path).collect()
    except pl.exceptions.PolarsError as e:
        with pytest.raises(type(e)):
            apl.scan(tmp_path).collect()
        return
    got = apl.scan(tmp_path).collect()
    assert got.schema == want.schema
    assert_frame_equal(got, want, check_row_order=False)
