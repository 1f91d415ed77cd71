"""Requests, bytes and time of queries and a delete on an S3 lake, for arrowidx and for
pyarrow.dataset alone (issues 39 and 40).

Starts ``moto_server`` on 127.0.0.1 and a counting proxy in front of it (bench/s3_proxy.py:
every request and response byte a client sends through it is counted), writes two lakes
(8 files of ``--rows``/8 rows, and ``--small-files`` files of 1,000 rows), indexes them
(bloom filters on ``id`` and ``user_id``, a bitmap on ``status``), and measures, per lake:

* a needle (``user_id = X``), a 1 % query (``status = 'rare'``), a broad query
  (``amount > 100``, about half the rows), and a delete (``id = X``; pyarrow's column is
  what finding that row costs it);
* cold: a new process per query (imports not timed, nothing cached), median of
  ``--repeats`` alternating runs; warm: the same dataset object queried again.

    .venv/bin/python bench/bench_s3.py [--rows 2000000] [--small-files 1000] [--repeats 3]

moto is a Python server on the same 2 cores, so times are far slower than S3's per byte
and much faster per request (no network): read the request counts first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))
from common import print_table  # noqa: E402
from s3_proxy import CountingProxy  # noqa: E402
from s3_support import ACCESS_KEY, REGION, SECRET_KEY, S3Server  # noqa: E402

SRC = str(HERE.parent / "src")
OPTIONS = {"file-index.bloom-filter.columns": "id,user_id", "file-index.bitmap.columns": "status"}

# The child of a cold run: imports (not timed), then one query or delete, timed.
_CHILD = r"""
import json, sys, time
import pyarrow.compute as pc
engine, uri, what, value = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
exprs = {"needle": pc.field("user_id") == int(value), "one-percent": pc.field("status") == "rare",
         "broad": pc.field("amount") > 100.0, "delete": pc.field("id") == int(value)}
columns = {"needle": ["id"], "one-percent": ["id", "amount"], "broad": ["id", "amount"], "delete": ["id"]}
import os
import pyarrow.dataset as ds, pyarrow.fs as pafs
if engine == "arrowidx":
    import arrowidx, arrowidx.lake, arrowidx.objectstore, obstore  # imports done: the query is what is timed
sys.stdout.write("ready\n"); sys.stdout.flush(); sys.stdin.readline()
start = time.perf_counter()
if engine == "pyarrow":  # (its filesystem made in the timed part, as arrowidx makes its own)
    fs = pafs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], access_key=os.environ["AWS_ACCESS_KEY_ID"],
                           secret_key=os.environ["AWS_SECRET_ACCESS_KEY"], region=os.environ["AWS_REGION"])
if engine == "arrowidx" and what == "delete":
    rows = arrowidx.delete(uri, exprs[what], progress=False).rows_deleted
elif engine == "arrowidx":
    rows = arrowidx.dataset(uri).to_table(filter=exprs[what], columns=columns[what]).num_rows
else:
    rows = ds.dataset(uri[len("s3://"):], filesystem=fs, format="parquet").to_table(filter=exprs[what], columns=columns[what]).num_rows
