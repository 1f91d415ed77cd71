"""``arrowidx.dataset`` is a ``pyarrow.dataset.FileSystemDataset`` (issue 49, part 3), checked
against plain ``pyarrow.dataset`` on the same files (and ``Table.filter`` minus the rows
deleted): pyarrow's consumers (unions, ``write_dataset``, ``Scanner.from_dataset``) take it
and never see a deleted row; ``schema=``, ``format=``, nested and computed ``columns=``,
``head`` / ``take`` / ``filter`` / ``sort_by`` and ``scanner()`` mean what pyarrow means."""

from __future__ import annotations

import os
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import ArrowIdxError
from arrowidx.lake import IndexedDataset

TABLE = pa.table({
    "a": pa.array(range(12), pa.int64()),
    "b": [0.0] * 4 + [1.0] * 4 + [2.0] * 4,
    "s": [{"x": i, "y": str(i)} for i in range(12)],
})  # fmt: skip
DELETED = pc.field("a") == 5


@pytest.fixture
def lake(tmp_path):
    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(TABLE.slice(0, 8), root / "f1.parquet", row_group_size=4)
    pq.write_table(TABLE.slice(8), root / "f2.parquet")
    arrowidx.build(str(root), {"file-index.bitmap.columns": "a,b"}, progress=False)
    return str(root)


@pytest.fixture
def deleted(lake):
    arrowidx.delete(lake, DELETED, progress=False)
    return lake


def alive(table: pa.Table) -> pa.Table:
    return table.filter(~(pc.field("a") == 5))


def test_is_a_pyarrow_filesystem_dataset(lake):
    data, plain = arrowidx.dataset(lake), ds.dataset(lake)
    assert isinstance(data, ds.FileSystemDataset) and isinstance(data, IndexedDataset)
    assert data.files == plain.files and data.schema == plain.schema
    assert isinstance(data.partitioning, ds.DirectoryPartitioning) and data.partitioning.schema == pa.schema([])
    assert pickle.loads(pickle.dumps(data)).to_table().equals(plain.to_table())


def test_hive_partitioning_is_pyarrows(tmp_path):
    for i in range(3):
        (tmp_path / f"part={i}").mkdir()
        pq.write_table(TABLE.slice(4 * i, 4), tmp_path / f"part={i}" / "x.parquet")
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "a"}, progress=False)
    got, want = arrowidx.dataset(tmp_path, partitioning="hive").partitioning, ds.dataset(tmp_path, partitioning="hive").partitioning
    assert isinstance(got, ds.HivePartitioning) and got.schema == want.schema
    assert [d.to_pylist() for d in got.dictionaries] == [d.to_pylist() for d in want.dictionaries]


def test_pyarrows_consumers_read_it_as_pyarrow(lake, tmp_path):
    data, plain = arrowidx.dataset(lake), ds.dataset(lake)
    union = ds.dataset([data, data])
    assert isinstance(union, ds.UnionDataset)
    assert union.to_table().equals(ds.dataset([plain, plain]).to_table())
    assert pickle.loads(pickle.dumps(union)).to_table().equals(union.to_table())
    assert ds.Scanner.from_dataset(data, columns=["a"]).to_table().equals(plain.to_table(columns=["a"]))
    ds.write_dataset(data, tmp_path / "out", format="parquet")
    assert ds.dataset(tmp_path / "out").to_table().sort_by("a").equals(plain.to_table())


def test_deleted_rows_never_reach_pyarrows_consumers(deleted, tmp_path):
    """A consumer reading the files itself is refused a file with deleted rows; one that
    calls the dataset's methods (write_dataset calls scanner()) gets the rows without them."""
    data = arrowidx.dataset(deleted)
    want = alive(TABLE)
    for read in (lambda: ds.dataset([data]).to_table(), lambda: ds.Scanner.from_dataset(data).to_table(),
                 lambda: pickle.loads(pickle.dumps(ds.dataset([data, data]))).to_table(),
                 lambda: ds.dataset([data]).to_table(filter=pc.field("b") == 1.0)):  # fmt: skip
        with pytest.raises(ArrowIdxError, match="deleted rows.*to_table\\(\\), to_batches\\(\\) or scanner\\(\\)"):
            read()
    ds.write_dataset(data, tmp_path / "out", format="parquet")
    assert ds.dataset(tmp_path / "out").to_table().sort_by("a").equals(want)
    ds.write_dataset(data.scanner(filter=pc.field("b") == 1.0), tmp_path / "out2", format="parquet")
    assert ds.dataset(tmp_path / "out2").to_table().sort_by("a").equals(want.filter(pc.field("b") == 1.0))


