"""The scan core on every lake shape: answers equal pyarrow.dataset (minus deleted rows) with
Hive partitions, files missing a column, empty files, row-group statistics pruning,
projections that omit the filter columns; scanner() streams the same rows and fragments()
scans to the same rows."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import ArrowIdxError

from .conftest import tables_equal

OPTIONS = {
    "file-index.bitmap.columns": "status",
    "file-index.bloom-filter.columns": "id",
}

QUERIES = [
    None,
    pc.field("status") == "paid",
    pc.field("id") == 1234,
    (pc.field("id") == 77) | (pc.field("status") == "lost"),
    pc.field("ts") < 300,
    (pc.field("ts") >= 1000) & (pc.field("ts") < 1100),
    (pc.field("ts") > 500) & (pc.field("status") == "new"),
    pc.field("amount") > 15.0,
    pc.field("status").is_null(),
    pc.field("extra").is_null(),
    pc.field("extra") == 3,
    ~(pc.field("status") == "paid"),
]
PROJECTIONS = [None, ["amount"], ["id", "amount"], ["status", "ts"]]


def _table(rng, n: int, start: int, extra: bool = True) -> pa.Table:
    status = np.array(["new", "paid", "lost", "shipped"], dtype=object)[rng.integers(0, 4, n)]
    status[rng.random(n) < 0.05] = None
    cols = {
        "id": pa.array(rng.permutation(n) + start, pa.int64()),
        "ts": pa.array(np.arange(start, start + n), pa.int64()),  # sorted: statistics prune
        "status": pa.array(status, pa.string()),
        "amount": pa.array(rng.gamma(2.0, 10.0, n), mask=rng.random(n) < 0.05),
    }
    if extra:
        cols["extra"] = pa.array(rng.integers(0, 10, n), pa.int64())
    return pa.table(cols)


def _alive(where):
    return ~where | where.is_null()


def check(data, plain, expr, columns, deleted=None):
    want_filter = expr if deleted is None else (_alive(deleted) if expr is None else expr & _alive(deleted))
    want = plain.to_table(filter=want_filter, columns=columns)
    got = data.to_table(filter=expr, columns=columns)
    assert got.schema == want.schema, f"{expr} {columns}"
    assert tables_equal(got, want), f"{expr} {columns}: {got.num_rows} rows, expected {want.num_rows}"
    streamed = data.scanner(filter=expr, columns=columns).read_all()
    assert tables_equal(streamed, want)
    return got


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    """Files sorted by ts with small row groups; one file lacks ``extra``; one file is empty."""
    root = str(tmp_path_factory.mktemp("flat"))
    rng = np.random.default_rng(1)
    for i in range(4):
        pq.write_table(_table(rng, 600, i * 600), os.path.join(root, f"part-{i}.parquet"), row_group_size=100)
    pq.write_table(_table(rng, 600, 2400, extra=False), os.path.join(root, "part-4.parquet"), row_group_size=100)
    pq.write_table(_table(rng, 0, 0), os.path.join(root, "part-5.parquet"))
    arrowidx.build(root, OPTIONS, progress=False)
    return root


@pytest.mark.parametrize("columns", PROJECTIONS)
@pytest.mark.parametrize("expr", QUERIES, ids=str)
def test_flat_lake_equals_pyarrow(flat, expr, columns):
    check(arrowidx.dataset(flat), ds.dataset(flat, format="parquet"), expr, columns)


def test_statistics_prune_row_groups(flat):
    plan = arrowidx.dataset(flat).explain(pc.field("ts") < 150)
    read = sum(len(p.row_groups) for p in plan.files)
    assert read == 2  # the first two row groups of part-0 hold ts < 150
    assert plan.files_pruned == 4  # the other non-empty files, by statistics alone
    assert sum(p.pruned_by_statistics for p in plan.files) >= 20


def test_deleted_rows_and_projections(tmp_path):
    root = str(tmp_path)
    rng = np.random.default_rng(2)
    for i in range(3):
        pq.write_table(_table(rng, 500, i * 500), os.path.join(root, f"p{i}.parquet"), row_group_size=100)
    arrowidx.build(root, OPTIONS, progress=False)
    deleted = (pc.field("status") == "lost") & (pc.field("amount") > 20.0)
    arrowidx.delete(root, deleted, progress=False)
    data, plain = arrowidx.dataset(root), ds.dataset(root, format="parquet")
    for expr in QUERIES[:9]:
        for columns in PROJECTIONS:
            check(data, plain, expr, columns, deleted)
    with pytest.raises(ArrowIdxError, match="p0.parquet"):
        data.fragments(pc.field("status") == "new")


def test_unprunable_filter_with_deletions_reads_each_file_once(tmp_path, monkeypatch):
    """Deletions in every file keep pyarrow from reading alone; when the indexes prune
    nothing, the files are read in one pass (filter per batch) rather than filter columns
    first, and the answer is still pyarrow's minus the deleted rows, in file order."""
    from arrowidx.lake.read import FileReader

    root = str(tmp_path)
    rng = np.random.default_rng(3)
    for i in range(3):
        pq.write_table(_table(rng, 500, i * 500), os.path.join(root, f"p{i}.parquet"), row_group_size=100)
    arrowidx.build(root, OPTIONS, progress=False)
    deleted = pc.field("id").isin([3, 250, 777, 1499])  # one or two per file
    arrowidx.delete(root, deleted, progress=False)
    scans = []
    original = FileReader._scan_one
    monkeypatch.setattr(FileReader, "_scan_one", lambda self, *a, **k: scans.append(a[1]) or original(self, *a, **k))
    data, plain = arrowidx.dataset(root), ds.dataset(root, format="parquet")
    for expr, columns in [(pc.field("amount") > 15.0, None), (pc.field("ts") > 100, ["id"]), (pc.field("amount") > 15.0, ["id"])]:
        scans.clear()
        check(data, plain, expr, columns, deleted)
        assert len(scans) == 2, scans  # one pass for to_table, one for scanner(): no second pass per read
    scans.clear()
    check(data, plain, pc.field("status") == "paid", ["amount"], deleted)  # the bitmap index prunes: exact rows
    assert scans and all(cols == ["amount"] for cols in scans)


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("hive"))
    rng = np.random.default_rng(3)
    for d, day in enumerate(["2024-01-01", "2024-01-02", "2024-01-03"]):
        os.makedirs(os.path.join(root, f"dt={day}"))
        for i in range(2):
            pq.write_table(_table(rng, 400, (d * 2 + i) * 400), os.path.join(root, f"dt={day}", f"part-{i}.parquet"), row_group_size=100)
    arrowidx.build(root, OPTIONS, progress=False)
    return root