print(json.dumps({"ms": (time.perf_counter() - start) * 1000, "rows": rows}))
"""


def _write_lake(server: S3Server, bucket: str, files: int, rows_per_file: int, seed: int) -> tuple[str, pa.Table]:
    server.create_bucket(bucket)
    rng = np.random.default_rng(seed)
    fs = pafs.S3FileSystem(endpoint_override=server.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    n = files * rows_per_file
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "user_id": pa.array(rng.integers(0, 50 * n, n)),
        "status": pa.array(np.where(rng.random(n) < 0.01, "rare", rng.choice(["ok", "new", "paid"], n))),
        "amount": pa.array(rng.normal(100, 30, n)),
        "note": pa.array(rng.choice([f"note {i}" for i in range(1000)], n)),
    })  # fmt: skip
    for i in range(files):
        pq.write_table(table.slice(i * rows_per_file, rows_per_file), f"{bucket}/lake/part-{i:05d}.parquet",
                       filesystem=fs, row_group_size=min(rows_per_file, 65536))  # fmt: skip
    return f"s3://{bucket}/lake", table


def _cold(proxy: CountingProxy, env: dict, engine: str, uri: str, what: str, value: int) -> tuple[float, dict, int]:
    child = subprocess.Popen([sys.executable, "-c", _CHILD, engine, uri, what, str(value)], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert child.stdout.readline().strip() == "ready"
    before = proxy.snapshot()
    child.stdin.write("go\n")
    child.stdin.flush()
    out = json.loads(child.stdout.readline())
    child.wait(120)
    return out["ms"], proxy.since(before), out["rows"]


def _warm(proxy: CountingProxy, run, repeats: int) -> tuple[float, dict]:
    run()  # the first query of the object (cold caches)
    before = proxy.snapshot()
    run()
    counted = proxy.since(before)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), counted


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--small-files", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = S3Server()
    proxy = CountingProxy(server.endpoint)
    try:
        return _run(server, proxy, args)
    finally:
        proxy.stop()
        server.stop()


def _run(server: S3Server, proxy: CountingProxy, args) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "ARROWIDX_SINGLE_WRITER"}
    env.update({"AWS_ENDPOINT_URL": proxy.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true",
                "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")})  # fmt: skip
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    import arrowidx

    lakes = []
    for name, files, rows in [("8 files", 8, args.rows // 8), (f"{args.small_files} files", args.small_files, 1000)]:
        started = time.perf_counter()
        uri, table = _write_lake(server, f"bench-{files}", files, rows, seed=files)
        before = proxy.snapshot()
        report = arrowidx.build(uri, OPTIONS, progress=False)
        build = proxy.since(before)
        print(f"{name}: {table.num_rows:,} rows written and indexed in {time.perf_counter() - started:.1f}s"
              f" (build: {build.get('requests', 0)} requests, {report.index_bytes:,} index bytes)", flush=True)  # fmt: skip
        lakes.append((name, files, uri, table))
    fs = pafs.S3FileSystem(endpoint_override=proxy.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    rows_out, detail = [], []
    for name, _files, uri, table in lakes:
        needle = int(table["user_id"][table.num_rows // 3].as_py())
        for what in ["needle", "one-percent", "broad", "delete"]:
            cold: dict[str, list] = {"arrowidx": [], "pyarrow": []}
            for r in range(args.repeats):
                for engine in ("arrowidx", "pyarrow"):
                    value = needle if what != "delete" else (table.num_rows // 7) * (r + 1) + (engine == "pyarrow")
                    cold[engine].append(_cold(proxy, env, engine, uri, what, value))
            for engine in ("arrowidx", "pyarrow"):
                runs = cold[engine]
                ms = statistics.median(x[0] for x in runs)
                counts = runs[-1][1]
                spread = f"{min(x[0] for x in runs):.0f}-{max(x[0] for x in runs):.0f}"
                warm_ms, warm = (None, {})
                if what != "delete":
                    expr = {"needle": pc.field("user_id") == needle, "one-percent": pc.field("status") == "rare",
                            "broad": pc.field("amount") > 100.0}[what]  # fmt: skip
                    columns = ["id"] if what == "needle" else ["id", "amount"]
                    if engine == "arrowidx":
                        data = arrowidx.dataset(uri)
                        warm_ms, warm = _warm(proxy, lambda d=data, e=expr, c=columns: d.to_table(filter=e, columns=c), args.repeats)
                    else:
                        dataset = ds.dataset(uri[len("s3://") :], filesystem=fs, format="parquet")
                        warm_ms, warm = _warm(proxy, lambda d=dataset, e=expr, c=columns: d.to_table(filter=e, columns=c), args.repeats)
                rows_out.append((name, what, engine, counts.get("requests", 0), counts.get("bytes", 0), ms, spread,
                                 warm.get("requests", 0), warm.get("bytes", 0), warm_ms))  # fmt: skip
                detail.append((name, what, engine, {k: v for k, v in counts.items() if k not in ("requests", "bytes")}))
    print()
    print("| lake | query | engine | cold requests | cold bytes | cold ms (median, range) | warm requests | warm bytes | warm ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, what, engine, req, size, ms, spread, wreq, wsize, wms in rows_out:
        warm_text = f"{wreq} | {wsize:,} | {wms:.0f}" if wms is not None else "- | - | -"
        print(f"| {name} | {what} | {engine} | {req} | {size:,} | {ms:.0f} ({spread}) | {warm_text} |")
    print("\nwhere the cold requests go:")
    for name, what, engine, kinds in detail:
        print(f"  {name:>10} {what:>11} {engine:>8}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    pyarrow_ms = {(r[0], r[1]): r[5] for r in rows_out if r[2] == "pyarrow"}
    table_rows = [(f"{r[0]}, {r[1]}, new process", r[5], pyarrow_ms[(r[0], r[1])], "pyarrow.dataset")
                  for r in rows_out if r[2] == "arrowidx" and r[1] != "delete"]  # fmt: skip
    print_table("S3 server (moto): the first query of a new process", table_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
