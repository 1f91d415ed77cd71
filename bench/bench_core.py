"""Bitmap V2 and bloom-filter build and lookups, and bitmap -> Arrow mask, beside Java.

Workloads W1-W3 of shared/bench/WORKLOADS.md. Java's ``speed-anchor`` (Apache Paimon's own
writers and readers, warm) runs first in the same invocation for the same workloads, then
arrowidx; the table prints both columns, the ratio and the target (issue 13). Lookups open
the index from its serialised bytes, evaluate and materialise the bitmap, like the Java runs
(median of ``--runs`` after warm-ups). Without Java or shared/javaref the Java column is
empty and "Java not available" is printed.

    .venv/bin/python bench/bench_core.py [--rows 10000000] [--runs 200] [--no-java]
"""

from __future__ import annotations

import argparse
import string

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from common import SideBySide, machine, median_ms, run_speed_anchor

from arrowidx import FileIndex, IndexResult, write_file_index
from arrowidx._roaring import bitmap_of
from arrowidx.predicate import bind

BUILD_TARGET, LOOKUP_TARGET, MASK_VS_SCAN_TARGET = 1.5, 1.0, 10.0
# Where the time goes when a target is missed (from profiling; printed beside a miss).
CAUSES = {
    "W1 build": "Arrow's counting sort of 10M rows, then one portable bitmap per value",
    "W2 build": "dictionary-encoding 10M strings",
    "W3 build": "70M random bit sets: numpy's scatter alone takes ~120 ms on two threads (floor measured apart)",
    "W1 eq": "~0.1 ms of Python per call (container, reader, block) + deserialising a 100k-row bitmap",
    "W2 eq": "~0.1 ms of Python per call: container, reader, a 16 kB string block walked entry by entry",
    "W3 eq": "Python per call",
    "in10": "ten bitmaps deserialised and OR-ed",
}


