"""Issue 41: any WHERE clause an engine accepts, exact everywhere, pruned where the indexes can.

Every clause of the corpus (``tests/sql_corpus.py``) is run by arrowidx and by DuckDB
evaluating the same text over the same rows **in memory** (not DuckDB's Parquet scan, whose
pushdown drops NaN rows), and by Polars SQL where it accepts the clause: in memory, through
the Python API on an indexed lake with deletions, and through the CLI for a sample.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import main
from arrowidx.sql import WhereError, compile_where

from .sql_corpus import CORPUS, FAMILIES, clause, corpus_table

duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")
pytestmark = pytest.mark.skipif(not duckdb.__version__.startswith("2.0."), reason="the SQL reference is DuckDB 2.0 (pip install duckdb==2.0.1)")

TABLE = corpus_table()
ROWS = TABLE.append_column("_row", pa.array(np.arange(TABLE.num_rows)))
TEXTS = [clause(e)[0] for e in CORPUS]


_CONNECTIONS: dict[int, object] = {}
_ANSWERS: dict[tuple, list] = {}


class Refused(str):
    """DuckDB's refusal (its error), where arrowidx must refuse too."""


def _duckdb(rows: pa.Table, text: str, column: str = "_row") -> list | Refused:
    """DuckDB's answer over ``rows`` in memory (one connection per table, answers remembered),
    or its refusal."""
    key = (id(rows), text, column)
    if key not in _ANSWERS:
        con = _CONNECTIONS.get(id(rows))
        if con is None:
            con = _CONNECTIONS[id(rows)] = duckdb.connect()
            con.execute("SET TimeZone = 'UTC'")
            con.register("t", rows)
        try:
            _ANSWERS[key] = sorted(r[0] for r in con.execute(f"SELECT {column} FROM t WHERE {text}").fetchall())
        except duckdb.Error as e:
            _ANSWERS[key] = Refused(f"{type(e).__name__}: {str(e).splitlines()[0]}")
    return _ANSWERS[key]


def _ours_or_refused(text: str, *, pushdown: bool = True) -> list | Refused:
    try:
        return _ours(text, pushdown=pushdown)
    except WhereError as e:
        return Refused(str(e).splitlines()[0])


def _ours(text: str, *, pushdown: bool = True) -> list:
    where = compile_where(text, TABLE.schema, pushdown=pushdown)
    rows = ROWS.filter(where.pushdown) if where.pushdown is not None else ROWS
    if where.residual is not None:
        rows = rows.filter(where.residual.mask(rows))
    return sorted(rows.column("_row").to_pylist())


def test_the_corpus_is_large_and_mixes_pushdown_and_residual():
    assert len(CORPUS) >= 150 and len(set(TEXTS)) == len(TEXTS)
    kinds = {"pushdown": 0, "residual": 0}
    for text in TEXTS:
        where = compile_where(text, TABLE.schema)
        kinds["pushdown"] += where.pushdown is not None
        kinds["residual"] += where.residual is not None
    assert kinds["pushdown"] >= 100 and kinds["residual"] >= 60, kinds


def _differences(entries) -> tuple[list, int]:
    differences, trivial = [], 0
    for entry in entries:
        text, duck = clause(entry)
        expected = _duckdb(ROWS, duck)
        trivial += isinstance(expected, Refused) or len(expected) in (0, TABLE.num_rows)
        for pushdown in (True, False):
            got = _ours_or_refused(text, pushdown=pushdown)
            same = isinstance(got, Refused) if isinstance(expected, Refused) else got == expected
            if not same:
                differences.append((text, pushdown, got if isinstance(got, Refused) else len(got), expected if isinstance(expected, Refused) else len(expected)))
    return differences, trivial


def test_every_clause_selects_what_duckdb_selects_in_memory():
    """0 differences; each clause twice: split (pyarrow pushdown + Polars residual) and
    wholly in the residual, so both evaluators are checked on every clause. Where DuckDB
    refuses (an overflow, a string that does not convert), arrowidx refuses too."""
    differences, trivial = _differences(CORPUS)
    assert not differences, differences
    assert trivial < len(CORPUS) // 5  # most clauses select some rows but not all


