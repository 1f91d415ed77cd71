"""arrowidx.polars: Polars lazy scans of indexed datasets (issue 6).

Expected answers always come from plain Polars on the rows of the same Parquet files read
into memory (``DataFrame.filter``; not ``pl.scan_parquet`` with the filter, whose statistics
are not the reference), with deleted rows removed by an independent filter on the ids that
were deleted (never from arrowidx's own output), or, for the translator, from evaluating
the Polars expression itself.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

pl = pytest.importorskip("polars")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from polars.testing import assert_frame_equal  # noqa: E402

import arrowidx  # noqa: E402
from arrowidx import polars as apl  # noqa: E402
from arrowidx.polars import plan as polars_plan  # noqa: E402
from arrowidx.polars import source  # noqa: E402
from arrowidx.polars.count import COUNT_COLUMN  # noqa: E402

NAN, INF = float("nan"), float("inf")
T0 = dt.datetime(2024, 1, 1)

# ------------------------------------------------------------------------------------------
# Expressions: a generator over columns with literal pools
# ------------------------------------------------------------------------------------------


def rows_in_memory(pattern: str) -> pl.LazyFrame:
    """Every row of the Parquet files ``pattern`` matches, read into memory (in path order),
    as a LazyFrame over that DataFrame: a filter on it is ``DataFrame.filter``'s meaning,
    with no Parquet statistics deciding anything."""
    return pl.read_parquet(pattern).lazy()


def _lit(value):
    return value() if callable(value) else pl.lit(value)


def leaves(
    pools: dict[str, list], numeric: set[str], floats: set[str], bools: set[str], strings: set[str]
):
    """Leaf predicates: comparisons (both operand orders), is_in, is_between, null tests,
    boolean columns, and parts the translator cannot read (which must still be applied)."""
    names = sorted(pools)

    @st.composite
    def leaf(draw):
        c = draw(st.sampled_from(names))
        col = pl.col(c)
        pool = pools[c]
        kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "between", "null", "other"]))
        if kind == "cmp":
            op = draw(
                st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "eq_missing", "ne_missing"])
            )
            v = _lit(draw(st.sampled_from(pool)))
            if op == "eq_missing":
                return col.eq_missing(v)
            if op == "ne_missing":
                return col.ne_missing(v)
            flip = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
            ops = {
                "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
                "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
            }  # fmt: skip
            if draw(st.booleans()):
                return ops[flip[op]](v, col)  # literal on the left
            return ops[op](col, v)
        if kind == "in":
            values = draw(
                st.lists(st.sampled_from([v for v in pool if not callable(v)]), max_size=4)
            )
            if draw(st.booleans()):
                values.append(None)
            values = pl.Series(values, dtype=_dtype_of[c], strict=False)
            return col.is_in(pl.lit(values.implode()), nulls_equal=draw(st.booleans()))
        if kind == "between":
            lo, hi = _lit(draw(st.sampled_from(pool))), _lit(draw(st.sampled_from(pool)))
            return col.is_between(
                lo, hi, closed=draw(st.sampled_from(["both", "left", "right", "none"]))
            )
        if kind == "null":
            if c in floats and draw(st.booleans()):
                return col.is_nan() if draw(st.booleans()) else col.is_not_nan()
            return col.is_null() if draw(st.booleans()) else col.is_not_null()
        # parts no translation reads: applied by Polars, never used for pruning
        if c in bools:
            return col if draw(st.booleans()) else ~col
        if c in strings:
            return col.str.len_bytes() > draw(st.integers(0, 3))
        if c in numeric:
            other = draw(st.sampled_from(sorted(numeric)))
            return (
                (col > pl.col(other))
                if draw(st.booleans())
                else (col.abs() < _lit(draw(st.sampled_from(pool))))
            )
        return col.cast(pl.String).str.len_bytes() > 3

    return leaf()


def predicates(leaf, depth: int = 3):
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda p: p[0] & p[1]),
            st.tuples(inner, inner).map(lambda p: p[0] | p[1]),
            inner.map(lambda p: ~p),
        ),
        max_leaves=depth + 2,
    )


_dtype_of: dict[str, pl.DataType] = {}

# ------------------------------------------------------------------------------------------
# 1. The translator against Polars' own evaluation, row for row
# ------------------------------------------------------------------------------------------


def _frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    n = 64

    def pick(values, dtype):
        return pl.Series([values[i] for i in rng.integers(0, len(values), n)], dtype=dtype)

    return pl.DataFrame(
        {
            "i8": pick([-128, -1, 0, 1, 5, 127, None], pl.Int8),
            "i64": pick([-(2**62), -3, 0, 2, 7, 2**53 + 1, None], pl.Int64),
            "u8": pick([0, 1, 200, 255, None], pl.UInt8),
            "f64": pick([0.0, -0.0, NAN, INF, -INF, 1.5, -2.25, 7.0, None], pl.Float64),
            "f32": pick([0.1, 0.5, NAN, -0.0, 0.0, 3.0e38, -INF, None], pl.Float32),
            "s": pick(["", "a", "ab", "b", "é", None], pl.String),
            "b": pick([True, False, None], pl.Boolean),
            "d": pick(
                [dt.date(2020, 1, 1), dt.date(2020, 1, 2), dt.date(1969, 12, 31), None], pl.Date
            ),
            "t": pick(
                [T0, T0 + dt.timedelta(microseconds=1500), T0 - dt.timedelta(days=400), None],
                pl.Datetime("us"),
            ),
            "tz": pick([T0, T0 + dt.timedelta(hours=5), None], pl.Datetime("ns"))
            .dt.replace_time_zone("UTC")
            .dt.convert_time_zone("Europe/Paris"),
            "x": pick(
                [Decimal("1.25"), Decimal("-3.50"), Decimal("0.00"), Decimal("99999999.99"), None],
                pl.Decimal(10, 2),
            ),
            "dur": pick(
                [dt.timedelta(milliseconds=3), dt.timedelta(0), dt.timedelta(days=-1), None],
                pl.Duration("ms"),
            ),
        }
    )


FRAME = _frame()
UTC = dt.timezone.utc
FRAME_POOLS: dict[str, list] = {
    "i8": [0, 1, -1, 127, -128, 300, -300, 2.5, -0.5, NAN, INF, 2**40, Decimal("1.0")],
    "i64": [2, 7, -3, 0, 2**53 + 1, 2**53, 2.5, 1e300, -(2**62), 2**63 - 1, NAN],
    "u8": [0, 1, 255, 256, -1, 199.5, lambda: pl.lit(200, dtype=pl.UInt8)],
    "f64": [0.0, -0.0, NAN, INF, -INF, 1.5, -2.25, 7, 2**60, lambda: pl.lit(0.5, dtype=pl.Float32)],
    "f32": [0.1, 0.5, NAN, -0.0, 3.0e38, 1e39, lambda: pl.lit(0.1, dtype=pl.Float32), lambda: pl.lit(0.1, dtype=pl.Float64)],
    "s": ["", "a", "ab", "aa", "b", "é", "zz"],
    "b": [True, False],
    "d": [dt.date(2020, 1, 1), dt.date(1969, 12, 31), dt.datetime(2020, 1, 1, 12), dt.datetime(2020, 1, 2)],
    "t": [T0, T0 + dt.timedelta(microseconds=1500), dt.date(2024, 1, 1), lambda: pl.lit(T0 + dt.timedelta(microseconds=1)).dt.cast_time_unit("ms")],
    "tz": [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 5, tzinfo=UTC), dt.datetime(2024, 1, 1, 4, 59, 59, 999999, tzinfo=UTC)],
    "x": [Decimal("1.25"), Decimal("1.255"), Decimal("-3.5"), 0, 2, Decimal("99999999.99"), Decimal("123456789012.5"), 1.25],
    "dur": [dt.timedelta(milliseconds=3), dt.timedelta(0), dt.timedelta(microseconds=2500), dt.timedelta(days=-1)],
}  # fmt: skip
_dtype_of.update(FRAME.schema)
FRAME_TABLE = FRAME.to_arrow()


def _arrow_eval(table: pa.Table, expr: pc.Expression) -> list:
    return ds.dataset(table).to_table(columns={"m": expr}).column("m").to_pylist()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    predicates(
        leaves(
            FRAME_POOLS,
            numeric={"i8", "i64", "u8", "f64", "f32", "x"},
            floats={"f64", "f32"},
            bools={"b"},
            strings={"s"},
        )
    )
)
def test_translation_matches_polars_row_for_row(expr):
    try:
        want = FRAME.select(expr.alias("m"))["m"].to_list()
    except Exception:  # noqa: BLE001 - a query Polars itself rejects
        assume(False)
    tr = apl.translate(expr, FRAME_TABLE.schema)
    assert tr.exact == (not tr.dropped)
    if tr.expression is None:
        assert tr.dropped
        return
    got = _arrow_eval(FRAME_TABLE, tr.expression)
    if tr.exact:
        assert got == want, f"{expr} -> {tr.expression}"
    # Always: every row Polars keeps, the translation keeps (a superset for pruning).
    missing = [i for i, (w, g) in enumerate(zip(want, got)) if w is True and g is not True]
    assert not missing, f"{expr} -> {tr.expression}: rows {missing} lost"


def _exact(expr, schema=FRAME_TABLE.schema):
    tr = apl.translate(expr, schema)
    assert tr.exact, tr
    return tr.expression


@pytest.mark.parametrize(
    "expr",
    [
        pl.col("i64") > 2,
        3 < pl.col("i64"),
        pl.col("i64").is_in([2, 7, None]),
        pl.col("i64").is_in([2, None], nulls_equal=True),
        pl.col("i64").is_between(0, 7, closed="left"),
        ~pl.col("s").is_null() & pl.col("s").is_not_null(),
        pl.col("s") >= "ab",
        pl.col("b") == True,  # noqa: E712
        pl.col("b"),
        ~pl.col("b"),
        pl.col("f64") > 0.0,
        pl.col("f64").is_in([-0.0]),
        pl.col("d") == dt.date(2020, 1, 1),
        pl.col("d").cast(pl.Datetime("us")) < dt.datetime(2020, 1, 1, 12),
        pl.col("t") <= T0,
        pl.col("tz")
        > pl.lit(dt.datetime(2024, 1, 1, 4))
        .dt.replace_time_zone("UTC")
        .dt.convert_time_zone("Europe/Paris")
        .dt.cast_time_unit("ns"),
        pl.col("x") == Decimal("1.25"),
        pl.col("x").cast(pl.Decimal(12, 3)) < Decimal("1.255"),
        pl.col("dur") > pl.lit(dt.timedelta(milliseconds=2)).cast(pl.Duration("ms")),
        pl.col("i64").cast(pl.Float64) > 2.5,
        pl.col("f32").cast(pl.Float64) > 0.1,
        pl.col("u8").cast(pl.Int16) < 300,
        pl.when(pl.col("u8").is_not_null()).then(True).otherwise(None),
        pl.when(pl.col("u8").is_null()).then(None).otherwise(False),
    ],
    ids=str,
)
def test_literal_types_translate_exactly(expr):
    e = _exact(expr)
    assert _arrow_eval(FRAME_TABLE, e) == FRAME.select(expr.alias("m"))["m"].to_list()


@pytest.mark.parametrize(
    "expr",
    [
        pl.col("u8") < 300,  # Polars decides how to cast: the pushed form has the cast
        pl.col("i64") > 2.5,
        pl.col("x") < Decimal("1.255"),
        pl.col("d") < dt.datetime(2020, 1, 1, 12),
        pl.col("t") > pl.lit(T0).dt.cast_time_unit("ns"),  # mixed units compare truncated
        pl.col("f32") > 0.1,  # a dynamic float literal is rounded to float32 first
    ],
    ids=str,
)
def test_literals_not_of_the_column_type_are_not_guessed(expr):
    assert apl.translate(expr, FRAME_TABLE.schema).expression is None


@pytest.mark.parametrize(
    "expr",
    [
        pl.col("i").is_between(2.5, 2**53),
        pl.col("i").is_between(-(2**53), -2.5),
        pl.col("i").is_between(2.5, 2**53, closed="none"),
    ],
    ids=["upper-int", "lower-int", "open"],
)
def test_is_between_with_one_float_bound_compares_both_in_float64(expr):
    """Polars evaluates ``is_between`` in the supertype of the column and both bounds: with one
    float bound, 2**53 + 1 rounds to 2**53 and is kept. The translation must keep every row
    Polars keeps (found by the row-for-row property test)."""
    table = pa.table({"i": pa.array([2**53, 2**53 + 1, 2**53 + 2, 3, 2, -(2**53) - 1, -3], pa.int64())})
    want = pl.DataFrame(table).select(expr.alias("m"))["m"].to_list()
    tr = apl.translate(expr, table.schema)
    if tr.expression is None:
        return
    got = _arrow_eval(table, tr.expression)
    lost = [i for i, (w, g) in enumerate(zip(want, got)) if w is True and g is not True]
    assert not lost, f"{expr} -> {tr.expression}: rows {lost} lost"
    if tr.exact:
        assert got == want


def test_untranslatable_parts_are_dropped_conservatively():
    schema = FRAME_TABLE.schema
    odd = pl.col("s").str.contains("a")
    tr = apl.translate(odd & (pl.col("i64") == 2), schema)
    assert not tr.exact and str(tr.expression) == "(i64 == 2)" and tr.dropped
    assert apl.translate(odd | (pl.col("i64") == 2), schema).expression is None
    assert apl.translate(~(odd & (pl.col("i64") == 2)), schema).expression is None
    # NOT over an OR may keep the translatable side: ~(a | b) = ~a & ~b.
    tr = apl.translate(~(odd | (pl.col("i64") == 2)), schema)
    assert tr.expression is not None and not tr.exact
    assert apl.translate(pl.col("i64") == pl.col("i8"), schema).expression is None
    assert apl.translate(pl.col("i64"), schema).expression is None  # not a predicate
    assert apl.to_arrow_expression(None, schema) is None


def test_translations_are_remembered_per_predicate_and_schema(monkeypatch):
    """A predicate Polars hands over again (a new object, the same expression) is not
    translated again; one differing only in a literal's type or sign, or the same one over
    another schema, gets its own translation."""
    import importlib

    module = importlib.import_module("arrowidx.polars.translate")
    calls = []
    real = module._translate
    monkeypatch.setattr(module, "_translate", lambda e, s: calls.append(str(e)) or real(e, s))
    arrowidx.facts.POLARS_TRANSLATIONS.clear()
    schema = FRAME_TABLE.schema
    expr = (pl.col("i64") == 2) & (pl.col("s") == "b")
    first = apl.translate(expr, schema)
    copy = pl.Expr.deserialize(io.BytesIO(expr.meta.serialize(format="binary")), format="binary")
    assert apl.translate(copy, schema) is first and len(calls) == 1
    others = [
        (pl.col("i64") == pl.lit(2, dtype=pl.Int8)) & (pl.col("s") == "b"),
        (pl.col("i64") == 3) & (pl.col("s") == "b"),
        pl.col("f64") == -0.0,
        pl.col("f64") == 0.0,
    ]

    def same(a, b) -> bool:
        both = a.expression is not None and b.expression is not None
        exprs = (a.expression is None and b.expression is None) or (both and a.expression.equals(b.expression))
        return exprs and (a.polars, a.exact, a.dropped) == (b.polars, b.exact, b.dropped)

    for other in others:
        assert same(apl.translate(other, schema), real(other, schema))
    assert len(calls) == 1 + len(others)
    narrow = pa.schema([pa.field("i64", pa.int8()) if f.name == "i64" else f for f in schema])
    assert same(apl.translate(expr, narrow), real(expr, narrow))
    assert not apl.translate(expr, narrow).expression.equals(first.expression)
    assert len(calls) == 2 + len(others)


def test_a_data_file_rewritten_in_place_is_read_as_it_now_is(tmp_path, monkeypatch):
    """Each file's Polars scan is kept per file identity (path, size, modification time):
    a file rewritten under the same path is read anew, with its new row groups, and its
    matching row is still narrowed to (a stale scan would fail there)."""
    from arrowidx.polars import source

    reads: list[tuple[str, int, int]] = []
    run_query = source._Source._run_query
    monkeypatch.setattr(source._Source, "_run_query", lambda self, a, b, r, *rest: reads.append((Path(r.plan.path).name, a, b)) or run_query(self, a, b, r, *rest))
    rng = np.random.default_rng(4)
    def part(i: int, rows: int) -> pa.Table:
        return pa.table({"id": np.arange(i * 10_000, i * 10_000 + rows), "u": rng.integers(0, 2**40, rows), "v": rng.normal(size=rows)})

    for i in range(8):
        pq.write_table(part(i, 1000), tmp_path / f"part-{i}.parquet", row_group_size=250)
    options = {"file-index.bloom-filter.columns": "u", "file-index.bloom-filter.u.items": "1000"}
    arrowidx.build(tmp_path, options, progress=False)

    def check(expr):
        got = apl.scan(tmp_path).filter(expr).collect()
        want = rows_in_memory(str(tmp_path / "*.parquet")).filter(expr).collect()
        assert_frame_equal(got.sort("id"), want.sort("id"))
        return got.height

    needle = pq.read_table(tmp_path / "part-5.parquet").column("u")[333].as_py()
    assert check(pl.col("u") == needle) == 1
    assert ("part-5.parquet", 333, 334) in reads
    broad = check(pl.col("v") > 1.0)  # no index on v: every file read whole by one Polars scan
    reads.clear()
    new = part(5, 600)
    new = new.set_column(1, "u", pa.array(np.where(np.arange(600) == 500, needle, new.column("u").to_numpy())))
    pq.write_table(new, tmp_path / "part-5.parquet", row_group_size=100)  # other row groups, other rows
    arrowidx.build(tmp_path, progress=False)
    assert check(pl.col("u") == needle) == 1
    assert ("part-5.parquet", 500, 501) in reads
    assert check(pl.col("v") > 1.0) != broad  # (the rewritten file's rows, not the old ones)
    assert apl.scan(tmp_path).filter(pl.col("u") == needle).collect()["id"].to_list() == [50_500]


# ------------------------------------------------------------------------------------------
# 2. Scans of an indexed dataset with nulls, many files, deletions
# ------------------------------------------------------------------------------------------

FILES, ROWS, GROUP = 10, 600, 100
STRINGS = ["alpha", "beta", "gamma", "delta", "", "é"]


def _table(rng: np.random.Generator, ids: np.ndarray, t_start: int) -> pa.Table:
    n = ids.size

    def nulls(p):
        return rng.random(n) < p

    f = np.round(rng.normal(0, 50, n), 1)
    special = rng.random(n)
    f[special < 0.03] = np.nan
    f[(special >= 0.03) & (special < 0.05)] = -0.0
    f[(special >= 0.05) & (special < 0.07)] = 0.0
    f[(special >= 0.07) & (special < 0.08)] = np.inf
    f[(special >= 0.08) & (special < 0.09)] = -np.inf
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array(rng.integers(0, 20, n), pa.int32(), mask=nulls(0.1)),
            "u": pa.array(rng.integers(0, 10**12, n), pa.int64()),
            "s": pa.array(
                np.array(STRINGS, dtype=object)[rng.integers(0, len(STRINGS), n)],
                pa.string(),
                mask=nulls(0.1),
            ),
            "f": pa.array(f, pa.float64(), mask=nulls(0.05)),
            "d": pa.array(
                rng.integers(18262, 18262 + 400, n).astype(np.int32), pa.int32(), mask=nulls(0.03)
            ).cast(pa.date32()),
            "t": pa.array(t_start + np.sort(rng.integers(0, 10**9, n)), pa.int64()).cast(
                pa.timestamp("us")
            ),
            "x": pa.array(
                [Decimal(int(v)).scaleb(-2) for v in rng.integers(-100000, 100000, n)],
                pa.decimal128(10, 2),
                mask=nulls(0.05),
            ),
            "b": pa.array(rng.random(n) < 0.3, pa.bool_(), mask=nulls(0.1)),
        }
    )


OPTIONS = {
    "file-index.bitmap.columns": "k,s,b",
    "file-index.bloom-filter.columns": "id,u",
    "file-index.range-bitmap.columns": "f,d,t,x,u",
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("polars-lake")
    rng = np.random.default_rng(2026)
    ids = rng.permutation(FILES * ROWS + 300)
    t0 = int(np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64))
    for i in range(FILES):
        table = _table(rng, ids[i * ROWS : (i + 1) * ROWS], t0 + i * 10**9)
        pq.write_table(table, root / f"part-{i:05d}.parquet", row_group_size=GROUP)
    arrowidx.build(root, OPTIONS, progress=False)
    first = rng.choice(ids[: FILES * ROWS], 400, replace=False)
    second = rng.choice(ids[: FILES * ROWS], 300, replace=False)
    arrowidx.delete(root, pc.field("id").isin(pa.array(first, pa.int64())), progress=False)
    arrowidx.delete(root, pc.field("id").isin(pa.array(second, pa.int64())), progress=False)
    # a file added after the build: no index, no deletions, read in full (sorts mid-list)
    pq.write_table(
        _table(rng, ids[FILES * ROWS :], t0), root / "part-00004b.parquet", row_group_size=GROUP
    )
    deleted = sorted(set(first.tolist()) | set(second.tolist()))
    return root, deleted


def plain(root: Path, deleted) -> pl.LazyFrame:
    """The reference: plain Polars over the same files, deleted ids removed independently."""
    return rows_in_memory(str(root / "*.parquet")).filter(
        ~pl.col("id").is_in(pl.Series(deleted, dtype=pl.Int64).implode())
    )


def _pools_strategy():
    # literals are drawn from the data so that selective queries find rows
    rng = np.random.default_rng(3)
    t = _table(rng, np.arange(40), int(np.datetime64("2024-01-01T00:00:00", "us").astype(np.int64)))
    pools = {
        name: [v for v in t.column(name).to_pylist() if v is not None][:12]
        for name in t.column_names
    }
    pools["k"] += [-1, 25, 2.5, 2**40]
    pools["f"] += [NAN, INF, -INF, 0.0, -0.0, 33]
    pools["s"] += ["", "zeta", "alph"]
    pools["x"] += [Decimal("1.255"), 0, 5]
    pools["d"] += [dt.datetime(2020, 6, 1, 12)]
    pools["t"] += [lambda: pl.lit(T0 + dt.timedelta(microseconds=1)).dt.cast_time_unit("ns")]
    pools["b"] = [True, False]
    _dtype_of.update({"id": pl.Int64, "k": pl.Int32, "u": pl.Int64, "s": pl.String, "f": pl.Float64, "d": pl.Date,
                      "t": pl.Datetime("us"), "x": pl.Decimal(10, 2), "b": pl.Boolean})  # fmt: skip
    return pools


LAKE_PREDICATES = predicates(
    leaves(
        _pools_strategy(),
        numeric={"id", "k", "u", "f", "x"},
        floats={"f"},
        bools={"b"},
        strings={"s"},
    )
)
SHAPES = ["filter", "project", "filter-head", "head-filter", "count"]


def _query(lf: pl.LazyFrame, shape: str, expr, columns: list[str], n: int) -> pl.LazyFrame:
    if shape == "filter":
        return lf.filter(expr)
    if shape == "project":
        return lf.filter(expr).select(columns)
    if shape == "filter-head":
        return lf.filter(expr).head(n)
    if shape == "head-filter":
        return lf.head(n).filter(expr).select(columns)
    return lf.filter(expr).select(pl.len())


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    expr=LAKE_PREDICATES,
    shape=st.sampled_from(SHAPES),
    columns=st.lists(
        st.sampled_from(["id", "k", "u", "s", "f", "d", "t", "x", "b"]),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    n=st.sampled_from([0, 1, 7, 150, 3000, 10_000]),
    reader=st.sampled_from(["auto", "auto", "pyarrow"]),
)
def test_scan_equals_plain_polars_minus_deleted(lake, expr, shape, columns, n, reader):
    root, deleted = lake
    try:
        want = _query(plain(root, deleted), shape, expr, columns, n).collect()
    except Exception:  # noqa: BLE001 - a query Polars itself rejects
        assume(False)
    got = _query(apl.scan(root, reader=reader), shape, expr, columns, n).collect()
    assert_frame_equal(got, want)  # same rows in the same order (files in path order)


def test_full_scan_and_streaming_engine(lake):
    root, deleted = lake
    want = plain(root, deleted).collect()
    assert_frame_equal(apl.scan(root).collect(), want)
    expr = (pl.col("k") == 3) | (pl.col("s") == "beta")
    assert_frame_equal(
        apl.scan(root).filter(expr).collect(engine="streaming"),
        plain(root, deleted).filter(expr).collect(),
    )
    assert apl.scan(root).select(pl.len()).collect().item() == want.height
    empty = apl.scan(root).filter(pl.col("k") == 999).collect()
    assert empty.height == 0 and empty.schema == want.schema


def test_predicates_polars_cannot_push_or_we_cannot_translate(lake):
    root, deleted = lake
    queries = [
        lambda lf: lf.with_row_index("n").filter(pl.col("n") % 97 == 3),  # not pushed: row index
        lambda lf: lf.filter(pl.col("u").cum_sum() > 10**14),  # not pushed: not row-separable
        lambda lf: lf.filter(pl.col("s").str.contains("^[ab]")),  # pushed, not translatable
        lambda lf: lf.filter(pl.col("u") % 7 == 3),
        lambda lf: lf.filter(pl.col("k") > pl.col("f")),
        lambda lf: lf.filter(pl.col("f").is_nan() | (pl.col("k") == 3)),
        lambda lf: lf.filter((pl.col("k") == 3) & pl.col("s").str.contains("ph")),
        lambda lf: lf.filter(pl.col("k").is_in([1, 2]).not_() & (pl.col("d").dt.year() == 2020)),
    ]
    for q in queries:
        assert_frame_equal(q(apl.scan(root)).collect(), q(plain(root, deleted)).collect())


def test_pruning_happens_and_is_explained(lake, caplog):
    root, deleted = lake
    table = pq.read_table(root / "part-00006.parquet")
    needle = table.column("u")[123].as_py()
    expr = pl.col("u") == needle
    report = apl.explain(root, expr)
    assert report.translation.exact
    assert report.files_skipped == FILES - 1  # bloom filters and range-bitmaps rule them out
    assert "part-00006.parquet" in str(report)
    seen = []
    with caplog.at_level(logging.INFO, logger="arrowidx.polars"):
        got = apl.scan(root, on_scan=seen.append).filter(expr).collect()
    assert_frame_equal(got, plain(root, deleted).filter(expr).collect())
    (r,) = seen
    kept = {p.path: len(p.row_groups) for p in r.plans if not p.skipped}
    # the needle's file (one row group, by range-bitmap) and the file added after the build
    assert kept == {"part-00006.parquet": 1, "part-00004b.parquet": 3}
    assert (
        r.files_read == 2 and r.row_groups_read == 4 and r.rows_read <= GROUP + 300 < r.rows_total
    )
    assert "skipped" in caplog.text and str(needle) in caplog.text
    # range-bitmap: a narrow range on the time column keeps one row group of one file
    t = table.column("t")[250].as_py()
    seen.clear()
    rng = pl.col("t").is_between(t, t + dt.timedelta(microseconds=1))
    got = apl.scan(root, on_scan=seen.append).filter(rng).collect()
    assert_frame_equal(got, plain(root, deleted).filter(rng).collect())
    assert seen[0].row_groups_read <= 1 + 3  # plus the unindexed file's three
    # an untranslatable predicate prunes nothing and says so
    report = apl.explain(root, pl.col("s").str.contains("x"))
    assert report.translation.expression is None and report.files_skipped == 0


@pytest.mark.parametrize(
    "expr",
    [
        pl.col("k") > 2.5,  # Polars pushes k.cast(Float64) > 2.5
        pl.col("k") < 300,
        pl.col("d") < dt.datetime(2020, 6, 1, 12),  # d.cast(Datetime) < ...
        pl.col("x") < Decimal("1.25"),
        pl.col("f") > 10,
        pl.col("t") > pl.lit(T0 + dt.timedelta(microseconds=1)).dt.cast_time_unit("ns"),
    ],
    ids=str,
)
def test_what_polars_pushes_is_translated_exactly(lake, expr):
    root, deleted = lake
    seen = []
    got = apl.scan(root, on_scan=seen.append).filter(expr).collect()
    assert_frame_equal(got, plain(root, deleted).filter(expr).collect())
    assert seen[0].translation.exact, seen[0].translation


def test_deletes_after_the_lazyframe_was_made_are_seen(tmp_path):
    rng = np.random.default_rng(11)
    for i in range(3):
        pq.write_table(
            _table(rng, np.arange(i * 200, (i + 1) * 200), 0),
            tmp_path / f"p{i}.parquet",
            row_group_size=50,
        )
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    lf = apl.scan(tmp_path).filter(pl.col("k") == 3)
    before = lf.collect()
    arrowidx.delete(tmp_path, pc.field("id") < 100, progress=False)
    after = lf.collect()
    assert_frame_equal(after, before.filter(pl.col("id") >= 100))
    assert_frame_equal(lf.head(3).collect(), after.head(3))


def test_batch_size_and_row_limit(lake):
    root, deleted = lake
    src = source._Source(polars_plan.open_dataset(root, None, "raise"), native=True, on_scan=None)
    frames = list(src(["id", "k"], pl.col("k") < 10, None, 64))
    assert frames and all(f.height <= 64 for f in frames)
    want = plain(root, deleted).filter(pl.col("k") < 10).select("id", "k").collect()
    assert_frame_equal(pl.concat(frames), want)
    # n_rows limits the rows read before the predicate (Polars pushes head(n).filter(p))
    frames = list(src(None, pl.col("k") < 10, 1000, None))  # (None: every column the source declares)
    assert_frame_equal(
        pl.concat(frames).drop(COUNT_COLUMN), plain(root, deleted).head(1000).filter(pl.col("k") < 10).collect()
    )


def test_explain_and_polars_plan_name(lake):
    root, _ = lake
    plan = apl.scan(root).filter(pl.col("k") == 1).explain()
    assert "arrowidx" in plan or "PYTHON" in plan
    report = apl.explain(root)
    assert report.files_skipped == 0 and report.translation.expression is None


def test_unsupported_reader_options(lake, tmp_path):
    root, _ = lake
    with pytest.raises(ValueError):
        apl.scan(root, reader="duckdb")
    empty = tmp_path / "empty"
    empty.mkdir()
    for nothing in (tmp_path / "nothing-here", empty, tmp_path / "nothing-*.parquet"):
        # nothing to plan: Polars' own error, where Polars raises it (at collect(), issue 49)
        with pytest.raises(Exception) as polars_error:
            pl.scan_parquet(nothing).collect()
        lazy = apl.scan(nothing)
        with pytest.raises(type(polars_error.value)):
            lazy.collect()


def test_nan_and_signed_zero_follow_polars(lake):
    root, deleted = lake
    for expr in [
        pl.col("f") > 0.0, pl.col("f") >= 0.0, pl.col("f") == -0.0, pl.col("f") < NAN, pl.col("f") == NAN,
        pl.col("f") > INF, ~(pl.col("f") <= 10.0), pl.col("f").is_in([NAN, 0.0]), pl.col("f").is_between(-1, NAN),
    ]:  # fmt: skip
        assert_frame_equal(
            apl.scan(root).filter(expr).collect(), plain(root, deleted).filter(expr).collect()
        )


def test_unprunable_scans_go_to_polars_without_planning_a_file(tmp_path, monkeypatch, caplog):
    """No index on the filter's columns and nothing deleted: without a listener the files go
    to Polars whole and no file is planned (no footer or index read); the answer is
    plain Polars'. With a listener (on_scan, or the INFO log) every file is planned for
    the report."""
    from arrowidx.lake.plan import Planner

    caplog.set_level(logging.WARNING, logger="arrowidx.polars")  # nobody listens

    rng = np.random.default_rng(11)
    for i in range(4):
        n = 0 if i == 2 else 500  # an empty file among them
        pq.write_table(
            pa.table({"id": np.arange(i * 500, i * 500 + n), "k": rng.integers(0, 9, n),
                      "v": rng.normal(size=n), "s": rng.choice(["ab", "cd", "ef"], n)}),
            tmp_path / f"part-{i}.parquet", row_group_size=100,
        )  # fmt: skip
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    pq.write_table(  # added after the build: not in the manifest
        pa.table({"id": [9000, 9001], "k": [1, 2], "v": [7.5, -1.0], "s": ["ab", "zz"]}),
        tmp_path / "part-9.parquet",
    )
    planned: list[str] = []
    plan_file = Planner.plan_file
    monkeypatch.setattr(
        Planner, "plan_file", lambda self, rel, *a, **k: planned.append(rel) or plan_file(self, rel, *a, **k)
    )
    reference = rows_in_memory(str(tmp_path / "*.parquet"))
    for expr in [pl.col("v") > 0.5, pl.col("s").str.contains("b"), (pl.col("id") % 7 == 0) & (pl.col("v") < 0)]:
        assert_frame_equal(apl.scan(tmp_path).filter(expr).collect(), reference.filter(expr).collect())
        assert_frame_equal(
            apl.scan(tmp_path).filter(expr).select("s", "id").collect(engine="streaming"),
            reference.filter(expr).select("s", "id").collect(),
        )
    assert_frame_equal(apl.scan(tmp_path).collect(), reference.collect())
    from arrowidx.polars.source import _Source

    monkeypatch.setattr(_Source, "WAVE_ROWS", 600)  # a wave per file or two: order and rows kept
    for expr in [pl.col("v") > 0.5, pl.col("id") >= 0]:
        assert_frame_equal(apl.scan(tmp_path).filter(expr).collect(), reference.filter(expr).collect())
    assert planned == []
    seen = []
    got = apl.scan(tmp_path, on_scan=seen.append).filter(pl.col("v") > 0.5).collect()
    assert_frame_equal(got, reference.filter(pl.col("v") > 0.5).collect())
    assert sorted(planned) == sorted(p.path for p in seen[0].plans) and len(seen[0].plans) == 5
    planned.clear()
    caplog.set_level(logging.INFO, logger="arrowidx.polars")  # the INFO log listens too
    assert_frame_equal(apl.scan(tmp_path).filter(pl.col("v") > 0.5).collect(), reference.filter(pl.col("v") > 0.5).collect())
    assert len(planned) == 5 and "indexes skipped 0/5 files" in caplog.text
    caplog.set_level(logging.WARNING, logger="arrowidx.polars")
    planned.clear()  # a filter on the indexed column is planned, as before
    assert_frame_equal(
        apl.scan(tmp_path).filter(pl.col("k") == 3).collect(), reference.filter(pl.col("k") == 3).collect()
    )
    # (the empty file holds no key of k: the lake index rules it out before any file is planned, issue 51)
    assert sorted(planned) == ["part-0.parquet", "part-1.parquet", "part-3.parquet", "part-9.parquet"]



def _deleted_rows_lake(tmp_path):
    """Three files with a bitmap index on ``k``; every ``k = 5`` row deleted, and id 1500
    (whose ``k`` is returned). The reference is plain Polars minus the deleted ids."""
    rng = np.random.default_rng(5)
    tables = [
        pa.table({"id": np.arange(i * 1000, (i + 1) * 1000), "k": rng.integers(0, 6, 1000), "v": rng.normal(size=1000)})
        for i in range(3)
    ]
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=250)
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    k_1500 = tables[1].column("k")[500].as_py()  # id 1500: deleted, and its k is queried below
    assert k_1500 != 5
    arrowidx.delete(tmp_path, (pc.field("k") == 5) | (pc.field("id") == 1500), progress=False)
    everything = rows_in_memory(str(tmp_path / "*.parquet"))
    deleted_ids = everything.filter((pl.col("k") == 5) | (pl.col("id") == 1500)).select("id").collect().to_series()
    return k_1500, everything.filter(~pl.col("id").is_in(deleted_ids.implode()))


def _recording_row_indexes(monkeypatch) -> list[bool]:
    """Per Polars scan of data files used from now on: whether it had a row index."""
    from arrowidx.polars import source

    row_indexes: list[bool] = []
    files_scan = source._files_scan

    def recording(data, rels, *, row_index=False):
        row_indexes.append(row_index)
        return files_scan(data, rels, row_index=row_index)

    monkeypatch.setattr(source, "_files_scan", recording)
    return row_indexes


def test_deleted_rows_need_a_row_index_only_where_an_inexact_bitmap_holds_them(tmp_path, monkeypatch):
    """A deleted row the index's bitmap leaves out can never match, and where the bitmap is
    exactly the matching rows a deleted row's place in Polars' result is its rank in the
    bitmaps: either way the files are read by plain Polars scans (no row index). Only a
    deleted row inside an inexact bitmap (a predicate on an unindexed column too, or a part
    the translation left out) needs one. Every answer is plain Polars' minus the deleted ids."""
    k_1500, reference = _deleted_rows_lake(tmp_path)
    row_indexes = _recording_row_indexes(monkeypatch)
    others = [k for k in range(5) if k != k_1500]
    for expr, row_index in [
        (pl.col("k") == others[0], False),
        (pl.col("k").is_in(others[1:3]), False),
        ((pl.col("k") == others[3]) & (pl.col("v") > 0), False),  # inexact, but no deleted row inside
        (pl.col("k") == k_1500, False),  # the bitmap holds row 1500 of part-1, and is exact
        (pl.col("k").is_in([5, others[0]]), False),  # it holds every deleted k = 5 row, in each file
        (pl.col("k") == 5, False),  # every row it holds is deleted
        ((pl.col("k") == k_1500) & (pl.col("v") > -100), True),  # row 1500 inside an inexact bitmap
        ((pl.col("k") == 5) & pl.col("v").is_not_null(), True),
        ((pl.col("k") == k_1500) & (pl.col("v").sin() < 2), True),  # exact bitmap, a part not translated
    ]:
        row_indexes.clear()
        assert_frame_equal(apl.scan(tmp_path).filter(expr).collect(), reference.filter(expr).collect())
        assert row_indexes == [row_index], expr  # one scan of the three files


