"""``make demo``: a generated Parquet lake, indexed, with deletions, queried three ways.

Generates (once, cached under ``demo-data/``, fixed seed) 20 Parquet files with about 10
million rows, builds arrowidx indexes, deletes some rows, then runs needle, selective and
broad queries through ``arrowidx.dataset`` and plain ``pyarrow.dataset`` (and Polars and
Spark when installed), printing what was skipped, the times and the speed-up, and checking
that both answers agree.

    python -m arrowidx.demo [--rows 10000000] [--files 20] [--dir demo-data] [--no-spark]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

STATUSES = ["DELIVERED", "SHIPPED", "PENDING", "CANCELLED", "RETURNED", "LOST"]
STATUS_WEIGHTS = [0.55, 0.25, 0.12, 0.05, 0.0299, 0.0001]
REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east", "sa-east", "af-south"]
USER_ID_RANGE = 50_000_000

DEMO_OPTIONS = {
    "file-index.bitmap.columns": "status,region",  # low cardinality: exact rows per value
    "file-index.range-bitmap.columns": "user_id,id",  # high cardinality: exact rows, ranges too
    "file-index.bloom-filter.columns": "user_id",  # cheap file skipping before the range-bitmap
    "file-index.bloom-filter.user_id.fpp": "0.01",
}


def demo_options() -> dict[str, str]:
    """The demo's index options (the one place benches and the demo take them from)."""
    return dict(DEMO_OPTIONS)


def generate(path: str | os.PathLike, rows: int = 10_000_000, files: int = 20, seed: int = 42,
             row_group_rows: int = 100_000) -> Path:  # fmt: skip
    """Write the demo lake to ``path`` unless the same one is already there; return the path.

    Columns: ``id`` (a shuffled permutation of 0..rows-1), ``user_id`` (uniform in
    [0, 50,000,000)), ``status`` (6 values, the rarest 0.01 %), ``region`` (8 values),
    ``amount`` (gamma-distributed double, 1 % NULL), ``event_time`` (timestamp[us]).
    """
    path = Path(path)
    stamp = {"rows": rows, "files": files, "seed": seed, "row_group_rows": row_group_rows, "v": 1}
    marker = path.parent / f"{path.name}.json"
    if marker.exists() and json.loads(marker.read_text()) == stamp:
        return path
    print(f"generating the demo lake: {rows:,} rows in {files} Parquet files under {path} (fixed seed; once,"
          " then cached)...", flush=True)  # fmt: skip
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64)
    per_file = -(-rows // files)
    start_time = np.datetime64("2026-01-01T00:00:00", "us").astype(np.int64)
    for i in range(files):
        lo, hi = i * per_file, min((i + 1) * per_file, rows)
        n = hi - lo
        if n <= 0:
            break
        amount = rng.gamma(2.0, 20.0, n)
        table = pa.table(
            {
                "id": ids[lo:hi],
                "user_id": rng.integers(0, USER_ID_RANGE, n, dtype=np.int64),
                "status": pa.array(np.array(STATUSES)[rng.choice(len(STATUSES), n, p=STATUS_WEIGHTS)]),
                "region": pa.array(np.array(REGIONS)[rng.integers(0, len(REGIONS), n)]),
                "amount": pa.array(amount, mask=rng.random(n) < 0.01),
                "event_time": pa.array(start_time + np.sort(rng.integers(0, 86_400_000_000 * 30, n)), pa.timestamp("us")),
            }
        )
        pq.write_table(table, path / f"part-{i:05d}.parquet", row_group_size=row_group_rows)
    marker.write_text(json.dumps(stamp))
    return path


def queries(root: str | os.PathLike) -> list[tuple[str, pc.Expression]]:
    """Needle, selective and broad queries with literals taken from the data."""
    first = pq.read_table(Path(root) / "part-00000.parquet", columns=["id", "user_id"])
    user = first.column("user_id")[1234].as_py()
    row_id = first.column("id")[4321].as_py()
    return [
        ("needle user_id = v", pc.field("user_id") == user),
        ("needle id = v", pc.field("id") == row_id),
        ("rare status = 'LOST'", pc.field("status") == "LOST"),
        ("1% user_id < 500,000", pc.field("user_id") < 500_000),
        ("selective status & region", (pc.field("status") == "RETURNED") & (pc.field("region") == "eu-west")),
        ("broad amount > 33 (~50%)", pc.field("amount") > 33.0),
    ]


def timed_runs(fn: Callable[[], object], runs: int = 5) -> tuple[float, float, float, object]:
    """``(median, fastest, slowest)`` milliseconds of ``runs`` calls after one warm-up, and the
    last result."""
    result = fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times), max(times), result


