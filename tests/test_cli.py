"""The arrowidx command line: build, inspect, explain, query and delete; exit codes and messages.

The CLI's ``--where`` means what SQL means; the references are hand-written pyarrow
Expressions with that meaning applied to the rows in memory (``Table.filter``), and DuckDB
(an independent SQL engine) when it is installed.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx.cli import main
from arrowidx.sql import WhereError, parse_where

from .conftest import damage_index, index_dir, rows_in_memory
from .test_lake import write_lake


@pytest.fixture()
def lake(tmp_path):
    root = str(tmp_path / "lake")
    write_lake(root, files=3)
    return root


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_build_query_delete_inspect(lake, capsys):
    code, out, _ = run(capsys, "build", lake, "--bitmap", "status", "--bloom-filter", "id",
                       "--option", "file-index.bloom-filter.id.fpp=0.01", "--quiet")  # fmt: skip
    assert code == 0 and "indexed 3 file(s)" in out
    code, out, err = run(capsys, "query", lake, "--where", "status = 'paid' AND amount > 5", "--format", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    # SQL's meaning: NaN is larger than every number.
    reference = (pc.field("status") == "paid") & ((pc.field("amount") > 5) | pc.is_nan(pc.field("amount")))
    expected = rows_in_memory(lake).filter(reference)
    assert sorted(r["id"] for r in rows) == ids(expected) and f"{expected.num_rows:,} row(s)" in err
    code, out, _ = run(capsys, "query", lake, "--where", "id = 10007", "--explain", "--columns", "id,status")
    assert code == 0 and "skipped" in out and "bloom-filter" in out
    code, out, _ = run(capsys, "delete", lake, "--where", "status = 'lost'", "--quiet", "--yes")
    assert code == 0 and "deleted" in out and "part-000.parquet" in out
    assert arrowidx.dataset(lake).count_rows() == rows_in_memory(lake).filter(~(pc.field("status") == "lost") | pc.field("status").is_null()).num_rows
    code, out, _ = run(capsys, "inspect", lake)
    assert code == 0 and "manifest v2" in out and "part-000.parquet" in out and "total" in out
    (index_file,) = glob.glob(f"{index_dir(lake)}/index/part-000.parquet.*.index")
    code, out, _ = run(capsys, "inspect", index_file)
    assert code == 0 and "bitmap" in out and "bloom-filter" in out


def test_like_is_exact(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    code, out, _ = run(capsys, "query", lake, "--where", "status LIKE 'pa%' AND amount < 10", "--format", "json")
    assert code == 0
    expected = rows_in_memory(lake).filter(pc.match_like(pc.field("status"), "pa%") & (pc.field("amount") < 10))
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == ids(expected)


# -- one semantics: the same text selects the same rows in the CLI, in Python and in SQL --------


def write_mixed_lake(root: str) -> None:
    """NaN, NULL, timestamps (naive and zoned), dates, ints and strings."""
    rng = np.random.default_rng(5)
    os.makedirs(root, exist_ok=True)
    for i in range(2):
        n = 400
        amount = rng.gamma(2.0, 20.0, n)
        amount[rng.random(n) < 0.1] = np.nan
        start = np.datetime64("2024-05-01T00:00:00", "us").astype(np.int64)
        ts = start + rng.integers(0, 86_400_000_000 * 60, n)
        table = pa.table({
            "id": pa.array(np.arange(n) + i * 1000, pa.int64()),
            "qty": pa.array(rng.integers(0, 10, n), pa.int64(), mask=rng.random(n) < 0.05),
            "status": pa.array(np.array(["new", "paid", "lost"], dtype=object)[rng.integers(0, 3, n)], mask=rng.random(n) < 0.1),
            "amount": pa.array(amount, mask=rng.random(n) < 0.05),
            "ts": pa.array(ts, pa.timestamp("us"), mask=rng.random(n) < 0.05),
            "zts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "day": pa.array((ts // 86_400_000_000).astype(np.int32), pa.int32()).cast(pa.date32()),
        })  # fmt: skip
        pq.write_table(table, os.path.join(root, f"part-{i}.parquet"), row_group_size=100)


F = pc.field
NAN_ABOVE = lambda e, op: op | pc.is_nan(e)  # noqa: E731
SEMANTICS = [
    ("amount > 30", (F("amount") > 30) | pc.is_nan(F("amount"))),
    ("amount >= 30", (F("amount") >= 30) | pc.is_nan(F("amount"))),
    ("NOT amount > 30", F("amount") <= 30),
    ("amount < 30", F("amount") < 30),
    ("amount = 'NaN'", pc.is_nan(F("amount"))),
    ("amount != 'NaN'", ~pc.is_nan(F("amount"))),
    ("amount IS NULL", F("amount").is_null()),
    ("ts > '2024-06-01'", F("ts") > pa.scalar(np.datetime64("2024-06-01T00:00:00", "us"), pa.timestamp("us"))),
    ("ts BETWEEN '2024-05-10' AND '2024-05-20 12:00:00'",
     (F("ts") >= pa.scalar(np.datetime64("2024-05-10", "us"), pa.timestamp("us")))
     & (F("ts") <= pa.scalar(np.datetime64("2024-05-20T12:00:00", "us"), pa.timestamp("us")))),
    ("zts < '2024-05-15T00:00:00Z'", F("zts") < pa.scalar(np.datetime64("2024-05-15", "us"), pa.timestamp("us")).cast(pa.timestamp("us", tz="UTC"))),
    ("day = '2024-05-03'", F("day") == pa.scalar(datetime.date(2024, 5, 3), pa.date32())),
    ("qty = '5'", F("qty") == 5),
    ("qty > 4.5", F("qty") >= 5),
    ("qty NOT IN (1, 2, 3)", ~F("qty").isin([1, 2, 3]) & F("qty").is_valid()),
    ("NOT (qty IN (1, 2) OR status = 'new')", ~F("qty").isin([1, 2]) & F("qty").is_valid() & (F("status") != "new")),
    ("status NOT LIKE 'n%'", ~pc.match_like(F("status"), "n%")),
    ("status IN ('paid', NULL)", F("status") == "paid"),
]  # fmt: skip


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mixed") / "lake")
    write_mixed_lake(root)
    arrowidx.build(root, {"file-index.bitmap.columns": "status,qty", "file-index.bloom-filter.columns": "id",
                          "file-index.range-bitmap.columns": "amount,ts"}, progress=False)  # fmt: skip
    return root


@pytest.mark.parametrize("text,reference", SEMANTICS, ids=[s for s, _ in SEMANTICS])
def test_where_means_sql_in_cli_and_python(mixed, capsys, text, reference):
    expected = ids(rows_in_memory(mixed).filter(reference))
    code, out, err = run(capsys, "query", mixed, "--where", text, "--columns", "id", "--json")
    assert code == 0, err
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == expected
    schema = arrowidx.dataset(mixed).schema
    assert ids(arrowidx.dataset(mixed).to_table(filter=parse_where(text, schema))) == expected
    try:
        import duckdb
    except ImportError:
        return
    lake_table = rows_in_memory(mixed)  # noqa: F841 - read by DuckDB's replacement scan
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    assert sorted(r[0] for r in con.execute(f"SELECT id FROM lake_table WHERE {text}").fetchall()) == expected


def test_delete_cli_and_python_delete_the_same_rows(mixed, tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    shutil.copytree(mixed, a)
    shutil.copytree(mixed, b)
    text = "amount > 30 OR ts > '2024-06-20'"
    code, out, _ = run(capsys, "delete", a, "--where", text, "--dry-run")
    assert code == 0 and "would delete" in out and "part-0.parquet" in out
    assert arrowidx.dataset(a).count_rows() == rows_in_memory(a).num_rows  # dry run: nothing deleted
    code, out, _ = run(capsys, "delete", a, "--where", text, "--yes", "--json")
    cli = json.loads(out[out.index("{"):])
    report = arrowidx.delete(b, parse_where(text, arrowidx.dataset(b).schema))
    assert code == 0 and cli["rows_deleted"] == report.rows_deleted and cli["rows_by_file"] == report.rows_by_file
    where = ((F("amount") > 30) | pc.is_nan(F("amount"))) | (F("ts") > pa.scalar(np.datetime64("2024-06-20", "us"), pa.timestamp("us")))
    assert report.rows_deleted == rows_in_memory(b).filter(where).num_rows
    assert ids(arrowidx.dataset(a).to_table()) == ids(arrowidx.dataset(b).to_table()) == ids(rows_in_memory(b).filter(~where | where.is_null()))


def test_delete_asks_and_refuses_without_a_terminal(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    before = arrowidx.dataset(lake).count_rows()
    code, out, err = run(capsys, "delete", lake, "--where", "status = 'lost'")
    assert code == 2 and "--yes" in err and "part-000.parquet" in out and "Traceback" not in err
    assert arrowidx.dataset(lake).count_rows() == before


def test_delete_confirmation_prompt(lake, capsys, monkeypatch):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    before = arrowidx.dataset(lake).count_rows()
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    code, out, _ = run(capsys, "delete", lake, "--where", "status = 'lost'")
    assert code == 0 and "would delete" in out and arrowidx.dataset(lake).count_rows() == before
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    code, out, _ = run(capsys, "delete", lake, "--where", "status = 'lost'")
    assert code == 0 and "deleted" in out and arrowidx.dataset(lake).count_rows() < before


# -- every user error: exit 2, a message saying what to write, no traceback -----------------


@pytest.mark.parametrize(
    "argv,message",
    [
        (["build", "{lake}"], "nothing to index"),
        (["build", "{lake}", "--bitmap", "stauts"], "did you mean 'status'"),
        (["build", "{lake}", "--bitmap", "status", "--option", "file-index.bitmap.status.verison=1"], "unknown option"),
        (["build", "{lake}", "--bloom-filter", "status", "--option", "oops"], "KEY=VALUE"),
        (["query", "{lake}", "--where", "nope = 1"], "unknown column 'nope'"),
        (["query", "{lake}", "--where", "amont > 1"], "did you mean 'amount'"),
        (["query", "{lake}", "--where", "status = = 1"], "syntax error"),
        (["query", "{lake}", "--where", "upper(status) = 5"], "could not convert string"),  # DuckDB compares as numbers
        (["query", "{lake}", "--where", "frobnicate(status) = 'A'"], "function frobnicate() is not supported"),
        (["query", "{lake}", "--columns", "stats"], "did you mean 'status'"),
        (["query", "{lake}/missing", "--where", "id = 1"], "no such file"),
        (["query", "{lake}", "--where", "status = 5"], "status = '5'"),
        (["query", "{lake}", "--where", "user = 'abc'"], "'abc' is not a number"),
        (["query", "{lake}", "--where", "id = (SELECT 1)"], "subqueries"),
        (["query", "{lake}", "--where", "day > 5"], "quoted date"),
        (["query", "{lake}", "--where", "day > '2024-13-45'"], "not a valid date"),
        (["query", "{lake}", "--where", "status = 'open"], "never closed"),
        (["query", "{lake}", "--where", ""], "empty"),
        (["query", "{lake}", "--bogus"], ""),
    ],
)
def test_user_errors_exit_2_with_a_message(lake, capsys, argv, message):
    got, _, err = run(capsys, *[a.format(lake=lake) for a in argv])
    assert got == 2 and message in err and "Traceback" not in err, err


def test_issue_examples_work(lake, capsys):
    """What a new user typed and got a traceback for now runs (or is refused with exit 2)."""
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    for where in ["day > '2024-06-01'", "user = '5'", "amount = 'NaN'", "day >= '2022-01-03'"]:
        code, _, err = run(capsys, "query", lake, "--where", where, "--json")
        assert code == 0, err


def test_corrupt_index_exits_1(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    path = damage_index(lake, "part-001.parquet", "status")
    code, _, err = run(capsys, "query", lake, "--where", "status = 'new'")
    assert code == 1 and path in err and "Traceback" not in err


def test_internal_error_is_one_line_and_debug_shows_the_trace(lake, capsys, monkeypatch):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")

    def boom(*args, **kwargs):
        raise RuntimeError("kaputt")

    monkeypatch.setattr("arrowidx.lake.IndexedDataset.to_table", boom)
    code, _, err = run(capsys, "query", lake, "--where", "status = 'new'")
    assert code == 1 and "internal error: RuntimeError: kaputt" in err and "--debug" in err and "Traceback" not in err
    code, _, err = run(capsys, "query", lake, "--where", "status = 'new'", "--debug")
    assert code == 1 and "Traceback" in err


# -- builds remember ------------------------------------------------------------------------


def indexes(root: str) -> dict[str, list[str]]:
    data = arrowidx.dataset(root)
    return data.lake.file_index(data.manifest.files[data.lake.files[0]]).columns


def test_builds_remember_their_options(lake, capsys):
    code, _, _ = run(capsys, "build", lake, "--bitmap", "status,day", "--bloom-filter", "id", "--quiet")
    assert code == 0 and arrowidx.dataset(lake).manifest.version == 1
    code, out, _ = run(capsys, "build", lake)  # nothing new: nothing committed
    assert code == 0 and "nothing changed" in out and arrowidx.dataset(lake).manifest.version == 1
    code, out, _ = run(capsys, "build", lake, "--bitmap", "user")  # fewer flags: adds, forgets nothing
    assert code == 0 and arrowidx.dataset(lake).manifest.version == 2
    assert indexes(lake) == {"status": ["bitmap"], "day": ["bitmap"], "id": ["bloom-filter"], "user": ["bitmap"]}
    code, out, _ = run(capsys, "build", lake, "--drop", "day", "--drop", "id:bloom-filter", "--json")
    assert code == 0 and json.loads(out)["options"] == {"file-index.bitmap.columns": "status,user"}
    assert indexes(lake) == {"status": ["bitmap"], "user": ["bitmap"]}
    code, _, err = run(capsys, "build", lake, "--drop", "amount")
    assert code == 2 and "no such index" in err and "status:bitmap" in err
    report = arrowidx.build(lake, {"file-index.bloom-filter.columns": "id"}, replace=True)
    assert report.options == {"file-index.bloom-filter.columns": "id"} and indexes(lake) == {"id": ["bloom-filter"]}
    write_lake(lake + "/more", files=1, seed=3)
    report = arrowidx.build(lake)  # no options: the stored ones, for the new file only
    assert report.changed and report.indexed == ["more/part-000.parquet"] and len(report.unchanged) == 3


def test_non_terminal_build_writes_no_progress(lake, capsys):
    arrowidx.build(lake, {"file-index.bitmap.columns": "status"})
    arrowidx.delete(lake, pc.field("status") == "lost")
    _, err = capsys.readouterr()
    assert err == ""


def test_json_numbers_are_numbers(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    run(capsys, "delete", lake, "--where", "status = 'lost'", "--yes", "--quiet")
    code, out, _ = run(capsys, "inspect", lake, "--json")
    data = json.loads(out)
    assert code == 0 and all(isinstance(f["index_bytes"], int) and isinstance(f["deleted"], int) for f in data["files"])
    assert data["totals"]["rows_deleted"] == rows_in_memory(lake).filter(pc.field("status") == "lost").num_rows
    code, out, _ = run(capsys, "explain", lake, "--where", "status = 'lost'", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["files_total"] == 3 and isinstance(plan["rows_total"], int)


def test_where_error_is_an_arrowidx_error():
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(WhereError, match="did you mean 'x'"):
        parse_where("xx = 1", schema)
    assert isinstance(WhereError("m"), arrowidx.ArrowIdxError)


def test_the_installed_command_exits_2_without_a_traceback(lake):
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-m", "arrowidx.cli", "query", lake, "--where", "ts > '2024-06-01'"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "unknown column 'ts'" in done.stderr and "Traceback" not in done.stderr


def test_vacuum_cli_json_and_bad_duration(lake, capsys):
    arrowidx.build(lake, {"file-index.bloom-filter.columns": "id"})
    arrowidx.delete(lake, pc.field("id") < 5)  # version 2: version 1 is superseded
    code, out, _ = run(capsys, "vacuum", lake, "--older-than", "0", "--dry-run", "--json")
    report = json.loads(out)
    assert code == 0 and report["dry_run"] and report["kept_versions"] == [2]
    assert "_arrowidx/manifest-00000001.json" in report["removed"]
    assert os.path.exists(index_dir(lake, "manifest-00000001.json"))  # dry run: nothing removed
    code, out, _ = run(capsys, "vacuum", lake, "--older-than", "0")
    assert code == 0 and "removed" in out and not os.path.exists(index_dir(lake, "manifest-00000001.json"))
    expected = rows_in_memory(lake).filter(pc.field("id") >= 5)
    assert ids(arrowidx.dataset(lake).to_table()) == ids(expected)  # the current version still reads
    code, _, err = run(capsys, "vacuum", lake, "--older-than", "soon")
    assert code == 2 and "--older-than" in err