def test_files_with_deleted_rows_keep_asking_an_exact_index_that_prunes_no_row_group(tmp_path, monkeypatch):
    """After a few files whose bitmaps keep every row group the remaining files' indexes are
    not asked (it bought nothing), but a file with deleted rows keeps asking an exact
    index: its bitmap places the deleted rows, where not asking costs the scan a row index."""
    rng = np.random.default_rng(11)
    for i in range(8):
        t = pa.table({"id": np.arange(i * 1000, (i + 1) * 1000), "k": rng.integers(0, 6, 1000)})
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=250)
    arrowidx.build(tmp_path, {"file-index.bitmap.columns": "k"}, progress=False)
    arrowidx.delete(tmp_path, pc.field("k") == 5, progress=False)
    row_indexes = _recording_row_indexes(monkeypatch)
    expr = pl.col("k").is_in([1, 5])  # every row group holds both; the bitmaps hold the deleted rows
    want = rows_in_memory(str(tmp_path / "*.parquet")).filter(pl.col("k") == 1).collect()
    assert_frame_equal(apl.scan(tmp_path).filter(expr).collect(), want)
    assert row_indexes == [False]


def test_an_exact_bitmap_holding_rows_polars_does_not_return_falls_back_to_a_row_index(tmp_path, monkeypatch):
    """Deleted rows are placed by rank only while Polars returns exactly the bitmaps' rows.
    An index claiming exactness with a bitmap one row too wide (here made so) is caught by
    the count, and the query runs again with a row index: the answer stays plain Polars'
    minus the deleted ids."""
    from arrowidx.lake.plan import Planner

    k_1500, reference = _deleted_rows_lake(tmp_path)
    plan_file = Planner.plan_file

    def one_row_too_many(self, rel, expr, bound=None, **kw):
        plan = plan_file(self, rel, expr, bound, **kw)
        if plan.exact and rel == "part-0.parquet":
            bitmap = plan.result.bitmap
            extra = next(r for r in range(plan.rows) if r not in bitmap)
            bitmap.add(extra)  # a row that does not match, before some deleted ones
        return plan

    monkeypatch.setattr(Planner, "plan_file", one_row_too_many)
    row_indexes = _recording_row_indexes(monkeypatch)
    expr = pl.col("k").is_in([5, k_1500])
    assert_frame_equal(apl.scan(tmp_path).filter(expr).collect(), reference.filter(expr).collect())
    assert row_indexes == [False, True]


