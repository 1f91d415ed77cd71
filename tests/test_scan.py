"""The scan core on every lake shape: answers equal ``Table.filter`` on the rows in memory
(minus deleted rows; a ``pyarrow.dataset`` scan with the filter is not the reference) with
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
from arrowidx.storage import as_store

from .conftest import filtered_in_memory, rows_in_memory, tables_equal

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
    ~(pc.field("amount") <= 80.0),  # NaN rows match (and hide in row groups whose max is below 80: statistics leave NaN out)
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
        "amount": pa.array(_with_nan(rng.gamma(2.0, 10.0, n)), mask=rng.random(n) < 0.05),
    }
    if extra:
        cols["extra"] = pa.array(rng.integers(0, 10, n), pa.int64())
    return pa.table(cols)


def _with_nan(values: np.ndarray) -> np.ndarray:
    values[::37] = np.nan  # (drawing nothing from the generator: the other columns stay as they were)
    return values


def _alive(where):
    return ~where | where.is_null()


def check(data, plain, expr, columns, deleted=None):
    want_filter = expr if deleted is None else (_alive(deleted) if expr is None else expr & _alive(deleted))
    want = filtered_in_memory(plain.to_table(), want_filter, columns)
    got = data.to_table(filter=expr, columns=columns)
    assert got.schema == want.schema, f"{expr} {columns}"
    assert tables_equal(got, want), f"{expr} {columns}: {got.num_rows} rows, expected {want.num_rows}"
    streamed = data.scanner(filter=expr, columns=columns).to_table()
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
        assert tables_equal(got, filtered_in_memory(source.to_table(), expr))
        assert sum(len(f.row_groups) for f in fragments) < sum(f.num_row_groups for f in source.get_fragments())


def test_scanner_is_pyarrows_scanner_and_streams(flat):
    scanner = arrowidx.dataset(flat).scanner(filter=pc.field("status") == "paid", columns=["id"])
    assert isinstance(scanner, ds.Scanner) and scanner.projected_schema == pa.schema([("id", pa.int64())])
    reader = scanner.to_reader()
    assert isinstance(reader, pa.RecordBatchReader) and hasattr(reader, "__arrow_c_stream__")
    pl = pytest.importorskip("polars")
    df = pl.from_arrow(arrowidx.dataset(flat).scanner(filter=pc.field("status") == "paid", columns=["id"]).to_reader())
    assert df.height == rows_in_memory(flat).filter(pc.field("status") == "paid").num_rows


def test_local_discovery_finds_what_pyarrow_listing_finds(tmp_path):
    """Data files on a local disk are listed with os.scandir; the list equals the one the
    generic pyarrow listing gives (nested folders, ``_`` / ``.`` names skipped) and the
    files pyarrow.dataset reads."""
    import pyarrow.fs as pafs

    from arrowidx.lake.source import discover

    t = pa.table({"x": [1, 2]})
    for rel in ["a.parquet", "dt=1/b.parquet", "dt=1/sub/c.parquet", "dt=2/d.parquet",
                "_arrowidx/e.parquet", ".hidden/f.parquet", "dt=1/_tmp.parquet", "dt=2/.g.parquet"]:  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, tmp_path / rel)
    root = str(tmp_path)
    local = discover(as_store(pafs.LocalFileSystem()), root)
    wrapped = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem())  # not a LocalFileSystem: generic listing
    assert local == ["/" + p.lstrip("/") for p in discover(as_store(wrapped), root)]
    assert local == sorted(f.path for f in ds.dataset(root).get_fragments())
    assert [os.path.relpath(p, root) for p in local] == [
        "a.parquet", "dt=1/b.parquet", "dt=1/sub/c.parquet", "dt=2/d.parquet"
    ]
    with pytest.raises(FileNotFoundError):
        discover(as_store(pafs.LocalFileSystem()), str(tmp_path / "missing"))


def test_local_discovery_follows_symlinks_but_not_loops(tmp_path):
    """A symlinked folder is followed, as pyarrow.dataset follows it (the same file under
    both names); a link back to a folder above ends there instead of looping."""
    import pyarrow.fs as pafs

    from arrowidx.lake.source import discover

    (tmp_path / "a").mkdir()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a" / "x.parquet")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert discover(as_store(pafs.LocalFileSystem()), str(tmp_path)) == sorted(f.path for f in ds.dataset(str(tmp_path)).get_fragments())
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    assert discover(as_store(pafs.LocalFileSystem()), str(tmp_path)) == [str(tmp_path / "a" / "x.parquet"), str(tmp_path / "b" / "x.parquet")]


def test_opening_lists_the_files_pyarrow_discovers_without_stats(tmp_path):
    """Opening a local lake lists names only (``LocalStore.list_names``: the kinds from the
    folder's entries, no stat per file); it finds the files ``pyarrow.dataset``'s discovery
    finds, as a listing with stats does: nested folders, a symlinked file and folder
    (followed), a broken link, a link back up (not a loop), a FIFO, hidden names, an empty
    folder."""
    import pyarrow.fs as pafs

    from arrowidx.storage import LocalStore

    root = tmp_path / "lake"
    for rel in ["a.parquet", "d=1/b.parquet", "d=1/sub/c.parquet", "d=2/e.parquet", "_hidden.parquet", "d=2/.x.parquet"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"x": [1]}), root / rel)
    (root / "empty").mkdir()
    (root / "linked.parquet").symlink_to(root / "a.parquet")
    (root / "d=3").symlink_to(root / "d=2")
    (root / "broken.parquet").symlink_to(root / "nowhere.parquet")
    os.mkfifo(root / "fifo.parquet")
    store = LocalStore(pafs.LocalFileSystem())
    names, folders = store.list_names(str(root))
    listed = store.list_stats(str(root))
    assert names == listed.paths and folders == listed.folders
    want = sorted(f.path for f in ds.dataset(str(root), format="parquet", exclude_invalid_files=False,
                                             ignore_prefixes=["_", ".", "fifo", "broken"]).get_fragments())  # fmt: skip
    assert [str(root / n) for n in names] == want and len(want) == 6
    assert arrowidx.dataset(str(root)).files == want
    (root / "d=1" / "up").symlink_to(root)  # (pyarrow follows it some levels deep; arrowidx stops at the loop)
    names, folders = store.list_names(str(root))
    assert names == store.list_stats(str(root)).paths == [os.path.relpath(p, root) for p in want]


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
        expected = pa.Table.from_batches([batch]).filter(expr)
        mask = expression_mask(batch, expr, threads=threads)
        assert mask.dtype == bool and mask.size == n
        assert pa.Table.from_batches([batch.filter(pa.array(mask))]).equals(expected.combine_chunks())


# -- rows taken by Polars (arrowidx.lake.read.take_with_polars) -----------------------------


def _typed_table(n: int) -> pa.Table:
    """Every column type Polars takes, with NULLs, NaN, -0.0, empty and multi-byte strings."""
    rng = np.random.default_rng(5)
    nulls = rng.random(n) < 0.1
    ints = rng.integers(-(2**62), 2**62, n)
    floats = rng.normal(size=n)
    floats[::97] = np.nan
    floats[::89] = -0.0
    words = np.array(["", "a", "zürich", "東京", "x" * 40])[rng.integers(0, 5, n)]
    arrays = {
        "i8": pa.array(ints % 100, pa.int8(), mask=nulls),
        "i16": pa.array(ints % 30_000, pa.int16()),
        "i32": pa.array(ints % 2**31, pa.int32(), mask=nulls),
        "i64": pa.array(ints, pa.int64(), mask=nulls),
        "u8": pa.array(np.abs(ints) % 256, pa.uint8()),
        "u16": pa.array(np.abs(ints) % 65_536, pa.uint16()),
        "u32": pa.array(np.abs(ints) % 2**32, pa.uint32(), mask=nulls),
        "u64": pa.array(np.abs(ints).astype(np.uint64) * 2, pa.uint64()),
        "f32": pa.array(floats.astype(np.float32), mask=nulls),
        "f64": pa.array(floats, mask=nulls),
        "flag": pa.array(ints % 2 == 0, mask=nulls),
        "s": pa.array(words, mask=nulls),
        "ls": pa.array(words, pa.large_string()),
        "b": pa.array([w.encode() for w in words], pa.binary(), mask=nulls),
        "lb": pa.array([w.encode() for w in words], pa.large_binary()),
        "d": pa.array(np.abs(ints) % 100_000, pa.int32()).cast(pa.date32()),
        "ts_ms": pa.array(ints % 10**13, pa.int64()).cast(pa.timestamp("ms")),
        "ts_us": pa.array(ints % 10**16, pa.int64(), mask=nulls).cast(pa.timestamp("us", tz="Europe/Zurich")),
        "dec": pa.array([None if k else v for k, v in zip(nulls, (ints % 10**9).tolist())], pa.int64())
        .cast(pa.decimal128(19, 0)).cast(pa.decimal128(21, 2)),
    }
    return pa.table(arrays)


def _same_values(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, floats compared bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""
    for x, y in zip(a.columns, b.columns):
        x, y = x.combine_chunks(), y.combine_chunks()
        if pa.types.is_floating(x.type):
            if not pc.is_null(x).equals(pc.is_null(y)):
                return False
            bits = np.uint32 if x.type == pa.float32() else np.uint64
            xs, ys = (v.fill_null(0).to_numpy(zero_copy_only=False).view(bits) for v in (x, y))
            if not np.array_equal(xs, ys):
                return False
        elif not x.equals(y):
            return False
    return a.schema == b.schema


def _file_reads(path, data: pa.Table, schema: pa.Schema):
    from arrowidx.lake.read import FileRead, row_group_offsets

    fmt = ds.ParquetFileFormat()
    fragment = fmt.make_fragment(str(path), pa.fs.LocalFileSystem())
    fragment.ensure_complete_metadata()
    offsets = row_group_offsets(fragment)
    return FileRead(str(path), lambda _dictionary: fragment, list(range(fragment.num_row_groups)), offsets), offsets


def test_rows_taken_by_polars_equal_pyarrow_take(tmp_path, monkeypatch):
    """The rows a mask keeps, taken by Polars' reader and cast back, are exactly pyarrow's
    ``take`` of them, for every type Polars takes (NULLs, NaN, -0.0, time zones, decimals),
    from any subset of the row groups."""
    from arrowidx.lake import read

    monkeypatch.setattr(read, "TAKE_MIN_ROWS", 0)
    monkeypatch.setattr(read, "TAKE_MIN_BYTES", 0)
    table = _typed_table(5000)
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path, row_group_size=1000)
    r, offsets = _file_reads(path, table, table.schema)
    rng = np.random.default_rng(11)
    for groups in ([0, 1, 2, 3, 4], [1, 3], [4]):
        rows = np.concatenate([np.arange(offsets[g], offsets[g + 1]) for g in groups])
        mask = rng.random(rows.size) < 0.05
        mask[[0, 97, -1]] = True  # the first and last row of the groups read (row 0: -0.0, row 97: NaN)
        r.row_groups = groups
        for columns in (table.column_names, ["s", "i64"], ["dec"]):
            got = read.take_with_polars([(r, groups)], columns, [mask], table.schema)
            assert list(got) == [0], columns
            want = table.select(columns).take(pa.array(rows[mask]))
            assert got[0].schema == want.schema
            assert _same_values(got[0], want), (groups, columns)


def test_column_bytes_count_every_leaf_of_the_columns(tmp_path):
    """The bytes of some columns of some row groups, from the footer, decoded (what pyarrow
    decodes) or compressed (what is read from storage): every leaf of a nested column
    counts, and all columns together make each row group's ``total_byte_size`` decoded and
    the file's column chunks compressed."""
    from arrowidx.lake.read import column_bytes

    n = 3000
    table = pa.table({
        "s": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        "l": pa.array([[i, i + 1] for i in range(n)]),
        "c": pa.array(np.arange(n)),
    })  # fmt: skip
    pq.write_table(table, tmp_path / "n.parquet", row_group_size=1000, compression="zstd")
    metadata = pq.ParquetFile(tmp_path / "n.parquet").metadata
    for groups in ([0], [1, 2], [0, 1, 2]):
        assert column_bytes(metadata, groups, ["s", "l", "c"]) == sum(metadata.row_group(g).total_byte_size for g in groups)
        leaves = {"s": [0, 1], "l": [2], "c": [3]}
        for column, js in leaves.items():
            chunks = [metadata.row_group(g).column(j) for g in groups for j in js]
            assert column_bytes(metadata, groups, [column]) == sum(c.total_uncompressed_size for c in chunks), column
            assert column_bytes(metadata, groups, [column], compressed=True) == sum(c.total_compressed_size for c in chunks), column
        stored = [metadata.row_group(g).column(j).total_compressed_size for g in groups for j in range(4)]
        assert column_bytes(metadata, groups, ["s", "l", "c"], compressed=True) == sum(stored) < column_bytes(metadata, groups, ["c", "l", "s"])


@pytest.mark.parametrize("bitmap64", [False, True])
@pytest.mark.parametrize("selected", [0.002, 0.5])
def test_position_mask_is_the_index_rows_not_deleted(tmp_path, bitmap64, selected):
    """A file's row mask is its index rows minus its deleted rows, over the row groups read,
    whether few rows are selected (the deleted ones dropped from them) or many (masks ANDed),
    with 32- and 64-bit deletion vectors."""
    from pyroaring import BitMap

    from arrowidx.deletion import DeletionVector

    n = 20_000
    table = pa.table({"a": pa.array(np.arange(n))})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=3000)
    r, offsets = _file_reads(tmp_path / "f.parquet", table, table.schema)
    rng = np.random.default_rng(8)
    chosen = rng.random(n) < selected
    deleted = rng.random(n) < 0.3
    deleted[np.flatnonzero(chosen)[:3]] = True  # some selected rows are deleted
    r.bitmap = BitMap(np.flatnonzero(chosen).tolist())
    r.deletion = DeletionVector.from_positions(np.flatnonzero(deleted), bitmap64=bitmap64)
    for groups in ([0, 1, 2, 3, 4, 5, 6], [1, 4], [6]):
        rows = np.concatenate([np.arange(offsets[g], offsets[g + 1]) for g in groups])
        got = r.position_mask(groups)
        assert np.array_equal(got, (chosen & ~deleted)[rows]), groups


