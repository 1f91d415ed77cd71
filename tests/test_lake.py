"""Indexed Parquet datasets end to end: every query equals ``Table.filter`` on the rows in
memory minus the deleted rows (not a ``pyarrow.dataset`` scan with the filter, whose
statistics drop the lake's NaN amounts), with stale files, files without an index, corrupt index files, concurrent
builds, incremental builds and a build that crashes half way."""

from __future__ import annotations

import glob
import importlib
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arrowidx
from arrowidx import CorruptIndexError
from arrowidx.index import INDEX_TYPES
from arrowidx.lake.commit import load_manifest
from arrowidx.lake.source import open_lake

from .conftest import filtered_in_memory, index_dir, rows_in_memory, tables_equal

build_module = importlib.import_module("arrowidx.lake.build")

STATUS = ["new", "paid", "shipped", "lost", ""]


def write_lake(root, files: int = 6, rows: int = 500, seed: int = 0, row_group_size: int = 64) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(root, exist_ok=True)
    for i in range(files):
        n = rows + int(rng.integers(0, 50))
        status = np.array(STATUS, dtype=object)[rng.integers(0, len(STATUS), n)]
        status[rng.random(n) < 0.1] = None
        amount = rng.gamma(2.0, 10.0, n)
        amount[rng.random(n) < 0.02] = np.nan
        table = pa.table(
            {
                "id": pa.array(rng.permutation(n) + i * 10_000, pa.int64()),
                "user": pa.array(rng.integers(0, 200, n), pa.int32(), mask=rng.random(n) < 0.05),
                "status": pa.array(status, pa.string()),
                "amount": pa.array(amount, mask=rng.random(n) < 0.05),
                "day": pa.array(rng.integers(19000, 19010, n).astype("int32"), pa.int32()).cast(pa.date32()),
            }
        )
        pq.write_table(table, os.path.join(root, f"part-{i:03d}.parquet"), row_group_size=row_group_size)


OPTIONS = {
    "file-index.bitmap.columns": "status,day",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.fpp": "0.01",
}
if "range-bitmap" in INDEX_TYPES:
    OPTIONS["file-index.range-bitmap.columns"] = "user,amount"
else:
    OPTIONS["file-index.bitmap.columns"] += ",user"


def alive(where: pc.Expression) -> pc.Expression:
    """Rows a delete with ``where`` keeps: those where ``where`` is not TRUE."""
    return ~where | where.is_null()


def assert_same(root, expr, columns=None, deleted=None):
    expected_filter = expr if deleted is None else (alive(deleted) if expr is None else expr & alive(deleted))
    expected = filtered_in_memory(rows_in_memory(root), expected_filter, columns)
    got = arrowidx.dataset(root).to_table(filter=expr, columns=columns)
    assert got.schema == expected.schema
    assert tables_equal(got, expected), f"{expr}: {got.num_rows} rows, expected {expected.num_rows}"
    return got


def filters() -> st.SearchStrategy:
    c_status = st.sampled_from(STATUS + ["nope"]).map(lambda v: pc.field("status") == v)
    c_id = st.integers(0, 60_000).map(lambda v: pc.field("id") == v)
    c_user = st.integers(-1, 201).flatmap(lambda v: st.sampled_from([pc.field("user") == v, pc.field("user") < v, pc.field("user") >= v]))
    c_amount = st.floats(0, 80).map(lambda v: pc.field("amount") > v)
    c_in = st.lists(st.sampled_from(STATUS), min_size=1, max_size=3).map(lambda vs: pc.field("status").isin(vs))
    c_null = st.sampled_from([pc.field("status").is_null(), pc.field("user").is_valid(), pc.field("amount").is_null()])
    c_day = st.integers(18999, 19011).map(lambda d: pc.field("day") == pa.scalar(d, pa.int32()).cast(pa.date32()))
    leaf = st.one_of(c_status, c_id, c_user, c_amount, c_in, c_null, c_day)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            inner.map(lambda e: ~e),
            st.tuples(inner, inner).map(lambda ab: ab[0] & ab[1]),
            st.tuples(inner, inner).map(lambda ab: ab[0] | ab[1]),
        ),
        max_leaves=4,
    )


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("lake"))
    write_lake(root)
    arrowidx.build(root, OPTIONS, progress=False)
    deleted = (pc.field("status") == "lost") & (pc.field("amount") > 20.0)
    report = arrowidx.delete(root, deleted, progress=False)
    assert report.rows_deleted > 0
    return root, deleted


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(expr=filters(), project=st.booleans())
def test_queries_equal_plain_pyarrow_minus_deleted(lake, expr, project):
    root, deleted = lake
    assert_same(root, expr, columns=["amount", "id"] if project else None, deleted=deleted)


