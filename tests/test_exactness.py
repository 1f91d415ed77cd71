"""Issue 38, parts 1 and 3: answers are what the filter means on the data in memory
(``Table.filter``), even where pyarrow.dataset's own statistics pruning is wrong, and an
invalid filter fails the same way whether or not an index decides the files.

The reference in every test is ``Table.filter(expr)`` on the rows in memory (minus deleted
rows), never a file scan.
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

import arrowidx
import arrowidx.polars
from arrowidx.lake.read import statistics_groups
from arrowidx.paimon.stats import ColumnStats, may_match
from arrowidx.predicate import bind
from arrowidx.statistics import statistics_filter

from .differential_support import NAN, call, expressions, fuzz_settings, multiset

F32_NAN = pa.scalar(NAN, pa.float32())


def _kernel(table: pa.Table, expr) -> pa.Table:
    return table.filter(expr)


@pytest.fixture
def nan_lake(tmp_path):
    """``../shared/repro/10.py``: row groups of 2 whose min/max cannot see NaN."""
    table = pa.table({
        "f32": pa.array([1.0, 2.0, NAN, None, 3.0, 4.0], pa.float32()),
        "f64": pa.array([21.53, 21.53, -1.0, -1.0, NAN, -1.0], pa.float64()),
    })  # fmt: skip
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=2)
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "f64", "file-index.range-bitmap.columns": "f32,f64"}, progress=False)
    return str(tmp_path), table


NAN_FILTERS = [
    ~(pc.field("f32") <= F32_NAN),
    pc.field("f64") != -1.0,
    (~(pc.field("f32") <= F32_NAN)) & pc.field("f64").isin([float("inf"), 21.53]),
    ~(pc.field("f64") < 0),
    pc.field("f64").isin([NAN]),
    pc.is_nan(pc.field("f64")),
    pc.field("f64") > 0,
]


@pytest.mark.parametrize("expr", NAN_FILTERS, ids=[str(e)[:40] for e in NAN_FILTERS])
def test_nan_rows_are_kept_where_the_kernel_selects_them(nan_lake, expr):
    root, table = nan_lake
    expected = _kernel(table, expr)
    data = arrowidx.dataset(root)
    assert multiset(data.to_table(filter=expr)) == multiset(expected)
    assert data.count_rows(filter=expr) == expected.num_rows
    assert multiset(arrowidx.dataset(root).to_table(filter=expr, columns=["f64"])) == multiset(expected.select(["f64"]))


def test_a_delete_with_a_nan_blind_filter_deletes_every_matching_row(nan_lake):
    root, table = nan_lake
    expr = ~(pc.field("f32") <= F32_NAN)
    report = arrowidx.delete(root, expr, progress=False)
    assert report.rows_deleted == _kernel(table, expr).num_rows == 5
    assert arrowidx.dataset(root).count_rows() == 1


def test_an_in_list_of_another_type_is_cast_as_the_kernel_casts_it(tmp_path):
    """``../shared/repro/11.py``: the kernel casts the timestamps to date32; statistics must not
    compare them uncast."""
    table = pa.table({"rid": pa.array([1, 2, 3]), "day": pa.array([0, 1, 2932896], pa.date32())})
    pq.write_table(table, tmp_path / "part-0.parquet")
    arrowidx.build(str(tmp_path), {"file-index.bitmap.columns": "rid"}, progress=False)
    expr = pc.field("day").isin(pa.array([253402214400001, None], pa.timestamp("ms")))
    expected = _kernel(table, expr)
    assert expected.num_rows == 1
    assert multiset(arrowidx.dataset(str(tmp_path)).to_table(filter=expr)) == multiset(expected)


def test_zero_in_an_in_list_keeps_zero_rows(tmp_path):
    """pyarrow's statistics rule out ``x IN (0.0)`` for a row group of 0.0s (min -0.0, max 0.0)."""
    table = pa.table({"x": pa.array([0.0, 0.0, 1.0, 2.0])})
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=2)
    arrowidx.build(str(tmp_path), {"file-index.bloom-filter.columns": "x"}, progress=False)
    for expr in (pc.field("x").isin([0.0]), pc.field("x").isin([-0.0]), pc.field("x").isin([0.0, 2.0])):
        assert multiset(arrowidx.dataset(str(tmp_path)).to_table(filter=expr)) == multiset(_kernel(table, expr)), str(expr)


# ------------------------------------------------------------------------------------------
# The rule itself: what it hands to statistics never rules out a row group holding a match
# ------------------------------------------------------------------------------------------

COLUMNS = ["i", "f", "g", "s", "d", "ts"]


@st.composite
def sorted_tables(draw):
    """Rows in sorted runs and small row groups: the layouts where min/max prune most."""
    from .differential_support import BY_NAME

    n = draw(st.integers(1, 24))
    columns = {c: draw(st.lists(st.sampled_from(BY_NAME[c].pool), min_size=n, max_size=n)) for c in COLUMNS}
    table = pa.table({c: pa.array(v, BY_NAME[c].type) for c, v in columns.items()})
    key = draw(st.sampled_from(COLUMNS + [None]))
    if key is not None:
        table = table.take(pc.sort_indices(table, sort_keys=[(key, "ascending")]))
    return table, draw(st.sampled_from([1, 2, 3, 5]))