def test_masked_scans_read_strings_as_dictionaries_only_when_large(tmp_path, monkeypatch):
    """A masked scan of at least DICTIONARY_MIN_ROWS rows reads dictionary-encoded strings
    as dictionaries (rows the mask drops are never decoded to strings); a smaller one reads
    them as strings. Both return pyarrow's own ``take`` of the kept rows."""
    from arrowidx.lake import read

    n = 4000
    table = pa.table({"a": pa.array(np.arange(n)), "s": pa.array([f"v{i % 7}" if i % 5 else None for i in range(n)])})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=1000)  # strings dictionary-encoded (pyarrow's default)
    plain_format = ds.ParquetFileFormat()
    dict_format = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=["s"]))
    asked: list[bool] = []

    def fragment(dictionary: bool):
        asked.append(dictionary)
        made = (dict_format if dictionary else plain_format).make_fragment(str(path), pa.fs.LocalFileSystem())
        made.ensure_complete_metadata()
        return made

    offsets = np.arange(0, n + 1, 1000)
    reader = read.FileReader(pa.fs.LocalFileSystem(), table.schema, plain_format, (dict_format, {"s"}))
    mask = np.zeros(3000, bool)
    mask[[0, 5, 1999, 2998]] = True
    groups = [0, 2, 3]
    want = pa.concat_tables([table.slice(offsets[g], 1000) for g in groups]).filter(pa.array(mask))
    for minimum, dictionary in ((3000, True), (3001, False)):
        monkeypatch.setattr(read, "DICTIONARY_MIN_ROWS", minimum)
        asked.clear()
        r = read.FileRead(str(path), fragment, groups, offsets)
        (got,) = reader.scan([(r, groups)], ["a", "s"], [mask])
        assert asked == [dictionary]
        assert got.equals(want) and got.schema == table.schema


