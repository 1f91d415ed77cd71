"""Indexes built in bounded memory (issue 55): a lazily produced stream gives the bytes of the
whole table (and of Java's writers), the writers hold a block of rows and their indexes, not
the column; ``arrowidx.build`` and the Paimon rewrite read one column chunk (one column of
one row group) at a time, the range bitmap's column once per pass; deletes (of a lake, of a
Paimon table) hold a row group at a time. Spark's build and Paimon rewrite:
``integration/test_build_streaming_spark.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import glob
import os
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import arrowidx
import arrowidx.index.base as base
import arrowidx.lake.footer as footer
import arrowidx.passes as passes
from arrowidx import FileIndex, write_file_index
from arrowidx.storage import SINGLE_WRITER_ENV

from .counting_reads import CountingReads, chunk_reads
from .golden_support import case_options, golden_cases, index_bytes, load_table

HERE = Path(__file__).resolve().parent

OPTIONS = {
    "file-index.bloom-filter.columns": "id,name",
    "file-index.bloom-filter.id.items": "300000",
    "file-index.bitmap.columns": "status,day,name,tier",
    "file-index.range-bitmap.columns": "amount,name,id,tier,count",
    "file-index.bsi.columns": "id,day,count",
}


def _table(rows: int, seed: int = 55) -> pa.Table:
    """Columns of every kind a writer treats apart: all-distinct int64, few strings (with
    NULLs), a date of ~1,000 values, doubles with NaN and -0.0 (and NULLs), strings whose
    distinct count keeps growing (a bitmap that leaves one bitmap per value midway), a
    dictionary of strings and uint32 (indexed as their values, as int64)."""
    rng = np.random.default_rng(seed)
    nulls = rng.random(rows) < 0.05
    amount = rng.normal(0, 100, rows).round(1)
    amount[rng.random(rows) < 0.01] = np.nan
    amount[rng.random(rows) < 0.01] = -0.0
    return pa.table({
        "id": pa.array(rng.permutation(rows).astype(np.int64) - rows // 2),
        "status": pa.array(np.array(["active", "closed", "pending", "lost"])[rng.integers(0, 4, rows)], mask=nulls),
        "day": pa.array(rng.integers(18000, 19000, rows).astype(np.int32)).cast(pa.date32()),
        "amount": pa.array(amount, mask=rng.random(rows) < 0.02),
        "name": pa.array([f"n{i // 40}" for i in range(rows)]),
        "tier": pa.array(np.array(["gold", "silver", "bronze"])[rng.integers(0, 3, rows)]).dictionary_encode(),
        "count": pa.array(rng.integers(0, 2**32, rows, dtype=np.uint64).astype(np.uint32)),
    })  # fmt: skip


def _lazy(table: pa.Table, sizes=(1, 7, 1000, 65_536, 100_003, 31)):
    """A ``RecordBatchReader`` whose batches are made only when asked for (a generator),
    of irregular sizes; ``made`` counts them."""
    made = []

    def batches():
        at, i = 0, 0
        while at < table.num_rows:
            n = min(sizes[i % len(sizes)], table.num_rows - at)
            made.append(n)
            yield pa.record_batch([table.column(c).slice(at, n).combine_chunks() for c in table.column_names], schema=table.schema)
            at, i = at + n, i + 1

    return pa.RecordBatchReader.from_batches(table.schema, batches()), made


_POOLS = []  # every proxy pool, kept: Arrow buffers made in one must never outlive it


class HeldAtOnce:
    """The most numpy and Python (tracemalloc) and Arrow (a proxy of the default pool, made
    the default meanwhile) hold at once inside ``with``: ``.bytes``."""

    def __enter__(self):
        self.previous = pa.default_memory_pool()
        self.pool = pa.proxy_memory_pool(self.previous)
        _POOLS.append(self.pool)
        pa.set_memory_pool(self.pool)
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1] + self.pool.max_memory()
        tracemalloc.stop()
        pa.set_memory_pool(self.previous)

    def __str__(self) -> str:
        return f"{self.bytes / 2**20:.1f} MB held at once"


@pytest.fixture
def small_blocks(monkeypatch):
    """Writers work in blocks of 65,536 rows (the smallest: one Roaring container), so a
    few hundred thousand rows make many blocks."""
    monkeypatch.setattr(base, "BLOCK_ROWS", 1 << 16)


@pytest.mark.parametrize("spill", ["memory", "file"])
def test_lazy_stream_gives_the_whole_table_bytes(small_blocks, spill, monkeypatch, tmp_path):
    """A stream read once, batch by batch as a generator makes them, gives byte for byte the
    index of the whole table, for every index type; the range bitmap's second pass reads
    its columns back from memory or from a temporary file, removed afterwards."""
    table = _table(300_000)
    if spill == "file":
        monkeypatch.setattr(passes, "SPILL_AFTER", 0)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    reader, made = _lazy(table)
    streamed = write_file_index(reader, OPTIONS)
    assert sum(made) == table.num_rows and len(made) > 10
    assert streamed == write_file_index(table, OPTIONS)
    assert not glob.glob(str(tmp_path / "arrowidx-spill-*"))
    # the bytes are also the right index: its answers are pyarrow's rows
    index = FileIndex(streamed, table.schema)
    f = pc.field
    for expr, exact in ((f("status") == "lost", True), (f("amount") < -150.0, True), (f("day") >= dt.date(2021, 9, 1), True),
                        (f("name").isin(["n7", "n7000"]), True), (f("id") == 1234, False)):  # fmt: skip
        matching = _rows(table, expr)
        kept = np.flatnonzero(index.evaluate(expr).to_mask(table.num_rows).to_numpy(zero_copy_only=False))
        assert set(matching) <= set(kept), expr
        assert not exact or np.array_equal(matching, kept), expr


def _rows(table: pa.Table, expr) -> np.ndarray:
    """The rows ``Table.filter(expr)`` keeps."""
    numbered = table.append_column("_row", pa.array(np.arange(table.num_rows)))
    return np.sort(numbered.filter(expr).column("_row").to_numpy())


GOLDEN_WRITES = [c for c in golden_cases() if not any(i.get("emitNullBytes") for i in c["indexes"]) and not c["writeError"]]


@pytest.mark.parametrize("case", GOLDEN_WRITES, ids=lambda c: c["id"])
def test_golden_streamed_in_small_batches_as_java_writes(case, monkeypatch):
    """Java's golden datasets, streamed in batches of 1 to 97 rows (the range bitmap's column
    read back from a temporary file): Java's bytes, or for a bitmap whose bytes follow a
    Java HashMap order arrowidx does not always reproduce, the whole table's (whose answers
    ``test_golden_file_index`` judges against Java's)."""
    monkeypatch.setattr(passes, "SPILL_AFTER", 0)
    table = load_table(case["dataset"])
    options = case_options(case)
    reader, _ = _lazy(table, sizes=(1, 97, 13, 64))
    streamed = write_file_index(reader, options)
    bitmap = any(i["indexType"] == "bitmap" for i in case["indexes"])
    assert streamed == index_bytes(case) or (bitmap and streamed == write_file_index(table, options))