def timed_side_by_side(
    plain: Callable[[], object], ours: Callable[[], object], runs: int = 5
) -> tuple[tuple[float, float, float, object], tuple[float, float, float, object]]:
    """:func:`timed_runs` of ``plain`` and of ``ours``, their runs interleaved (which goes
    first alternates), so that a change in the machine's load falls on both alike."""
    calls = (plain, ours)
    results = [plain(), ours()]  # warm-up
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        for j in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            results[j] = calls[j]()
            times[j].append((time.perf_counter() - start) * 1000)
    return tuple((statistics.median(t), min(t), max(t), r) for t, r in zip(times, results))  # type: ignore[return-value]


def timed(fn: Callable[[], object], runs: int = 3) -> tuple[float, object]:
    """Median milliseconds of ``runs`` calls after one warm-up, and the last result."""
    median, _, _, result = timed_runs(fn, runs)
    return median, result


def _ms(median: float, lo: float, hi: float) -> str:
    """``12.3 ms (11.9-13.0)``: the median and the range of the runs."""
    def f(x: float) -> str:
        return f"{x:.0f}" if x >= 100 else f"{x:.1f}"

    return f"{f(median)} ({f(lo)}-{f(hi)})"


def main(argv: list[str] | None = None) -> int:
    import arrowidx
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--dir", default="demo-data")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark part")
    parser.add_argument("--no-polars", action="store_true", help="skip the Polars part")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per query (the median is shown)")
    args = parser.parse_args(argv)

    _single_file_part()
    t0 = time.perf_counter()
    root = generate(Path(args.dir) / f"lake-{args.rows}", args.rows, args.files)
    print(f"dataset: {root} ({args.files} files, {args.rows:,} rows), ready in {time.perf_counter() - t0:.1f}s")
    write_ms, _ = timed(lambda: pq.write_table(pq.read_table(root / "part-00000.parquet"), root.parent / "_write_probe.parquet", row_group_size=100_000), runs=1)
    options = demo_options()
    from .lake.source import index_locations

    for index in index_locations(str(root)):  # a fresh build (the sidecar, or an old _arrowidx/)
        shutil.rmtree(index, ignore_errors=True)
    print("building indexes: " + "; ".join(f"{k} = {v}" for k, v in options.items()))
    report = arrowidx.build(root, options)  # a progress bar only when stderr is a terminal
    print(f"build: {report}  (writing one data file takes {write_ms:.0f} ms; {args.files} files ~ {write_ms * args.files / 1000:.1f}s)")
    deleted = arrowidx.delete(root, (pc.field("status") == "CANCELLED") & (pc.field("amount") > 150.0), progress=False)
    print(f"delete (deletion vectors; data files untouched) where status = 'CANCELLED' AND amount > 150: {deleted}")
    where_deleted = (pc.field("status") == "CANCELLED") & (pc.field("amount") > 150.0)
    alive = ~where_deleted | where_deleted.is_null()

    indexed = arrowidx.dataset(root)
    plain = ds.dataset(root, format="parquet")
    runs = args.runs
    print(f"\nqueries: milliseconds, median of {runs} warm runs of each reader in turn (fastest-slowest); speed-up = pyarrow median / arrowidx median")
    print(f"{'query':28} {'files skipped':>13} {'rows read':>11} {'result':>9} {'pyarrow ms':>18} {'arrowidx ms':>18} {'speed-up':>8}  same")
    ok = True
    for name, expr in queries(root):
        plain_ms, ours_ms = timed_side_by_side(
            lambda expr=expr: plain.to_table(filter=expr & alive), lambda expr=expr: indexed.to_table(filter=expr), runs
        )
        expected, got = plain_ms[3], ours_ms[3]
        plan = indexed.explain(expr)
        same = got.equals(expected)
        ok &= same
        print(f"{name:28} {plan.files_skipped:>6}/{len(plan.files):<6} {plan.rows_read:>11,} {got.num_rows:>9,}"
              f" {_ms(*plain_ms[:3]):>18} {_ms(*ours_ms[:3]):>18} {plain_ms[0] / ours_ms[0]:>7.1f}x  {'yes' if same else 'NO'}")  # fmt: skip
    print("\nexplain for the needle query (why each file was skipped or read):")
    print(indexed.explain(queries(root)[0][1]))
    if not args.no_polars:
        ok &= _polars_part(root, alive)
    if not args.no_spark:
        ok &= _spark_part(root)
    print("\nall answers agree with plain readers" if ok else "\nSOME ANSWERS DIFFER")
    return 0 if ok else 1