def test_polars_takes_only_where_it_reads_what_pyarrow_reads(tmp_path, monkeypatch):
    """Reads whose columns Polars could return differently (nanosecond or INT96 timestamps,
    dictionaries, nested types, a type the reader's schema changes, a column the file
    lacks), sparse-enough masks only, and nothing on a failure: pyarrow reads those."""
    from arrowidx.lake import read

    n = 4000
    table = pa.table({
        "a": pa.array(np.arange(n)),
        "ns": pa.array(np.arange(n), pa.int64()).cast(pa.timestamp("ns")),
        "cat": pa.array(["x", "y"] * (n // 2)).dictionary_encode(),
        "lst": pa.array([[i] for i in range(n)]),
        "small": pa.array(np.arange(n), pa.int32()),
    })  # fmt: skip
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=1000)
    r, _ = _file_reads(path, table, table.schema)
    mask = np.zeros(n, bool)
    mask[[3, 2500]] = True
    reads, masks = [(r, [0, 1, 2, 3])], [mask]
    monkeypatch.setattr(read, "TAKE_MIN_BYTES", 0)
    assert list(read.take_with_polars(reads, ["a"], masks, table.schema)) == []  # below TAKE_MIN_ROWS
    monkeypatch.setattr(read, "TAKE_MIN_ROWS", 0)
    assert list(read.take_with_polars(reads, ["a", "small"], masks, table.schema)) == [0]
    # columns pyarrow decodes cheaply stay with pyarrow: Polars' fixed cost would not pay
    metadata = pq.ParquetFile(path).metadata
    names = [metadata.schema.column(j).name for j in range(metadata.num_columns)]
    decoded = sum(metadata.row_group(g).column(names.index(c)).total_uncompressed_size
                  for g in range(4) for c in ("a", "small"))  # fmt: skip
    monkeypatch.setattr(read, "TAKE_MIN_BYTES", decoded + 1)
    assert read.take_with_polars(reads, ["a", "small"], masks, table.schema) == {}
    monkeypatch.setattr(read, "TAKE_MIN_BYTES", decoded)
    assert list(read.take_with_polars(reads, ["a", "small"], masks, table.schema)) == [0]
    monkeypatch.setattr(read, "TAKE_MIN_BYTES", 0)
    for column in ("ns", "cat", "lst"):
        assert read.take_with_polars(reads, ["a", column], masks, table.schema) == {}, column
    widened = table.schema.set(4, pa.field("small", pa.int64()))  # the reader's schema unifies types
    assert read.take_with_polars(reads, ["small"], masks, widened) == {}
    assert read.take_with_polars(reads, ["missing"], masks, table.schema.append(pa.field("missing", pa.int8()))) == {}
    dense = np.ones(n, bool)
    assert read.take_with_polars(reads, ["a"], [dense], table.schema) == {}  # more than 1/TAKE_SHARE kept
    path.write_bytes(b"PAR1 not a parquet file any more PAR1")  # Polars fails: pyarrow will say why
    assert read.take_with_polars(reads, ["a"], masks, table.schema) == {}


@pytest.mark.parametrize("takes", ["by size", "polars takes every masked row"])
def test_dataset_answers_with_rows_taken_by_polars(tmp_path, monkeypatch, takes):
    """Whole datasets (Hive partitions, a file lacking a column, deletions) answer as
    pyarrow.dataset does whichever reader takes the kept rows."""
    from arrowidx.lake import read

    if takes != "by size":
        monkeypatch.setattr(read, "TAKE_MIN_ROWS", 0)
        monkeypatch.setattr(read, "TAKE_SHARE", 1)
        monkeypatch.setattr(read, "TAKE_MIN_BYTES", 0)
    calls = []
    original = read.take_with_polars
    monkeypatch.setattr(read, "take_with_polars", lambda *a: calls.append(1) or original(*a))
    rng = np.random.default_rng(3)
    for dt in ("2024-01-01", "2024-01-02"):
        (tmp_path / f"dt={dt}").mkdir()
        for k in range(2):
            n = 3000
            t = pa.table({"id": np.arange(n) + k * n, "status": rng.choice(["paid", "new", "lost"], n, p=[0.6, 0.39, 0.01]),
                          "amount": rng.normal(size=n), "name": rng.choice(["a", "b", "c"], n)})  # fmt: skip
            if k:
                t = t.drop_columns(["amount"])
            pq.write_table(t, tmp_path / f"dt={dt}" / f"part-{k}.parquet", row_group_size=700)
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}, progress=False)
    arrowidx.delete(tmp_path, (pc.field("status") == "lost") & (pc.field("id") < 5000), progress=False)
    plain = ds.dataset(tmp_path, format="parquet", partitioning="hive")
    data = arrowidx.dataset(ds.dataset(tmp_path, format="parquet", partitioning="hive"))
    alive = ~((pc.field("status") == "lost") & (pc.field("id") < 5000))
    for expr in (pc.field("status") == "lost", pc.field("id") == 4321, (pc.field("status") == "lost") & (pc.field("dt") == "2024-01-02"),
                 (pc.field("id") < 200) & pc.field("amount").is_valid()):  # fmt: skip
        for columns in (None, ["name", "dt", "amount"], ["id"]):
            got = data.to_table(filter=expr, columns=columns)
            assert tables_equal(got, filtered_in_memory(plain.to_table(), expr & alive, columns)), (expr, columns)
    assert calls or takes == "by size"


