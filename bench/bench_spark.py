"""Issue 7 benchmark: arrowidx on Spark (``local[2]``) against Spark's own Parquet reader.

    .venv/bin/python bench/bench_spark.py [--rows 10000000] [--runs 3]

Generates (once, cached under ``bench-data/spark/``, fixed seed) the demo lake: 20 Parquet
files, ``--rows`` rows, 100,000-row groups; ``id`` a shuffled permutation, ``user_id``
uniform in [0, 50,000,000), ``status`` 6 values (the rarest 0.01 %), ``region`` 8 values,
``amount`` gamma-distributed double, ``event_time`` timestamp (UTC). Indexes: bitmap on
status and region, bloom-filter on id, range-bitmap on user_id (bloom-filter when this
checkout has no range-bitmap).

Side by side in one run, on one ``local[2]`` session:

1. index build: local ``arrowidx.build`` against ``arrowidx.spark.build`` (full rebuild,
   after a warm-up Spark job), and a check that both wrote the same index files;
2. queries: after one warm-up, the median of ``--runs`` interleaved runs of
   ``arrowidx.spark.read(spark, root, q).toArrow()`` and
   ``spark.read.parquet(root).filter(q).toArrow()`` (Spark's defaults: vectorised reader,
   Parquet filter pushdown on), checking the answers agree (the Parquet side with the
   deleted rows filtered out by id). 0.1 % of the rows are deleted first.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import side_by_side

from arrowidx.demo import demo_options, generate

FILES = 20
ROW_GROUP = 100_000
DELETED_BELOW = 0.001  # ids below 0.1 % of the row count are deleted

def spark_session():
    import arrowidx.spark

    return arrowidx.spark.local_session("local[2]", "arrowidx-bench", spark_driver_memory="3g",
                                        spark_sql_session_timeZone="UTC")  # fmt: skip


def index_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "_arrowidx" / "index").rglob("*.index"))}


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows:
        return False
    return a.sort_by("id").equals(b.select(a.column_names).sort_by("id"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench-data/spark")
    parser.add_argument("--skip-build", action="store_true", help="reuse the indexes of an earlier run")
    args = parser.parse_args(argv)

    import arrowidx.spark as axs

    t_gen, root = timed(lambda: generate(Path(args.dir) / f"lake-{args.rows}", args.rows, FILES, row_group_rows=ROW_GROUP))
    print(f"lake {root}: {args.rows:,} rows in {FILES} files, {ROW_GROUP:,}-row groups (ready in {t_gen:.1f}s)")
    options = demo_options()
    print("indexes:", ", ".join(f"{k.split('.')[1]}({v})" for k, v in options.items() if k.endswith(".columns")))

    t_start, spark = timed(spark_session)
    axs.register(spark)
    print(f"Spark {spark.version} local[2] session started in {t_start:.1f}s")

    # -- 1. build: local against Spark --------------------------------------------------------
    if not args.skip_build:
        build_side_by_side(spark, root, options, Path(args.dir))
    return queries(spark, root, args.rows, args.runs)


def build_side_by_side(spark, root: Path, options: dict[str, str], work: Path) -> None:
    import arrowidx
    import arrowidx.spark as axs
    from arrowidx.lake.layout import load_manifest, resolve

    t_local, local_report = timed(lambda: arrowidx.build(str(root), options, progress=False, incremental=False))
    local_index = index_bytes(root)
    fs, r, _ = resolve(str(root))
    local_manifest = load_manifest(fs, r)
    # Warm the Spark side (JVM, Python workers, imports) with a one-file build elsewhere, as
    # a real cluster would be warm; then the full rebuild is what is timed.
    warm = work / "warm-up"
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir(parents=True)
    pq.write_table(pq.read_table(root / "part-00000.parquet").slice(0, 1000), warm / "part-0.parquet")
    axs.build(spark, str(warm), options)
    shutil.rmtree(warm)
    t_spark, spark_report = timed(lambda: axs.build(spark, str(root), options, incremental=False))
    spark_manifest = load_manifest(fs, r)
    same_index = index_bytes(root) == local_index and all(
        local_manifest.files[k].index == spark_manifest.files[k].index for k in local_manifest.files
    )
    print("\nindex build (all 20 files, full rebuild)")
    print(f"  arrowidx.build (local, 2 threads)   {t_local * 1000:>10,.0f} ms   {local_report.index_bytes:,} index bytes")
    print(
        f"  arrowidx.spark.build (local[2])     {t_spark * 1000:>10,.0f} ms   overhead {t_spark / t_local:.2f}x"
        f" (+{(t_spark - t_local) * 1000:,.0f} ms); same index files and entries: {same_index}"
    )
    assert len(spark_report.indexed) == FILES


def queries(spark, root: Path, rows: int, runs: int) -> int:
    import arrowidx
    import arrowidx.spark

    deleted_below = max(1, int(rows * DELETED_BELOW))
    arrowidx.delete(str(root), pc.field("id") < deleted_below, progress=False)
    data = arrowidx.dataset(str(root))
    rng = np.random.default_rng(1)
    needle_id = int(rng.integers(deleted_below, rows))
    some = data.to_table(filter=pc.field("id") == needle_id, columns=["user_id"])
    needle_user = some.column("user_id")[0].as_py()
    battery = [
        ("needle: id = N", f"id = {needle_id}"),
        ("needle: user_id = N", f"user_id = {needle_user}"),
        ("0.01 %: status = 'LOST' (bitmap)", "status = 'LOST'"),
        ("selective: user_id < 50,000 (0.1 %)", "user_id < 50000"),
    ]
    print(f"\nqueries (median of {runs} warm runs, .toArrow(); {deleted_below:,} rows deleted)")
    print(f"{'query':38} {'rows':>6} {'files read':>10} {'tasks':>5} {'arrowidx':>10} {'parquet':>10} {'speed-up':>9}  agree")
    for name, condition in battery:
        tasks = arrowidx.spark.read(spark, str(root), condition).rdd.getNumPartitions()
        files_read = arrowidx.spark.read(spark, str(root), condition, maxPartitionBytes="1").rdd.getNumPartitions()

        def ours(cond=condition):
            return arrowidx.spark.read(spark, str(root), cond).toArrow()

        def theirs(cond=condition):
            return spark.read.parquet(str(root)).filter(cond).toArrow()

        t_ours, t_theirs, got, want = side_by_side(ours, theirs, runs)
        want = want.filter(pc.greater_equal(want.column("id"), deleted_below))
        agree = same_rows(got, want)
        print(
            f"{name:38} {got.num_rows:>6,} {files_read:>4} of {FILES:<3} {tasks:>5} {t_ours:>8,.0f}ms {t_theirs:>8,.0f}ms"
            f" {t_theirs / t_ours:>8.1f}x  {agree}"
        )
        if not agree:
            print(f"  MISMATCH for {condition}: {got.num_rows} vs {want.num_rows} rows", file=sys.stderr)
            return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
