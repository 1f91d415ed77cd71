"""Issue 5 benchmark: queries on the demo lake through arrowidx.dataset, plain
pyarrow.dataset and DuckDB, side by side in one run (warm file cache), plus build time
against the time to write the data.

    .venv/bin/python bench/bench_dataset.py [--rows 10000000] [--files 20]

DuckDB is a benchmark-only dependency (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
from common import median_ms, record

import arrowidx
from arrowidx.demo import demo_options, generate, queries

SQL = {
    "needle user_id = v": "user_id = {user}",
    "needle id = v": "id = {row_id}",
    "rare status = 'LOST'": "status = 'LOST'",
    "1% user_id < 500,000": "user_id < 500000",
    "selective status & region": "status = 'RETURNED' AND region = 'eu-west'",
    "broad amount > 33 (~50%)": "amount > 33.0",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    root = generate(Path("bench-data") / f"lake-{args.rows}", args.rows, args.files)
    options = demo_options()

    # Build against write: time to write the same files again from memory.
    tables = [pq.read_table(p) for p in sorted(root.glob("*.parquet"))]
    scratch = root.parent / "_write_probe"
    scratch.mkdir(exist_ok=True)
    start = time.perf_counter()
    for i, t in enumerate(tables):
        pq.write_table(t, scratch / f"{i}.parquet", row_group_size=100_000)
    write_s = time.perf_counter() - start
    shutil.rmtree(scratch)
    del tables
    shutil.rmtree(root / "_arrowidx", ignore_errors=True)
    report = arrowidx.build(root, options, progress=False)
    print(f"build: {report}\nwriting the same data: {write_s:.2f}s; build/write = {report.seconds / write_s:.2f}")

    import duckdb

    con = duckdb.connect()
    first = pq.read_table(root / "part-00000.parquet", columns=["id", "user_id"])
    literals = {"user": first.column("user_id")[1234].as_py(), "row_id": first.column("id")[4321].as_py()}
    indexed = arrowidx.dataset(root)
    plain = ds.dataset(root, format="parquet")
    glob = str(root / "*.parquet")
    print(f"\n{'query':30} {'rows':>9} {'pyarrow':>10} {'duckdb':>10} {'arrowidx':>10} {'vs pyarrow':>10} {'vs duckdb':>10}")
    chart_rows = []
    for name, expr in queries(root):
        sql = f"SELECT * FROM read_parquet('{glob}') WHERE " + SQL[name].format(**literals)
        t_plain = median_ms(lambda expr=expr: plain.to_table(filter=expr), args.runs, warmup=1)
        t_duck = median_ms(lambda sql=sql: con.sql(sql).to_arrow_table(), args.runs, warmup=1)
        t_ours = median_ms(lambda expr=expr: indexed.to_table(filter=expr), args.runs, warmup=1)
        rows = indexed.to_table(filter=expr).num_rows
        assert rows == plain.to_table(filter=expr).num_rows
        print(f"{name:30} {rows:>9,} {t_plain:>8.1f}ms {t_duck:>8.1f}ms {t_ours:>8.1f}ms {t_plain / t_ours:>9.1f}x {t_duck / t_ours:>9.1f}x")
        chart_rows += [(name, t_ours, t_plain, "pyarrow.dataset"), (name, t_ours, t_duck, "DuckDB")]
    record(f"dataset queries ({args.rows:,} rows)", chart_rows)  # for bench/chart.py


if __name__ == "__main__":
    main()