# ---------------------------------------------------------------------------------------
# files an index keeps whole, filtered by Polars (read.filter_with_polars)
# ---------------------------------------------------------------------------------------

_FILTER_TABLE = pa.table({
    "i": pa.array([5, None, -3, 7, 2**40, 0, 5, None], pa.int64()),
    "s": pa.array(["b", "a", None, "é", "", "b", "zz", "a"]),
    "small": pa.array([1, 2, None, 4, 5, 127, -128, 0], pa.int8()),
    "f": pa.array([1.0, float("nan"), None, -0.0, 2.0, 3.0, 0.0, 1.0]),
    "u": pa.array([2**64 - 1, 0, None, 2**63, 2**63 - 1, 1, 2**64 - 2, 5], pa.uint64()),
})  # fmt: skip


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("i") == 5,
        pc.field("i") != 5,
        pc.field("i") < 2**40,
        pc.field("i") >= -3,
        pc.scalar(5) > pc.field("i"),  # literal on the left
        ~(pc.field("i") <= 0),
        pc.field("s") == "b",
        pc.field("s") > "a",
        pc.field("s") != "zz",
        pc.field("i").isin([5, 7, 2**40]),
        pc.field("s").isin(["a", "é"]),
        pc.field("small") == 127,
        pc.field("small") > -1,
        pc.field("u") == pa.scalar(2**64 - 1, pa.uint64()),
        pc.field("u") >= pa.scalar(2**63, pa.uint64()),
        pc.field("u") < pa.scalar(2**63, pa.uint64()),
        pc.field("u").isin(pa.array([2**64 - 2, 5], pa.uint64())),
        (pc.field("i") > 0) & (pc.field("s") == "b"),
        (pc.field("i") > 0) & (pc.field("s") != "b") & (pc.field("small") < 100),
    ],
    ids=str,
)
def test_polars_filter_selects_what_pyarrow_selects(expr):
    """Every filter given a Polars form selects exactly pyarrow's rows (NULLs included)."""
    pl = pytest.importorskip("polars")
    from arrowidx.lake.polars_filter import polars_filter

    predicate = polars_filter(expr, _FILTER_TABLE.schema)
    assert predicate is not None
    got = pl.from_arrow(_FILTER_TABLE).with_row_index("row").filter(predicate).get_column("row").to_list()
    want = np.flatnonzero(pc.fill_null(ds.dataset(_FILTER_TABLE).to_table(columns={"m": expr}).column("m"), False)).tolist()
    assert got == want


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("f") == 1.0,  # floats: NaN and -0.0 rules differ
        pc.field("i") == 1.5,  # an integer column against a float
        (pc.field("i") == 5) | (pc.field("s") == "a"),  # OR: NULL and FALSE part ways inside
        ~pc.field("i").isin([5]),  # NOT of IN: pyarrow's FALSE for NULL becomes TRUE
        pc.Expression._call("is_in", [pc.field("i")], pc.SetLookupOptions(pa.array([5, None]), skip_nulls=False)),
        pc.field("i").is_null(),
        pc.field("i") == pc.field("small"),
        pc.scalar(True),
    ],
    ids=str,
)
def test_filters_without_an_exact_polars_form_stay_with_pyarrow(expr):
    from arrowidx.lake.polars_filter import polars_filter

    assert polars_filter(expr, _FILTER_TABLE.schema) is None


