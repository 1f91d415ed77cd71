"""arrowidx.paimon against pypaimon-rust, pypaimon and Java Paimon on one generated table.

    python bench/bench_paimon.py [--rows 5000000 --files 50] [--runs 5]

The table (append, no partitions, bloom filter on ``id``, bitmap on ``status``, ids scattered so
min/max statistics overlap in every file) is written once by Java Paimon 0.9.0
(``bench/paimon_writer/run.sh``) into ``~/.cache/arrowidx/paimon_bench``. Queries: a needle
``id = X`` (one row), ``status = 'rare'`` (1 % of rows in every file) and a full read.

pypaimon-rust and pypaimon are installed into their own virtual environments under
``~/.cache/arrowidx/venvs`` (their pins differ from ours); an engine that cannot be installed
is skipped with a message. Each engine runs in its own process and returns a ``pyarrow.Table``;
two medians of ``--runs`` runs per query: *cold*, the table opened afresh in every run
(snapshot, manifests, index files and footers read again), and *warm*, one table object
(``open_table`` / ``catalog.get_table``) queried again, whatever each engine keeps in it. Java's figure
is its reader's time (best of 3 in one JVM) and Java returns whole files / row selections, not
the filtered rows. Ratios are engine time / arrowidx time (higher = arrowidx faster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("ARROWIDX_CACHE", Path.home() / ".cache" / "arrowidx"))
PRIME = 2_147_483_647

RUNNER = r"""
import json, statistics, sys, time
engine, warehouse, runs, needle = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
QUERIES = [("needle", ("id", needle)), ("one_percent", ("status", "rare")), ("full", None)]

def arrowidx_open():
    from arrowidx.paimon import open_table
    return open_table(warehouse + "/db.db/bench")

def arrowidx_q(t, q):
    import pyarrow.compute as pc
    return t.to_table(filter=None if q is None else pc.field(q[0]) == q[1])

def rust_open():
    import pypaimon_rust.datafusion as pr
    return pr.PaimonCatalog({"warehouse": "file://" + warehouse}).get_table("db.bench")

def rust_q(t, q):
    import pyarrow as pa
    rb = t.new_read_builder()
    if q is not None:
        rb = rb.with_filter({"method": "equal", "field": q[0], "literals": [q[1]]})
    batches = list(rb.new_read().read_arrow(rb.new_scan().plan().splits()))
    return pa.Table.from_batches(batches) if batches else pa.table({})

def pypaimon_open():
    from pypaimon import CatalogFactory
    return CatalogFactory.create({"warehouse": "file://" + warehouse}).get_table("db.bench")

def pypaimon_q(t, q):
    rb = t.new_read_builder()
    if q is not None:
        rb = rb.with_filter(rb.new_predicate_builder().equal(q[0], q[1]))
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())

open_, fn = {"arrowidx": (arrowidx_open, arrowidx_q), "pypaimon-rust": (rust_open, rust_q),
             "pypaimon": (pypaimon_open, pypaimon_q)}[engine]

def median_ms(call):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)