@pytest.mark.parametrize("columns", [None, ["amount"], ["dt", "id"]])
@pytest.mark.parametrize(
    "expr",
    [
        None,
        pc.field("dt") == "2024-01-02",
        (pc.field("dt") == "2024-01-03") & (pc.field("status") == "paid"),
        (pc.field("dt") != "2024-01-01") | (pc.field("id") == 5),
        pc.field("id") == 1500,
        pc.field("ts") < 500,
    ],
    ids=str,
)
def test_hive_partitions_equal_pyarrow(hive, expr, columns):
    plain = ds.dataset(hive, format="parquet", partitioning="hive")
    data = arrowidx.dataset(plain)
    assert data.schema == plain.schema
    check(data, plain, expr, columns)


def test_hive_partitions_prune_files(hive):
    data = arrowidx.dataset(ds.dataset(hive, format="parquet", partitioning="hive"))
    plan = data.explain(pc.field("dt") == "2024-01-02")
    assert [p.path.split("/")[0] for p in plan.files if p.row_groups] == ["dt=2024-01-02"] * 2
    assert data.to_table(filter=pc.field("dt") == "2024-01-02").num_rows == 800


def test_fragments_scan_to_the_same_rows(flat, hive):
    for source, expr in [
        (ds.dataset(flat, format="parquet"), pc.field("id") == 1234),
        (ds.dataset(flat, format="parquet"), pc.field("ts") < 300),
        (ds.dataset(hive, format="parquet", partitioning="hive"), (pc.field("dt") == "2024-01-02") & (pc.field("status") == "new")),
    ]:
        data = arrowidx.dataset(source)
        fragments = data.fragments(expr)
        assert all(isinstance(f, ds.ParquetFileFragment) for f in fragments)
        got = ds.FileSystemDataset(fragments, source.schema, source.format, source.filesystem).to_table(filter=expr)
        assert tables_equal(got, source.to_table(filter=expr))
        assert sum(len(f.row_groups) for f in fragments) < sum(f.num_row_groups for f in source.get_fragments())