def test_issue_48_families_select_what_duckdb_selects_or_refuse_as_it_does():
    """Each kind of answer that once differed from DuckDB's (issue 48's 14 families), each
    raw exception, each refusal where DuckDB answers and each answer where it refuses."""
    differences, _ = _differences(FAMILIES)
    assert not differences, differences
    answered = [e for e in FAMILIES if not isinstance(_duckdb(ROWS, clause(e)[1]), Refused)]
    assert len(answered) >= 70 and len(FAMILIES) - len(answered) >= 15


# Where Polars SQL means something else than DuckDB (and Spark) for the same text: Polars'
# own SQL dialect, not arrowidx (arrowidx follows DuckDB there, as the test above checks).
POLARS_SQL_DIFFERS = {
    "flag IS NOT TRUE": "Polars SQL leaves NULL out of IS NOT TRUE",
    "flag IS NOT FALSE": "Polars SQL leaves NULL out of IS NOT FALSE",
    "mid + small * 2 > 100": "Polars wraps an int8 overflow (DuckDB, and arrowidx, raise)",
    "round(amount, 1) = 7.3": "Polars rounds half to even (7.25 -> 7.2); DuckDB away from zero",
    "substring(status, -3, 2) = 'ai'": "Polars SQL's substring has no negative start",
    "CAST(price AS BIGINT) = -12": "Polars truncates a DECIMAL cast to an integer; DuckDB rounds",
    "qty = CAST(3.7 AS INT)": "Polars truncates 3.7 to 3; DuckDB rounds to 4",
    "ratio / 3 > 0.1": "Polars SQL compares FLOAT arithmetic with 0.1 as a DOUBLE; DuckDB as a FLOAT",
    "ratio + qty > 2.1": "Polars SQL compares FLOAT arithmetic with 2.1 as a DOUBLE; DuckDB as a FLOAT",
}


def test_polars_sql_agrees_where_it_accepts_the_clause():
    frame = pl.from_arrow(ROWS)
    accepted, differs = 0, {}
    for entry in CORPUS:
        text, duck = clause(entry)
        try:
            theirs = sorted(frame.sql(f"SELECT _row FROM self WHERE {text}")["_row"].to_list())
        except Exception:  # noqa: BLE001 - Polars SQL does not accept every clause
            continue
        accepted += 1
        if theirs != _duckdb(ROWS, duck):
            differs[text] = len(theirs)
        elif text in POLARS_SQL_DIFFERS:
            differs[text] = "now agrees"
    assert accepted >= 200
    assert set(differs) == set(POLARS_SQL_DIFFERS), differs


# -- through the Python API on an indexed lake with deletions ---------------------------------


_KEEP: list = []


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("sqllake") / "lake")
    os.makedirs(root)
    table = TABLE
    step = table.num_rows // 4
    for i in range(4):
        pq.write_table(table.slice(i * step, step), os.path.join(root, f"part-{i}.parquet"), row_group_size=25)
    arrowidx.build(root, {
        "file-index.bitmap.columns": "status,qty,day", "file-index.bloom-filter.columns": "id",
        "file-index.range-bitmap.columns": "amount,ts", "file-index.bsi.columns": "mid",
    }, progress=False)  # fmt: skip
    report = arrowidx.delete(root, "id % 7 = 3 OR lower(status) = 'lost'")  # a residual decides the rows
    expected_deleted = len(_duckdb(ROWS, "id % 7 = 3 OR lower(status) = 'lost'"))
    assert report.rows_deleted == expected_deleted
    deleted = set(_duckdb(ROWS, "id % 7 = 3 OR lower(status) = 'lost'", "id"))
    live = table.filter(pa.array([i not in deleted for i in table["id"].to_pylist()]))
    _KEEP.append(live)  # (its id keys DuckDB's connection: keep it alive)
    return root, live