def _single_file_part() -> None:
    """One table, one container: build it, evaluate a few predicates, show the masks."""
    import arrowidx

    rng = np.random.default_rng(1)
    n = 1_000_000
    table = pa.table({
        "status": pa.array(np.array(STATUSES)[rng.choice(len(STATUSES), n, p=STATUS_WEIGHTS)]),
        "user_id": rng.integers(0, USER_ID_RANGE, n, dtype=np.int64),
    })  # fmt: skip
    options = {"file-index.bitmap.columns": "status", "file-index.bloom-filter.columns": "user_id",
               "file-index.bloom-filter.user_id.items": str(n), "file-index.bloom-filter.user_id.fpp": "0.01"}  # fmt: skip
    start = time.perf_counter()
    data = arrowidx.write_file_index(table, options)
    print(f"one file: {n:,} rows -> {len(data):,}-byte Paimon index container in {(time.perf_counter() - start) * 1000:.0f} ms")
    index = arrowidx.FileIndex(data, table.schema)
    user = table.column("user_id")[7].as_py()
    for expr in [pc.field("status") == "LOST", ~pc.field("status").isin(["DELIVERED", "SHIPPED"]),
                 pc.field("user_id") == user, pc.field("user_id") == -1, pc.field("user_id") > 5]:  # fmt: skip
        result = index.evaluate(expr)
        mask = result.to_mask(n)
        kept = pc.sum(mask).as_py() or 0
        text = " ".join(str(expr).split())
        print(f"  {text}\n      -> {result.kind:6} keeps {kept:>9,} rows ({kept / n:7.3%}): {_reason(index, expr)}")
    print()


def _reason(index, expr) -> str:
    """What each index on the filter's columns answered, in words."""
    from arrowidx.lake.plans import describe_answer

    parts = [describe_answer(t, answer, expr) for t, answer in index.answers_by_type(expr).items()]
    return "; ".join(parts) or "no index on these columns"


def _polars_part(root: Path, alive) -> bool:
    try:
        import polars as pl

        from arrowidx import polars as apl
    except ImportError as e:
        print(f"\n(Polars part skipped: {e})")
        return True
    print(f"\nPolars {pl.__version__}: arrowidx.polars.scan vs pl.scan_parquet('lake/*.parquet') (ms: median (fastest-slowest))")
    print(f"{'query':30} {'pl.scan_parquet':>18} {'arrowidx':>18} {'speed-up':>8}")
    deleted = (pl.col("status") == "CANCELLED") & (pl.col("amount") > 150.0)
    keep = ~deleted.fill_null(False)
    tests = [
        ("needle user_id = v", pl.col("user_id") == _literal(root, "user_id", 1234)),
        ("rare status = 'LOST'", pl.col("status") == "LOST"),
        ("1% user_id < 500,000", pl.col("user_id") < 500_000),
        ("broad amount > 33", pl.col("amount") > 33.0),
    ]
    ok = True
    for name, expr in tests:
        plain_ms, ours_ms = timed_side_by_side(
            lambda expr=expr: pl.scan_parquet(str(root / "*.parquet")).filter(keep).filter(expr).collect(),
            lambda expr=expr: apl.scan(str(root)).filter(expr).collect(),
        )
        (ms_plain, expected), (ms_ours, got) = (plain_ms[0], plain_ms[3]), (ours_ms[0], ours_ms[3])
        same = got.equals(expected)
        ok &= same
        print(f"{name:30} {_ms(*plain_ms[:3]):>18} {_ms(*ours_ms[:3]):>18} {ms_plain / ms_ours:>7.1f}x  {'same' if same else 'DIFFERENT'}")
        if ms_plain < ms_ours:
            print(f"{'':30} {_why_slower(root, expr)}")
    return ok