def test_files_a_bloom_filter_keeps_are_narrowed_to_their_matching_rows(tmp_path, monkeypatch):
    """In a selective scan, whole files an inexact index kept are first scanned on the
    predicate's columns alone, then read only where rows match: the rows themselves when at
    most two, else their row groups; files without a match are not read. Deleted rows stay
    dropped, and the answer is plain Polars' minus the deleted ids."""
    from arrowidx.polars import source

    rng = np.random.default_rng(8)
    tables = []
    for i in range(8):
        u = rng.integers(0, 2**40, 1000)
        if i == 2:
            u[[10, 700, 710]] = 77  # a value three times in one file: two row groups hold it
        tables.append(pa.table({"id": np.arange(i * 1000, (i + 1) * 1000), "u": u, "v": rng.normal(size=1000)}))
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=250)
    options = {"file-index.bloom-filter.columns": "u", "file-index.bloom-filter.u.items": "1000",
               "file-index.bloom-filter.u.fpp": "0.05"}  # fmt: skip
    arrowidx.build(tmp_path, options, progress=False)
    # files the lake index does not cover (planned by their own bloom filters, as before issue 51)
    from arrowidx.lake.plan import Planner

    monkeypatch.setattr(Planner, "lake_index_rules_out", lambda self, expr: None)
    data = arrowidx.dataset(tmp_path)
    known = set(np.concatenate([t.column("u").to_numpy() for t in tables]).tolist())
    # a value no file holds that one file's bloom filter (fpp 0.05) still keeps
    phantom = next(x for x in range(1, 10_000) if x not in known and sum(not p.skipped for p in data.explain(pc.field("u") == x).files) == 1)
    needle = tables[5].column("u")[333].as_py()
    reads: list[tuple[str, int, int]] = []
    run_query = source._Source._run_query

    def recording(self, a, b, r, predicate, needed):
        reads.append((Path(r.plan.path).name, a, b))
        return run_query(self, a, b, r, predicate, needed)

    monkeypatch.setattr(source._Source, "_run_query", recording)

    def check(expr, reference):
        reads.clear()
        got = apl.scan(tmp_path).filter(expr).collect()
        assert_frame_equal(got.sort("id"), reference.filter(expr).collect().sort("id"))
        return sorted(reads)

    everything = rows_in_memory(str(tmp_path / "*.parquet"))
    assert check(pl.col("u") == needle, everything) == [("part-5.parquet", 333, 334)]
    assert check((pl.col("u") == needle) & (pl.col("v") > 9), everything) == []  # the row fails v > 9
    assert check(pl.col("u") == 77, everything) == [("part-2.parquet", 0, 250), ("part-2.parquet", 500, 750)]
    assert check(pl.col("u") == phantom, everything) == []
    # only the predicate's column is read: nothing to narrow, the kept file is scanned whole
    got = apl.scan(tmp_path).filter(pl.col("u") == needle).select("u").collect()
    assert got.to_series().to_list() == [needle]
    # kept files holding more than a quarter of the rows are read as before
    three = [tables[i].column("u")[1].as_py() for i in (0, 3, 6)]
    assert check(pl.col("u").is_in(three), everything) == []
    # decided for the whole scan, not per wave of files read together
    monkeypatch.setattr(source._Source, "WAVE_ROWS", 1000)
    assert check(pl.col("u").is_in(three), everything) == []
    assert check(pl.col("u") == needle, everything) == [("part-5.parquet", 333, 334)]
    monkeypatch.undo()
    monkeypatch.setattr(source._Source, "_run_query", recording)

    arrowidx.delete(tmp_path, pc.field("id").isin([2010, 5333]), progress=False)
    alive = everything.filter(~pl.col("id").is_in([2010, 5333]))
    assert check(pl.col("u") == needle, alive) == []  # its only match is deleted: not read
    assert check(pl.col("u") == 77, alive) == [("part-2.parquet", 700, 701), ("part-2.parquet", 710, 711)]
    check((pl.col("u") == 77) | (pl.col("u") == needle), alive)  # the answer alone (a false positive may keep a third file)


