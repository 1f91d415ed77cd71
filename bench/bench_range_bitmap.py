"""Issue 3 benchmark: range-bitmap and BSI build and lookups (workload W4).

W4 of shared/bench/WORKLOADS.md: 10,000,000 INT rows uniform in [0, 1,000,000), range-bitmap
with 16kb chunks, side by side with the Java reference (Apache Paimon's own writer and reader,
warm, same machine kind). Lookups open the index from its serialised bytes, evaluate and
materialise the bitmap, median of 200 runs after 30 warm-ups, like the Java runs. The same rows
are measured for BSI (Java has no figures for it), and each index's size is given as a share of
the column's Parquet size (pyarrow defaults: snappy, dictionary where it pays).

    .venv/bin/python bench/bench_range_bitmap.py [--rows 10000000] [--runs 200]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import print_table

from arrowidx import FileIndex, write_file_index
from arrowidx.index.container import Container

JAVA = {"build": 41_960, "eq": 22.0, "in": 81.0, "lt": 17.3, "bytes": 29_100_515}
DISTINCT = 1_000_000


def workload(rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"c": pa.array(rng.integers(0, DISTINCT, rows, dtype=np.int32))})


def entry_size(data: bytes) -> int:
    """Bytes of the one index in a container (the container adds a ~50-byte header)."""
    (entry,) = Container(data).all_entries()
    return entry.length


def parquet_size(table: pa.Table) -> int:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.tell()


def timed(fn, runs: int, warmup: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``fn`` (CPU time shows what other load hides)."""
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def lookup_ms(data: bytes, schema: pa.Schema, expr, runs: int) -> tuple[float, float, int]:
    def run():
        result = FileIndex(data, schema).evaluate(expr)
        return result.bitmap

    selected = len(run())
    wall, cpu = timed(run, runs, max(runs * 3 // 20, 3))
    return wall, cpu, selected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument(
        "--runs", type=int, default=200, help="timed lookups per query (after warm-up)"
    )
    args = parser.parse_args()
    table = workload(args.rows)
    column = table.column("c")
    present = column.chunk(0)[:10].to_pylist()
    bound = DISTINCT // 100  # `< v` selects about 1 %
    queries = {
        "eq": pc.field("c") == present[0],
        "in": pc.field("c").isin(pa.array(present, pa.int32())),
        "lt": pc.field("c") < bound,
    }
    column_parquet = parquet_size(table)
    if args.rows != 10_000_000:
        print("note: Java's figures are for 10,000,000 rows; ratios below compare unlike sizes")
    print(
        f"W4: {args.rows:,} INT rows uniform in [0, {DISTINCT:,}); column as Parquet: {column_parquet:,} bytes"
    )
    rows_out = []
    sizes = []
    for label, options in (
        (
            "range-bitmap",
            {
                "file-index.range-bitmap.columns": "c",
                "file-index.range-bitmap.c.chunk-size": "16kb",
            },
        ),
        ("bsi", {"file-index.bsi.columns": "c"}),
    ):
        data = write_file_index(table, options)
        build, build_cpu = timed(lambda options=options: write_file_index(table, options), 3, 0)
        size = entry_size(data)
        sizes.append((label, size, len(data)))
        java = JAVA if label == "range-bitmap" else {}
        ref = "Java" if java else "no Java figure"
        rows_out.append(
            (f"{label} build", build, java.get("build"), f"{ref}; cpu {build_cpu:,.0f}ms")
        )
        for name, what in (("eq", "equality"), ("in", "IN (10 values)"), ("lt", "< v (~1 %)")):
            ms, cpu, selected = lookup_ms(data, table.schema, queries[name], args.runs)
            rows_out.append(
                (
                    f"{label} {what}, {selected:,} rows",
                    ms,
                    java.get(name),
                    f"{ref}; cpu {cpu:.2f}ms",
                )
            )
    print(f"load average while measuring: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print_table(
        f"range-bitmap / BSI benchmark ({args.rows:,} rows, median; lookups from the bytes)",
        rows_out,
    )
    print(f"\n{'index size':22} {'index bytes':>12} {'with container':>15} {'Java bytes':>12}"
          f" {'vs Java':>8} {'of Parquet column':>18}")  # fmt: skip
    for label, size, total in sizes:
        java_bytes = JAVA["bytes"] if label == "range-bitmap" else None
        vs = f"{size / java_bytes:.3f}x" if java_bytes else "-"
        java_txt = f"{java_bytes:,}" if java_bytes else "-"
        print(
            f"{label:22} {size:>12,} {total:>15,} {java_txt:>12} {vs:>8} {size / column_parquet:>18.1%}"
        )
    print("(arrowidx writes Java's exact bytes for the same rows; Java's figure is for its own random"
          " draw of W4, container included)")  # fmt: skip


if __name__ == "__main__":
    main()
