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