def _asking_files(lake: Path, monkeypatch):
    """``check(expr, reference=None)``: asserts that ``arrowidx.polars.scan(lake)`` filtered
    by ``expr`` equals ``reference`` (plain Polars of the lake by default) filtered by it,
    and returns the numbers ``n`` of the ``part-<n>.parquet`` files whose index was asked."""
    from arrowidx.lake.plan import Planner

    asked: list[int] = []
    plan_file = Planner.plan_file

    def recording(self, rel, expr, *args, **kwargs):
        if expr is not None:
            asked.append(int(rel[5:-8]))
        return plan_file(self, rel, expr, *args, **kwargs)

    monkeypatch.setattr(Planner, "plan_file", recording)
    everything = rows_in_memory(str(lake / "*.parquet"))

    def check(expr, reference=None):
        asked.clear()
        got = apl.scan(lake).filter(expr).collect()
        assert_frame_equal(got, (everything if reference is None else reference).filter(expr).collect())
        return list(asked)

    return check


def test_indexes_that_keep_every_row_group_stop_being_asked(tmp_path, monkeypatch):
    """Polars re-applies the predicate, so an index bitmap holding a row in every row group
    buys nothing: after four such files in a row the rest are read without asking their
    indexes. A file the index skips resets the count; a file with deleted rows none of which
    its bitmap holds, or whose bitmap is exact (either way it is read without a row index),
    neither counts nor resets. Every answer is plain Polars' (minus deleted rows)."""
    rng = np.random.default_rng(9)
    tables = []
    for i in range(9):
        u = rng.integers(600_000 if i == 2 else 0, 1_000_000, 1000)  # part-2: nothing below 600,000
        tables.append(pa.table({"id": np.arange(i * 1000, (i + 1) * 1000), "u": u, "v": rng.normal(size=1000)}))
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=250)
    arrowidx.build(tmp_path, {"file-index.range-bitmap.columns": "u"}, progress=False)
    everything = rows_in_memory(str(tmp_path / "*.parquet"))
    check = _asking_files(tmp_path, monkeypatch)

    # (a range between two bounds: statistics cannot show that it matches in a row group, see
    # test_indexes_are_not_asked_where_statistics_show_a_match_in_every_row_group)
    below = (pl.col("u") < 500_000) & (pl.col("u") >= 0)
    # 0, 1 keep every row group; 2 is skipped (reset); 3-6 keep every row group; 7, 8 not asked
    assert check(below) == [0, 1, 2, 3, 4, 5, 6]
    assert check(below & (pl.col("v") > 0)) == [0, 1, 2, 3, 4, 5, 6]
    needle = tables[8].column("u")[3].as_py()
    # a needle: the lake index rules out the files without it before any index is asked (issue 51)
    assert check(pl.col("u") == needle) == [8]
    u3, u7 = tables[3].column("u").to_numpy(), tables[7].column("u").to_numpy()
    high, low = 3000 + int(np.argmax(u3 >= 500_000)), 3000 + int(np.argmax(u3 < 500_000))
    low7 = 7000 + int(np.argmax(u7 < 500_000))
    arrowidx.delete(tmp_path, pc.field("id") == low7, progress=False)
    alive = everything.filter(pl.col("id") != low7)
    assert check(below, alive) == [0, 1, 2, 3, 4, 5, 6]  # deleted or not, 7 and 8 not asked
    # part-3 loses a row its bitmap does not hold: read without a row index, it neither
    # counts nor resets, so 4, 5, 6, 7 make the four when part-7's bitmap (holding its
    # deleted row) is inexact; an exact one places its deleted row, so it neither counts nor
    # resets either, and 8 is asked too
    inexact = below & (pl.col("v") > -100)  # v has no index
    arrowidx.delete(tmp_path, pc.field("id") == high, progress=False)
    alive = alive.filter(pl.col("id") != high)
    assert check(inexact, alive) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert check(below, alive) == list(range(9))
    # part-3 loses a row its bitmap holds: an inexact bitmap needs a row index anyway, so it counts
    arrowidx.delete(tmp_path, pc.field("id") == low, progress=False)
    alive = alive.filter(pl.col("id") != low)
    assert check(inexact, alive) == [0, 1, 2, 3, 4, 5, 6]
    assert check(below, alive) == list(range(9))