def test_a_stream_is_indexed_in_memory_bounded_by_a_block(small_blocks, monkeypatch, tmp_path):
    """2,000,000 rows streamed (~60 MB of columns): the writers of every index type hold a
    block of 65,536 rows and their indexes, and the range bitmap's column waits for its
    second pass in a file, so what Python, numpy (tracemalloc) and Arrow (the pool the
    batches are made in) hold at once stays a few MB, not the columns."""
    rows = 2_000_000
    monkeypatch.setattr(passes, "SPILL_AFTER", 1 << 20)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    schema = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
    words = np.array(["active", "closed", "pending", "lost"])

    def batches():
        rng = np.random.default_rng(5)
        for start in range(0, rows, 50_000):  # made when asked for, dropped after
            n = min(50_000, rows - start)
            yield pa.record_batch([pa.array(np.arange(start, start + n) * 7919 % rows), pa.array(words[rng.integers(0, 4, n)]),
                                   pa.array(rng.integers(0, 1000, n) / 4)], schema=schema)  # fmt: skip

    options = {"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": str(rows),
               "file-index.bsi.columns": "id", "file-index.bitmap.columns": "status", "file-index.range-bitmap.columns": "amount"}  # fmt: skip
    write_file_index(next(batches()).slice(0, 10), options)  # (modules imported on first use are not the build's)
    with HeldAtOnce() as held:
        data = write_file_index(pa.RecordBatchReader.from_batches(schema, batches()), options)
    assert held.bytes < 24 << 20, held
    table = pa.Table.from_batches(list(batches()))  # (now, to check the index against pyarrow)
    index = FileIndex(data, schema)
    for expr in (pc.field("amount") < 0.5, pc.field("status") == "lost", pc.field("id").isin([5, 77, 1_999_999])):
        assert np.array_equal(_rows(table, expr), np.flatnonzero(index.evaluate(expr).to_mask(rows).to_numpy(zero_copy_only=False))), expr


