"""The SQL front end (issue 41): what parsing SQL text adds to a query.

    .venv/bin/python bench/bench_sql.py [--rows N] [--runs N]

1. ``compile_where`` alone (sqlglot parse, bind, split), uncached: a needle, a two-column
   clause, a clause with a residual, the 10,000-value IN lists (integers, strings).
2. A needle and a selective query on an indexed lake (8 files), written as SQL text and as
   the equivalent ``pc.Expression``, interleaved: the difference is what the front end adds
   (first with the compiled-text cache cleared before every run, then warm).

Targets: at most 2 ms added to a query; the 10,000-value IN list parses in under 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import print_table  # noqa: E402

import arrowidx  # noqa: E402
from arrowidx import filters  # noqa: E402
from arrowidx.sql import compile_where  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "bench-data" / "sql"


def timings(fn, runs: int) -> list[float]:
    fn()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def spread(times: list[float]) -> str:
    q = statistics.quantiles(times, n=4) if len(times) >= 4 else [min(times), 0, max(times)]
    return f"median {statistics.median(times):.3f} ms (quartiles {q[0]:.3f}-{q[2]:.3f}, {len(times)} runs)"


def make_lake(rows: int) -> str:
    root = DATA / f"lake-{rows}"
    if not (root / "_arrowidx").exists():
        os.makedirs(root, exist_ok=True)
        rng = np.random.default_rng(41)
        per = rows // 8
        for i in range(8):
            table = pa.table({
                "id": np.arange(i * per, (i + 1) * per, dtype=np.int64),
                "status": rng.choice(["new", "paid", "lost", "refunded"], per),
                "amount": rng.gamma(2.0, 50.0, per),
                "ts": pa.array(np.datetime64("2024-01-01", "us").astype(np.int64) + np.arange(i * per, (i + 1) * per) * 1_000_000, pa.timestamp("us")),
            })  # fmt: skip
            pq.write_table(table, root / f"part-{i}.parquet", row_group_size=50_000)
        arrowidx.build(str(root), {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status",
                                   "file-index.range-bitmap.columns": "ts"}, progress=False)  # fmt: skip
    return str(root)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    schema = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64()), ("ts", pa.timestamp("us"))])
    texts = {
        "id = 42": "id = 42",
        "status = 'paid' AND amount > 100": "status = 'paid' AND amount > 100",
        "ts = TIMESTAMP '...' AND lower(status) = 'x'": "ts = TIMESTAMP '2024-01-02 00:00:00' AND lower(status) = 'paid'",
        "id IN (10,000 integers)": "id IN (" + ", ".join(str(i * 7) for i in range(10_000)) + ")",
        "status IN (10,000 strings)": "status IN (" + ", ".join(f"'v{i}'" for i in range(10_000)) + ")",
    }
    print("compile_where (parse, bind, split), uncached:")
    parse_rows = []
    for name, text in texts.items():
        times = timings(lambda text=text: compile_where(text, schema), args.runs)
        print(f"  {name:46} {spread(times)}")
        parse_rows.append((f"parse {name}", statistics.median(times), None, "-"))
    print_table("SQL front end: parse time", parse_rows)

    root = make_lake(args.rows)
    data = arrowidx.dataset(root)
    stamp = np.datetime64("2024-01-01", "us") + np.timedelta64(1_234_567, "s")
    queries = [
        ("needle id = 42", "id = 42", pc.field("id") == 42),
        ("needle ts = TIMESTAMP '...'", f"ts = TIMESTAMP '{str(stamp).replace('T', ' ')}'", pc.field("ts") == pa.scalar(stamp, pa.timestamp("us"))),
        ("status = 'lost' AND id < 1000", "status = 'lost' AND id < 1000", (pc.field("status") == "lost") & (pc.field("id") < 1000)),
    ]
    rows = []
    for name, text, expr in queries:
        assert data.to_table(filter=text).equals(data.to_table(filter=expr)), name
        for label, clear in (("cold text", True), ("warm text", False)):
            t_sql, t_expr = [], []
            for _ in range(args.runs):
                if clear:
                    filters._compiled.cache_clear()
                start = time.perf_counter()
                data.to_table(filter=text)
                t_sql.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                data.to_table(filter=expr)
                t_expr.append((time.perf_counter() - start) * 1000)
            added = [a - b for a, b in zip(t_sql, t_expr)]
            print(f"  {name} ({label}): SQL {spread(t_sql)}; Expression {spread(t_expr)}; added median {statistics.median(added):.3f} ms")
            rows.append((f"{name} ({label})", statistics.median(t_sql), statistics.median(t_expr), "same query as a pc.Expression"))
    print_table(f"SQL text against the pc.Expression, {args.rows:,}-row lake (8 files)", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