def test_count_rows_and_batches(lake):
    root, deleted = lake
    rows = rows_in_memory(root)
    data = arrowidx.dataset(root)
    assert data.count_rows() == rows.filter(alive(deleted)).num_rows
    for expr in (pc.field("status") == "paid", pc.field("amount") > 20.0, ~(pc.field("amount") < 80.0)):
        assert data.count_rows(expr) == rows.filter(expr & alive(deleted)).num_rows, expr
    expr = pc.field("status") == "paid"
    rows = sum(b.num_rows for b in data.to_batches(filter=expr))
    assert rows == data.count_rows(expr)


def test_indexes_prune_files_and_row_groups(lake):
    root, _ = lake
    one_id = pq.read_table(os.path.join(root, "part-002.parquet"), columns=["id"]).column("id")[7].as_py()
    plan = arrowidx.dataset(root).explain(pc.field("id") == one_id)
    assert plan.files_skipped >= len(plan.files) - 2  # bloom filter: fpp 0.01
    assert "bloom-filter" in plan.files[0].index_types
    plan = arrowidx.dataset(root).explain(pc.field("status") == "nope")
    assert plan.files_skipped == len(plan.files)
    assert "skipped" in str(plan)
    plan = arrowidx.dataset(root).explain(pc.field("day") == pa.scalar(19003, pa.int32()).cast(pa.date32()))
    assert all(p.status == "bitmap" for p in plan.files)
    assert plan.rows_read <= plan.rows_total


def test_stale_file_is_read_in_full(tmp_path):
    """``on_stale_deletions="read-full"``: the changed file is read as it is now (every row,
    its deleted rows back), and every other file keeps its deletions. The reference is the
    rows in memory: the fresh files minus the deleted rows, plus the stale file whole."""
    root = str(tmp_path)
    write_lake(root, files=3)
    arrowidx.build(root, OPTIONS, progress=False)
    deleted = pc.field("status") == "paid"
    assert arrowidx.delete(root, deleted, progress=False).rows_deleted > 0
    # Replace a data file: its index and its deletion vector no longer describe it.
    path = os.path.join(root, "part-001.parquet")
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 100).append_column("x", pa.array(range(100))).drop_columns(["x"]), path)
    # Rows were deleted from it: its deletions must never be dropped silently.
    with pytest.raises(arrowidx.StaleDeletionError, match=r"part-001\.parquet"):
        arrowidx.dataset(root).to_table(filter=pc.field("status") == "shipped")
    data = arrowidx.dataset(root, on_stale_deletions="read-full")
    plan = data.explain(pc.field("status") == "shipped")
    assert [p.status for p in plan.files if p.path == "part-001.parquet"] == ["stale"]
    files = {name: pq.read_table(os.path.join(root, name)) for name in ("part-000.parquet", "part-001.parquet", "part-002.parquet")}
    rows = pa.concat_tables([t if name == "part-001.parquet" else t.filter(alive(deleted)) for name, t in files.items()])
    assert files["part-001.parquet"].filter(deleted).num_rows > 0  # the stale file's deleted rows come back
    for expr in (None, deleted, pc.field("status") == "shipped", pc.field("id") > 10_100):
        got = data.to_table(filter=expr)
        expected = rows if expr is None else rows.filter(expr)
        assert tables_equal(got, expected), f"{expr}: {got.num_rows} rows, expected {expected.num_rows}"
        assert data.count_rows(expr) == expected.num_rows, expr
    data.on_stale_deletions = "raise"  # the same open dataset, told to refuse it again
    with pytest.raises(arrowidx.StaleDeletionError, match=r"part-001\.parquet"):
        data.to_table(filter=deleted)
    data.on_stale_deletions = "read-full"
    # A stale index alone (no deletions in that file) just means: read it in full.
    arrowidx.build(root, OPTIONS, progress=False, on_stale_deletions="read-full")
    pq.write_table(table.slice(0, 50), path)
    assert_same(root, pc.field("status") == "shipped", deleted=deleted)


