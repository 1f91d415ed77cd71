"""How ``arrowidx.polars.scan`` assembles its frame where Polars' own scan has a meaning of
its own (issue 49): a count reads no column, Polars' positional deletes
(``_deletion_files``) with arrowidx's deletion vectors, ``missing_columns='insert'`` with
file paths and Hive folders, a file whose footer starts at its first byte. The reference is
always ``pl.scan_parquet`` of the same files (minus arrowidx's deleted rows, by value)."""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import arrowidx
from arrowidx import polars as apl
from arrowidx.errors import OptionError

from .counting_reads import CountingReads, chunk_reads, reads

QUERIES = {
    "len": lambda lf: lf.select(pl.len()),
    "head": lambda lf: lf.head(130).select(pl.len()),
    "filtered": lambda lf: lf.filter(pl.col("k") == 3).select(pl.len()),
    "row index": lambda lf: lf.with_row_index().select("index"),
    "len and a column": lambda lf: lf.select(pl.len(), pl.col("id").sum()),
    "all": lambda lf: lf,
}


def _lake(root, deleted=None) -> pl.LazyFrame:
    """Three indexed files of 100 rows (row groups of 30); ``deleted`` ids deleted. The
    reference: Polars' scan of the files without the deleted ids."""
    root.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"id": np.arange(i * 100, (i + 1) * 100), "k": np.arange(100) % 7}),
                       root / f"p{i}.parquet", row_group_size=30)  # fmt: skip
    arrowidx.build(root, {"file-index.bitmap.columns": "k"}, progress=False)
    reference = pl.scan_parquet(root / "*.parquet")
    if deleted is not None:
        arrowidx.delete(root, pc.is_in(pc.field("id"), pa.array(deleted)), progress=False)
        reference = reference.filter(~pl.col("id").is_in(deleted))
    return reference


@pytest.mark.parametrize("deleted", [None, np.arange(0, 300, 3)], ids=["nothing deleted", "deleted"])
@pytest.mark.parametrize("query", list(QUERIES))
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_counts_as_polars(tmp_path, deleted, query, engine):
    reference = _lake(tmp_path / "lake", deleted)
    q = QUERIES[query]
    assert_frame_equal(q(apl.scan(tmp_path / "lake")).collect(engine=engine), q(reference).collect(engine=engine))
    assert apl.scan(tmp_path / "lake").collect_schema() == reference.collect_schema()


def test_a_count_reads_no_column(tmp_path):
    """pl.len() on a lake with deleted rows: the files' row counts minus the deleted rows,
    no column chunk read (pyarrow's reads counted), and no Polars scan of a file made."""
    reference = _lake(tmp_path / "lake", np.arange(0, 300, 4))
    want = reference.select(pl.len()).collect().item()
    log = str(tmp_path / "reads.log")
    fs = pafs.PyFileSystem(CountingReads(log))
    lf = apl.scan(str(tmp_path / "lake"), filesystem=fs)
    assert lf.select(pl.len()).collect().item() == want
    files = sorted(str(p) for p in (tmp_path / "lake").glob("*.parquet"))
    assert all(set(chunk_reads(log, f).values()) == {0} for f in files)
    assert all(at + n == os.path.getsize(p) for p, at, n in reads(log))  # footers only
    assert lf.select("k").collect().height == want  # (the log sees column reads)
    assert any(at + n < os.path.getsize(p) for p, at, n in reads(log))

    scans = []
    original = pl.scan_parquet

    def spy(*args, **kwargs):
        scans.append(args)
        return original(*args, **kwargs)

    lf = apl.scan(tmp_path / "lake")
    pl.scan_parquet = spy
    try:
        assert lf.select(pl.len()).collect().item() == want
        assert lf.head(7).select(pl.len()).collect().item() == 7
        assert scans == []
    finally:
        pl.scan_parquet = original


def _footer_only(path) -> None:
    """The file cut to its footer (its metadata, the length, PAR1): what Polars' test of row
    deletions makes, a file whose footer starts at its first byte."""
    data = path.read_bytes()
    length = 8 + int.from_bytes(data[-8:-4], "little")
    path.write_bytes(data[-length:])


