"""Key directories (``arrowidx.lake.directory``): a needle over many files skips the files
whose range bitmap lacks its key without asking them one by one, and answers exactly as
those indexes would.

References: each file's own index (``FileIndex.evaluate``, what planning asks without a
directory) and the raw data filtered by pyarrow; the lake tests compare with
``pyarrow.dataset`` and with the same lake planned without directories.
"""

from __future__ import annotations

import os
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
import arrowidx.lake.plan as plan_module
from arrowidx import FileIndex, facts, write_file_index
from arrowidx.lake import directory
from arrowidx.lake.directory import KeyDirectory, Member, build_directory
from arrowidx.predicate import bind, needles
from arrowidx.storage import LocalStore

from .conftest import tables_equal
from .differential_support import fuzz_settings
from .test_range_bitmap import CHUNK_SIZES, LOSSY_RANGE_SPECS, RANGE_SPECS

SETTINGS = fuzz_settings(30)  # many more under ``make fuzz``


# ---------------------------------------------------------------------------------------
# one column, a few files: the directory against each file's own index
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", RANGE_SPECS + LOSSY_RANGE_SPECS, ids=lambda s: s.id)
@given(data=st.data())
@SETTINGS
def test_a_directory_holds_a_key_exactly_where_the_files_own_index_answers(spec, data):
    chunk = data.draw(st.sampled_from(CHUNK_SIZES))
    options = {"file-index.range-bitmap.columns": "c", "file-index.range-bitmap.c.chunk-size": chunk}
    files = data.draw(st.lists(st.lists(spec.raw | st.none(), max_size=30), min_size=1, max_size=5))
    tables = [pa.table({"c": spec.array(raws)}) for raws in files]
    indexes = [FileIndex(write_file_index(t, options), t.schema) for t in tables]
    readers = [next(r for r in fi.readers("c")) for fi in indexes]
    if not all(r.lists_keys for r in readers):
        assert pa.types.is_string(spec.arrow_type) or pa.types.is_large_string(spec.arrow_type) or pa.types.is_string_view(spec.arrow_type)
        return  # variable-width keys are not listed: no directory
    seen = [v for raws in files for v in raws if v is not None]
    raws = data.draw(st.lists(st.sampled_from(seen) | spec.raw if seen else spec.raw, min_size=1, max_size=4))
    literals = spec.array(raws)
    expr = pc.field("c") == literals[0] if len(raws) == 1 and data.draw(st.booleans()) else pc.field("c").isin(literals)
    schema = tables[0].schema
    node = bind(expr, schema)
    found = needles(node, schema)
    if not found:  # an equality on floats (IEEE and Java sides differ): never a directory
        assert pa.types.is_floating(spec.arrow_type) and isinstance(expr, pc.Expression)
        return
    ((column, keys),) = found
    members = [Member(str(i), (str(i),), None, fi) for i, fi in enumerate(indexes)]
    with mock.patch.object(directory, "DIRECTORY_MIN_FILES", 1):
        built = build_directory(column, list(zip(members, readers)))
    held = built.holding(keys).tolist()
    for i, (fi, table) in enumerate(zip(indexes, tables)):
        assert held[i] == fi.evaluate(node).remain, f"file {i}: {files[i]} for {expr}"
        if not held[i]:
            assert table.filter(expr).num_rows == 0, f"file {i} ruled out but holds rows of {expr}"


@given(
    runs=st.lists(st.lists(st.integers(-50, 50), max_size=40).map(lambda v: sorted(set(v))), min_size=1, max_size=12),
    keys=st.lists(st.integers(-60, 60) | st.sampled_from([-(1 << 63), (1 << 63) - 1, 1 << 64]), min_size=1, max_size=30),
)
@SETTINGS
def test_lookup_over_all_runs_at_once_is_membership(runs, keys):
    """The binary search over every file's sorted run at once (and the one pass for long IN
    lists) finds a key exactly in the runs that hold it, empty runs included."""
    from arrowidx.index.rangebitmap.dictionary import KeyCodec

    codec = KeyCodec("BIGINT", ">i8")
    arrays = [np.array(r, np.int64) for r in runs]
    d = KeyDirectory("c", codec, [Member(str(i), (), None, None) for i in range(len(runs))], arrays)
    expected = [any(k in r for k in keys) for r in runs]
    assert d.holding(tuple(keys)).tolist() == expected
    for k in keys[:3]:
        assert d.holding((k,)).tolist() == [k in r for r in runs]
    for searched in (0, 10**6):  # every list one pass / searched key by key
        with mock.patch.object(directory, "_SEARCHED_KEYS", searched):
            assert d.holding(tuple(keys)).tolist() == expected


