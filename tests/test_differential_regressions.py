"""Named regressions for the bugs differential testing found (issues 15, 54), each checked
against an independent reference: ``Table.filter`` / pyarrow.compute / Polars'
``DataFrame.filter`` on the same rows in memory (not a file scan with the filter, whose
statistics pruning drops NaN rows)."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import arrowidx

pl = pytest.importorskip("polars")
from arrowidx import polars as apl  # noqa: E402


def _canon(v):
    return repr(v) if isinstance(v, float) else v  # NaN equals NaN, -0.0 differs from 0.0


def _rows(table: pa.Table) -> Counter:
    return Counter(tuple(_canon(v) for v in r.values()) for r in table.to_pylist())


def _lake(tmp_path, table: pa.Table, options: dict, name: str = "part-0.parquet") -> str:
    root = str(tmp_path)
    pq.write_table(table, os.path.join(root, name))
    arrowidx.build(root, options, progress=False)
    return root


def _same_as_pyarrow(root: str, expr, dataset_filter: bool = False) -> None:
    """arrowidx's answer is ``Table.filter`` on the rows in memory (``dataset_filter``: a
    pyarrow.dataset filter over those rows in memory, which simplifies ``NULL and X``
    without evaluating ``X``; still no Parquet statistics)."""
    files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".parquet"))
    rows = ds.dataset(files).to_table()
    expected = ds.dataset(rows).to_table(filter=expr) if dataset_filter else rows.filter(expr)
    got = arrowidx.dataset(root).to_table(filter=expr)
    assert _rows(got) == _rows(expected), str(expr)
    assert arrowidx.dataset(root).count_rows(filter=expr) == expected.num_rows


def test_polars_filter_on_indexed_and_unindexed_column(tmp_path):
    """01: a filter ANDing an indexed and a non-indexed column is bound once per index schema."""
    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": pa.array([10, 20, 30], pa.int64())})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "a"})
    pred = (pl.col("a") == 1) & (pl.col("b") == 10)
    expected = pl.read_parquet(os.path.join(root, "*.parquet")).filter(pred)
    assert apl.scan(root).filter(pred).collect().to_dicts() == expected.to_dicts()
    assert apl.explain(root, pred).files_total == 1


def test_polars_scan_after_a_file_is_removed(tmp_path):
    """02: a dataset cached per path is refreshed before the Polars schema is derived."""
    root = str(tmp_path)
    pq.write_table(pa.table({"a": [0]}), os.path.join(root, "part-0.parquet"))
    pq.write_table(pa.table({"a": [1]}), os.path.join(root, "part-1.parquet"))
    arrowidx.build(root, {"file-index.bitmap.columns": "a"}, progress=False)
    assert sorted(apl.scan(root).collect()["a"].to_list()) == [0, 1]
    os.remove(os.path.join(root, "part-0.parquet"))
    expected = pl.read_parquet(os.path.join(root, "*.parquet"))["a"].to_list()
    assert apl.scan(root).collect()["a"].to_list() == expected == [1]
    assert apl.scan(root).filter(pl.col("a") >= 0).collect()["a"].to_list() == [1]


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("x") < float("nan"),
        pc.field("x") <= float("nan"),
        pc.field("x") > -0.0,
        pc.field("x") != -0.0,
        ~(pc.field("x") <= -0.0),
        pc.field("x") >= -0.0,
        pc.field("x") == float("nan"),
    ],
    ids=str,
)
def test_nan_and_negative_zero_literals_are_never_exact(tmp_path, expr):
    """03: a NaN / -0.0 literal makes a float comparison inexact even when the data has neither."""
    table = pa.table({"x": pa.array([0.0, 1.5, -2.0, None], pa.float64())})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "x", "file-index.range-bitmap.columns": "x"})
    _same_as_pyarrow(root, expr)


def test_non_kleene_and_or_are_not_kleene(tmp_path):
    """04: pyarrow's plain "and"/"or" (NULL if any input is NULL) are not bound as exact Kleene ones."""
    table = pa.table({"a": pa.array([1, 2, 3, None], pa.int64()), "b": pa.array([None, 5, 6, 5], pa.int64())})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "a,b"})
    for name in ("or", "and", "or_kleene", "and_kleene"):
        e = pc.Expression._call(name, [pc.field("a") == 1, pc.field("b") == 5])
        _same_as_pyarrow(root, e)
        _same_as_pyarrow(root, ~e)
        # a FileIndex answer keeps every row pyarrow selects
        index = arrowidx.FileIndex(arrowidx.write_file_index(table, {"file-index.bitmap.columns": "a,b"}), table.schema)
        mask = index.evaluate(e).to_mask(table.num_rows)
        assert table.filter(mask).filter(e).num_rows == table.filter(e).num_rows