COLUMNS = [["s.x", "a"], ["s.y"], {"twice": pc.field("a") * 2, "x": pc.field("s", "x")}, {"n": pc.field("b") + 1}]


@pytest.mark.parametrize("columns", COLUMNS, ids=["nested", "nested-only", "dict", "dict-one"])
@pytest.mark.parametrize("expr", [None, pc.field("a") == 6, pc.field("b") > 0.5], ids=["all", "needle", "range"])
def test_columns_nested_and_computed_mean_what_pyarrow_means(deleted, columns, expr):
    plain = ds.dataset(ds.dataset(deleted).to_table().filter(~DELETED))  # pyarrow's answer, minus the deleted row
    want = plain.to_table(filter=expr, columns=columns)
    data = arrowidx.dataset(deleted)
    assert data.to_table(filter=expr, columns=columns).equals(want)
    assert pa.Table.from_batches(list(data.to_batches(filter=expr, columns=columns)), want.schema).equals(want)
    scanner = data.scanner(filter=expr, columns=columns)
    assert isinstance(scanner, ds.Scanner) and scanner.projected_schema == want.schema
    assert scanner.to_table().equals(want)


def test_head_take_filter_sort_by_mean_what_pyarrow_means(deleted):
    data, want = arrowidx.dataset(deleted), alive(TABLE)
    plain = ds.dataset(want)
    assert data.head(6).equals(plain.head(6))
    assert data.head(3, columns=["a"], filter=pc.field("b") >= 1.0).equals(plain.head(3, columns=["a"], filter=pc.field("b") >= 1.0))
    assert data.take([0, 5, 10]).equals(plain.take([0, 5, 10]))
    with pytest.raises(IndexError):
        data.take([11])  # 11 rows are left
    narrowed = data.filter(pc.field("b") == 1.0)
    assert isinstance(narrowed, ds.FileSystemDataset)
    assert narrowed.to_table().equals(plain.filter(pc.field("b") == 1.0).to_table())
    assert narrowed.count_rows(filter=pc.field("a") > 5) == plain.filter(pc.field("b") == 1.0).count_rows(filter=pc.field("a") > 5)
    assert narrowed.filter(pc.field("a") < 7).to_table().equals(plain.to_table(filter=(pc.field("b") == 1.0) & (pc.field("a") < 7)))
    assert data.sort_by([("a", "descending")]).to_table().equals(plain.sort_by([("a", "descending")]).to_table())
    scanner = data.scanner(columns=["a"])
    assert scanner.count_rows() == want.num_rows


SCHEMAS = [
    pa.schema([("b", pa.float64()), ("a", pa.int64())]),  # reordered
    pa.schema([("a", pa.int64())]),  # a column left out
    pa.schema([("a", pa.int64()), ("c", pa.int32())]),  # a column the files lack: NULL
    pa.schema([("a", pa.int32()), ("b", pa.float32())]),  # cast
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=["reordered", "fewer", "more", "cast"])
@pytest.mark.parametrize("expr", [None, pc.field("a") == 6, pc.field("a") > 9], ids=["all", "needle", "range"])
def test_schema_means_what_pyarrow_means(lake, schema, expr):
    want = ds.dataset(lake, schema=schema).to_table(filter=expr)
    data = arrowidx.dataset(lake, schema=schema)
    assert data.schema == schema
    assert data.to_table(filter=expr).equals(want)
    assert data.count_rows(filter=expr) == want.num_rows


def test_schema_cast_is_judged_on_the_cast_values(tmp_path):
    """Indexes and statistics hold the files' values: a filter on a column ``schema=``
    casts is applied to the cast values (``"01"`` is 1 as an integer: no index skips it)."""
    pq.write_table(pa.table({"k": ["01", "1", "2"], "v": [1, 2, 3]}), tmp_path / "x.parquet")
    pq.write_table(pa.table({"k": ["3", "4"], "v": [4, 5]}), tmp_path / "y.parquet")
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "k"}, progress=False)
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    for expr in (pc.field("k") == 1, pc.field("k").isin([1, 4]), pc.field("k") < 2):
        want = ds.dataset(tmp_path, schema=schema).to_table().filter(expr)
        assert want.num_rows >= 1
        assert arrowidx.dataset(tmp_path, schema=schema).to_table(filter=expr).equals(want), expr