def test_unsorted_keys_across_chunks_are_a_corrupt_index():
    """A dictionary whose chunks overlap (each chunk sorted, the heads in order, but a key
    of one chunk above the next chunk's head) cannot be listed: a directory built from it
    could miss a key. It is a CorruptIndexError naming the file, and the file is left out."""
    table = pa.table({"c": pa.array([1001, 1002, 1003, 1004, 1005, 1006], pa.int64())})
    options = {"file-index.range-bitmap.columns": "c", "file-index.range-bitmap.c.chunk-size": "16b"}
    data = bytearray(write_file_index(table, options))
    be = lambda v: bytes(np.array([v], ">i8").view(np.uint8))  # noqa: E731
    assert bytes(data).count(be(1003)) == 1
    at = bytes(data).index(be(1003))
    data[at : at + 8] = be(1005)  # chunk [1001 | 1002, 1005], then chunk [1004 | 1005, 1006]
    fi = FileIndex(bytes(data), table.schema, name="broken.index")
    reader = fi.readers("c")[0]
    assert reader.dictionary.size == 2
    with pytest.raises(arrowidx.CorruptIndexError, match="broken.index.*ascending"):
        reader.distinct_keys()
    members = [(Member(str(i), (), None, fi), reader) for i in range(3)]
    with mock.patch.object(directory, "DIRECTORY_MIN_FILES", 1):
        assert build_directory("c", members) is None  # every file left out


# ---------------------------------------------------------------------------------------
# a lake of many small files
# ---------------------------------------------------------------------------------------

FILES = 72  # above DIRECTORY_MIN_FILES
OPTIONS = {
    "file-index.range-bitmap.columns": "id,k",
    "file-index.bitmap.columns": "status",
    "file-index.bloom-filter.columns": "user",
}


def _write(root, i: int, rng, ids) -> None:
    n = len(ids)
    pq.write_table(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array(rng.integers(0, 40, n), pa.int32(), mask=rng.random(n) < 0.1),
                "user": pa.array(rng.integers(0, 1000, n), pa.int64()),
                "status": pa.array(np.array(["a", "b", "c"])[rng.integers(0, 3, n)]),
            }
        ),
        os.path.join(root, f"part-{i:03d}.parquet"),
    )


@pytest.fixture()
def lake(tmp_path):
    rng = np.random.default_rng(3)
    ids = rng.permutation(FILES * 25)
    for i in range(FILES):
        _write(tmp_path, i, rng, ids[i * 25 : (i + 1) * 25])
    arrowidx.build(str(tmp_path), OPTIONS, progress=False)
    return str(tmp_path)


def _needle(root, i: int, column: str = "id"):
    return pq.read_table(os.path.join(root, f"part-{i:03d}.parquet")).column(column)[3].as_py()


def _counting_plan_file(monkeypatch) -> list[str]:
    """Records the files whose index a query asks (``Planner.decide``: the index's answer for one
    file, which ``plan_file`` and the batched planning both start with)."""
    asked: list[str] = []
    real = plan_module.Planner.decide

    def decide(self, rel, *args, **kwargs):
        asked.append(rel)
        return real(self, rel, *args, **kwargs)

    monkeypatch.setattr(plan_module.Planner, "decide", decide)
    return asked


def test_a_needle_asks_only_the_files_holding_its_key(lake, monkeypatch):
    asked = _counting_plan_file(monkeypatch)
    key = _needle(lake, 40)
    data = arrowidx.dataset(lake)
    got = data.to_table(filter=pc.field("id") == key)
    assert asked == ["part-040.parquet"]
    assert tables_equal(got, ds.dataset(lake).to_table(filter=pc.field("id") == key))
    assert got.num_rows == 1
    asked.clear()
    assert data.to_table(filter=pc.field("id") == -5).num_rows == 0  # in no file
    assert asked == []


def _queries(lake):
    a, b = _needle(lake, 7), _needle(lake, 60)
    return [
        pc.field("id") == a,
        pc.field("id").isin([a, b, -1]),
        pc.field("id").isin([a, b, *range(10_000, 10_020)]),  # a long IN list: one pass
        (pc.field("id") == a) & (pc.field("status") == "b"),
        (pc.field("k") == 3) & (pc.field("id") == b),
        (pc.field("id") == a) | (pc.field("k") == 4),  # an OR: no directory
        ~(pc.field("id") == a),
        pc.field("id") != a,
        pc.field("id") < a,
        (pc.field("id") >= a) & (pc.field("id") <= a),
        pc.field("k") == 39,
        pc.Expression._call("is_in", [pc.field("k")], pc.SetLookupOptions(pa.array([None, 5], pa.int32()), skip_nulls=False)),  # IN matching NULL: no directory
        pc.field("id") == pa.scalar(a, pa.int32()),
        pc.field("id") == 2**40,
        pc.field("user") == 5,  # bloom only: no directory
    ]