@pytest.mark.parametrize("unit", ["us", "ns"])
def test_top_n_on_lossy_key_keeps_every_tie(unit):
    """05: time64[us|ns] keys are milliseconds: TopN returns every row tied on the key."""
    values = [dt.time(0, 0, 0, 100), dt.time(0, 0, 0, 900), dt.time(0, 0, 0, 500), dt.time(0, 0, 1)]
    t = pa.table({"t": pa.array(values, pa.time64(unit))})
    index = arrowidx.FileIndex(arrowidx.write_file_index(t, {"file-index.range-bitmap.columns": "t"}), t.schema)
    for order in ("ascending", "descending"):
        res = index.evaluate_top_n([("t", order)], 1)
        expected = t.take(pc.sort_indices(t, sort_keys=[("t", order)]))["t"][0]
        kept = t.filter(res.to_mask(t.num_rows))
        top = kept.take(pc.sort_indices(kept, sort_keys=[("t", order)]))["t"][0]
        assert top == expected


def test_explain_with_long_non_ascii_is_in(tmp_path):
    """06: explain does not crash on pyarrow's truncated Expression.__str__."""
    value = "a" + "é" * 60
    root = _lake(tmp_path, pa.table({"s": ["x", value]}), {"file-index.bitmap.columns": "s"})
    e = pc.field("s").isin([value])
    text = str(arrowidx.dataset(root).explain(e))
    assert "is_in" in text
    assert arrowidx.dataset(root).to_table(filter=e).num_rows == ds.dataset(root).to_table().filter(e).num_rows == 1


@pytest.mark.parametrize(
    "column, pred",
    [
        (pa.array([2**53 + 1], pa.int64()), pl.col("i") == float(2**53)),
        (pa.array([2**53 + 1], pa.int64()), pl.col("i") <= float(2**53)),
        (pa.array([2**53 + 1], pa.int64()), pl.col("i").cast(pl.Decimal(20, 0)) >= float(2**53 + 2)),
        (pa.array([decimal.Decimal("1.00000000000000001")], pa.decimal128(18, 17)), pl.col("i") == 1.0),
        (pa.array([decimal.Decimal("0.1")], pa.decimal128(5, 1)), pl.col("i") == 0.1),
    ],
    ids=lambda v: str(v) if isinstance(v, pl.Expr) else str(v.type),
)
def test_polars_int_and_decimal_against_float_literal(tmp_path, column, pred):
    """07: Polars compares in Float64; translate/explain keep every file the Polars query reads from."""
    kind = "bsi" if pa.types.is_decimal(column.type) and column.type.precision > 18 else "range-bitmap"
    root = _lake(tmp_path, pa.table({"i": column}), {f"file-index.{kind}.columns": "i"}, "a.parquet")
    expected = pl.read_parquet(os.path.join(root, "*.parquet")).filter(pred)
    assert apl.scan(root).filter(pred).collect().to_dicts() == expected.to_dicts()
    report = apl.explain(root, pred)
    if expected.height:
        assert report.files_skipped == 0
    translation = apl.translate(pred, pq.read_schema(os.path.join(root, "a.parquet")))
    if translation.expression is not None:
        kept = pq.read_table(os.path.join(root, "a.parquet")).filter(translation.expression)
        assert kept.num_rows >= expected.height


def test_refilter_simplifies_like_pyarrow_dataset(tmp_path):
    """08: the re-filter is pyarrow.dataset's filter: ``NULL and X`` does not evaluate X."""
    table = pa.table({"i": pa.array([2**62, 1], pa.int64()), "s": ["a", "b"]})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "s"})
    e = (pc.field("i") == pa.scalar(None, pa.int64())) & (pc.field("i") > 1.5)
    _same_as_pyarrow(root, e, dataset_filter=True)
    _same_as_pyarrow(root, e & (pc.field("s") == "a"), dataset_filter=True)


@pytest.mark.parametrize("options", [{"range-bitmap": "f,d"}, {"bsi": "d", "bitmap": "f"}], ids=str)
def test_decimal_and_float32_literals_compare_in_float64(tmp_path, options):
    """09: a decimal literal against float32 (and float32 against decimal) compares in float64."""
    table = pa.table({
        "f": pa.array([17.35, 1.0, np.nan, None], pa.float32()),
        "d": pa.array([decimal.Decimal("17.35"), decimal.Decimal("1.00"), None, decimal.Decimal("17.40")], pa.decimal128(10, 2)),
    })  # fmt: skip
    options = {f"file-index.{k}.columns": v for k, v in options.items()}
    root = _lake(tmp_path, table, options)
    d = pa.scalar(decimal.Decimal("17.35"))
    f32 = pa.scalar(17.35, pa.float32())
    for e in [pc.field("f") <= d, pc.field("f") == d, ~(pc.field("f") == d), pc.field("f") > d,
              pc.field("d") == f32, pc.field("d") < f32, ~(pc.field("d") >= f32), pc.field("d") == pa.scalar(1.0, pa.float32())]:  # fmt: skip
        _same_as_pyarrow(root, e)
        index = arrowidx.FileIndex(arrowidx.write_file_index(table, options), table.schema)
        kept = table.filter(index.evaluate(e).to_mask(table.num_rows))
        assert kept.filter(e).num_rows == table.filter(e).num_rows, str(e)