def test_file_rewritten_between_two_queries_of_one_open_dataset_is_read_as_it_is_now(tmp_path):
    """An open dataset stats its files again for every query: a file rewritten after the
    first query (its index now describes other rows) is read in full by the next one, never
    judged by the identity the first query saw. Indexed again, the same file is asked its
    new index (the stale verdict belonged to the old manifest entry). ``restat`` (Spark's
    tasks) stats the files it names again at once."""
    root = str(tmp_path)
    write_lake(root, files=2)
    arrowidx.build(root, OPTIONS, progress=False)
    expr = pc.field("status") == "returned"  # in no file when indexed
    path = os.path.join(root, "part-001.parquet")
    rewritten = pq.read_table(path).slice(0, 40)
    rewritten = rewritten.set_column(
        rewritten.schema.get_field_index("status"), "status", pa.array(["returned"] * 40)
    )

    data = arrowidx.dataset(root)
    assert data.to_table(filter=expr).num_rows == 0
    assert [p.status for p in data.explain(expr).files] == ["skipped", "skipped"]
    pq.write_table(rewritten, path)
    got = data.to_table(filter=expr)
    assert got.num_rows == 40
    assert tables_equal(got, rows_in_memory(root).filter(expr))

    assert data.plan_file("part-001.parquet", expr, statistics=False).status == "stale"
    arrowidx.build(root, OPTIONS, progress=False)
    data.refresh()  # the new manifest; the data file itself is unchanged since the last query
    assert data.plan_file("part-001.parquet", expr, statistics=False).status == "bitmap"
    pq.write_table(rewritten.slice(0, 20).set_column(
        rewritten.schema.get_field_index("status"), "status", pa.array(["new"] * 20)
    ), path)
    data.restat(["part-001.parquet"])
    assert data.plan_file("part-001.parquet", expr, statistics=False).status == "stale"


def test_new_file_without_index_is_read(tmp_path):
    root = str(tmp_path)
    write_lake(root, files=2)
    arrowidx.build(root, OPTIONS, progress=False)
    write_lake(os.path.join(root, "later"), files=1, seed=5)
    data = arrowidx.dataset(root)
    plan = data.explain(pc.field("status") == "new")
    assert [p.status for p in plan.files if p.path.startswith("later/")] == ["no index"]
    assert_same(root, pc.field("status") == "new")