def test_indexes_are_not_asked_where_statistics_show_a_match_in_every_row_group(tmp_path, monkeypatch):
    """A range whose bound every row group's minimum (``<``, ``<=``) or maximum (``>``,
    ``>=``) passes matches a row in every row group: Polars reads such a file without asking
    its index, as one whose bitmap kept every row group. Files where some row group holds no
    match, files with deleted rows, and predicates other than one range are asked. Which
    files are asked is checked against the raw values; every answer is plain Polars'."""
    rng = np.random.default_rng(4)
    f = rng.normal(size=1000)
    f[:250] = np.nan  # part-0's first row group: only NaN (its statistics hold no minimum)
    tables = [
        pa.table({"id": np.arange(1000), "u": rng.integers(0, 1_000_000, 1000), "f": f}),
        pa.table({"id": np.arange(1000, 2000), "u": np.arange(0, 1_000_000, 1000), "f": rng.normal(size=1000)}),
        pa.table({"id": np.arange(2000, 3000), "u": rng.integers(0, 1_000_000, 1000), "f": rng.normal(size=1000)}),
    ]
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"part-{i}.parquet", row_group_size=250)
    arrowidx.build(tmp_path, {"file-index.range-bitmap.columns": "u,f"}, progress=False)
    everything = rows_in_memory(str(tmp_path / "*.parquet"))
    check = _asking_files(tmp_path, monkeypatch)

    def unproven(column, matches, deleted=()):
        """Files where some row group holds no row with ``matches(value)``, or with deleted rows."""
        out = []
        for i, t in enumerate(tables):
            values = t.column(column).to_numpy()
            groups = [values[a : a + 250] for a in range(0, 1000, 250)]
            if i in deleted or not all(np.any(matches(g)) for g in groups):
                out.append(i)
        return out

    assert unproven("u", lambda v: v < 500_000) == [1]  # part-1 is sorted: its last groups are all above
    assert check(pl.col("u") < 500_000) == [1]
    assert check(pl.col("u") <= 400_000) == unproven("u", lambda v: v <= 400_000)
    assert check(pl.col("u") > 600_000) == unproven("u", lambda v: v > 600_000) == [1]
    assert check(pl.col("u") >= 999_000) == unproven("u", lambda v: v >= 999_000) == [0, 1, 2]
    assert check(pl.col("f") < 0.5) == unproven("f", lambda v: v < 0.5) == [0]  # part-0's NaN group
    assert check(pl.col("u") < 500_000.5) == [1]  # a float bound on an integer column
    # not one range: every file asked
    assert check((pl.col("u") < 500_000) & (pl.col("u") > 10)) == [0, 1, 2]
    needle = tables[2].column("u")[7].as_py()
    assert check(pl.col("u") == needle) == [2]  # a needle: the lake index rules the others out first (issue 51)
    # deleted rows: the index is asked (an exact bitmap places them, no row index needed)
    arrowidx.delete(tmp_path, pc.field("id") == 2005, progress=False)
    alive = everything.filter(pl.col("id") != 2005)
    assert check(pl.col("u") < 500_000, alive) == unproven("u", lambda v: v < 500_000, deleted=[2]) == [1, 2]
