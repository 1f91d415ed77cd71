"""Hive partition folders (``key=value/``) are columns by default, everywhere (issue 41): the
Python API, SQL text, delete, the CLI and ``arrowidx.polars.scan``; compared with Polars'
own ``scan_parquet(hive_partitioning=True)`` and DuckDB over the same rows in memory."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import arrowidx
from arrowidx import polars as apl
from arrowidx.cli import main
from arrowidx.sql import WhereError

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("hive") / "lake")
    rng = np.random.default_rng(5)
    n = 0
    for day in ["2024-01-01", "2024-01-02", "2024-01-03"]:
        for region in ["eu", "us", "__HIVE_DEFAULT_PARTITION__"]:
            folder = os.path.join(root, f"dt={day}", f"region={region}")
            os.makedirs(folder)
            table = pa.table({"id": np.arange(n, n + 50), "amount": rng.choice([1.5, 300.0, np.nan], 50)})
            pq.write_table(table, os.path.join(folder, "part-0.parquet"), row_group_size=10)
            n += 50
    arrowidx.build(root, {"file-index.bloom-filter.columns": "id"}, progress=False)
    return root


def reference(root: str) -> pa.Table:
    """What Polars' own Hive reader makes of the folders."""
    return pl.scan_parquet(os.path.join(root, "**", "*.parquet"), hive_partitioning=True).collect().to_arrow()


def duck(table: pa.Table, text: str) -> list[int]:
    con = duckdb.connect()
    con.register("t", table)
    return sorted(r[0] for r in con.execute(f"SELECT id FROM t WHERE {text}").fetchall())


def test_partition_columns_are_discovered_with_their_types(hive):
    schema = arrowidx.dataset(hive).schema
    assert schema.field("dt").type == pa.date32() and schema.field("region").type == pa.string()
    assert arrowidx.dataset(hive, partitioning=None).schema.names == ["id", "amount"]
    typed = arrowidx.dataset(hive, partitioning={"dt": pa.string(), "region": pa.string()})
    assert typed.schema.field("dt").type == pa.string() and typed.count_rows("dt = '2024-01-02'") == 150
    table = arrowidx.dataset(hive).to_table()
    assert table.num_rows == 450 and table.column("region").null_count == 150  # __HIVE_DEFAULT_PARTITION__


@pytest.mark.parametrize(
    "text",
    ["dt = DATE '2024-01-02'", "dt = '2024-01-02' AND region = 'eu'", "region IS NULL AND id % 2 = 0", "dt > '2024-01-01' AND amount > 100",
     "upper(region) = 'US' AND id < 200", "region = 'us' AND id = 57", "year(dt) = 2024 AND region IN ('eu', 'us')"],
)
def test_sql_on_partition_columns_matches_duckdb(hive, text):
    data = arrowidx.dataset(hive)
    got = sorted(data.to_table(filter=text, columns=["id"]).column("id").to_pylist())
    assert got == duck(reference(hive), text)


def test_partition_filters_prune_files(hive):
    plan = arrowidx.dataset(hive).explain("dt = '2024-01-02' AND region = 'eu'")
    assert plan.files_pruned == 8 and plan.rows_read == 50


def test_polars_scan_keeps_partition_columns(hive):
    ours = apl.scan(hive).sort("id").collect()
    theirs = pl.from_arrow(reference(hive)).sort("id")
    assert ours.columns == ["id", "amount", "dt", "region"] and ours.equals(theirs.select(ours.columns))
    needle = apl.scan(hive).filter((pl.col("region") == "us") & (pl.col("dt") == pl.date(2024, 1, 3))).select("id").collect()
    assert needle["id"].to_list() == duck(reference(hive), "region = 'us' AND dt = DATE '2024-01-03'")
    assert apl.scan(hive, partitioning=None).collect_schema().names() == ["id", "amount"]
    arrow_read = apl.scan(hive, reader="pyarrow").filter(pl.col("region").is_null()).select("id", "dt").collect()
    assert sorted(arrow_read["id"].to_list()) == duck(reference(hive), "region IS NULL")


def test_cli_and_delete_use_partition_columns(hive, tmp_path, capsys):
    root = str(tmp_path / "copy")
    shutil.copytree(hive, root)
    assert main(["query", root, "--where", "region = 'eu' AND dt = '2024-01-01'", "--columns", "id,region", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == list(range(0, 50)) and {r["region"] for r in rows} == {"eu"}
    assert main(["query", root, "--where", "region = 'eu'", "--partitioning", "none"]) == 2
    assert "unknown column 'region'" in capsys.readouterr().err
    report = arrowidx.delete(root, "region = 'us' AND id % 10 = 0")
    assert report.rows_deleted == 15
    assert arrowidx.dataset(root).count_rows("region = 'us'") == 135
    with pytest.raises(WhereError, match="did you mean 'region'"):
        arrowidx.dataset(root).count_rows("regoin = 'us'")


def test_partition_filters_prune_before_any_file_is_opened(hive, monkeypatch):
    from arrowidx.lake import files

    opened: list[str] = []
    read_footer = files.read_footer
    monkeypatch.setattr(files, "read_footer", lambda fs, path, size: opened.append(path) or read_footer(fs, path, size))
    data = arrowidx.dataset(hive)
    assert data.count_rows("dt = '2024-01-03' AND region = 'us' AND id > 400") == 0 + len(duck(reference(hive), "dt = '2024-01-03' AND region = 'us' AND id > 400"))
    folders = {os.path.relpath(os.path.dirname(p), hive) for p in opened}
    first = os.path.dirname(data.files[0])  # the first file gives the schema
    assert folders <= {first, "dt=2024-01-03/region=us"}
    plan = data.explain("region = 'us'")
    assert [p.status for p in plan.files].count("pruned") == 6 and plan.rows_read == 150
