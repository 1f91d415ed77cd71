"""The arrowidx command line: build, inspect, query and delete, and its exit codes."""

from __future__ import annotations

import glob
import json

import polars as pl
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

import arrowidx
from arrowidx.cli import main

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


def test_build_query_delete_inspect(lake, capsys):
    code, out, _ = run(capsys, "build", lake, "--bitmap", "status", "--bloom-filter", "id",
                       "--option", "file-index.bloom-filter.id.fpp=0.01", "--quiet")  # fmt: skip
    assert code == 0 and "indexed 3 file(s)" in out
    code, out, err = run(capsys, "query", lake, "--where", "status = 'paid' AND amount > 5", "--format", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    # SQL is Polars' (NaN > 5 is true there), so Polars on the raw files is the reference.
    expected = pl.scan_parquet(f"{lake}/*.parquet").filter(pl.sql_expr("status = 'paid' AND amount > 5")).collect()
    assert [r["id"] for r in rows] == expected["id"].to_list() and f"{expected.height:,} row(s)" in err
    code, out, _ = run(capsys, "query", lake, "--where", "id = 10007", "--explain", "--columns", "id,status")
    assert code == 0 and "skipped" in out and "bloom-filter" in out
    code, out, _ = run(capsys, "delete", lake, "--where", "status = 'lost'", "--quiet")
    assert code == 0 and "deleted" in out
    assert arrowidx.dataset(lake).count_rows() == ds.dataset(lake).count_rows(filter=~(pc.field("status") == "lost") | pc.field("status").is_null())
    code, out, _ = run(capsys, "inspect", lake)
    assert code == 0 and "manifest v2" in out and "part-000.parquet" in out
    (index_file,) = glob.glob(f"{lake}/_arrowidx/index/part-000.parquet.*.index")
    code, out, _ = run(capsys, "inspect", index_file)
    assert code == 0 and "bitmap" in out and "bloom-filter" in out


def test_where_not_translatable_is_finished_by_polars(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    code, out, _ = run(capsys, "query", lake, "--where", "status LIKE 'pa%' AND amount < 10", "--format", "json")
    assert code == 0
    expected = pl.scan_parquet(f"{lake}/*.parquet").filter(pl.sql_expr("status LIKE 'pa%' AND amount < 10")).collect()
    assert [json.loads(line)["id"] for line in out.splitlines()] == expected["id"].to_list()


@pytest.mark.parametrize(
    "argv,code,message",
    [
        (["build", "{lake}"], 2, "nothing to index"),
        (["build", "{lake}", "--bitmap", "nope"], 2, "not a column"),
        (["build", "{lake}", "--bitmap", "status", "--option", "file-index.bitmap.status.verison=1"], 2, "unknown option"),
        (["build", "{lake}", "--bloom-filter", "status", "--option", "oops"], 2, "KEY=VALUE"),
        (["query", "{lake}", "--where", "nope = 1"], 2, "unknown column"),
        (["query", "{lake}", "--where", "status = = 1"], 2, "cannot parse"),
        (["query", "{lake}", "--columns", "zzz"], 2, "unknown column"),
        (["query", "{lake}/missing", "--where", "id = 1"], 2, "no such file"),
        (["delete", "{lake}", "--where", "status LIKE 'a%'"], 2, "cannot evaluate this exactly"),
    ],
)
def test_errors_say_what_to_do(lake, capsys, argv, code, message):
    got, _, err = run(capsys, *[a.format(lake=lake) for a in argv])
    assert got == code and message in err


def test_corrupt_index_exits_1(lake, capsys):
    run(capsys, "build", lake, "--bitmap", "status", "--quiet")
    (path,) = glob.glob(f"{lake}/_arrowidx/index/part-001.parquet.*.index")
    with open(path, "r+b") as f:
        f.write(b"XXXXXXXX")
    code, _, err = run(capsys, "query", lake, "--where", "status = 'new'")
    assert code == 1 and "part-001.parquet." in err and ".index" in err
