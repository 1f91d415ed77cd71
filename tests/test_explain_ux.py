"""explain says why each file was kept or skipped, counts deleted rows of skipped files too;
FileIndex and IndexedDataset have a useful repr; a filter on a column that does not exist
is an error naming it (as pyarrow's own filter is)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.file_index import UnknownColumnError

from .test_lake import OPTIONS, write_lake


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("explain") / "lake")
    write_lake(root, files=4)
    arrowidx.build(root, OPTIONS, progress=False)
    arrowidx.delete(root, pc.field("status") == "lost", progress=False)
    return root


def test_explain_names_the_deciding_index_and_why(lake):
    data = arrowidx.dataset(lake)
    plan = data.explain(pc.field("id") == 10007)
    kept = [p for p in plan.files if not p.skipped]
    skipped = [p for p in plan.files if p.skipped]
    assert kept and skipped
    assert all("bloom filter: value may be present" in p.why for p in kept)
    # (the lake index also rules out a file whose bloom filter holds a false positive: issue 51)
    assert all(p.why.startswith(("ruled out by bloom-filter", "ruled out by lake-index")) for p in skipped)
    # deleted rows are reported for skipped files too (independently: status == 'lost' per file)
    for p in plan.files:
        assert p.deleted == pq.read_table(f"{lake}/{p.path}").filter(pc.field("status") == "lost").num_rows
    text = str(plan)
    assert "(id == 10007)" in text and "total:" in text and f"{plan.rows_deleted:,} deleted" in text


def test_plans_list_every_index_type_on_the_filter_columns(tmp_path):
    """A file planned for a filter names each index type stored on the columns the filter
    reads (here two on one column, one on another, none on a third), as the options asked."""
    root = str(tmp_path / "lake")
    write_lake(root, files=2)
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "id,status"}, progress=False)
    data = arrowidx.dataset(root)
    for expr, types in (
        (pc.field("id") == 10007, ["bitmap", "bloom-filter"]),
        ((pc.field("id") > 5) | (pc.field("status") == "x"), ["bitmap", "bloom-filter"]),
        (pc.field("status") == "x", ["bitmap"]),
        (pc.field("status") == "paid", ["bitmap"]),
    ):
        plans = data.plan(expr)
        assert plans and all(p.index_types == types for p in plans), (expr, [p.index_types for p in plans])


def test_explain_names_unindexed_columns(tmp_path):
    """A filter on a column without an index says so, naming the column; a filter only on
    indexed columns names none."""
    root = str(tmp_path / "lake")
    write_lake(root, files=2)
    arrowidx.build(root, {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "id"}, progress=False)
    data = arrowidx.dataset(root)
    for expr, unindexed in (
        ((pc.field("status") == "paid") & pc.field("amount").is_null(), "no index on amount"),
        (pc.field("amount") > 5, "no index on amount"),
        ((pc.field("user") == 3) | (pc.field("day") > pa.scalar(19003, pa.int32()).cast(pa.date32())), "no index on day, user"),
        ((pc.field("id") == 10007) & (pc.field("user") == 3), "no index on user"),
    ):
        plan = data.explain(expr)
        assert plan.files and all(unindexed in p.why for p in plan.files), (expr, [p.why for p in plan.files])
    plan = data.explain(pc.field("status") == "paid")
    assert all(p.why.startswith("bitmap:") and "no index on" not in p.why for p in plan.files), [p.why for p in plan.files]


def test_reprs(lake):
    data = arrowidx.dataset(lake)
    assert repr(data).startswith("IndexedDataset(") and "manifest v2" in repr(data) and "bitmap: status,day" in repr(data)
    index = data.lake.file_index(data.manifest.files[data.lake.files[0]])
    assert "status: bitmap" in repr(index) and "id: bloom-filter" in repr(index)


def test_evaluate_unknown_column_is_an_error():
    table = pa.table({"status": ["a", "b"]})
    index = arrowidx.FileIndex(arrowidx.write_file_index(table, {"file-index.bitmap.columns": "status"}), table.schema)
    with pytest.raises(UnknownColumnError, match="did you mean 'status'"):
        index.evaluate(pc.field("stauts") == "a")
    with pytest.raises(pa.ArrowInvalid):  # pyarrow itself refuses the same filter
        table.filter(pc.field("stauts") == "a")
    wider = arrowidx.FileIndex(arrowidx.write_file_index(table, {"file-index.bitmap.columns": "status"}),
                               pa.schema([("status", pa.string()), ("other", pa.int64())]))  # fmt: skip
    assert wider.evaluate(pc.field("other") == 1).kind == "remain"  # a column without an index: REMAIN