def test_answers_and_plans_equal_the_lake_planned_file_by_file(lake, monkeypatch):
    data = arrowidx.dataset(lake)
    plain = ds.dataset(lake)
    with_directory = {}
    for expr in _queries(lake):
        got = data.to_table(filter=expr)
        assert tables_equal(got, plain.to_table(filter=expr)), str(expr)
        with_directory[str(expr)] = [(p.path, p.status, p.index_types, p.rows_selected) for p in data.explain(expr).files]
    monkeypatch.setattr(directory, "DIRECTORY_MIN_FILES", 10**9)
    alone = arrowidx.dataset(lake)
    for expr in _queries(lake):
        assert with_directory[str(expr)] == [(p.path, p.status, p.index_types, p.rows_selected) for p in alone.explain(expr).files]


def test_polars_needle_uses_the_directory_and_answers_as_polars(lake, monkeypatch):
    pl = pytest.importorskip("polars")
    import arrowidx.polars

    asked = _counting_plan_file(monkeypatch)
    key = _needle(lake, 12)
    got = arrowidx.polars.scan(lake).filter(pl.col("id") == key).collect()
    want = pl.scan_parquet(os.path.join(lake, "*.parquet")).filter(pl.col("id") == key).collect()
    assert got.equals(want) and got.height == 1
    assert asked == ["part-012.parquet"]
    # with a report wanted, every file gets a plan: those the directory ruled out as skipped
    reports, asked[:] = [], []
    got = arrowidx.polars.scan(lake, on_scan=reports.append).filter(pl.col("id") == key).collect()
    assert got.equals(want) and asked == ["part-012.parquet"]
    statuses = {p.path: p.status for p in reports[0].plans}
    assert len(statuses) == FILES and statuses.pop("part-012.parquet") == "bitmap"
    assert set(statuses.values()) == {"skipped"}
    assert reports[0].files_read == 1 and reports[0].rows_returned == 1
    # an IN list of keys in a quarter of the files, with a bloom-filter column beside it
    keys = [_needle(lake, i) for i in range(0, FILES, 4)]
    expr = pl.col("id").is_in(keys) & (pl.col("user") >= 0)
    got = arrowidx.polars.scan(lake).filter(expr).collect().sort("id")
    assert got.equals(pl.scan_parquet(os.path.join(lake, "*.parquet")).filter(expr).collect().sort("id"))
    assert got.height == len(keys)


def test_a_file_rewritten_after_the_directory_was_built_is_read_as_it_is_now(lake):
    """The directory lists the keys of the files as they were; a file changed since (here:
    rewritten to hold the needle) is planned by itself (stale: read in full), never ruled
    out by the keys it held before."""
    data = arrowidx.dataset(lake)
    key = _needle(lake, 50)
    assert data.to_table(filter=pc.field("id") == key).num_rows == 1  # the directory is built
    rng = np.random.default_rng(9)
    _write(lake, 20, rng, np.array([key, 10**6, 10**6 + 1]))
    got = data.to_table(filter=pc.field("id") == key)
    assert got.num_rows == 2
    assert tables_equal(got, ds.dataset(lake).to_table(filter=pc.field("id") == key))
    assert {p.path: p.status for p in data.explain(pc.field("id") == key).files}["part-020.parquet"] == "stale"
    opened = arrowidx.dataset(lake)  # stale before its directory is built: never listed
    assert tables_equal(opened.to_table(filter=pc.field("id") == key), got)