@pytest.mark.parametrize("expr", [pc.scalar(True), pc.scalar(False), pc.scalar(pa.scalar(None, pa.bool_()))], ids=str)
def test_constant_filter_on_a_file_with_deleted_rows(tmp_path, expr):
    """Found by the suite: a filter reading no column (a constant) on a file with deleted rows
    read zero columns, lost the row count and raised (numpy broadcast error)."""
    root = str(tmp_path)
    pq.write_table(pa.table({"rid": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}), os.path.join(root, "part-0.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "i"}, progress=False)
    pq.write_table(pa.table({"rid": pa.array(range(11), pa.int64()), "i": [0] * 11}), os.path.join(root, "part-1.parquet"), row_group_size=1)
    arrowidx.delete(root, pc.field("rid").isin([1]), progress=False)
    expected = ds.dataset(root).to_table().filter(expr).filter(pc.field("rid") != 1)
    assert _rows(arrowidx.dataset(root).to_table(filter=expr)) == _rows(expected)
    assert arrowidx.dataset(root).count_rows(filter=expr) == expected.num_rows


@pytest.mark.parametrize("closed", ["both", "left", "right", "none"])
def test_polars_is_between_with_a_null_bound_is_not_translated_as_exact(tmp_path, closed):
    """Found by the suite (long profile): ``~b.is_between(None, True)`` was translated as an exact
    ``~(NULL and b < TRUE)``, which keeps rows the Polars query does not return."""
    root = _lake(tmp_path, pa.table({"b": [True, False, None]}), {"file-index.bitmap.columns": "b"})
    pred = ~pl.col("b").is_between(None, True, closed=closed)
    expected = pl.read_parquet(os.path.join(root, "*.parquet")).filter(pred)
    assert apl.scan(root).filter(pred).collect().to_dicts() == expected.to_dicts()
    translation = apl.translate(pred, pq.read_schema(os.path.join(root, "part-0.parquet")))
    if translation.exact and translation.expression is not None:
        assert pq.read_table(os.path.join(root, "part-0.parquet")).filter(translation.expression).num_rows == expected.height


def test_string_view_is_in_value_set(tmp_path):
    """Found by the suite (issue 54): an IN list of string_view values (Polars sends one for a
    string_view column) raised pyarrow's "no kernel" error while binding (its NULLs were
    dropped with a filter kernel pyarrow 26 lacks for string_view); the scan answers as
    Polars does, and the index as the same strings typed string."""
    views = pa.array(["a", "b", None, "a", "é", ""], pa.string_view())
    table = pa.table({"rid": pa.array(range(6), pa.int64()), "sv": views})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "sv"})
    for values in (["a", None], ["é", ""], ["zz"]):
        pred = pl.col("sv").is_in(pl.Series(values, dtype=pl.String).implode())
        expected = pl.from_arrow(table).filter(pred)
        assert apl.scan(root).filter(pred).collect().to_dicts() == expected.to_dicts(), values
        index = arrowidx.FileIndex(arrowidx.write_file_index(table, {"file-index.bitmap.columns": "sv"}), table.schema)
        result = index.evaluate(pc.field("sv").isin(pa.array(values, pa.string_view())))
        truth = table.cast(pa.schema([("rid", pa.int64()), ("sv", pa.string())])).filter(pc.field("sv").isin(pa.array(values, pa.string())))
        kept = set(np.flatnonzero(result.to_mask(6).to_numpy(zero_copy_only=False)).tolist())
        assert set(truth.column("rid").to_pylist()) == kept, values


def test_sql_in_list_with_a_double_compares_in_double(tmp_path):
    """Found by the Spark differential (issue 54), fixed by issue 48: SQL (Spark, DuckDB)
    compares an IN list mixing integers and a DOUBLE on a BIGINT column in DOUBLE."""
    values = [2**53, 2, 0, -1]
    root = _lake(tmp_path, pa.table({"i": pa.array(values, pa.int64())}), {"file-index.bitmap.columns": "i"})
    text = "i NOT IN (9007199254740993, -1, CAST('NaN' AS DOUBLE))"
    in_double = {float(9007199254740993), -1.0}  # NaN equals nothing
    expected = sorted(v for v in values if float(v) not in in_double)
    assert expected == [0, 2]
    assert sorted(arrowidx.dataset(root).to_table(filter=text).column("i").to_pylist()) == expected


def test_sql_in_list_on_a_float_column_means_the_same_as_equals(tmp_path):
    """Found by the Spark differential (issue 54): `g IN (17.35)` selects what `g = 17.35`
    selects. SQL text means DuckDB's meaning (issue 48), where a FLOAT column and a decimal
    literal compare in FLOAT (17.35 matches 17.35f); Spark compares them in DOUBLE (a
    documented difference, docs/guide.md)."""
    table = pa.table({"g": pa.array([17.35, -0.0, 1.5, float("nan"), None], pa.float32())})
    root = _lake(tmp_path, table, {"file-index.bitmap.columns": "g"})
    equals = table.filter(pc.field("g") == pa.scalar(17.35, pa.float32())).column("g").to_pylist()
    assert len(equals) == 1
    assert arrowidx.dataset(root).to_table(filter="g = 17.35").column("g").to_pylist() == equals
    assert arrowidx.dataset(root).to_table(filter="g IN (17.35)").column("g").to_pylist() == equals