def _why_slower(root: Path, expr) -> str:
    """Why arrowidx took longer than ``pl.scan_parquet`` for a Polars query, from its plan."""
    from arrowidx import polars as apl

    report = apl.explain(str(root), expr)
    if report.files_skipped == 0 and report.rows_kept >= report.rows_total:
        deleted = report.explain.rows_deleted
        cost = (f"; arrowidx also drops the {deleted:,} deleted rows by position (a row index over every file),"
                " where the baseline filters them with the columns it reads anyway") if deleted else (
                "; arrowidx also plans with the indexes first")  # fmt: skip
        return f"(slower: the indexes rule nothing out here, so both read every row{cost})"
    return (f"(slower: the indexes keep {report.rows_kept:,} of {report.rows_total:,} rows; what is left"
            " is read in more, smaller pieces than one scan of every file)")


def _literal(root: Path, column: str, row: int):
    return pq.read_table(root / "part-00000.parquet", columns=[column]).column(column)[row].as_py()


def _spark_part(root: Path) -> bool:
    try:
        from pyspark.sql import functions as F

        from arrowidx import spark as aspark
    except ImportError as e:
        print(f"\n(Spark part skipped: {e})")
        return True
    log = root.parent / "spark.log"
    spark = _quiet_session(aspark, log)
    print(f"\nSpark {spark.version} (local[2]; Spark's own log: {log}), count(), ms: median (fastest-slowest)")
    print(f"{'query':30} {'spark.read.parquet':>18} {'arrowidx.spark.read':>19} {'speed-up':>8}  {'rows':>6}")
    user = _literal(root, "user_id", 1234)
    deleted = (F.col("status") == "CANCELLED") & (F.col("amount") > 150.0)
    ok = True
    # columns=: a Python data source is not told which columns a query needs (Spark's own
    # reader decodes only the filter's columns for a count), so the count names its column
    queries = [("needle user_id = v", f"user_id = {user}", ["user_id"]), ("rare status = 'LOST'", "status = 'LOST'", ["status"])]
    for name, where, columns in queries:
        plain, ours = timed_side_by_side(
            lambda where=where: spark.read.parquet(str(root)).filter(F.expr(where) & ~F.coalesce(deleted, F.lit(False))).count(),
            lambda where=where, columns=columns: aspark.read(spark, str(root), where, columns=columns).count(),
            runs=2,
        )
        expected, got = plain[3], ours[3]
        ok &= got == expected
        print(f"{name:30} {_ms(*plain[:3]):>18} {_ms(*ours[:3]):>19} {plain[0] / ours[0]:>7.1f}x  {got:>6,} {'same' if got == expected else 'DIFFERENT'}")
    spark.stop()
    return ok


def _quiet_session(aspark, log: Path):
    """A local Spark session whose JVM writes its own output (start-up WARN lines, its log)
    to ``log`` rather than between the demo's lines: the JVM inherits this process's
    standard error while the session is made, pointed at the file for that moment."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "ab") as f:
            os.dup2(f.fileno(), 2)
        return aspark.local_session("local[2]", "arrowidx-demo")
    finally:
        os.dup2(saved, 2)
        os.close(saved)


if __name__ == "__main__":
    sys.exit(main())
