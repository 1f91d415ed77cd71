"""What ``arrowidx.dataset`` being a ``pyarrow.dataset.FileSystemDataset`` costs (issue 49,
part 3): opening one makes a pyarrow fragment per data file (no I/O) and reads the first
file's schema, where the plain ``IndexedDataset`` (``arrowidx.lake.scan.dataset``, what
Polars, Spark and the CLI open) does neither until the first query.

In one process, alternating, medians and spread (min-max) over ``--rounds``:

* open only: ``arrowidx.dataset(root)`` against ``arrowidx.lake.scan.dataset(root)`` and
  ``pyarrow.dataset.dataset(root)``;
* open + a needle (``id == v``, columns ``id, amount``): the same three.

Lakes: ``N`` files of 500 rows, a bloom filter on ``id`` (bench/bench_scale.py's lakes,
cached under ``bench-data/``).

    .venv/bin/python bench/bench_dataset_open.py [--sizes 200,2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_scale import DATA, OPTIONS, ROWS, lake_table  # noqa: E402
from common import machine  # noqa: E402

import arrowidx  # noqa: E402
from arrowidx.lake.scan import dataset as plain_dataset  # noqa: E402


def local_lake(files: int) -> tuple[Path, int]:
    """bench_scale's lake of ``files`` files (written and indexed once, then cached) and a needle in it."""
    root = DATA / f"open-{files}x{ROWS}"
    rng = np.random.default_rng(files)
    ids = rng.permutation(files * ROWS).astype(np.int64)
    if not (root.parent / f"_{root.name}.arrowidx" / "LATEST").exists():
        root.mkdir(parents=True, exist_ok=True)
        for i in range(files):
            pq.write_table(lake_table(files, i, ids, rng), root / f"part-{i:05d}.parquet")
        arrowidx.build(root, OPTIONS, progress=False)
    return root, int(ids[(files // 2) * ROWS + 123])


def measure(cases: dict, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in cases}
    for fn in cases.values():
        fn()  # (warm: footers and indexes in the process's caches, as for a second query)
    for _ in range(rounds):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def cases_for(root: Path, expr: pc.Expression) -> dict:
    columns = ["id", "amount"]
    return {
        "open: arrowidx.dataset (pyarrow Dataset)": lambda: arrowidx.dataset(root),
        "open: IndexedDataset (lake.scan.dataset)": lambda: plain_dataset(root),
        "open: pyarrow.dataset.dataset": lambda: ds.dataset(root, format="parquet"),
        "needle: arrowidx.dataset": lambda: arrowidx.dataset(root).to_table(filter=expr, columns=columns),
        "needle: IndexedDataset": lambda: plain_dataset(root).to_table(filter=expr, columns=columns),
        "needle: pyarrow.dataset.dataset": lambda: ds.dataset(root, format="parquet").to_table(filter=expr, columns=columns),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="200,2000")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(machine())
    for files in [int(s) for s in args.sizes.split(",")]:
        root, value = local_lake(files)
        print(f"\n{files:,} files x 500 rows, warm process, {args.rounds} rounds (ms: median [min-max])")
        for name, values in measure(cases_for(root, pc.field("id") == value), args.rounds).items():
            print(f"  {name:45} {statistics.median(values):9.1f}  [{min(values):.1f}-{max(values):.1f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
