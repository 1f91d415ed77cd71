"""Issue 6 benchmark: ``arrowidx.polars.scan`` against ``pl.scan_parquet`` on the demo lake.

    .venv/bin/python bench/bench_polars.py [--rows 10000000] [--files 20] [--runs 5]

Generates (once, cached under ``bench-data/``, fixed seed) a lake like the issue-5 demo:
20 Parquet files, ``--rows`` rows, row groups of 100,000 rows; ``id`` a shuffled
permutation, ``user_id`` uniform in [0, 50,000,000), ``status`` 6 values (the rarest
0.01 %), ``region`` 8 values, ``amount`` gamma-distributed double (1 % NULL),
``event_time`` timestamp[us]. Indexes: those of the demo (``arrowidx.demo.DEMO_OPTIONS``).

Then, side by side in one run and after one warm-up, the median of ``--runs`` runs of
``arrowidx.polars.scan(root).filter(q).collect()`` and
``pl.scan_parquet(root/*.parquet).filter(q).collect()`` for a needle, a 1 % and a broad
(~50 %) query, checking both answers are equal. No rows are deleted in this run (the
plain scan would otherwise need an extra anti-filter, which would flatter arrowidx).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
from common import side_by_side

from arrowidx.demo import demo_options, generate


def ensure_indexed(root: Path) -> tuple[dict[str, str], float]:
    """Build the indexes unless the manifest already has exactly these options."""
    import arrowidx

    options = demo_options()
    start = time.perf_counter()
    report = arrowidx.build(root, options, progress=False)
    return options, (time.perf_counter() - start) if report.indexed else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench-data")
    parser.add_argument("--generate-only", action="store_true")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    root = generate(Path(args.dir) / f"polars-lake-{args.rows}-{args.files}", args.rows, args.files)
    print(
        f"lake {root}: {args.rows:,} rows in {args.files} files (ready in {time.perf_counter() - start:.1f}s)"
    )
    options, build_s = ensure_indexed(root)
    print("indexes:", ", ".join(f"{k.split('.')[1]}({v})" for k, v in options.items() if k.endswith(".columns")),
          f"(built in {build_s:.1f}s)" if build_s else "(already built)")  # fmt: skip
    if args.generate_only:
        return 0
    return run(root, args.runs)


def run(root: Path, runs: int) -> int:
    import polars as pl

    from arrowidx import polars as apl

    first = pq.read_table(root / "part-00000.parquet", columns=["id", "user_id"])
    user, row_id = first.column("user_id")[1234].as_py(), first.column("id")[4321].as_py()
    queries = [
        ("needle user_id = v", pl.col("user_id") == user, 20.0),
        ("1% user_id < 500,000", pl.col("user_id") < 500_000, 3.0),
        ("broad amount > 33 (~50%)", pl.col("amount") > 33.0, 1 / 1.2),
        ("needle id = v", pl.col("id") == row_id, None),
        ("rare status = 'LOST' (0.01%)", pl.col("status") == "LOST", None),
    ]
    glob = str(root / "*.parquet")
    print(
        f"\nPolars {pl.__version__}; median of {runs} warm runs each, interleaved; time of .collect()"
    )
    print(
        f"{'query':30} {'rows':>10} {'skipped':>8} {'scan_parquet':>13} {'arrowidx':>10} {'speed-up':>9} {'target':>8}"
    )
    ok = True
    for name, expr, target in queries:
        seen = []
        t_ours, t_plain, got, want = side_by_side(
            lambda expr=expr, seen=seen: apl.scan(root, on_scan=seen.append).filter(expr).collect(),
            lambda expr=expr: pl.scan_parquet(glob).filter(expr).collect(),
            runs,
        )
        same = got.equals(want)
        ok &= same
        speedup = t_plain / t_ours
        verdict = "-" if target is None else ("met" if speedup >= target else "MISSED")
        goal = "-" if target is None else (f">={target:g}x" if target >= 1 else f">={target:.2f}x")
        skipped = f"{seen[-1].files_skipped}/{seen[-1].files_total}"
        print(
            f"{name:30} {got.height:>10,} {skipped:>8} {t_plain:>11.1f}ms {t_ours:>8.1f}ms {speedup:>8.1f}x"
            f" {goal:>8} {verdict}{'' if same else '  RESULTS DIFFER'}"
        )
    print("\nall answers equal pl.scan_parquet" if ok else "\nSOME ANSWERS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