def _parquet(path: Path, rows: int, row_group: int) -> pa.Table:
    """``id``, ``status`` and ``amount`` of :func:`_table` (without NaN: SQL and pyarrow
    order it differently) written in row groups of ``row_group`` rows."""
    table = _table(rows).select(["id", "status", "amount"])
    amount = table.column("amount")
    table = table.set_column(2, "amount", pc.if_else(pc.is_nan(amount), 0.5, amount))
    pq.write_table(table, path, row_group_size=row_group)
    return table


def test_build_reads_one_column_chunk_at_a_time(tmp_path, monkeypatch):
    """``arrowidx.build`` reads a file one column chunk (one column of one row group) at a
    time: the bloom filter's column once, the range bitmap's once per pass, a column
    without an index never (a reader that notes what it is asked for)."""
    monkeypatch.setenv(SINGLE_WRITER_ENV, "1")  # (the noting filesystem cannot create only-if-absent)
    lake = tmp_path / "lake"
    lake.mkdir()
    table = _parquet(lake / "f.parquet", 120_000, 40_000)
    log = str(tmp_path / "reads.log")
    options = {"file-index.bloom-filter.columns": "id", "file-index.range-bitmap.columns": "amount"}
    arrowidx.build(str(lake), options, filesystem=pafs.PyFileSystem(CountingReads(log)), progress=False)
    counts = chunk_reads(log, str(lake / "f.parquet"))
    assert counts == {(g, c): {"id": 1, "status": 0, "amount": 2}[c] for g in range(3) for c in ("id", "status", "amount")}
    expr = pc.field("amount") < -150.0
    assert arrowidx.dataset(str(lake)).to_table(filter=expr).equals(table.filter(expr))


def test_paimon_rewrite_reads_one_column_chunk_at_a_time(tmp_path, monkeypatch):
    """The Paimon rewrite reads each data file as the build does: a column chunk at a time,
    the range bitmap's column once per pass (a reader that notes what it is asked for)."""
    from arrowidx import paimon

    monkeypatch.setenv(SINGLE_WRITER_ENV, "1")
    path = tmp_path / "t"
    shutil.copytree(HERE / "paimon_tables" / "pypaimon-2.1" / "db.db" / "t", path)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    before = paimon.open_table(str(path)).to_table()
    log = str(tmp_path / "reads.log")
    options = {"file-index.bloom-filter.columns": "name", "file-index.range-bitmap.columns": "amount"}
    report = paimon.rewrite_file_index(str(path), options, filesystem=pafs.PyFileSystem(CountingReads(log)))
    assert report.committed
    table = paimon.open_table(str(path))
    files = [table.file_path(f) for f in table.files]
    assert len(files) == 6
    for data in files:
        counts = chunk_reads(log, data)
        assert {c: n for (_, c), n in counts.items()} == {"dt": 0, "id": 0, "name": 1, "status": 0, "amount": 2}, data
    expr = pc.field("amount") < 50
    assert table.to_table(filter=expr).sort_by("id").equals(before.filter(expr).sort_by("id"))


def test_delete_reads_a_row_group_at_a_time(tmp_path, monkeypatch):
    """A delete that reads a file to find its rows holds one row group's rows at a time
    (what numpy and Arrow hold at once), and deletes exactly the rows pyarrow selects."""
    monkeypatch.setattr(footer, "CONTENT_CHUNK", 1 << 20)  # (the content hash reads 8 MB at a time otherwise)
    lake = tmp_path / "lake"
    lake.mkdir()
    table = _parquet(lake / "f.parquet", 1_000_000, 50_000)  # the filter's column: 8 MB, its row numbers 8 MB
    where = pc.field("amount") > 20.0
    arrowidx.delete(str(lake), pc.field("amount") > 1e9, progress=False)  # (modules imported on first use)
    with HeldAtOnce() as held:
        report = arrowidx.delete(str(lake), where, progress=False)
    assert held.bytes < 8 << 20, held
    assert report.rows_deleted == table.filter(where).num_rows
    left = arrowidx.dataset(str(lake)).to_table().column("id").to_numpy()
    assert np.array_equal(np.sort(left), np.sort(table.filter(~where | where.is_null()).column("id").to_numpy()))


