"""arrowidx on Spark against Spark's own Parquet reader (issues 7 and 43).

    .venv/bin/python bench/bench_spark.py [--rows 10000000] [--runs 5] [--skip-build] [--standalone]

Generates (once, cached under ``bench-data/spark/``, fixed seed) the demo lake: 20 Parquet
files, ``--rows`` rows, 100,000-row groups; ``id`` a shuffled permutation, ``user_id``
uniform in [0, 50,000,000), ``status`` 6 values (the rarest 0.01 %), ``region`` 8 values,
``amount`` gamma-distributed double, ``event_time`` timestamp. Indexes (:data:`OPTIONS`):
bitmap on status and region, range-bitmap on user_id (row-exact), bloom-filter on id (so
``id = N`` is a bloom-only needle) and user_id. 0.1 % of the rows are deleted, spread over
every file, so every file carries a deletion vector.

1. index build: local ``arrowidx.build`` against ``arrowidx.spark.build`` (full rebuild,
   after a warm-up Spark job), and a check that both wrote the same index files;
2. queries (:data:`QUERIES`), each as ``.toArrow()`` and as ``.count()``, the median of
   ``--runs`` interleaved rounds after one warm-up round (every spelling once per round),
   with the spread (fastest-slowest):

   * ``spark``: ``spark.read.parquet(root).filter(q)``, Spark alone (its defaults:
     vectorised reader, Parquet filter pushdown on; deleted rows are not its business and
     are filtered out of its answer afterwards, untimed);
   * ``read``: ``arrowidx.spark.read(spark, root, q)``, the documented API;
   * ``format``: ``spark.read.format("arrowidx").load(root).filter(q)``, no load-time filter;
   * ``where``: ``spark.read.format("arrowidx").option("where", q).load(root)``, the Python
     data source with the load-time filter (the indexes prune; Python reads);
   * ``pipeline``: ``with_deletions_and_index(spark.read.parquet(root).filter(q), root,
     expr)``, the ``mapInArrow`` helper over Spark's own reader.

   Every answer is checked against Spark's (deleted rows removed). ``x`` = Spark alone's time
   / the spelling's time. ``--standalone`` runs the queries on a Spark standalone cluster
   (master, one 2-core worker and its executor in their own JVMs, started from PySpark's jars
   as ``integration/spark_cluster.py`` starts them) instead of ``local[2]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from arrowidx.demo import generate

FILES = 20
ROW_GROUP = 100_000
DELETED_BELOW = 0.001  # ids below 0.1 % of the row count are deleted (in every file)
OPTIONS = {
    "file-index.bitmap.columns": "status,region",
    "file-index.range-bitmap.columns": "user_id",
    "file-index.bloom-filter.columns": "id,user_id",
    "file-index.bloom-filter.user_id.fpp": "0.01",
}
QUERIES = [  # (name, SQL text); the needles' literals are filled in from the data
    ("needle, bloom-only: id = N", "id = {id}"),
    ("needle, row-exact: user_id = N", "user_id = {user}"),
    ("rare 0.01 %: status = 'LOST'", "status = 'LOST'"),
    ("1 %: user_id < 500,000", "user_id < 500000"),
    ("selective: RETURNED in eu-west", "status = 'RETURNED' AND region = 'eu-west'"),
    ("broad ~50 %: amount > 33", "amount > 33"),
]
SPELLINGS = ["spark", "read", "format", "where", "pipeline"]


def spark_session(master: str = "local[2]"):
    import arrowidx.spark

    if master.startswith("local"):
        return arrowidx.spark.local_session(master, "arrowidx-bench", spark_driver_memory="3g",
                                            spark_sql_session_timeZone="UTC")  # fmt: skip
    import os

    from pyspark.sql import SparkSession

    # the Python that plans Python data sources in the driver is PYSPARK_PYTHON's (this one)
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master).appName("arrowidx-bench")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "3g").config("spark.executor.memory", "3g")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    arrowidx.spark.register(spark)
    return spark


def index_bytes(root: Path) -> dict[str, bytes]:
    """Index file bytes by name without the writer's suffix (``<data file>.<xxh64>.index``:
    each build names its files ``<data file>.<xxh64>-<writer>.index``)."""
    return {
        re.sub(r"-[0-9a-f]+\.index$", ".index", str(p.relative_to(root))): p.read_bytes()
        for p in sorted((root / "_arrowidx" / "index").rglob("*.index"))
    }


def _unsuffixed(index):
    return None if index is None else dataclasses.replace(index, file=re.sub(r"-[0-9a-f]+\.index$", ".index", index.file or ""))


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench-data/spark")
    parser.add_argument("--skip-build", action="store_true", help="reuse the indexes of an earlier run")
    parser.add_argument("--standalone", action="store_true", help="on a Spark standalone cluster, not local[2]")
    parser.add_argument("--only", default="", help="comma-separated spellings to time (default: all)")
    args = parser.parse_args(argv)

    import arrowidx.spark as axs

    t_gen, root = timed(lambda: generate(Path(args.dir) / f"lake-{args.rows}", args.rows, FILES, row_group_rows=ROW_GROUP))
    root = root.resolve()
    print(f"lake {root}: {args.rows:,} rows in {FILES} files, {ROW_GROUP:,}-row groups (ready in {t_gen:.1f}s)")
    print("indexes:", ", ".join(f"{k.split('.')[1]}({v})" for k, v in OPTIONS.items() if k.endswith(".columns")))

    cluster = None
    master = "local[2]"
    if args.standalone:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "integration"))
        from spark_cluster import StandaloneCluster

        work = Path(args.dir).resolve() / "standalone"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        cluster = StandaloneCluster(work, cores=2, memory="4g", driver=False).start()
        master = cluster.master_url
    try:
        t_start, spark = timed(lambda: spark_session(master))
        axs.register(spark)
        print(f"Spark {spark.version} {master} session started in {t_start:.1f}s")
        if not args.skip_build:
            build_side_by_side(spark, root, OPTIONS, Path(args.dir))
        spellings = [s for s in SPELLINGS if not args.only or s in args.only.split(",") or s == "spark"]
        ok = queries(spark, root, args.rows, args.runs, spellings)
        spark.stop()
    finally:
        if cluster is not None:
            cluster.stop()
    return 0 if ok else 1


def build_side_by_side(spark, root: Path, options: dict[str, str], work: Path) -> None:
    import arrowidx
    import arrowidx.spark as axs
    from arrowidx.lake.commit import load_manifest
    from arrowidx.lake.source import resolve

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
    axs.build(spark, str(warm.resolve()), options)
    shutil.rmtree(warm)
    t_spark, spark_report = timed(lambda: axs.build(spark, str(root), options, incremental=False))
    spark_manifest = load_manifest(fs, r)
    same_index = index_bytes(root) == local_index and all(
        _unsuffixed(local_manifest.files[k].index) == _unsuffixed(spark_manifest.files[k].index) for k in local_manifest.files
    )
    print("\nindex build (all 20 files, full rebuild)")
    print(f"  arrowidx.build (local, 2 threads)   {t_local * 1000:>10,.0f} ms   {local_report.index_bytes:,} index bytes")
    print(
        f"  arrowidx.spark.build                {t_spark * 1000:>10,.0f} ms   overhead {t_spark / t_local:.2f}x"
        f" (+{(t_spark - t_local) * 1000:,.0f} ms); same index files and entries: {same_index}"
    )
    assert len(spark_report.indexed) == FILES


def _spellings(spark, root: str, condition: str, expr: pc.Expression) -> dict:
    import arrowidx.spark as axs

    return {
        "spark": lambda: spark.read.parquet(root).filter(condition),
        "read": lambda: axs.read(spark, root, condition),
        "format": lambda: spark.read.format("arrowidx").load(root).filter(condition),
        "where": lambda: spark.read.format("arrowidx").option("where", condition).load(root),
        "pipeline": lambda: axs.with_deletions_and_index(spark.read.parquet(root).filter(condition), root, expr),
    }


def queries(spark, root: Path, rows: int, runs: int, spellings: list[str]) -> bool:
    import logging

    import arrowidx
    from arrowidx.sql import parse_where

    logging.getLogger("arrowidx.spark").setLevel(logging.ERROR)  # the bench loads unfiltered on purpose
    deleted_below = max(1, int(rows * DELETED_BELOW))
    arrowidx.delete(str(root), pc.field("id") < deleted_below, progress=False)
    data = arrowidx.dataset(str(root))
    rng = np.random.default_rng(1)
    needle_id = int(rng.integers(deleted_below, rows))
    needle_user = data.to_table(filter=pc.field("id") == needle_id, columns=["user_id"]).column("user_id")[0].as_py()
    print(f"\nqueries: median of {runs} interleaved rounds after a warm-up round (fastest-slowest), ms;"
          f" x = Spark alone / spelling; {deleted_below:,} rows deleted, in every file")  # fmt: skip
    print(f"{'query':34} {'action':8} {'rows':>9}  " + "  ".join(f"{s:>22}" for s in spellings))
    ok = True
    for name, template in QUERIES:
        condition = template.format(id=needle_id, user=needle_user)
        expr = parse_where(condition, data.schema)
        makers = {k: v for k, v in _spellings(spark, str(root), condition, expr).items() if k in spellings}
        for action in ("toArrow", "count"):
            times: dict[str, list[float]] = {s: [] for s in makers}
            answers: dict[str, object] = {}
            for round_ in range(runs + 1):
                for spelling, make in makers.items():
                    start = time.perf_counter()
                    df = make()
                    answer = df.toArrow() if action == "toArrow" else df.count()
                    elapsed = (time.perf_counter() - start) * 1000
                    if round_:
                        times[spelling].append(elapsed)
                    answers[spelling] = answer
            expected = answers["spark"]
            if action == "toArrow":
                expected = expected.filter(pc.greater_equal(expected.column("id"), deleted_below))
                agree = all(_same_rows(answers[s], expected) for s in makers if s != "spark")
                n = expected.num_rows
            else:
                n = data.count_rows(expr)
                agree = all(answers[s] == n for s in makers if s != "spark")
            base = statistics.median(times["spark"])
            cells = []
            for s in makers:
                med = statistics.median(times[s])
                ratio = "" if s == "spark" else f" {base / med:5.2f}x"
                cells.append(f"{med:>7,.0f} ({min(times[s]):,.0f}-{max(times[s]):,.0f}){ratio}")
            print(f"{name:34} {action:8} {n:>9,}  " + "  ".join(f"{c:>22}" for c in cells) + ("" if agree else "  ANSWERS DIFFER"), flush=True)
            ok &= agree
    print("\nall answers agree with Spark's" if ok else "\nSOME ANSWERS DIFFER", flush=True)
    return ok


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    if a.num_rows != b.num_rows:
        return False
    return a.sort_by("id").equals(b.select(a.column_names).sort_by("id"))


if __name__ == "__main__":
    raise SystemExit(main())