def test_every_clause_through_the_api_on_an_indexed_lake_with_deletions(lake):
    root, live = lake
    data = arrowidx.dataset(root)
    differences = []
    for entry in CORPUS + FAMILIES:
        text, duck = clause(entry)
        expected = _duckdb(live, duck, "id")
        try:
            got = sorted(data.to_table(filter=text, columns=["id"]).column("id").to_pylist())
        except WhereError as e:
            if not isinstance(expected, Refused):
                differences.append((text, str(e).splitlines()[0], len(expected)))
            continue
        if isinstance(expected, Refused):
            # an error of a particular value comes only from the rows read (an index may skip them)
            continue
        if got != expected:
            differences.append((text, len(got), len(expected)))
    assert not differences, differences


@pytest.mark.parametrize("text", ["lower(status) = 'paid' AND qty > 0", "amount > 150", "ts::date = DATE '2024-05-03'", "id % 10 = 1"])
def test_count_rows_scanner_and_to_batches_take_sql(lake, text):
    root, live = lake
    data = arrowidx.dataset(root)
    expected = _duckdb(live, text, "id")
    assert data.count_rows(text) == len(expected)
    assert sorted(data.scanner(filter=text, columns=["id"]).to_table().column("id").to_pylist()) == expected
    assert sum(b.num_rows for b in data.to_batches(filter=text, columns=["status"])) == len(expected)