def test_scanner_is_an_arrow_stream(flat):
    reader = arrowidx.dataset(flat).scanner(filter=pc.field("status") == "paid", columns=["id"])
    assert isinstance(reader, pa.RecordBatchReader)
    assert hasattr(reader, "__arrow_c_stream__")
    pl = pytest.importorskip("polars")
    df = pl.from_arrow(arrowidx.dataset(flat).scanner(filter=pc.field("status") == "paid", columns=["id"]))
    assert df.height == ds.dataset(flat, format="parquet").count_rows(filter=pc.field("status") == "paid")


def test_local_discovery_finds_what_pyarrow_listing_finds(tmp_path):
    """Data files on a local disk are listed with os.scandir; the list equals the one the
    generic pyarrow listing gives (nested folders, ``_`` / ``.`` names skipped) and the
    files pyarrow.dataset reads."""
    import pyarrow.fs as pafs

    from arrowidx.lake.layout import discover

    t = pa.table({"x": [1, 2]})
    for rel in ["a.parquet", "dt=1/b.parquet", "dt=1/sub/c.parquet", "dt=2/d.parquet",
                "_arrowidx/e.parquet", ".hidden/f.parquet", "dt=1/_tmp.parquet", "dt=2/.g.parquet"]:  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, tmp_path / rel)
    root = str(tmp_path)
    local = discover(pafs.LocalFileSystem(), root)
    wrapped = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem())  # not a LocalFileSystem: generic listing
    assert local == ["/" + p.lstrip("/") for p in discover(wrapped, root)]
    assert local == sorted(f.path for f in ds.dataset(root).get_fragments())
    assert [os.path.relpath(p, root) for p in local] == [
        "a.parquet", "dt=1/b.parquet", "dt=1/sub/c.parquet", "dt=2/d.parquet"
    ]
    with pytest.raises(FileNotFoundError):
        discover(pafs.LocalFileSystem(), str(tmp_path / "missing"))


def test_local_discovery_follows_symlinks_but_not_loops(tmp_path):
    """A symlinked folder is followed, as pyarrow.dataset follows it (the same file under
    both names); a link back to a folder above ends there instead of looping."""
    import pyarrow.fs as pafs

    from arrowidx.lake.layout import discover

    (tmp_path / "a").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a" / "x.parquet")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert discover(pafs.LocalFileSystem(), str(tmp_path)) == sorted(f.path for f in ds.dataset(str(tmp_path)).get_fragments())
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    assert discover(pafs.LocalFileSystem(), str(tmp_path)) == [str(tmp_path / "a" / "x.parquet"), str(tmp_path / "b" / "x.parquet")]


@pytest.mark.parametrize("threads", [True, False])
def test_expression_mask_is_pyarrows_filter_in_either_thread_mode(threads):
    """The scan core's one re-filter: TRUE rows only (NULL is not selected), whether evaluated
    on pyarrow's thread pool (whole tables) or in the calling thread (a batch taken from a
    running scan, whose pool is busy decoding)."""
    from arrowidx.lake.read import expression_mask

    rng = np.random.default_rng(11)
    n = 20_000
    amount = pa.array(rng.normal(20, 5, n), mask=rng.random(n) < 0.1)
    status = pa.array(rng.choice(["new", "paid", "lost"], n), mask=rng.random(n) < 0.05)
    batch = pa.record_batch({"amount": amount, "status": status})
    for expr in [pc.field("amount") > 21.0, (pc.field("status") == "paid") | (pc.field("amount") < 10.0), ~(pc.field("status") == "new")]:
        expected = ds.dataset(pa.Table.from_batches([batch])).to_table(filter=expr)
        mask = expression_mask(batch, expr, threads=threads)
        assert mask.dtype == bool and mask.size == n
        assert pa.Table.from_batches([batch.filter(pa.array(mask))]).equals(expected.combine_chunks())