def test_polars_filter_asked_again_answers_as_the_first_time():
    """polars_filter remembers its last answer: an equal filter built anew gets it, the
    same filter under another schema or another filter does not."""
    pytest.importorskip("polars")
    from arrowidx.lake.polars_filter import polars_filter

    schema = _FILTER_TABLE.schema
    first = polars_filter(pc.field("i") == 5, schema)
    assert first is not None and polars_filter(pc.field("i") == 5, schema) is first
    assert polars_filter(pc.field("i") == 5, pa.schema([pa.field("i", pa.float64())])) is None  # floats: none
    assert polars_filter(pc.field("i") == 1.5, schema) is None
    assert polars_filter(pc.field("i") == 5, schema) is not None


def test_files_kept_whole_are_filtered_by_polars_and_answer_as_pyarrow(tmp_path, monkeypatch):
    """A bloom-only needle: the files the bloom filter keeps are read by Polars with the
    filter pushed down (in every file above FILTER_MIN_ROWS, here all), the others as before;
    the answers equal pyarrow.dataset's, also with a deletion in one file, a projection
    without the filter column, and a filter Polars cannot take."""
    pytest.importorskip("polars")
    from arrowidx.lake import read

    rng = np.random.default_rng(8)
    for i in range(6):
        n = 3000
        pq.write_table(pa.table({
            "id": pa.array(rng.integers(0, 40, n) + (0 if i < 3 else 1000), pa.int64()),  # the bloom skips half
            "name": pa.array(np.array(["x", "y", "z"])[rng.integers(0, 3, n)]),
            "f": pa.array(rng.random(n)),
            "status": pa.array(np.array(["a", "b"])[rng.integers(0, 2, n)]),
        }), tmp_path / f"part-{i}.parquet", row_group_size=700)  # fmt: skip
    arrowidx.build(tmp_path, {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status"}, progress=False)
    filtered = []
    real = read.filter_with_polars

    def spy(*args):
        out = real(*args)
        filtered.extend(out)
        return out

    monkeypatch.setattr(read, "filter_with_polars", spy)
    monkeypatch.setattr(read, "FILTER_MIN_ROWS", 0)
    data, plain = arrowidx.dataset(tmp_path), ds.dataset(tmp_path)
    for expr, columns in [
        (pc.field("id") == 7, None),
        (pc.field("id").isin([3, 7]) & (pc.field("name") != "y"), None),
        (pc.field("id") == 7, ["name", "f"]),
        (pc.field("id") == 7, ["id"]),
    ]:
        filtered.clear()
        assert tables_equal(data.to_table(filter=expr, columns=columns), filtered_in_memory(plain.to_table(), expr, columns)), str(expr)
        assert filtered, f"{expr}: no file filtered by Polars"
    filtered.clear()
    expr = (pc.field("id") == 7) & (pc.field("f") > 0.5)  # a float: pyarrow filters
    assert tables_equal(data.to_table(filter=expr), filtered_in_memory(plain.to_table(), expr))
    assert not filtered
    arrowidx.delete(tmp_path, (pc.field("id") == 7) & (pc.field("name") == "x"), progress=False)
    data = arrowidx.dataset(tmp_path)
    want = filtered_in_memory(plain.to_table(), (pc.field("id") == 7) & ~((pc.field("id") == 7) & (pc.field("name") == "x")))
    assert tables_equal(data.to_table(filter=pc.field("id") == 7), want)


def _needle_rows_in_child(root: str) -> tuple[int, bool]:
    from arrowidx.lake import read

    def no_polars(*args):
        raise AssertionError("Polars called in a child forked after Polars ran")

    read.filter_with_polars = read.take_with_polars = no_polars  # (this child only)
    data = arrowidx.dataset(root)
    return data.to_table(filter=pc.field("id") == 7).num_rows, read.polars_usable()


def test_a_child_forked_after_polars_reads_with_pyarrow(tmp_path, monkeypatch):
    """``multiprocessing`` forks on Linux, and Polars' thread pool does not survive a fork:
    a child forked after Polars ran must not call it (its first query there waits forever).
    The scan core then reads with pyarrow alone and answers as pyarrow.dataset does."""
    pytest.importorskip("polars")
    import multiprocessing

    from arrowidx.lake import read

    rng = np.random.default_rng(9)
    for i in range(3):
        pq.write_table(pa.table({
            "id": pa.array(rng.integers(0, 40, 3000) + (0 if i < 2 else 1000), pa.int64()),  # the bloom skips one
            "name": pa.array(np.array(["x", "y"])[rng.integers(0, 2, 3000)]),
        }), tmp_path / f"part-{i}.parquet")  # fmt: skip
    arrowidx.build(tmp_path, {"file-index.bloom-filter.columns": "id"}, progress=False)
    monkeypatch.setattr(read, "FILTER_MIN_ROWS", 0)  # (inherited by the child)
    filtered = []
    real = read.filter_with_polars
    monkeypatch.setattr(read, "filter_with_polars", lambda *args: filtered.append(1) or real(*args))
    want = rows_in_memory(tmp_path).filter(pc.field("id") == 7).num_rows
    assert want and arrowidx.dataset(tmp_path).to_table(filter=pc.field("id") == 7).num_rows == want
    assert filtered and read.polars_usable()  # this process: Polars filtered the files kept whole
    with multiprocessing.get_context("fork").Pool(1) as pool:
        rows, usable = pool.apply_async(_needle_rows_in_child, (str(tmp_path),)).get(timeout=120)
    assert (rows, usable) == (want, False)


def test_every_row_group_matches_only_where_each_row_group_holds_a_match(tmp_path):
    """``every_row_group_matches`` (which spares Polars asking an index) says True only when
    each non-empty row group holds a row matching the range, checked on the raw values:
    integers and floats, NULL-only and NaN-only row groups, every range operator, and
    operators or columns it cannot judge (False)."""
    from arrowidx.lake.read import every_row_group_matches
    from arrowidx.predicate import bind

    rng = np.random.default_rng(11)
    ops = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
    fields = {"lt": pc.field("x").__lt__, "le": pc.field("x").__le__, "gt": pc.field("x").__gt__, "ge": pc.field("x").__ge__}
    said_true = 0
    for case in range(40):
        floating = case % 2 == 1
        values = rng.normal(0, 100, 600) if floating else rng.integers(-1000, 1000, 600).astype(float)
        valid = np.ones(600, dtype=bool)
        if case % 5 == 0:
            valid[200:400] = False  # a row group of NULLs only
        if floating and case % 3 == 0:
            values[:200] = np.nan  # a row group of NaN only
        if case % 7 == 0:
            values[400:] = np.sort(values[400:])  # a sorted last group: one side of a bound only
        arrow = pa.array(values if floating else values.astype(np.int64), mask=~valid)
        path = tmp_path / f"c{case}.parquet"
        pq.write_table(pa.table({"x": arrow}), path, row_group_size=200)
        metadata = pq.read_metadata(path)
        schema = pa.schema([("x", arrow.type)])
        for op, compare in ops.items():
            bound = float(rng.normal(0, 100)) if floating else int(rng.integers(-1100, 1100))
            node = bind(fields[op](bound), schema)
            truth = all(np.any(compare(values[a : a + 200][valid[a : a + 200]], bound)) for a in range(0, 600, 200))
            said = every_row_group_matches(metadata, node)
            assert not said or truth, (case, op, bound)
            said_true += said
    assert said_true > 20  # it does say True where every row group matches
    metadata = pq.read_metadata(tmp_path / "c1.parquet")
    schema = pa.schema([("x", pa.float64())])
    assert not every_row_group_matches(metadata, bind(pc.field("x") == 0.5, schema))  # not a range
    assert not every_row_group_matches(metadata, bind(pc.field("x") < float("nan"), schema))
    assert not every_row_group_matches(metadata, bind(pc.field("y") < 10.0, pa.schema([("y", pa.float64())])))  # not in the file
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "s.parquet")
    strings = bind(pc.field("s") < "z", pa.schema([("s", pa.string())]))
    assert not every_row_group_matches(pq.read_metadata(tmp_path / "s.parquet"), strings)  # strings: not judged
    # a file storing dates where the dataset has integers (its minimum a date): not judged, no error
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.date32())}), tmp_path / "d.parquet")
    ints = bind(pc.field("x") < 10, pa.schema([("x", pa.int32())]))
    assert not every_row_group_matches(pq.read_metadata(tmp_path / "d.parquet"), ints)


@pytest.mark.parametrize("call", ["dataset", "plain", "build", "delete"])
def test_a_missing_dataset_path_is_an_arrowidx_error_and_a_file_not_found_error(tmp_path, call):
    """A path that does not exist: arrowidx's own error naming it (``DatasetNotFoundError``),
    still the ``FileNotFoundError`` pyarrow's ``ds.dataset`` raises for it (the class a
    caller catches)."""
    from arrowidx.errors import DatasetNotFoundError
    from arrowidx.lake.scan import dataset as plain

    missing = str(tmp_path / "no-such-lake")
    with pytest.raises(FileNotFoundError):
        ds.dataset(missing)
    calls = {
        "dataset": lambda: arrowidx.dataset(missing),
        "plain": lambda: plain(missing),
        "build": lambda: arrowidx.build(missing, {"file-index.bloom-filter.columns": "id"}, progress=False),
        "delete": lambda: arrowidx.delete(missing, pc.field("id") == 1),
    }
    with pytest.raises(DatasetNotFoundError, match="no-such-lake") as e:
        calls[call]()
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, ArrowIdxError)