def test_an_incompatible_schema_fails_as_pyarrow_fails(lake):
    schema = pa.schema([("a", pa.list_(pa.int32()))])
    with pytest.raises(NotImplementedError, match="Unsupported cast from int64 to list"):
        ds.dataset(lake, schema=schema).to_table()
    with pytest.raises(NotImplementedError, match="Unsupported cast from int64 to list"):
        arrowidx.dataset(lake, schema=schema).to_table()
    with pytest.raises(TypeError, match="schema= takes a pyarrow.Schema"):
        arrowidx.dataset(lake, schema={"a": pa.int64()})


def test_a_formats_read_options_are_used(tmp_path):
    pq.write_table(pa.table({"name": ["x", "y", "x", "z"], "v": [1, 2, 3, 4]}), tmp_path / "x.parquet")
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "name,v"}, progress=False)
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=["name"]))
    for expr in (None, pc.field("v") > 1, pc.field("name") == "x"):
        want = ds.dataset(tmp_path, format=fmt).to_table(filter=expr)
        assert pa.types.is_dictionary(want.schema.field("name").type)
        assert arrowidx.dataset(tmp_path, format=fmt).to_table(filter=expr).equals(want), expr


def test_a_relative_path_with_a_local_filesystem_is_the_working_directorys(lake, tmp_path):
    cwd = os.getcwd()
    os.chdir(os.path.dirname(lake))
    try:
        data = arrowidx.dataset("lake", filesystem=pafs.LocalFileSystem())
    finally:
        os.chdir(cwd)
    assert data.files == ds.dataset(lake).files
    assert data.to_table().equals(ds.dataset(lake).to_table())


def test_filter_takes_sql_text_and_pyarrows_consumers_apply_it(lake):
    data, plain = arrowidx.dataset(lake), ds.dataset(lake)
    want = plain.to_table(filter=(pc.field("b") == 1.0) & (pc.field("a") < 7))
    assert data.filter("b = 1.0").to_table(filter=pc.field("a") < 7).equals(want)
    assert data.filter(pc.field("b") == 1.0).to_table(filter="a < 7").equals(want)
    assert ds.Scanner.from_dataset(data.filter("b = 1.0 AND a < 7")).to_table().equals(want)
    for filtered in (plain.filter(pc.field("a") > 10), data.filter(pc.field("a") > 10)):  # (as pyarrow refuses it)
        with pytest.raises(ValueError, match="from filtered or projected Datasets is currently not supported"):
            ds.dataset([filtered])
    with pytest.raises(arrowidx.errors.OptionError, match="more than a pyarrow expression"):
        data.filter("a % 2 = 0")


def test_a_file_listed_twice_is_read_twice_and_join_is_pyarrows(lake):
    f2 = os.path.join(lake, "f2.parquet")
    data, plain = arrowidx.dataset([f2, f2]), ds.dataset([f2, f2])
    assert data.files == plain.files and data.count_rows() == plain.count_rows() == 8
    assert data.to_table(filter=pc.field("a") > 9).equals(plain.to_table(filter=pc.field("a") > 9))
    right = ds.dataset(pa.table({"a": [1, 9, 11], "tag": ["x", "y", "z"]}))
    flat = pa.schema([("a", pa.int64()), ("b", pa.float64())])  # (pyarrow joins no struct columns)
    joined = arrowidx.dataset(lake, schema=flat).join(right, "a", join_type="inner").to_table().sort_by("a")
    assert joined.equals(ds.dataset(lake, schema=flat).join(right, "a", join_type="inner").to_table().sort_by("a"))


def test_a_formats_int96_unit_holds_on_every_read_path(tmp_path):
    """The late-materialising read (a needle: strings read as dictionaries) keeps the given
    format's other read options (INT96 timestamps coerced to ms, as pyarrow reads them)."""
    import datetime

    stamps = [datetime.datetime(2024, 1, 1) + datetime.timedelta(microseconds=1234 * i) for i in range(1000)]
    names = [f"n{i % 50}" for i in range(1000)]
    pq.write_table(pa.table({"name": names, "ts": stamps}), tmp_path / "x.parquet", use_deprecated_int96_timestamps=True,
                   row_group_size=100)  # fmt: skip
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "name"}, progress=False)
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="ms"))
    want = ds.dataset(tmp_path, format=fmt).to_table(filter=pc.field("name") == "n7")
    assert want.schema.field("ts").type == pa.timestamp("ms")
    assert arrowidx.dataset(tmp_path, format=fmt).to_table(filter=pc.field("name") == "n7").equals(want)


