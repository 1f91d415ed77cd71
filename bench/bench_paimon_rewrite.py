"""Rewriting a Paimon table's file indexes: arrowidx (local threads and Spark ``local[2]``)
against Java Paimon's own rewrite (``FileIndexProcessor``, JIT warm) on the same table.

    PAIMON_MASTER=... python bench/bench_paimon_rewrite.py [--rows 5000000 --files 50] [--runs 3]

The table (append, 50 files written by Java Paimon master through
``bench/paimon_writer/WriteBench.java``, cached in ``~/.cache/arrowidx``) gets a bloom filter
on ``id`` and ``name`` and a bitmap on ``status`` and ``amount``. Java: the options set with
``ALTER TABLE``, then every file processed ``--runs`` + 2 times in one JVM (the first two
are warm-up), each run's time printed (index building and writing, no commit). arrowidx:
``rewrite_file_index`` on a fresh copy of the table per run (schema commit, indexing and the
snapshot commit included). Spark: the same on a ``local[2]`` session started beforehand.
Scaling with files: the same rows split over fewer files (``--scaling``). Without
``$PAIMON_MASTER`` only arrowidx runs (Java's rewrite exists in Paimon master only).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "paimon_writer"))
sys.path.insert(0, str(HERE.parent / "src"))

import javahelpers  # noqa: E402

CACHE = javahelpers.CACHE
OPTIONS = {"file-index.bloom-filter.columns": "id,name", "file-index.bitmap.columns": "status,amount"}


def table_for(rows: int, files: int) -> Path:
    warehouse = CACHE / f"paimon_rewrite_bench-{rows}-{files}"
    marker = warehouse / ".written"
    if not marker.exists():
        shutil.rmtree(warehouse, ignore_errors=True)
        warehouse.mkdir(parents=True)
        print(f"writing {rows:,} rows in {files} files with Java Paimon master into {warehouse} ...", flush=True)
        javahelpers.run("master", "WriteBench", str(warehouse), "bench", str(rows), str(files), jvm=["-Xmx3g"], timeout=3600)
        marker.touch()
    return warehouse


def fresh_copy(warehouse: Path, into: Path) -> str:
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(warehouse, into)
    return str(into / "db.db" / "bench")


def run_arrowidx(warehouse: Path, runs: int, work: Path, spark=None) -> list[float]:
    from arrowidx import paimon

    times = []
    for _ in range(runs):
        path = fresh_copy(warehouse, work)
        t0 = time.perf_counter()
        if spark is None:
            report = paimon.rewrite_file_index(path, OPTIONS)
        else:
            import arrowidx.spark

            report = arrowidx.spark.paimon_rewrite_file_index(spark, path, OPTIONS)
        times.append((time.perf_counter() - t0) * 1000)
        assert report.committed and len(report.rewritten) == report.files, report
    return times


def run_java(warehouse: Path, runs: int, work: Path) -> list[float]:
    path = fresh_copy(warehouse, work)
    del path
    javahelpers.run("master", "JavaRewrite", "rewrite", str(work), "db.bench", *[f"{k}={v}" for k, v in OPTIONS.items()], jvm=["-Xmx3g"])
    out = javahelpers.run("master", "JavaRewrite", "bench", str(work), "db.bench", str(runs + 2), jvm=["-Xmx3g"], timeout=3600)
    return [float(line.split("\t")[2]) for line in out.splitlines() if line.startswith("java\t")][2:]


def show(name: str, times: list[float], ours: float | None = None) -> None:
    med = statistics.median(times)
    ratio = f"  {med / ours:.2f}x arrowidx's time" if ours else ""
    print(f"{name:28} median {med:9,.0f} ms  (runs: {', '.join(f'{t:,.0f}' for t in times)}){ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--scaling", action="store_true", help="also 10 and 25 files of the same rows (arrowidx, local)")
    args = ap.parse_args()
    try:
        javahelpers.master_dir()
    except javahelpers.JavaUnavailable as e:
        print(f"skipped: {e} (the benchmark table is written, and Java's rewrite run, by Paimon master)")
        return
    work = CACHE / "paimon_rewrite_bench-work"
    warehouse = table_for(args.rows, args.files)
    print(f"table: {args.rows:,} rows in {args.files} files; options {OPTIONS}; cores: {os.cpu_count()}")
    java = run_java(warehouse, args.runs, work)
    ours = run_arrowidx(warehouse, args.runs, work)
    show("arrowidx (local threads)", ours)
    show("Java FileIndexProcessor", java, statistics.median(ours))
    if not args.no_spark:
        import arrowidx.spark

        spark = arrowidx.spark.local_session("local[2]", "bench-rewrite", spark_driver_memory="2g")
        try:
            run_arrowidx(warehouse, 1, work, spark)  # warm-up: Python workers started
            on_spark = run_arrowidx(warehouse, args.runs, work, spark)
        finally:
            spark.stop()
        show("arrowidx on Spark local[2]", on_spark, statistics.median(ours))
    if args.scaling:
        for files in (10, 25):
            w = table_for(args.rows, files)
            show(f"arrowidx, {files} files", run_arrowidx(w, args.runs, work))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