def test_a_footer_at_the_first_byte_is_read_as_polars_reads_it(tmp_path):
    """Its schema and row count come from the footer, as in Polars (and pyarrow); reading
    its data fails as Polars fails."""
    root = tmp_path / "lake"
    root.mkdir()
    pl.DataFrame({"x": range(5)}).write_parquet(root / "a.parquet")
    _footer_only(root / "a.parquet")
    want = pl.scan_parquet(root / "a.parquet")
    got = apl.scan(root / "a.parquet")
    assert got.collect_schema() == want.collect_schema()
    assert got.select(pl.len()).collect().item() == want.select(pl.len()).collect().item() == 5
    with pytest.raises(pl.exceptions.ComputeError):
        want.collect()
    with pytest.raises(pl.exceptions.ComputeError):
        got.collect()


def test_a_footer_longer_than_the_file_is_still_refused(tmp_path):
    """A footer length past the file's first byte: arrowidx's error naming the file."""
    from arrowidx.errors import CorruptIndexError

    path = tmp_path / "a.parquet"
    pl.DataFrame({"x": range(5)}).write_parquet(path)
    data = bytearray(path.read_bytes())
    data[-8:-4] = (len(data) - 7).to_bytes(4, "little")  # one byte past the start
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="a.parquet.*past the start"):
        apl.scan(path).select(pl.len()).collect()


def _position_deletes(path, positions) -> str:
    """An Iceberg position-delete file (as Polars' own test writes them)."""
    pl.DataFrame({"pos": positions}, schema={"pos": pl.Int64}).select(pl.lit("").alias("file_path"), "pos").write_parquet(path)
    return str(path)


@pytest.mark.parametrize("own", [None, np.arange(0, 300, 5)], ids=["no deletes of arrowidx", "deletes of arrowidx"])
def test_polars_position_deletes_with_arrowidx_deletes(tmp_path, own):
    """Polars' _deletion_files (rows by position, per file index) and arrowidx's deletion
    vectors: a row deleted by either is gone. The reference: Polars' scan with the same
    _deletion_files, minus arrowidx's deleted ids."""
    _lake(tmp_path / "lake", own)
    files = {0: [_position_deletes(tmp_path / "d0", [1, 2, 5, 7, 50])],
             2: [_position_deletes(tmp_path / "d1", [0, 99, 400]), _position_deletes(tmp_path / "d2", [3, 5])]}  # fmt: skip
    deletion_files = ("iceberg", (files, {}))
    want = pl.scan_parquet(tmp_path / "lake" / "*.parquet", _deletion_files=deletion_files)
    if own is not None:
        want = want.filter(~pl.col("id").is_in(own))
    got = apl.scan(tmp_path / "lake", _deletion_files=deletion_files)
    for q in (*QUERIES.values(), lambda lf: lf.filter(pl.col("k").is_in([0, 3])), lambda lf: lf.head(120).filter(pl.col("k") == 0)):
        assert_frame_equal(q(got).collect(), q(want).collect())
    kwargs = {"include_file_paths": "path", "row_index_name": "i"}
    got = apl.scan(tmp_path / "lake" / "*.parquet", _deletion_files=deletion_files, **kwargs)
    want = pl.scan_parquet(tmp_path / "lake" / "*.parquet", _deletion_files=deletion_files, **kwargs)
    if own is not None:
        want, got = want.filter(~pl.col("id").is_in(own)).drop("i"), got.drop("i")
    assert_frame_equal(got.collect(), want.collect())


def test_polars_only_deletion_files(tmp_path):
    """Puffin deletion vectors (or a Delta callback) are Polars' to apply: the scan is
    Polars' own when arrowidx deleted nothing, refused by name when it did."""
    _lake(tmp_path / "lake")
    deletion_files = ("iceberg", ({}, {0: str(tmp_path / "no.puffin")}))
    lf = apl.scan(tmp_path / "lake", _deletion_files=deletion_files)
    assert "arrowidx" not in lf.explain()
    arrowidx.delete(tmp_path / "lake", pc.field("id") == 3, progress=False)
    with pytest.raises(OptionError, match="_deletion_files"):
        apl.scan(tmp_path / "lake", _deletion_files=deletion_files)