@pytest.mark.parametrize(
    "text",
    ["id = 42", "qty IN (1, 2) AND lower(status) LIKE 'p%'", "amount > 150", "status ILIKE 'PAID'", "CAST(ts AS DATE) > '2024-05-08'",
     "coalesce(qty, 0) = 0 AND NOT flag", "day = DATE '2024-05-03'", "\"größe\" = 2 AND `my col` = 'x'"],
)
def test_the_cli_answers_as_duckdb(lake, capsys, text):
    root, live = lake
    code = main(["query", root, "--where", text, "--columns", "id", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == _duckdb(live, text, "id")


def _decisions(data, filter) -> list[tuple[str, str]]:
    return [(p.path, p.status) for p in data.explain(filter).files]


def test_a_needle_in_sql_prunes_exactly_as_the_expression(lake):
    root, _ = lake
    data = arrowidx.dataset(root)
    needle = _decisions(data, "id = 42")
    assert needle == _decisions(data, pc.field("id") == 42)
    assert sum(status == "skipped" for _, status in needle) >= 2
    stamp = next(v for v in TABLE["ts"].to_pylist() if v is not None)
    sql = f"ts = TIMESTAMP '{stamp.isoformat(sep=' ')}'"
    expr = pc.field("ts") == pa.scalar(stamp, pa.timestamp("us"))
    assert _decisions(data, sql) == _decisions(data, expr)
    assert sum(status in ("skipped", "pruned") for _, status in _decisions(data, sql)) >= 2
    # the residual part never prunes, the pushdown part still does
    mixed = data.explain("id = 42 AND lower(status) = 'x'")
    assert [(p.path, p.status) for p in mixed.files] == needle and "then on the rows read" in mixed.filter


def test_an_expression_keeps_pyarrow_meaning(lake):
    """The same comparison as SQL text and as a pc.Expression: NaN rows differ, by design."""
    root, live = lake
    data = arrowidx.dataset(root)
    nan_rows = pc.sum(pc.is_nan(pc.fill_null(live["amount"], 0.0))).as_py()
    assert nan_rows > 0
    assert data.count_rows("amount > 150") == data.count_rows(pc.field("amount") > 150) + nan_rows


# -- refusals: not valid SQL for the schema -------------------------------------------------------------


def test_refusals_name_the_interface_suggest_and_point(lake, capsys):
    root, _ = lake
    data = arrowidx.dataset(root)
    with pytest.raises(WhereError) as info:
        data.to_table(filter="stauts = 'paid'")
    lines = str(info.value).splitlines()
    assert lines[0].startswith("filter=: unknown column 'stauts'; did you mean 'status'?")
    assert lines[1] == "  stauts = 'paid'" and lines[2] == "  ^"
    with pytest.raises(WhereError, match=r"^where=: could not convert string '.*' to INTEGER.*quote the value: status = '5'"):
        arrowidx.delete(root, "status = 5", dry_run=True)  # DuckDB compares status as numbers
    assert main(["query", root, "--where", "id = 1 AND qty > 'x'"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arrowidx: --where: 'x' is not a number (qty is INTEGER)") and "Traceback" not in err
    assert err.splitlines()[-1] == " " * (2 + len("id = 1 AND qty > ")) + "^"
    with pytest.raises(TypeError, match="Expression or SQL text"):
        data.count_rows(42)


def test_spark_read_refuses_on_the_driver_before_any_job(lake):
    pytest.importorskip("pyspark")
    from arrowidx.spark import read

    root, _ = lake
    with pytest.raises(WhereError, match=r"^where: unknown column 'nope'"):
        read(None, root, "nope = 1")  # no Spark session is even touched


def test_the_10000_value_in_list_is_exact():
    values = list(range(-60, 20000, 2))[:10000]
    text = f"id IN ({', '.join(map(str, values))})"
    assert _ours(text) == _duckdb(ROWS, text)
    strings = ", ".join(f"'v{i}'" for i in range(9990)) + ", 'paid', 'new', 'it''s', NULL, 'x'"
    text = f"status NOT IN ({strings})"
    assert _ours(text) == _duckdb(ROWS, text) == []
    text = f"status IN ({strings})"
    assert _ours(text) == _ours(text, pushdown=False) == _duckdb(ROWS, text)
    text = f"amount IN ({', '.join(str(v / 4) for v in range(-10000, 0))}, 0, 2.5, 7.25)"
    assert _ours(text) == _ours(text, pushdown=False) == _duckdb(ROWS, text)


@pytest.mark.parametrize(
    "text",
    ["tstz >= TIMESTAMP '2024-05-05 00:00:00'", "tstz < '2024-05-03 06:00:00'", "CAST(tstz AS DATE) = DATE '2024-05-04'",
     "hour(tstz) = 17", "day(tstz) = 3 AND tstz > '2024-05-02'", "date_trunc('day', tstz) = TIMESTAMPTZ '2024-05-06 00:00:00-07:00'"],
)
def test_a_session_time_zone_means_what_it_means_in_duckdb(text):
    """Spark's read passes its session zone: naive times on a zoned column are wall times
    there, and dates and hours of zoned values are taken there (DuckDB's TimeZone setting)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'America/Los_Angeles'")
    con.register("t", ROWS)
    expected = sorted(r[0] for r in con.execute(f"SELECT _row FROM t WHERE {text}").fetchall())
    for pushdown in (True, False):
        where = compile_where(text, TABLE.schema, pushdown=pushdown, time_zone="America/Los_Angeles")
        rows = ROWS.filter(where.pushdown) if where.pushdown is not None else ROWS
        rows = rows.filter(where.residual.mask(rows)) if where.residual is not None else rows
        assert sorted(rows.column("_row").to_pylist()) == expected, (text, pushdown)


@pytest.mark.parametrize(
    "where",
    [r"path LIKE 'C:\temp%'", "id + 9223372036854775800 < 0", "id * 4611686018427387904 > 0", "qty = '6.5'", "x // 2 = -3.75"],
)
def test_a_delete_removes_exactly_the_rows_duckdb_selects(tmp_path, where):
    """Issue 48: a wrong answer in a filter is a wrong delete (``path LIKE 'C:\\temp%'`` once
    deleted only ``C:\\\\temp\\\\c.txt``, the one row DuckDB keeps)."""
    root = str(tmp_path / "lake")
    os.makedirs(root)
    pq.write_table(TABLE, os.path.join(root, "part-0.parquet"))
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    doomed = _duckdb(ROWS, where, "id")
    assert not isinstance(doomed, Refused) and 0 < len(doomed) < TABLE.num_rows or where.startswith("id + 922"), doomed
    report = arrowidx.delete(root, where, progress=False)
    assert report.rows_deleted == len(doomed)
    left = sorted(arrowidx.dataset(root).to_table(columns=["id"]).column("id").to_pylist())
    assert left == sorted(set(TABLE["id"].to_pylist()) - set(doomed))