for name, q in QUERIES:
    try:
        rows = fn(open_(), q).num_rows  # warm-up (imports, OS cache)
        cold = median_ms(lambda: fn(open_(), q))  # the table opened afresh each run
        table = open_()
        fn(table, q)
        warm = median_ms(lambda: fn(table, q))  # one table object, queried again
        print(json.dumps({"query": name, "ms": cold, "warm_ms": warm, "rows": rows}), flush=True)
    except Exception as e:
        print(json.dumps({"query": name, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)

if engine == "arrowidx":  # the needle's floor: pyarrow decoding `id` of the files the index keeps
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    kept = [p.path for p in arrowidx_open().explain(pc.field("id") == needle).files if not p.skipped]
    data = ds.dataset(kept, format="parquet")
    rows = data.to_table(columns=["id"]).num_rows
    floor = median_ms(lambda: data.to_table(columns=["id"]))
    print(json.dumps({"query": "needle_floor", "ms": floor, "rows": rows, "files": len(kept)}), flush=True)
"""

ENGINES = {"pypaimon-rust": ["pypaimon-rust==0.4.0", "pyarrow"], "pypaimon": ["pypaimon==2.1.0"]}


def ensure_table(warehouse: Path, rows: int, files: int) -> None:
    marker = warehouse / f".written-{rows}-{files}"
    if marker.exists():
        return
    print(f"writing the benchmark table with Java Paimon 0.9.0 into {warehouse} ...", flush=True)
    subprocess.run([str(HERE / "paimon_writer" / "run.sh"), str(warehouse), "bench", str(rows), str(files)], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)})
    marker.touch()


def ensure_venv(name: str, packages: list[str]) -> Path | None:
    venv = CACHE / "venvs" / name
    python = venv / "bin" / "python"
    ok = venv / ".installed"
    if ok.exists():
        return python
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        print(f"skipped {name}: cannot install {' '.join(packages)}: {(e.stderr or '')[-300:]}")
        return None
    ok.touch()
    return python


def run_engine(python: str, engine: str, warehouse: Path, runs: int, needle: int, env=None) -> dict:
    out = subprocess.run([python, "-c", RUNNER, engine, str(warehouse), str(runs), str(needle)],
                         capture_output=True, text=True, env=env)
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["query"]] = r
    if not results:
        print(f"{engine} failed: {out.stderr[-500:]}")
    return results


def run_java(warehouse: Path, needle: int) -> dict:
    env = dict(os.environ, JAVA_OPTS=f"-Xmx3g -Xms3g -Dneedle={needle}", PYTHON=os.environ.get("PYTHON", sys.executable))
    try:
        out = subprocess.run([str(HERE / "paimon_writer" / "run.sh"), str(warehouse), "bench-read"],
                             capture_output=True, text=True, env=env, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"skipped Java: {e}")
        return {}
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("java\t"):
            _, q, ms, rows = line.split("\t")
            results[q] = {"ms": float(ms.split()[0]), "rows": int(rows.split()[0])}
    if not results:
        print(f"skipped Java: {out.stderr[-300:]}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-java", action="store_true")
    args = ap.parse_args()
    warehouse = CACHE / f"paimon_bench-{args.rows}-{args.files}"
    ensure_table(warehouse, args.rows, args.files)
    needle = ((args.rows // 2) * 1_000_003) % PRIME

    src = str(HERE.parent / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    results = {"arrowidx": run_engine(sys.executable, "arrowidx", warehouse, args.runs, needle, env)}
    for name, packages in ENGINES.items():
        python = ensure_venv(name, packages)
        if python is not None:
            results[name] = run_engine(str(python), name, warehouse, args.runs, needle)
    if not args.no_java:
        results["java"] = run_java(warehouse, needle)

    print(f"\nPaimon table: {args.rows:,} rows in {args.files} files ({warehouse}); median of {args.runs} runs")
    print("cold: the table opened afresh in every run (snapshot, manifests, index files, footers);")
    print("warm: one table object (open_table / catalog.get_table) queried again; Java: its reader only.")
    print(f"{'query':12} {'engine':14} {'cold ms':>10} {'cold ratio':>10} {'warm ms':>10} {'warm ratio':>10} {'rows':>10}")
    for q in ("needle", "one_percent", "full"):
        ours = results["arrowidx"].get(q, {})
        for engine, res in results.items():
            r = res.get(q)
            if r is None:
                continue
            if "error" in r:
                print(f"{q:12} {engine:14} {'error':>10}  {r['error'][:90]}")
                continue
            ratio = f"{r['ms'] / ours['ms']:.1f}x" if ours.get("ms") else "-"
            warm = r.get("warm_ms")
            wratio = f"{warm / ours['warm_ms']:.1f}x" if warm and ours.get("warm_ms") else "-"
            note = " (reader rows, unfiltered)" if engine == "java" else ""
            wtext = f"{warm:,.1f}" if warm else "-"
            print(f"{q:12} {engine:14} {r['ms']:>10,.1f} {ratio:>10} {wtext:>10} {wratio:>10} {r['rows']:>10,}{note}")
    print("(ratio = engine ms / arrowidx ms: above 1.0x arrowidx is faster)")
    floor, rust = results["arrowidx"].get("needle_floor"), results.get("pypaimon-rust", {}).get("needle", {})
    if floor and rust.get("ms"):
        print(f"needle floor: pyarrow alone decoding `id` of the {floor['files']} files the bloom filters keep"
              f" ({floor['rows']:,} rows) takes {floor['ms']:.1f} ms; 3x pypaimon-rust needs at most"
              f" {rust['ms'] / 3:.1f} ms cold and {rust.get('warm_ms', 0) / 3:.1f} ms warm in all")
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
