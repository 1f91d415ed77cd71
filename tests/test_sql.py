"""arrowidx.sql: random WHERE clauses select the same rows in pyarrow (after translation) as in
DuckDB, an independent SQL engine (NaN the largest value, NULL three-valued logic)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrowidx.sql import WhereError, compile_where, parse_where

duckdb = pytest.importorskip("duckdb")
pytestmark = pytest.mark.skipif(not duckdb.__version__.startswith("2.0."), reason="the SQL reference is DuckDB 2.0 (pip install duckdb==2.0.1)")


def _table() -> pa.Table:
    rng = np.random.default_rng(9)
    n = 300
    amount = rng.choice([-1.5, 0.0, 1.0, 2.5, 30.0, np.nan], n)
    start = np.datetime64("2024-05-01", "us").astype(np.int64)
    return pa.table({
        "qty": pa.array(rng.integers(0, 6, n), pa.int32(), mask=rng.random(n) < 0.1),
        "amount": pa.array(amount, mask=rng.random(n) < 0.1),
        "status": pa.array(np.array(["new", "paid", "lost", "it's"], dtype=object)[rng.integers(0, 4, n)], mask=rng.random(n) < 0.1),
        "ts": pa.array(start + rng.integers(0, 86_400_000_000 * 10, n), pa.timestamp("us"), mask=rng.random(n) < 0.1),
        "flag": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
    })  # fmt: skip


TABLE = _table()
OPS = ["=", "!=", "<", "<=", ">", ">="]
ATOMS = st.one_of(
    st.tuples(st.sampled_from(OPS), st.sampled_from(["0", "2", "'3'", "2.5", "-1"])).map(lambda t: f"qty {t[0]} {t[1]}"),
    st.tuples(st.sampled_from(OPS), st.sampled_from(["0", "1.0", "2.5", "-1.5", "'NaN'", "30"])).map(lambda t: f"amount {t[0]} {t[1]}"),
    st.tuples(st.sampled_from(OPS), st.sampled_from(["'new'", "'paid'", "'it''s'", "'zz'"])).map(lambda t: f"status {t[0]} {t[1]}"),
    st.tuples(st.sampled_from(OPS), st.sampled_from(["'2024-05-03'", "'2024-05-05 12:00:00'"])).map(lambda t: f"ts {t[0]} {t[1]}"),
    st.sampled_from([
        "qty IN (1, 2, 5)", "qty NOT IN (0, 3)", "amount IN (1.0, 'NaN')", "amount NOT IN (0, 2.5)",
        "status IN ('new', NULL)", "status NOT IN ('lost')", "qty IS NULL", "amount IS NOT NULL",
        "qty BETWEEN 1 AND 3", "amount NOT BETWEEN 0 AND 2.5", "status LIKE 'n%'", "status NOT LIKE '%s'",
        "flag", "NOT flag", "flag = FALSE", "TRUE", "ts BETWEEN '2024-05-02' AND '2024-05-06'",
    ]),
)  # fmt: skip


def _combine(children):
    return st.one_of(
        st.tuples(children, st.sampled_from(["AND", "OR"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        children.map(lambda c: f"NOT ({c})"),
    )


WHERE = st.recursive(ATOMS, _combine, max_leaves=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=WHERE)
def test_random_where_matches_duckdb(where):
    expr = parse_where(where, TABLE.schema)
    mask = TABLE.append_column("_row", pa.array(np.arange(TABLE.num_rows))).filter(expr).column("_row").to_pylist()
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", TABLE.append_column("_row", pa.array(np.arange(TABLE.num_rows))))
    expected = sorted(r[0] for r in con.execute(f"SELECT _row FROM t WHERE {where}").fetchall())
    assert sorted(mask) == expected, f"{where} -> {expr}"


@pytest.mark.parametrize(
    "where",
    ["x IN (0.0, 2.5)", "x NOT IN (0.0, 2.5)", "x IN (-0.0)", "x NOT IN (-0.0)", "x IN ('NaN', 1)", "x NOT IN ('NaN')"],
)
def test_float_in_lists_match_duckdb_on_signed_zero_and_nan(where):
    """pyarrow's is_in tells -0.0 from 0.0 (bit patterns); SQL does not (found by the Spark
    differential test: NOT (amount IN (0.0, 60.5)) kept the -0.0 rows)."""
    table = pa.table({"x": pa.array([-0.0, 0.0, float("nan"), 1.0, None, 2.5]), "_row": pa.array(range(6))})
    got = table.filter(parse_where(where, table.schema.remove(1))).column("_row").to_pylist()
    con = duckdb.connect()
    con.register("t", table)
    sql = where.replace("'NaN'", "CAST('NaN' AS DOUBLE)")
    assert got == sorted(r[0] for r in con.execute(f"SELECT _row FROM t WHERE {sql}").fetchall())


def test_refusals_name_what_to_write():
    for text, message in [
        ("ts > 5", "quoted date"), ("qty = (SELECT 1)", "subqueries"), ("qty >", "syntax error"),
        ("qty = 'abc'", "'abc' is not a number [(]qty is INTEGER[)]"), ("nope = 1", "unknown column 'nope'"),
        ("stauts = 'x'", "did you mean 'status'"), ('status = "lost"', "strings take single quotes [(]'lost'[)]"),
        ("lcase(status) = 1 + 'x'", r"\+[(]INTEGER_LITERAL, STRING_LITERAL[)] is ambiguous"), ("ucase(status, 2) = 'x'", "ucase"),
    ]:  # fmt: skip
        with pytest.raises(WhereError, match=message):
            parse_where(text, TABLE.schema)
    assert isinstance(parse_where("qty = 1", TABLE.schema), pc.Expression)
    with pytest.raises(WhereError, match="pass the text itself as filter="):
        parse_where("lower(status) = 'new'", TABLE.schema)  # no pyarrow Expression: a residual
    # a string column against a number compares as numbers, as in DuckDB; a word that is not one raises
    with pytest.raises(WhereError, match="could not convert string '[a-z]+' to INTEGER.*quote the value: status = '5'"):
        where = compile_where("status = 5", TABLE.schema)
        where.residual.mask(TABLE)


def test_messages_name_functions_as_typed():
    """sqlglot reads lcase as LOWER and char_length as LENGTH: a message shows the user's words."""
    schema = pa.schema([("s", pa.string()), ("n", pa.int32())])
    with pytest.raises(WhereError) as info:
        compile_where("char_length(n) = 1", schema)
    assert "char_length" in str(info.value) and "LENGTH" not in str(info.value).upper().replace("CHAR_LENGTH", "")
    where = compile_where("lcase(s) = 'x' AND n > 0", schema)
    assert where.residual.text == "lcase(s) = 'x'"
    with pytest.raises(WhereError, match=r"^WHERE: could not convert string 'a' to INTEGER .*\(in CAST\(s AS INT\) = 1\)"):
        compile_where("n + 0 > 0 AND CAST(s AS INT) = 1", schema).residual.mask(pa.table({"s": ["a"], "n": pa.array([1], pa.int32())}))


