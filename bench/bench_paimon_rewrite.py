"""Rewriting a Paimon table's file indexes: arrowidx (local threads and Spark ``local[2]``)
against Java Paimon's own rewrite (``FileIndexProcessor``, JIT warm) on the same table.

    PAIMON_MASTER=... python bench/bench_paimon_rewrite.py [--rows 5000000 --files 50] [--runs 3]
                                                           [--scaling 10,25] [--no-spark]

The table (append, written by Java Paimon master through ``bench/paimon_writer/WriteBench.java``,
cached in ``~/.cache/arrowidx``) gets a bloom filter on ``id`` and ``name`` and a bitmap on
``status`` and ``amount`` (10,000 distinct values per file at 50 files). Java: the options set
with ``ALTER TABLE``, then every file processed ``--runs`` + 2 times in one JVM kept running
(the first two are warm-up), each run's time (index building and writing, no commit) with the
JVM's CPU time (all its threads). arrowidx: ``rewrite_file_index`` on a fresh copy of the table
per run (schema commit, indexing and the snapshot commit included), with this process's CPU
time; on Spark, the same through a ``local[2]`` session started (and warmed up) beforehand.
Java's, the local and the Spark runs take turns, so that all see the same load. ``--scaling``: the same rows
split over other file counts, every engine again. Without ``$PAIMON_MASTER`` only arrowidx
runs (Java's rewrite exists in Paimon master only). The machine's load average is printed
with each table: other processes share its cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
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


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_arrowidx(warehouse: Path, work: Path, spark=None) -> tuple[float, float | None, float]:
    """One rewrite of a fresh copy: (wall ms, this process's CPU ms or None on Spark, load)."""
    from arrowidx import paimon

    path = fresh_copy(warehouse, work)
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    if spark is None:
        report = paimon.rewrite_file_index(path, OPTIONS, progress=False)
    else:
        import arrowidx.spark

        report = arrowidx.spark.paimon_rewrite_file_index(spark, path, OPTIONS)
    wall, cpu = (time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000
    assert report.committed and len(report.rewritten) == report.files, report
    return wall, None if spark is not None else cpu, load


class JavaRuns:
    """Java's rewrite in one JVM kept running (``JavaRewrite serve``): ``run()`` processes every
    file once more, so that its runs can take turns with arrowidx's (the same load for both).
    The JVM's work directory is its own copy of the table, the options set with ALTER TABLE."""

    def __init__(self, warehouse: Path, work: Path):
        fresh_copy(warehouse, work)
        javahelpers.run("master", "JavaRewrite", "rewrite", str(work), "db.bench", *[f"{k}={v}" for k, v in OPTIONS.items()], jvm=["-Xmx3g"])
        cmd = javahelpers.command("master", "JavaRewrite", "serve", str(work), "db.bench", jvm=["-Xmx3g"])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def run(self) -> tuple[float, float, float]:
        """(wall ms, JVM CPU ms, load at the start)."""
        load = os.getloadavg()[0]
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("java\t"):
            raise RuntimeError(f"JavaRewrite serve stopped: {line!r}")
        parts = line.split("\t")
        return float(parts[2]), float(parts[3]), load

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def show(name: str, samples: list[tuple], java_ms: float | None) -> dict:
    walls = [s[0] for s in samples]
    cpus = [s[1] for s in samples if s[1] is not None]
    loads = [s[2] for s in samples]
    med = statistics.median(walls)
    ratio = f"  Java/this {java_ms / med:.2f}x" if java_ms else ""
    cpu = f"  CPU {statistics.median(cpus):7,.0f} ms" if cpus else "  CPU       -   "
    print(f"  {name:28} median {med:8,.0f} ms  (runs: {', '.join(f'{w:,.0f}' for w in walls)}){cpu}"
          f"  load {min(loads):.1f}-{max(loads):.1f}{ratio}", flush=True)  # fmt: skip
    return {"median": med, "runs": walls, "cpu": statistics.median(cpus) if cpus else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--scaling", default="", help="other file counts of the same rows, e.g. 10,25")
    args = ap.parse_args()
    try:
        javahelpers.master_dir()
    except javahelpers.JavaUnavailable as e:
        print(f"skipped: {e} (the benchmark table is written, and Java's rewrite run, by Paimon master)")
        return
    work = CACHE / "paimon_rewrite_bench-work"
    counts = [args.files] + [int(x) for x in args.scaling.split(",") if x.strip()]
    print(f"{args.rows:,} rows; options {OPTIONS}; cores: {os.cpu_count()}; file counts {counts}", flush=True)
    spark = None
    if not args.no_spark:
        import arrowidx.spark

        spark = arrowidx.spark.local_session("local[2]", "bench-rewrite", spark_driver_memory="2g")
    try:
        for files in counts:
            warehouse = table_for(args.rows, files)
            print(f"{files} files:", flush=True)
            java_runs = JavaRuns(warehouse, work.with_name(work.name + "-java"))
            try:
                java_runs.run(), java_runs.run()  # warm-up: JIT
                if spark is not None:
                    run_arrowidx(warehouse, work, spark)  # warm-up: Python workers started, modules imported
                java, local, on_spark = [], [], []
                for _ in range(args.runs):  # Java, local and Spark take turns: the same load for all
                    java.append(java_runs.run())
                    local.append(run_arrowidx(warehouse, work))
                    if spark is not None:
                        on_spark.append(run_arrowidx(warehouse, work, spark))
            finally:
                java_runs.close()
            java_ms = statistics.median(s[0] for s in java)
            show("Java FileIndexProcessor", java, None)
            show("arrowidx (local threads)", local, java_ms)
            if on_spark:
                show("arrowidx on Spark local[2]", on_spark, java_ms)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(work.with_name(work.name + "-java"), ignore_errors=True)


if __name__ == "__main__":
    main()