def test_build_holds_a_row_group_not_the_file(small_blocks, tmp_path, monkeypatch):
    """``arrowidx.build`` of a 2,000,000-row file (16 MB per numeric column) in row groups of
    50,000 rows: what numpy and Arrow hold at once is a row group of one column, a block and
    the indexes, not a column of the file."""
    monkeypatch.setattr(footer, "CONTENT_CHUNK", 1 << 20)  # (the content hash reads 8 MB at a time otherwise)
    lake = tmp_path / "lake"
    lake.mkdir()
    rows = 2_000_000
    rng = np.random.default_rng(9)
    table = pa.table({"id": pa.array(rng.permutation(rows).astype(np.int64)), "status": pa.array(np.array(["a", "b", "c", "d"])[rng.integers(0, 4, rows)]),
                      "amount": pa.array(rng.integers(0, 1000, rows) / 4)})  # fmt: skip
    pq.write_table(table, lake / "f.parquet", row_group_size=50_000)
    options = {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status",
               "file-index.range-bitmap.columns": "amount", "file-index.bsi.columns": "id"}  # fmt: skip
    small = tmp_path / "warm"
    small.mkdir()
    pq.write_table(table.slice(0, 10), small / "f.parquet")
    arrowidx.build(str(small), options, progress=False)  # (modules imported on first use are not the build's)
    with HeldAtOnce() as held:
        report = arrowidx.build(str(lake), options, progress=False)
    # the indexes (their bytes and the container's copy of them), and a few MB besides
    assert held.bytes < 2 * report.index_bytes + (6 << 20), f"{held}, indexes {report.index_bytes / 2**20:.1f} MB"
    for expr in (pc.field("amount") < 2.0, pc.field("status") == "c", pc.field("id") == 77):
        assert arrowidx.dataset(str(lake)).to_table(filter=expr).sort_by("id").equals(table.filter(expr).sort_by("id"))


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.string()])
def test_bitmap_leaving_one_bitmap_per_value_after_null_blocks(small_blocks, arrow_type):
    """A bitmap's first block all NULL, then more distinct values than it keeps a bitmap each
    for: the rows so far are rebuilt as keys (NULLs included) and the answers are pyarrow's."""
    values = [str(i) if arrow_type == pa.string() else i for i in range(10_000)]
    table = pa.table({"c": pa.concat_arrays([pa.nulls(70_000, arrow_type), pa.array(values * 3, arrow_type)])})
    for version in ("1", "2"):
        index = FileIndex(write_file_index(table, {"file-index.bitmap.columns": "c", "file-index.bitmap.c.version": version}), table.schema)
        for expr in (pc.field("c").is_null(), pc.field("c") == values[7], pc.field("c").isin(values[100:120])):
            assert np.array_equal(_rows(table, expr), np.flatnonzero(index.evaluate(expr).to_mask(table.num_rows).to_numpy(zero_copy_only=False)))


@pytest.mark.parametrize("where", ["amount > 150.0 AND status <> 'lost'", pc.field("amount") > 150.0])
def test_paimon_delete_matches_a_row_group_at_a_time(tmp_path, where):
    """A Paimon delete evaluates its filter on a data file one row group at a time (what numpy
    and Arrow hold at once: a row group, not the file), finding exactly pyarrow's rows."""
    pytest.importorskip("fastavro")
    from arrowidx.paimon.delete_rows import MatchTask, match_file, where_of

    path = tmp_path / "data.parquet"
    table = _parquet(path, 1_000_000, 50_000)  # the columns read: 8 MB, 10 MB and the keys' 8 MB
    matcher = where_of(where).compile(table.schema)
    task = MatchTask("data.parquet", str(path), table.num_rows, tuple((c, c) for c in table.column_names), keys=("id",))
    _parquet(tmp_path / "warm.parquet", 10, 5)
    match_file(pafs.LocalFileSystem(), dataclasses.replace(task, path=str(tmp_path / "warm.parquet"), rows=10), matcher)  # (imports)
    with HeldAtOnce() as held:
        result = match_file(pafs.LocalFileSystem(), task, matcher)
    found = result.positions.nbytes + result.keys.nbytes  # what it returns (~7 % of the rows)
    assert held.bytes < 2 * found + (4 << 20), f"{held}, {found / 2**20:.1f} MB found"
    expr = pc.field("amount") > 150.0
    if isinstance(where, str):
        expr = expr & (pc.field("status") != "lost")
    assert np.array_equal(result.positions, _rows(table, expr))
    assert result.keys.column("id").equals(table.filter(expr).column("id"))