@pytest.mark.parametrize("where", ["isnan(amount)", "NOT isnan(amount)", "isnan(amount) OR qty = 1", "isinf(amount)", "isfinite(amount)"])
def test_duckdb_spellings_of_nan_tests(where):
    """Issue 53: isnan(amount), DuckDB's spelling, is accepted and means what DuckDB means."""
    con = duckdb.connect()
    rows = TABLE.append_column("_row", pa.array(np.arange(TABLE.num_rows)))
    con.register("t", rows)
    expected = sorted(r[0] for r in con.execute(f"SELECT _row FROM t WHERE {where}").fetchall())
    compiled = compile_where(where, TABLE.schema)
    got = rows.filter(compiled.pushdown) if compiled.pushdown is not None else rows
    got = got.filter(compiled.residual.mask(got)) if compiled.residual is not None else got
    assert sorted(got["_row"].to_pylist()) == expected


SIMPLE_SCHEMA = pa.schema(
    [("id", pa.int64()), ("i32", pa.int32()), ("u8", pa.uint8()), ("status", pa.string()), ("ls", pa.large_string()),
     ("d", pa.dictionary(pa.int32(), pa.string())), ("amount", pa.float64())]
)  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["id = 42", "id <> 42", "id != -7", "i32 >= 5", "u8 < 3", "u8 = 255", "status = 'paid'", "ls = 'x'", "status = ''",
     "id = 1 AND status = 'a'", "id = 1 and status > 'a' AND u8 <= 7", "  id=007  ", "status = 'ünï cödé'"],
)  # fmt: skip
def test_simple_clauses_skip_sqlglot_with_the_same_expression(text, monkeypatch):
    """The fast path for plain comparisons gives exactly the Expression sqlglot's path gives."""
    from arrowidx import sql

    fast = sql._simple_where(text, SIMPLE_SCHEMA)
    assert fast is not None
    monkeypatch.setattr(sql, "_simple_where", lambda *a: None)
    assert fast.equals(sql.compile_where(text, SIMPLE_SCHEMA).pushdown)


@pytest.mark.parametrize(
    "text",
    ["u8 = -1", "u8 = 256", "amount > 3", "d = 'x'", "id = '5'", "status = 5", "ID = 1", "nope = 1", "id = 1 OR id = 2",
     "status = 'a AND b'", "status = 'it''s'", "status = 'a\\b'", "id = 1 -- c", "id IN (1, 2)", "null = 1", "1 = id",
     "id = 1 AND", "id = 99999999999999999999"],
)  # fmt: skip
def test_other_clauses_go_to_sqlglot(text):
    from arrowidx import sql

    assert sql._simple_where(text, SIMPLE_SCHEMA) is None
