"""Range-bitmap and BSI build and lookups (workload W4), beside Java.

W4 of shared/bench/WORKLOADS.md: 10,000,000 INT rows uniform in [0, 1,000,000), range-bitmap
with 16kb chunks. Java's ``speed-anchor`` (Apache Paimon's own writer and reader, warm) runs
first in the same invocation for the same workload, then arrowidx; the table prints both
columns, the ratio and the target (issue 13: build >= 1.5x, lookups >= 2x). Lookups open the
index from its serialised bytes, evaluate and materialise the bitmap, median of ``--runs``
after warm-ups, like the Java runs. The same rows are measured for BSI (Java has no BSI
workload), and each index's size is given as a share of the column's Parquet size.

    .venv/bin/python bench/bench_range_bitmap.py [--rows 10000000] [--runs 200] [--no-java]

``--shapes`` instead times =, IN(10) and < on range bitmaps of other sizes and cardinalities
through both walks of the slices (Roaring containers, machine words) and the one the index
picks, to show where the word walk pays (no Java: it has one walk).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import SideBySide, machine, run_speed_anchor

from arrowidx import FileIndex, write_file_index
from arrowidx.index.container import Container
from arrowidx.predicate import bind

DISTINCT = 1_000_000
TARGETS = {"build": 1.5, "eq": 2.0, "in10": 2.0, "lt": 2.0}
CAUSES = {  # where the time goes when a target is missed (from profiling)
    "build": "sorting 10M keys and writing one bitmap per bit slice",
    "eq": "one vectorised AND per slice over the rows' bits (read in place), then fewer words",
    "in10": "ten walks down the slices as machine words, shared where the values' high bits agree",
    "lt": "the slices above the bound's top bit ORed, then one AND per slice as machine words; 100k rows read from the words (~0.8 ms)",
}


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
    node = bind(expr, schema)  # once, as Java builds its Predicate once

    def run():
        result = FileIndex(data, schema).evaluate(node)
        return result.bitmap

    selected = len(run())
    wall, cpu = timed(run, runs, max(runs * 3 // 20, 3))
    return wall, cpu, selected


def shapes(runs: int) -> None:
    """=, IN(10) and ranges through each walk, on uniform columns of several sizes and cardinalities."""
    from contextlib import nullcontext
    from unittest import mock

    from arrowidx.index.rangebitmap import bitslice

    print(f"walks of the slices, median of {runs} lookups from the bytes; machine: {machine()}")
    print(f"{'rows':>11} {'distinct':>10} {'rows/value':>10}  {'query':6} {'roaring ms':>10} {'words ms':>9}"
          f" {'index picks':>11} {'picked ms':>9} {'picked vs roaring':>17}")  # fmt: skip
    for rows in (65_536, 524_288, 2_097_152, 10_000_000):
        for distinct in (100, 1_000, 20_000, 1_000_000):
            rng = np.random.default_rng(3)
            table = pa.table({"c": pa.array(rng.integers(0, distinct, rows, dtype=np.int32))})
            data = write_file_index(table, {"file-index.range-bitmap.columns": "c"})
            present = table.column("c").chunk(0)[:10].to_pylist()
            with mock.patch.object(bitslice.SliceSet, "_eq_words", autospec=True,
                                   side_effect=bitslice.SliceSet._eq_words) as spy:  # fmt: skip
                FileIndex(data, table.schema).evaluate(pc.field("c") == present[0])
                picks = "words" if spy.called else "roaring"
            c = pc.field("c")
            for name, expr in (("=", c == present[0]), ("IN(10)", c.isin(present)),
                               ("< 1 %", c < max(distinct // 100, 1)), ("< 50 %", c < distinct // 2)):  # fmt: skip
                times = {}
                for walk, forced in (("roaring", False), ("words", True), ("picked", None)):
                    patch = (nullcontext() if forced is None
                             else mock.patch.object(bitslice.BitSliceIndexBitmap, "_words_pay", lambda self, f=forced: f))  # fmt: skip
                    with patch:
                        times[walk] = lookup_ms(data, table.schema, expr, runs)[0]
                print(f"{rows:>11,} {distinct:>10,} {rows / distinct:>10,.0f}  {name:6} {times['roaring']:>10.2f}"
                      f" {times['words']:>9.2f} {picks:>11} {times['picked']:>9.2f}"
                      f" {times['roaring'] / times['picked']:>16.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=200, help="timed lookups per query (after warm-up)")
    parser.add_argument("--no-java", action="store_true", help="skip Java's speed-anchor")
    parser.add_argument("--shapes", action="store_true", help="time both walks of the slices on other shapes")
    args = parser.parse_args()
    if args.shapes:
        shapes(min(args.runs, 40))
        return
    print(f"machine: {machine()}")
    java = {} if args.no_java else run_speed_anchor(args.rows, "range-bitmap", query_iters=args.runs).get("W4", {})
    if args.no_java:
        print("Java not available: --no-java")
    table = workload(args.rows)
    column = table.column("c")
    present = column.chunk(0)[:10].to_pylist()
    bound = DISTINCT // 100  # `< v` selects about 1 %
    queries = {
        "eq": pc.field("c") == present[0],
        "in10": pc.field("c").isin(pa.array(present, pa.int32())),
        "lt": pc.field("c") < bound,
    }
    column_parquet = parquet_size(table)
    print(f"W4: {args.rows:,} INT rows uniform in [0, {DISTINCT:,}); column as Parquet: {column_parquet:,} bytes")
    out = SideBySide(f"range-bitmap / BSI (W4), {args.rows:,} rows, median; lookups from the bytes; machine: {machine()}")
    sizes = []
    answers = []
    for label, options in (
        ("range-bitmap", {"file-index.range-bitmap.columns": "c", "file-index.range-bitmap.c.chunk-size": "16kb"}),
        ("bsi", {"file-index.bsi.columns": "c"}),
    ):
        data = write_file_index(table, options)
        build, build_cpu = timed(lambda options=options: write_file_index(table, options), 3, 0)
        size = entry_size(data)
        sizes.append((label, size, len(data)))
        ref = java if label == "range-bitmap" else {}
        target = (lambda q: TARGETS[q]) if label == "range-bitmap" else (lambda q: None)
        out.add(f"{label} build (cpu {build_cpu:,.0f} ms)", ref.get("build"), build, target("build"), CAUSES["build"])
        for name, what in (("eq", "equality"), ("in10", "IN (10 values)"), ("lt", "< v (~1 %)")):
            ms, cpu, selected = lookup_ms(data, table.schema, queries[name], args.runs)
            out.add(f"{label} {what}, {selected:,} rows (cpu {cpu:.2f} ms)", ref.get(name), ms, target(name), CAUSES[name])
            if ref:
                answers.append(f"{name}: arrowidx bitmap card={selected:,}, Java {ref.get(name + '_answer', '-')}")
    out.print()
    if answers:
        print("answers (Java draws its own W4): " + "; ".join(answers))
    print(f"\n{'index size':22} {'index bytes':>12} {'with container':>15} {'Java bytes':>12}"
          f" {'vs Java':>8} {'of Parquet column':>18}")  # fmt: skip
    for label, size, total in sizes:
        java_bytes = java.get("bytes") if label == "range-bitmap" else None
        vs = f"{size / java_bytes:.3f}x" if java_bytes else "-"
        java_txt = f"{java_bytes:,}" if java_bytes else "-"
        print(f"{label:22} {size:>12,} {total:>15,} {java_txt:>12} {vs:>8} {size / column_parquet:>18.1%}")
    print("(arrowidx writes Java's exact bytes for the same rows; Java's figure is for its own random draw of W4)")


if __name__ == "__main__":
    main()
