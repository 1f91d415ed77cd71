"""Deleting rows from a Paimon table: arrowidx (local threads and Spark ``local[2]``) against
Java Paimon's own DELETE on the same table, in the same run.

    PAIMON_MASTER=... python bench/bench_paimon_delete.py [--rows 5000000 --files 50] [--runs 5]
                                                          [--no-spark] [--no-s3] [--paimon master|0.9.0]

The table (append, not partitioned, ``deletion-vectors.enabled``, a bloom filter on ``id``
sized for a file's rows and a bitmap on ``status``; written by Java Paimon through
``bench/paimon_writer/JavaDelete.java create``, cached in ``~/.cache/arrowidx``) gets two
deletes: **1 row** (``id = <one row's id>``: the bloom filters keep one file) and **1 %**
(``status = 'rare'``, 50,000 rows in every file: the bitmaps keep every file). Each run
deletes from a fresh copy of the table (data files hard-linked, metadata copied), timed from
the call to the committed snapshot:

* Java: ``JavaDelete serve`` in one JVM kept running (JIT warm: two deletes first); its
  DELETE plans with Paimon's scan (statistics, file indexes), reads each candidate file for
  the positions where the predicate holds, writes the vectors with Java's maintainer and
  commits (what Spark's ``DELETE FROM`` does, without Spark);
* arrowidx: ``arrowidx.paimon.delete`` in this process (the first run after the imports is
  reported apart: cold metadata caches), with this process's CPU time and the report's
  phases (plan, find, commit);
* arrowidx on Spark: ``arrowidx.spark.paimon_delete`` through a ``local[2]`` session started
  and warmed up beforehand.

The engines take turns, so that all see the same load. ``--no-s3`` skips the object-store
part: the table uploaded to a local S3 server (moto) behind a counting proxy, both deletes
run through its ``s3://`` URI, with the requests of each (by kind) and its time.
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
sys.path.insert(0, str(HERE.parent / "integration"))

import javahelpers  # noqa: E402

CACHE = javahelpers.CACHE
PRIME = 2_147_483_647


def table_for(version: str, rows: int, files: int) -> Path:
    warehouse = CACHE / f"paimon_delete_bench-{version}-{rows}-{files}"
    marker = warehouse / ".written"
    if not marker.exists():
        shutil.rmtree(warehouse, ignore_errors=True)
        print(f"writing {rows:,} rows in {files} files with Java Paimon {version} into {warehouse} ...", flush=True)
        javahelpers.run(version, "JavaDelete", "create", str(warehouse), "db.bench", "flat", str(rows), str(files),
                        "file-index.bloom-filter.columns=id", f"file-index.bloom-filter.id.items={rows // files}",
                        "file-index.bitmap.columns=status", jvm=["-Xmx3g"], timeout=3600)  # fmt: skip
        marker.touch()
    return warehouse


def fresh_copy(warehouse: Path, into: Path) -> str:
    """A copy deletes can commit to: data files (never changed) hard-linked, the rest copied."""
    shutil.rmtree(into, ignore_errors=True)

    def link_or_copy(src: str, dst: str) -> None:
        if src.endswith((".parquet", ".index")) and "/bucket-" in src:
            os.link(src, dst)
        else:
            shutil.copy2(src, dst)

    shutil.copytree(warehouse, into, copy_function=link_or_copy)
    return str(into / "db.db" / "bench")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def queries(rows: int) -> dict[str, tuple[str, list[str]]]:
    """label -> (SQL for arrowidx, the same as JavaDelete's terms)."""
    needle = ((rows // 2 + 7) * 1_000_003) % PRIME  # one row's id (the generator's)
    return {"1 row": (f"id = {needle}", [f"id:eq:{needle}"]), "1 %": ("status = 'rare'", ["status:eq:rare"])}


class JavaRuns:
    """Java's DELETE in one JVM kept running (``JavaDelete serve``)."""

    def __init__(self, version: str):
        cmd = javahelpers.command(version, "JavaDelete", "serve", jvm=["-Xmx3g"])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def run(self, warehouse: Path, terms: list[str]) -> tuple[float, int, float]:
        load = os.getloadavg()[0]
        self.proc.stdin.write(" ".join([str(warehouse), "db.bench", *terms]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith("java\t"):
            raise RuntimeError(f"JavaDelete serve stopped: {line!r}")
        _, rows, ms = line.strip().split("\t")
        return float(ms), int(rows), load

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def run_arrowidx(path: str, where: str, spark=None):
    from arrowidx import paimon

    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu()
    if spark is None:
        report = paimon.delete(path, where, progress=False)
    else:
        import arrowidx.spark

        report = arrowidx.spark.paimon_delete(spark, path, where)
    wall, cpu = (time.perf_counter() - t0) * 1000, (_cpu() - c0) * 1000
    assert report.committed, report
    return wall, report.rows_deleted, load, None if spark is not None else cpu, report


def show(name: str, walls: list[float], loads: list[float], extra: str = "", java_ms: float | None = None) -> float:
    med = statistics.median(walls)
    ratio = f"  Java/this {java_ms / med:.2f}x" if java_ms else ""
    print(f"    {name:30} median {med:8,.1f} ms  (runs: {', '.join(f'{w:,.1f}' for w in walls)})"
          f"  load {min(loads):.1f}-{max(loads):.1f}{extra}{ratio}", flush=True)  # fmt: skip
    return med


def s3_part(warehouse: Path, rows: int) -> None:
    from s3_proxy import CountingProxy
    from s3_support import S3Server

    from arrowidx import paimon

    server = S3Server()
    proxy = CountingProxy(server.endpoint)
    try:
        client = server.client()
        source = warehouse / "db.db" / "bench"
        print("S3 (moto behind a counting proxy; each delete on a fresh upload of the table):", flush=True)
        for label, (sql, _) in queries(rows).items():
            bucket = f"bench-{label.replace(' ', '').replace('%', 'pct')}"
            server.create_bucket(bucket)
            for p in source.rglob("*"):
                if p.is_file():
                    client.upload_file(str(p), bucket, f"db.db/bench/{p.relative_to(source)}")
            options = server.storage_options(endpoint=proxy.endpoint)
            before = proxy.snapshot()
            t0 = time.perf_counter()
            report = paimon.delete(f"s3://{bucket}/db.db/bench", sql, storage_options=options, progress=False)
            ms = (time.perf_counter() - t0) * 1000
            counted = proxy.since(before)
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(counted.items()) if k not in ("requests", "bytes"))
            print(f"    {label:6} {ms:8,.1f} ms  {report.rows_deleted:>7,} rows  {counted.get('requests', 0)} requests"
                  f" ({kinds}), {counted.get('bytes', 0):,} response bytes", flush=True)  # fmt: skip
    finally:
        proxy.stop()
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-s3", action="store_true")
    ap.add_argument("--paimon", default=None, help="master (default when $PAIMON_MASTER has a build) or 0.9.0")
    args = ap.parse_args()
    version = args.paimon
    if version is None:
        try:
            javahelpers.master_dir()
            version = "master"
        except javahelpers.JavaUnavailable:
            version = "0.9.0"
    warehouse = table_for(version, args.rows, args.files)
    work = CACHE / "paimon_delete_bench-work"
    print(f"{args.rows:,} rows in {args.files} files (Java Paimon {version}); cores: {os.cpu_count()}; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    spark = None
    if not args.no_spark:
        import arrowidx.spark

        spark = arrowidx.spark.local_session("local[2]", "bench-delete", spark_driver_memory="2g")
    java = JavaRuns(version)
    try:
        from arrowidx import paimon  # noqa: F401 - imported before the first (cold) run

        for label, (sql, terms) in queries(args.rows).items():
            print(f"  delete {label}: {sql}", flush=True)
            for _ in range(2):  # warm-up: JIT; Spark's Python workers
                java.run(Path(fresh_copy(warehouse, work)).parents[1], terms)
                if spark is not None:
                    run_arrowidx(fresh_copy(warehouse, work), sql, spark)
            cold = run_arrowidx(fresh_copy(warehouse, work), sql)
            j, local, on_spark = [], [], []
            for _ in range(args.runs):  # turns: the same load for all
                j.append(java.run(Path(fresh_copy(warehouse, work)).parents[1], terms))
                local.append(run_arrowidx(fresh_copy(warehouse, work), sql))
                if spark is not None:
                    on_spark.append(run_arrowidx(fresh_copy(warehouse, work), sql, spark))
            rows = local[0][1]
            assert all(r[1] == rows for r in local + on_spark) and cold[1] == rows, "engines deleted different counts"
            java_ms = show(f"Java DELETE ({j[0][1]:,} rows)", [x[0] for x in j], [x[2] for x in j])
            phases = {k: statistics.median(r[4].phases.get(k, 0) * 1000 for r in local) for k in ("plan", "find", "commit")}
            cpu = statistics.median(r[3] for r in local)
            show(f"arrowidx ({rows:,} rows)", [x[0] for x in local], [x[2] for x in local],
                 f"  CPU {cpu:,.0f} ms; plan {phases['plan']:.1f} / find {phases['find']:.1f} / commit {phases['commit']:.1f} ms",
                 java_ms)  # fmt: skip
            print(f"    {'arrowidx, first run (cold)':30} {cold[0]:8,.1f} ms", flush=True)
            if on_spark:
                show("arrowidx on Spark local[2]", [x[0] for x in on_spark], [x[2] for x in on_spark], "", java_ms)
    finally:
        java.close()
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    if not args.no_s3:
        s3_part(warehouse, args.rows)


if __name__ == "__main__":
    main()