@fuzz_settings(120)
@given(sorted_tables(), st.data())
def test_statistics_never_rule_out_a_matching_row_group(tmp_path_factory, case, data):
    table, group_rows = case
    path = os.path.join(tmp_path_factory.mktemp("rule"), "f.parquet")
    pq.write_table(table, path, row_group_size=group_rows)
    fragment = next(iter(ds.dataset(path).get_fragments()))
    fragment.ensure_complete_metadata()
    groups = list(range(fragment.num_row_groups))
    offsets = np.cumsum([0] + [rg.num_rows for rg in fragment.row_groups])
    for _ in range(4):
        expr = data.draw(expressions(COLUMNS))
        expected, error = call(_kernel, table.append_column("__row", pa.array(range(table.num_rows))), expr)
        if error is not None:
            continue
        kept = set(statistics_groups(fragment, expr, table.schema, groups))
        for row in expected.column("__row").to_pylist():
            group = int(np.searchsorted(offsets, row, side="right") - 1)
            assert group in kept, f"{expr}: row group {group} holds matching row {row} but statistics ruled it out"
        sound = statistics_filter(expr, table.schema)
        if sound.exact:  # then pyarrow's scanner may filter with it: it must mean the same
            same = table if sound.expression is None else _kernel(table, sound.expression)
            assert multiset(same) == multiset(_kernel(table, expr)), f"{expr}: exact part {sound.expression} differs"


def test_the_rule_keeps_what_statistics_can_judge():
    schema = pa.schema([("f", pa.float64()), ("i", pa.int64()), ("s", pa.string())])
    kept = statistics_filter((pc.field("i") > 5) & (pc.field("f") != 1.0), schema)
    assert not kept.exact and kept.expression.equals(pc.field("i") > pa.scalar(5, pa.int64()))
    exact = statistics_filter((pc.field("i") != 5) & (pc.field("s") == "a") & (pc.field("f") >= 1.5), schema)
    assert exact.exact
    assert statistics_filter(~(pc.field("f") > 1.0), schema).expression is None
    assert statistics_filter(pc.field("f") == NAN, schema).expression is None
    ranged = statistics_filter(pc.field("f").isin([3.0, -1.0, 0.0]), schema)
    assert not ranged.exact and ranged.expression.equals((pc.field("f") >= pa.scalar(-1.0)) & (pc.field("f") <= pa.scalar(3.0)))


def test_paimon_manifest_statistics_follow_the_rule():
    """A file whose non-NaN values are all -1.0 may still hold a NaN row, TRUE for ``!=``."""
    stats = {"f": ColumnStats(-1.0, -1.0, 0, 3)}
    schema = pa.schema([("f", pa.float64())])
    for expr in (pc.field("f") != -1.0, ~(pc.field("f") <= 0), pc.field("f").isin([NAN])):
        assert may_match(bind(expr, schema), stats)[0], str(expr)
    assert not may_match(bind(pc.field("f") > 0, schema), stats)[0]  # FALSE for NaN too: may skip


# ------------------------------------------------------------------------------------------
# Part 3: an invalid filter raises what pyarrow raises, indexed or not
# ------------------------------------------------------------------------------------------

INVALID = [
    pc.field("ts") != pa.scalar(5, pa.timestamp("ms", tz="UTC")),
    pc.field("ts") == pa.scalar(5, pa.timestamp("ms", tz="UTC")),
    pc.field("s") < 1,
    pc.field("s") == 5,
    pc.field("id") == "5",
    pc.field("nope") == 1,
    pc.field("id"),
]


@pytest.fixture
def invalid_lake(tmp_path):
    """``../shared/repro/12.py``, with one indexed and one unindexed file per column."""
    table = pa.table({"ts": pa.array([0, 10**12], pa.timestamp("ms")), "s": pa.array(["a", "b"]), "id": pa.array([1, 2])})
    pq.write_table(table, tmp_path / "part-0.parquet")
    arrowidx.build(str(tmp_path), {"file-index.range-bitmap.columns": "ts", "file-index.bitmap.columns": "s,id"}, progress=False)
    return str(tmp_path), table


@pytest.mark.parametrize("expr", INVALID, ids=[str(e)[:40] for e in INVALID])
def test_an_invalid_filter_raises_what_pyarrow_raises(invalid_lake, expr):
    root, table = invalid_lake
    _, expected = call(_kernel, table, expr)
    assert expected is not None
    data = arrowidx.dataset(root)
    for name, run in [
        ("to_table", lambda: data.to_table(filter=expr)),
        ("count_rows", lambda: data.count_rows(filter=expr)),
        ("to_table(columns)", lambda: data.to_table(filter=expr, columns=["id"])),
        ("explain", lambda: data.explain(expr)),
        ("delete", lambda: arrowidx.delete(root, expr, progress=False)),
    ]:
        _, got = call(run)
        # pyarrow's own class (an unknown column: arrowidx's UnknownColumnError, which is one too)
        assert type(got) is type(expected) or (isinstance(got, type(expected)) and isinstance(got, arrowidx.ArrowIdxError)), \
            f"{name}: {got!r}, pyarrow: {expected!r}"
    assert arrowidx.dataset(root).count_rows() == 2  # nothing was deleted


def test_an_invalid_polars_filter_raises_what_polars_raises(invalid_lake):
    root, _ = invalid_lake
    frame = pl.read_parquet(os.path.join(root, "part-0.parquet"))
    for expr in (pl.col("s") < 1, pl.col("id") == "5"):
        _, expected = call(frame.filter, expr)
        _, got = call(lambda e=expr: arrowidx.polars.scan(root).filter(e).collect())
        assert expected is not None and type(got) is type(expected), f"{expr}: {got!r}, Polars: {expected!r}"