def test_page_checksums_given_on_the_format_or_the_read_fail_as_pyarrow_fails(tmp_path):
    """A corrupt page: read without verification, the same (corrupt) rows as pyarrow; with
    ``page_checksum_verification`` on the format or as ``fragment_scan_options``, pyarrow's OSError."""
    fmt = ds.ParquetFileFormat()
    ds.write_dataset(pa.table({"a": [1, 2, 3, 4]}), tmp_path / "d", format=fmt,
                     file_options=fmt.make_write_options(write_page_checksum=True))  # fmt: skip
    (path,) = (tmp_path / "d").iterdir()
    data = bytearray(path.read_bytes())
    data[31], data[36] = data[36], data[31]  # (pyarrow's own test: the rows read as 1, 3, 2, 4)
    path.write_bytes(data)
    arrowidx.build(str(tmp_path / "d"), {"file-index.bitmap.columns": "a"}, progress=False)
    assert arrowidx.dataset(tmp_path / "d").to_table().equals(ds.dataset(tmp_path / "d").to_table())
    verify = ds.ParquetFragmentScanOptions(page_checksum_verification=True)
    checked = ds.ParquetFileFormat(default_fragment_scan_options=verify)
    for read in (lambda: arrowidx.dataset(tmp_path / "d", format=checked).to_table(),
                 lambda: arrowidx.dataset(tmp_path / "d").to_table(fragment_scan_options=verify),
                 lambda: arrowidx.dataset(tmp_path / "d").scanner(fragment_scan_options=verify).to_table(),
                 lambda: ds.dataset(tmp_path / "d").to_table(fragment_scan_options=verify)):  # fmt: skip
        with pytest.raises(OSError, match="CRC checksum verification"):
            read()


@pytest.mark.parametrize("options", [{"exclude_invalid_files": True}, {"ignore_prefixes": ["skip"], "exclude_invalid_files": True},
                                     {"ignore_prefixes": [], "exclude_invalid_files": True}, {"ignore_prefixes": ["_", ".", "n"]}])  # fmt: skip
def test_discovery_options_find_what_pyarrow_finds(tmp_path, options):
    root = tmp_path / "lake"
    (root / "_tmp").mkdir(parents=True)
    for i, name in enumerate(["data.parquet", "skip_me.parquet", ".hidden.parquet", "_tmp/x.parquet"]):
        pq.write_table(TABLE.slice(3 * i, 3), root / name)
    arrowidx.build(str(root), {"file-index.bitmap.columns": "a"}, progress=False)
    (root / "notes.txt").write_text("not parquet")
    plain = ds.dataset(root, **options)
    data = arrowidx.dataset(root, partitioning=None, **options)
    assert data.files == plain.files
    assert data.to_table(filter=pc.field("a") > 2).equals(plain.to_table(filter=pc.field("a") > 2))


def test_a_formats_int96_unit_is_judged_on_the_values_read(tmp_path):
    """INT96 timestamps read in ms (truncated, as pyarrow reads them) match a filter on the ms
    value: the index, built from the nanosecond values, does not judge it."""
    import datetime

    start = datetime.datetime(2024, 1, 1)
    stamps = [start + datetime.timedelta(microseconds=1234 * i) for i in range(1000)]
    pq.write_table(pa.table({"ts": stamps, "v": range(1000)}), tmp_path / "x.parquet", use_deprecated_int96_timestamps=True)
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "ts"}, progress=False)
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="ms"))
    expr = pc.field("ts") == pa.scalar(start + datetime.timedelta(milliseconds=1), pa.timestamp("ms"))
    want = ds.dataset(tmp_path, format=fmt).to_table().filter(expr)
    assert want.num_rows == 1
    assert arrowidx.dataset(tmp_path, format=fmt).to_table(filter=expr).equals(want)


def test_polars_scans_it_as_it_scans_the_folder(deleted):
    pl = pytest.importorskip("polars")
    from arrowidx import polars as apl

    data = arrowidx.dataset(deleted)
    for scan in (lambda: apl.scan(deleted), lambda: apl.scan(data)):
        assert scan().select(pl.len()).collect().item() == 11
        assert scan().filter(pl.col("a") > 6).select("a").collect()["a"].to_list() == [7, 8, 9, 10, 11]
        with_paths = apl.scan(data, include_file_paths="p").collect()
        assert with_paths.height == 11 and 5 not in with_paths["a"].to_list()  # (the deleted row stays deleted)
        assert sorted(with_paths["p"].unique().to_list()) == sorted(data.files)