def workloads(rows: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    w1 = pa.table({"c": pa.array(rng.integers(0, 100, rows, dtype=np.int32))})
    letters = np.array(list(string.ascii_lowercase))
    pool = ["k-" + "".join(rng.choice(letters, rng.integers(6, 20))) for _ in range(1000)]
    w2 = pa.table({"c": pa.array(pool).take(pa.array(rng.integers(0, 1000, rows)))})
    w3 = pa.table({"c": pa.array(rng.integers(-(2**63), 2**63 - 1, rows, dtype=np.int64))})
    return {"W1": w1, "W2": w2, "W3": w3}


def lookup(data: bytes, schema: pa.Schema, node):
    """Open the index from its bytes, evaluate, materialise the bitmap (as Java does).

    ``node`` is the predicate bound once beforehand (:func:`arrowidx.predicate.bind`), as
    Java builds its ``Predicate`` once; binding a pyarrow Expression is timed on its own."""
    result = FileIndex(data, schema).evaluate(node)
    return result.bitmap if result.kind == "bitmap" else result.kind


def answer_text(answer) -> str:
    return f"bitmap card={len(answer)}" if not isinstance(answer, str) else answer.upper()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=200, help="timed lookups per query (after warm-ups)")
    parser.add_argument("--no-java", action="store_true", help="skip Java's speed-anchor")
    args = parser.parse_args()
    n = args.rows
    print(f"machine: {machine()}")
    java: dict[str, dict] = {}
    if not args.no_java:
        for only in ("bitmap v2", "bloom"):
            java.update(run_speed_anchor(n, only, query_iters=args.runs))
    else:
        print("Java not available: --no-java")
    tables = workloads(n)
    warmup = max(args.runs * 3 // 20, 3)
    table = SideBySide(f"core: bitmap V2 (W1, W2) and bloom-filter (W3), {n:,} rows; machine: {machine()}")
    answers = []
    w1_data = None
    for name, data_table in tables.items():
        column = data_table.column("c")
        if name == "W3":
            options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": str(n),
                       "file-index.bloom-filter.c.fpp": "0.01"}  # fmt: skip
            label = "bloom-filter"
        else:
            options = {"file-index.bitmap.columns": "c"}
            label = "bitmap V2"
        data = write_file_index(data_table, options)
        w1_data = data if name == "W1" else w1_data
        build = median_ms(lambda t=data_table, o=options: write_file_index(t, o), runs=3)
        present = column.chunk(0)[:10].to_pylist()
        j = java.get(name, {})
        bytes_note = f"{len(data):,} B" + (f" vs Java {j['bytes']:,} B" if "bytes" in j else "")
        table.add(f"{name} {label} build ({bytes_note})", j.get("build"), build, BUILD_TARGET, CAUSES[f"{name} build"])
        for q, expr in (("eq", pc.field("c") == present[0]), ("in10", pc.field("c").isin(pa.array(present, column.type)))):
            node = bind(expr, data_table.schema)
            got = lookup(data, data_table.schema, node)
            ms = median_ms(lambda d=data, s=data_table.schema, e=node: lookup(d, s, e), runs=args.runs, warmup=warmup)
            what = "equality" if q == "eq" else "IN (10 values)"
            table.add(f"{name} {label} {what}", j.get(q), ms, LOOKUP_TARGET, CAUSES.get(f"{name} {q}", CAUSES["in10"]))
            answers.append(f"{name} {q}: arrowidx {answer_text(got)}, Java {j.get(q + '_answer', '-')}")

    # bitmap -> Arrow mask: budget 3 ns per selected row + 0.2 ms per 10M rows
    rng = np.random.default_rng(3)
    for label, positions in (
        ("100,000 scattered rows", np.sort(rng.choice(n, min(100_000, n), replace=False))),
        ("0.1 % of rows", np.flatnonzero(rng.random(n) < 0.001)),
        ("50 % of rows", np.flatnonzero(rng.random(n) < 0.5)),
    ):
        result = IndexResult.of(bitmap_of(positions))
        ms = median_ms(lambda r=result: r.to_mask(n), runs=20, warmup=3)
        budget = 3e-6 * len(positions) + 0.2 * n / 10_000_000
        table.add_budget(f"bitmap -> Arrow mask, {label} of {n:,}", ms, budget, "per-container decoding")

    # lookup + mask for 1 % of the rows (W1 equality) against a full scan with pc.equal
    w1 = tables["W1"]
    value = w1.column("c").chunk(0)[0].as_py()
    expr = pc.field("c") == value
    scan_ms = median_ms(lambda: pc.equal(w1.column("c"), value), runs=20, warmup=3)
    mask_ms = median_ms(lambda: FileIndex(w1_data, w1.schema).evaluate(expr).to_mask(n), runs=50, warmup=5)
    got_mask = FileIndex(w1_data, w1.schema).evaluate(expr).to_mask(n)
    assert got_mask.equals(pc.equal(w1.column("c"), value).combine_chunks()), "mask differs from pc.equal"
    row = "W1 lookup + mask (1 % of rows) vs pc.equal full scan"
    table.add(row, None, mask_ms)
    table.rows[-1] = (row, f"pc.equal {scan_ms:.3g} ms", f"{mask_ms:.3g} ms", f"{scan_ms / mask_ms:.1f}x",
                      f">= {MASK_VS_SCAN_TARGET:g}x", "met" if scan_ms / mask_ms >= MASK_VS_SCAN_TARGET else "MISSED")  # fmt: skip
    if scan_ms / mask_ms < MASK_VS_SCAN_TARGET:
        table.missed.append(f"{row}: {scan_ms / mask_ms:.1f}x < {MASK_VS_SCAN_TARGET:g}x (lookup + 1 % mask)")
    bind_ms = median_ms(lambda: bind(expr, w1.schema), runs=200, warmup=20)
    table.print()
    print(f"binding a pyarrow Expression (once per query, not per file): {bind_ms:.3f} ms, not in the lookups above")
    print("answers: " + "; ".join(answers))


if __name__ == "__main__":
    main()