def test_a_needle_checks_the_files_it_ruled_out_with_one_stat_each(lake, monkeypatch):
    """A needle narrowed to a few files plans only those; whether each file ruled out is
    still the one the directory listed is decided from one stat of every file per query,
    in one call (nothing stat'ed twice, no helper thread). A file changed since the
    directory listed it (here: rewritten to hold the needle) is then planned and read too,
    its rows in file order, through ``to_table``, ``to_batches``, ``scanner`` and
    ``count_rows``."""
    submitted: list[int] = []
    real_stat_many = LocalStore.stat_many

    def recording(self, paths):
        submitted.append(len(paths))
        return real_stat_many(self, paths)

    monkeypatch.setattr(LocalStore, "stat_many", recording)
    asked = _counting_plan_file(monkeypatch)
    data = arrowidx.dataset(lake)
    key = _needle(lake, 50)
    expr = pc.field("id") == key
    assert data.to_table(filter=expr).num_rows == 1  # the first query builds the directory
    submitted.clear(), asked.clear()
    assert data.to_table(filter=expr).num_rows == 1
    assert submitted == [FILES] and asked == ["part-050.parquet"]  # the needle's route, unchanged lake
    touched = os.path.join(lake, "part-030.parquet")
    os.utime(touched, ns=(os.stat(touched).st_atime_ns, os.stat(touched).st_mtime_ns + 10**9))  # same bytes, new time
    submitted.clear(), asked.clear()
    assert data.to_table(filter=expr).num_rows == 1
    assert submitted == [FILES] and asked == ["part-030.parquet", "part-050.parquet"]  # no longer the file listed
    _write(lake, 20, np.random.default_rng(9), np.array([key, 10**6]))
    submitted.clear(), asked.clear()
    want = ds.dataset(lake).to_table(filter=expr)
    assert want.num_rows == 2
    assert tables_equal(data.to_table(filter=expr), want)  # the rewritten file's row first, as pyarrow
    assert submitted == [FILES] and asked == ["part-020.parquet", "part-030.parquet", "part-050.parquet"]
    assert tables_equal(pa.Table.from_batches(list(data.to_batches(filter=expr)), want.schema), want)
    assert tables_equal(data.scanner(filter=expr).to_table(), want)
    assert data.count_rows(filter=expr) == 2
    assert tables_equal(data.to_table(filter=expr, columns=["status", "id"]), want.select(["status", "id"]))
    # keys in more files than a needle's route reads: all files stat'ed first (once), then planned
    others = [i for i in range(40, FILES) if i != 50][: plan_module.NEEDLE_MAX_FILES]  # with 50: one file too many
    many = pc.field("id").isin([key, *(_needle(lake, i) for i in others)])
    submitted.clear(), asked.clear()
    assert tables_equal(data.to_table(filter=many), ds.dataset(lake).to_table(filter=many))
    assert submitted == [FILES] and "part-020.parquet" in asked and "part-010.parquet" not in asked


def test_a_new_manifest_rebuilds_the_directory(lake):
    """Files indexed by a later build are listed once the dataset sees the new manifest; a
    commit of deletions is seen too."""
    data = arrowidx.dataset(lake)
    rng = np.random.default_rng(11)
    _write(lake, FILES, rng, np.array([10**7, 10**7 + 1]))  # a new file, not indexed yet
    data.refresh()
    assert data.to_table(filter=pc.field("id") == 10**7).num_rows == 1
    arrowidx.build(lake, OPTIONS, progress=False)
    data.refresh()
    plans = {p.path: p.status for p in data.explain(pc.field("id") == 10**7).files}
    assert plans[f"part-{FILES:03d}.parquet"] == "bitmap"
    assert data.to_table(filter=pc.field("id") == 10**7).num_rows == 1
    key = _needle(lake, 30)
    arrowidx.delete(lake, pc.field("id") == key, progress=False)
    data.refresh()
    assert data.to_table(filter=pc.field("id") == key).num_rows == 0
    assert data.to_table(filter=pc.field("id").isin([key, 10**7])).num_rows == 1


def test_few_files_or_many_keys_build_no_directory(lake, monkeypatch):
    key = _needle(lake, 3)
    schema_key = arrowidx.dataset(lake).manifest.files["part-000.parquet"].index.schema
    assert arrowidx.dataset(lake).planner.key_directory("id", schema_key) is not None
    monkeypatch.setattr(directory, "DIRECTORY_MAX_KEYS_PER_FILE", 10)  # the files hold 25 ids each
    data = arrowidx.dataset(lake)
    assert data.to_table(filter=pc.field("id") == key).num_rows == 1
    assert data.planner.key_directory("id", schema_key) is None
    monkeypatch.setattr(directory, "DIRECTORY_MAX_KEYS_PER_FILE", 10**6)
    monkeypatch.setattr(directory, "DIRECTORY_MIN_FILES", FILES + 1)
    assert arrowidx.dataset(lake).planner.key_directory("id", schema_key) is None


def _needle_rows(root: str, key: int, queue) -> None:
    queue.put(arrowidx.dataset(root).to_table(filter=pc.field("id") == key).num_rows)


def test_a_forked_child_reads_the_lake_too(lake):
    """A process forked after the parent started its I/O pool has none of its threads and
    must start its own (or read in its own thread), not wait forever."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    key = _needle(lake, 5)
    assert arrowidx.dataset(lake).to_table(filter=pc.field("id") == key).num_rows == 1
    facts.executor().submit(int).result()  # the parent's pool runs
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_needle_rows, args=(lake, key, queue))
    child.start()
    child.join(60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and queue.get(timeout=5) == 1