def test_a_file_whose_every_row_is_deleted_is_not_opened(tmp_path):
    """As Polars: a file whose rows _deletion_files deletes all is not read (here its data
    pages are gone, so reading it would fail)."""
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(3):
        pl.DataFrame({"x": range(i * 5, i * 5 + 5)}).write_parquet(root / f"{i}.parquet")
    _footer_only(root / "1.parquet")
    deletion_files = ("iceberg", ({1: [_position_deletes(tmp_path / "d", [0, 1, 2, 3, 4])]}, {}))
    want = pl.scan_parquet(root, _deletion_files=deletion_files).collect()
    assert_frame_equal(apl.scan(root, _deletion_files=deletion_files).collect(), want)
    with pytest.raises(pl.exceptions.ComputeError):
        apl.scan(root).collect()


@pytest.mark.parametrize("hive", [False, True], ids=["flat", "hive"])
@pytest.mark.parametrize("file_paths", [None, "path"])
@pytest.mark.parametrize("row_index", [None, "i"])
def test_missing_columns_insert_with_file_paths_and_hive(tmp_path, hive, file_paths, row_index):
    """missing_columns='insert' where a later file lacks a column: with each row's file
    path, a row index, Hive folders: Polars' columns, order, types and values."""
    a = pl.DataFrame({"col": [5, 10, 1996], "missing": [420, 2000, 9]})
    b = pl.DataFrame({"col": [13, 37]})
    root = tmp_path / "lake"
    if hive:
        (root / "h=0").mkdir(parents=True)
        (root / "h=1").mkdir()
        a.write_parquet(root / "h=0" / "a.parquet")
        b.write_parquet(root / "h=1" / "b.parquet")
        source = root
    else:
        root.mkdir()
        a.write_parquet(root / "a.parquet")
        b.write_parquet(root / "b.parquet")
        source = root / "*.parquet"
    kwargs = {"missing_columns": "insert", "include_file_paths": file_paths, "row_index_name": row_index, "hive_partitioning": hive}
    want = pl.scan_parquet(source, **kwargs)
    arrowidx.build(root, {"file-index.bitmap.columns": "col,missing"}, progress=False)
    got = apl.scan(source, **kwargs)
    assert got.collect_schema() == want.collect_schema()
    for q in (lambda lf: lf, lambda lf: lf.select(pl.col("missing")), lambda lf: lf.filter(pl.col("missing").is_null()),
              lambda lf: lf.filter(pl.col("col") == 13), lambda lf: lf.select(pl.len())):  # fmt: skip
        for engine in ("in-memory", "streaming"):
            assert_frame_equal(q(got).collect(engine=engine), q(want).collect(engine=engine))


def test_a_column_named_as_the_count_column(tmp_path):
    """A dataset with its own column ``__arrowidx_len``: its values, and counts, as Polars."""
    from arrowidx.polars.count import COUNT_COLUMN

    root = tmp_path / "lake"
    root.mkdir()
    pl.DataFrame({COUNT_COLUMN: [1, 2, 3], "x": ["a", "b", "c"]}).write_parquet(root / "a.parquet")
    arrowidx.build(root, {"file-index.bitmap.columns": "x"}, progress=False)
    for q in (lambda lf: lf, lambda lf: lf.select(pl.len()), lambda lf: lf.filter(pl.col("x") == "b")):
        for engine in ("in-memory", "streaming"):
            assert_frame_equal(q(apl.scan(root)).collect(engine=engine), q(pl.scan_parquet(root)).collect(engine=engine))


def test_position_deletes_count_files_as_polars_does(tmp_path):
    """The file index of _deletion_files counts the files Polars reads: a 0-byte file is not
    one of them (Polars skips it), a hidden one is."""
    root = tmp_path / "lake"
    root.mkdir()
    for name, start in (("a", 0), ("c", 10), ("_d", 20)):
        pl.DataFrame({"x": range(start, start + 5)}).write_parquet(root / f"{name}.parquet")
    arrowidx.build(root, {"file-index.bitmap.columns": "x"}, progress=False)
    (root / "b.parquet").write_bytes(b"")  # (after the build: a build refuses it)
    for i in range(4):
        deletion_files = ("iceberg", ({i: [_position_deletes(tmp_path / f"d{i}", [0, 3])]}, {}))
        want = pl.scan_parquet(root, _deletion_files=deletion_files)
        assert_frame_equal(apl.scan(root, _deletion_files=deletion_files).collect(), want.collect())
