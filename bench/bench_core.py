"""Issue 2 benchmark: bitmap V2 and bloom-filter build and lookups, and bitmap -> Arrow mask.

Workloads W1-W3 of shared/bench/WORKLOADS.md, side by side with the Java reference figures
(Apache Paimon's own writers and readers, warm, same machine kind). Lookups open the
index from its serialised bytes, evaluate and materialise the bitmap, like the Java runs.

    .venv/bin/python bench/bench_core.py [--rows 10000000]
"""

from __future__ import annotations

import argparse
import string

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from common import median_ms, print_table

from arrowidx import FileIndex, write_file_index
from arrowidx._roaring import bitmap_of

JAVA = {
    "W1": {"build": 367, "eq": 0.31, "in": 16.3, "bytes": 20_124_430},
    "W2": {"build": 1712, "eq": 0.33, "in": 2.6, "bytes": 21_258_436},
    "W3": {"build": 2261, "eq": 4.6, "in": 4.5, "bytes": 11_981_327},
}


def workloads(rows: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    w1 = pa.table({"c": pa.array(rng.integers(0, 100, rows, dtype=np.int32))})
    letters = np.array(list(string.ascii_lowercase))
    pool = ["k-" + "".join(rng.choice(letters, rng.integers(6, 20))) for _ in range(1000)]
    w2 = pa.table({"c": pa.array(pool).take(pa.array(rng.integers(0, 1000, rows)))})
    w3 = pa.table({"c": pa.array(rng.integers(-(2**63), 2**63 - 1, rows, dtype=np.int64))})
    return {"W1": w1, "W2": w2, "W3": w3}


def lookup_ms(data: bytes, schema: pa.Schema, expr) -> float:
    def run():
        result = FileIndex(data, schema).evaluate(expr)
        return result.bitmap if result.kind == "bitmap" else result.remain

    return median_ms(run, runs=200, warmup=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    args = parser.parse_args()
    tables = workloads(args.rows)
    rows_out = []
    for name, table in tables.items():
        column = table.column("c")
        if name == "W3":
            options = {"file-index.bloom-filter.columns": "c", "file-index.bloom-filter.c.items": str(args.rows),
                       "file-index.bloom-filter.c.fpp": "0.01"}  # fmt: skip
            label = "bloom-filter"
        else:
            options = {"file-index.bitmap.columns": "c"}
            label = "bitmap V2"
        data = write_file_index(table, options)
        build = median_ms(lambda table=table, options=options: write_file_index(table, options), runs=3)
        present = column.chunk(0)[: 10].to_pylist()
        eq = lookup_ms(data, table.schema, pc.field("c") == present[0])
        in10 = lookup_ms(data, table.schema, pc.field("c").isin(pa.array(present, column.type)))
        java = JAVA[name]
        rows_out += [
            (f"{name} {label} build ({len(data):,} bytes)", build, java["build"], f"Java, {java['bytes']:,} bytes"),
            (f"{name} {label} equality", eq, java["eq"], "Java"),
            (f"{name} {label} IN (10 values)", in10, java["in"], "Java"),
        ]
    # bitmap -> Arrow mask, 10M rows, 50 % of rows selected at random
    n = args.rows
    rng = np.random.default_rng(3)
    bm = bitmap_of(np.flatnonzero(rng.random(n) < 0.5))
    from arrowidx import IndexResult

    result = IndexResult.of(bm)
    mask_ms = median_ms(lambda: result.to_mask(n), runs=20, warmup=3)
    sparse = IndexResult.of(bitmap_of(np.flatnonzero(rng.random(n) < 0.001)))
    sparse_ms = median_ms(lambda: sparse.to_mask(n), runs=20, warmup=3)
    rows_out.append((f"bitmap -> Arrow mask, {n:,} rows, 50 % set", mask_ms, 5.0, "target"))
    rows_out.append((f"bitmap -> Arrow mask, {n:,} rows, 0.1 % set", sparse_ms, 5.0, "target"))
    print_table(f"arrowidx core benchmark ({args.rows:,} rows)", rows_out)


if __name__ == "__main__":
    main()
