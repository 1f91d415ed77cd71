"""Issue 49 benchmark: ``arrowidx.polars.scan`` against ``pl.scan_parquet`` on a Hive lake
written by Polars (``write_parquet(partition_by=...)``: the partition columns are in the
files too, which Polars reads from the folders).

    .venv/bin/python bench/bench_polars_hive.py [--days 20] [--regions 10] [--rows 20000] [--runs 7]

Generates (once, under ``bench-data/``, fixed seed) ``days x regions`` folders
``day=2024-01-DD/region=R/`` of one file each (``--rows`` rows: ``id`` unique, ``user``
uniform in [0, 1,000,000), ``amount``), with a bitmap on ``user``. Then, in a new process
(``cold``: open, plan and read once) and side by side after one warm-up (median of
``--runs``), for a partition filter, a needle on ``user`` and both, checking both answers
are equal. Run it with ``PYTHONPATH`` at another checkout's ``src`` for its figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
from common import print_table, side_by_side

QUERIES = {
    "partition (1 day of 20)": "pl.col('day') == pl.date(2024, 1, 7)",
    "needle (user)": "pl.col('user') == 4242",
    "partition + needle": "(pl.col('day') == pl.date(2024, 1, 7)) & (pl.col('user') == 4242)",
}


def generate(root: Path, days: int, regions: int, rows: int) -> None:
    done = root.with_name(root.name + ".done")  # (beside the lake: Polars reads every file in it)
    if done.exists():
        return
    rng = np.random.default_rng(49)
    frames = []
    for d in range(days):
        for r in range(regions):
            n = len(frames)
            frames.append(pl.DataFrame({
                "id": np.arange(n * rows, (n + 1) * rows), "user": rng.integers(0, 1_000_000, rows),
                "amount": rng.gamma(2.0, 10.0, rows), "day": [f"2024-01-{d + 1:02d}"] * rows, "region": [f"r{r}"] * rows,
            }).with_columns(pl.col("day").str.to_date()))  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    pl.concat(frames).write_parquet(root, partition_by=["day", "region"])
    import arrowidx

    arrowidx.build(root, {"file-index.bitmap.columns": "user"}, progress=False)
    done.write_text("ok\n")


def cold(root: Path, query: str) -> float:
    """ms of import, open, plan and read of one query in a new process."""
    code = (
        "import time; t = time.perf_counter(); import polars as pl; from arrowidx import polars as apl;"
        f" apl.scan({str(root)!r}).filter({query}).collect(); print((time.perf_counter() - t) * 1000)"
    )
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=20)
    parser.add_argument("--regions", type=int, default=10)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = Path("bench-data") / f"polars-hive-{args.days}x{args.regions}x{args.rows}"
    generate(root, args.days, args.regions, args.rows)
    from arrowidx import polars as apl

    rows = []
    for name, text in QUERIES.items():
        q = eval(text)  # noqa: S307 - the queries above
        t_cold = cold(root, text)
        ours, theirs, got, want = side_by_side(lambda q=q: apl.scan(root).filter(q).collect(),
                                               lambda q=q: pl.scan_parquet(root).filter(q).collect(), args.runs)  # fmt: skip
        assert got.sort("id").equals(want.sort("id")), name
        rows.append((f"{name} warm", ours, theirs, "pl.scan_parquet"))
        rows.append((f"{name} cold (new process)", t_cold, None, "-"))
    print_table(f"Hive lake {args.days}x{args.regions} files of {args.rows:,} rows (Polars-written)", rows)


if __name__ == "__main__":
    main()