@pytest.mark.parametrize("damage", ["the filter column's index", "the container header"])
def test_corrupt_index_file_raises_or_falls_back(tmp_path, damage):
    """A query reads only its columns' index bytes (each window checked by its checksum in
    the manifest): damage there is a CorruptIndexError naming the file; damage elsewhere
    changes no answer, and the next build, which checks whole files, repairs it."""
    root = str(tmp_path)
    write_lake(root, files=2)
    arrowidx.build(root, OPTIONS, progress=False)
    (index_file,) = glob.glob(index_dir(root, "index", "part-001.parquet.*.index"))
    data = bytearray(open(index_file, "rb").read())
    entry = load_manifest(*open_lake(root)[:2]).files["part-001.parquet"]
    if damage == "the container header":
        data[0:8] = b"garbage!"
    else:
        start, length, _ = next(iter(entry.index.layout["status"].values()))
        data[start + length // 2] ^= 0xFF
    with open(index_file, "wb") as f:
        f.write(bytes(data))
    expr = pc.field("status") == "paid"
    expected = rows_in_memory(root).filter(expr)
    if damage == "the container header":
        assert tables_equal(arrowidx.dataset(root).to_table(filter=expr), expected)
        assert arrowidx.build(root, OPTIONS, progress=False).indexed == ["part-001.parquet"]  # repaired
        return
    with pytest.raises(CorruptIndexError, match=r"part-001\.parquet\.[0-9a-f]{16}-[0-9a-f]{8}\.index"):
        arrowidx.dataset(root).to_table(filter=expr)
    got = arrowidx.dataset(root, on_corrupt="fallback").to_table(filter=expr)
    assert tables_equal(got, expected)


def test_incremental_build_indexes_only_changed_files(tmp_path):
    root = str(tmp_path)
    write_lake(root, files=4)
    first = arrowidx.build(root, OPTIONS, progress=False)
    assert len(first.indexed) == 4
    again = arrowidx.build(root, OPTIONS, progress=False)
    assert again.indexed == [] and len(again.unchanged) == 4
    assert not again.changed and again.version == first.version  # nothing to do: no new version
    time.sleep(0.01)
    pq.write_table(pq.read_table(os.path.join(root, "part-002.parquet")).slice(0, 10), os.path.join(root, "part-002.parquet"))
    os.remove(os.path.join(root, "part-003.parquet"))
    write_lake(os.path.join(root, "new"), files=1, seed=9)
    third = arrowidx.build(root, OPTIONS, progress=False)
    assert sorted(third.indexed) == ["new/part-000.parquet", "part-002.parquet"]
    assert third.removed == ["part-003.parquet"]
    assert third.version == first.version + 1
    assert_same(root, pc.field("status") == "paid")


def test_crash_during_build_keeps_previous_manifest(tmp_path, monkeypatch):
    root = str(tmp_path)
    write_lake(root, files=4)
    arrowidx.build(root, {"file-index.bitmap.columns": "status"}, progress=False)
    real = build_module.index_one_file
    calls = []

    def crashing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(build_module, "index_one_file", crashing)
    with pytest.raises(KeyboardInterrupt):
        arrowidx.build(root, OPTIONS, progress=False, threads=1)
    monkeypatch.undo()
    data = arrowidx.dataset(root)
    assert data.manifest.version == 1
    assert data.manifest.options == {"file-index.bitmap.columns": "status"}
    assert_same(root, pc.field("status") == "shipped")
    assert_same(root, pc.field("id") == 3)


def test_concurrent_build_while_reading(tmp_path):
    root = str(tmp_path)
    write_lake(root, files=4)
    arrowidx.build(root, OPTIONS, progress=False)
    expr = (pc.field("status") == "paid") | (pc.field("user") == 7) | ~(pc.field("amount") <= 40.0)
    expected = rows_in_memory(root).filter(expr)
    errors = []
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            try:
                got = arrowidx.dataset(root).to_table(filter=expr)
                if not tables_equal(got, expected):
                    errors.append("different result during a concurrent build")
            except Exception as e:  # noqa: BLE001 - any error is a failure here
                errors.append(repr(e))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(4):
            options = dict(OPTIONS)
            options["file-index.bloom-filter.id.fpp"] = str(0.01 + i / 100)
            arrowidx.build(root, options, progress=False)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]


def test_bitmap64_deletes_and_repeat_deletes(tmp_path):
    root = str(tmp_path)
    write_lake(root, files=2)
    arrowidx.build(root, OPTIONS, progress=False)
    first = pc.field("status") == "new"
    arrowidx.delete(root, first, options={"deletion-vectors.bitmap64": "true"}, progress=False)
    second = pc.field("user") < 50
    report = arrowidx.delete(root, second, progress=False)
    both = first | second
    assert_same(root, None, deleted=both)
    assert_same(root, pc.field("amount") > 10, deleted=both)
    data = arrowidx.dataset(root)
    dvs = [data.lake.deletion_vector(f) for f in data.lake.files]
    assert all(dv is not None and dv.bitmap64 for dv in dvs)
    assert report.rows_deleted > 0
    again = arrowidx.delete(root, second, progress=False)
    assert again.rows_deleted == 0
