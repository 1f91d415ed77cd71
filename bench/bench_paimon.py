"""arrowidx.paimon against pypaimon-rust, pypaimon and Java Paimon on one generated table.

    python bench/bench_paimon.py [--rows 5000000 --files 50] [--runs 5] [--rounds 2] [--writer master]

The table (append, no partitions, bloom filter on ``id``, bitmap on ``status``, ids scattered so
min/max statistics overlap in every file) is written once by Java Paimon 0.9.0
(``bench/paimon_writer/run.sh``) into ``~/.cache/arrowidx/paimon_bench-ROWS-FILES``, or with
``--writer master`` by Paimon master (``bench/paimon_writer/run-master.sh``, which needs a Paimon
master build in ``$PAIMON_MASTER``) into ``paimon_bench_master-ROWS-FILES``: pypaimon reads only
tables of current Paimon (0.9.0's manifests lack ``_VALUE_STATS_COLS``). Queries: a needle
``id = X`` (one row), the needle with a different id in every run (``needle_each``: nothing a
table object kept of an earlier query applies), ``status = 'rare'`` (1 % of rows in every file)
and a full read.

pypaimon-rust and pypaimon are installed into their own virtual environments under
``~/.cache/arrowidx/venvs`` (their pins differ from ours); an engine that cannot be installed
is skipped with a message. Each engine runs in its own process and returns a ``pyarrow.Table``;
the engines' processes take turns, ``--rounds`` times (the order reversed every other round, so
a drift in the machine's load is shared), and every round's samples are pooled. Three medians
per query, of at least ``--runs`` runs per round (a short query runs on until its runs took 2 s,
at most 200; ``needle_each`` exactly ``--runs``): *first*, the first query of a new process (its
modules imported beforehand, untimed; nothing parsed yet), *reopened*, the table opened afresh
in every run of one process (arrowidx then shares the manifest lists, manifests, index files
and footers it parsed between table objects: Paimon never rewrites them), and *warm*, one table object
(``open_table`` / ``catalog.get_table``) queried again, whatever each engine keeps in it. Java's figure
is its reader's time (best of 3 in one JVM) and Java returns whole files / row selections, not
the filtered rows. Ratios are engine time / arrowidx time (higher = arrowidx faster).
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

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("ARROWIDX_CACHE", Path.home() / ".cache" / "arrowidx"))
PRIME = 2_147_483_647

RUNNER = r"""
import json, statistics, sys, time
engine, warehouse, runs, needle = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
others = [int(x) for x in sys.argv[5].split(",")]  # a different needle in every run: 2 x runs ids
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

if len(sys.argv) > 6:  # "first": one query in this new process, its modules imported untimed
    name = sys.argv[6]
    try:
        import importlib
        for module in {"arrowidx": ["arrowidx.paimon", "pyarrow.compute", "polars", "fastavro"], "pypaimon": ["pypaimon"],
                       "pypaimon-rust": ["pypaimon_rust.datafusion", "pyarrow"]}[engine]:
            importlib.import_module(module)
        q = dict(QUERIES + [("needle_each", ("id", others[0]))])[name]
        t0 = time.perf_counter()
        fn(open_(), q)
        print(json.dumps({"query": name, "first_ms": (time.perf_counter() - t0) * 1000}), flush=True)
    except Exception as e:
        print(json.dumps({"query": name, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
    sys.exit(0)

def samples_ms(call, more=True):  # ms per run: `runs` runs, with `more` on until they took MIN_SECONDS
    times = []
    while len(times) < runs or (more and sum(times) < MIN_SECONDS * 1000 and len(times) < MAX_RUNS):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return times

for name, q in QUERIES:
    try:
        rows = fn(open_(), q).num_rows  # warm-up (imports, OS cache)
        cold = samples_ms(lambda: fn(open_(), q))  # the table opened afresh each run
        table = open_()
        fn(table, q)
        warm = samples_ms(lambda: fn(table, q))  # one table object, queried again
        print(json.dumps({"query": name, "ms": cold, "warm_ms": warm, "rows": rows}), flush=True)
    except Exception as e:
        print(json.dumps({"query": name, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)

try:  # the needle again, but a different id in every run (nothing of an earlier query applies):
    # `runs` runs only, as more would find the files of earlier needles set up
    cold_ids, warm_ids = iter(others[:runs]), iter(others[runs:])
    rows = fn(open_(), ("id", needle)).num_rows
    cold = samples_ms(lambda: fn(open_(), ("id", next(cold_ids))), more=False)
    table = open_()
    fn(table, ("id", needle))
    warm = samples_ms(lambda: fn(table, ("id", next(warm_ids))), more=False)
    print(json.dumps({"query": "needle_each", "ms": cold, "warm_ms": warm, "rows": rows}), flush=True)
except Exception as e:
    print(json.dumps({"query": "needle_each", "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)

if engine == "arrowidx":  # the needle's floor: pyarrow decoding `id` of the files the index keeps
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    kept = [p.path for p in arrowidx_open().explain(pc.field("id") == needle).files if not p.skipped]
    data = ds.dataset(kept, format="parquet")
    rows = data.to_table(columns=["id"]).num_rows
    floor = statistics.median(samples_ms(lambda: data.to_table(columns=["id"])))
    print(json.dumps({"query": "needle_floor", "ms": floor, "rows": rows, "files": len(kept)}), flush=True)
"""

QUERY_NAMES = ("needle", "needle_each", "one_percent", "full")
MIN_SECONDS, MAX_RUNS = 2.0, 200  # a query runs past --runs until its runs took MIN_SECONDS (RUNNER gets them)
SAMPLED = ("ms", "warm_ms", "first_ms")  # the lists of ms a RUNNER process reports
ENGINES = {"pypaimon-rust": ["pypaimon-rust==0.4.0", "pyarrow"], "pypaimon": ["pypaimon==2.1.0"]}


WRITERS = {"0.9.0": "run.sh", "master": "run-master.sh"}  # Java Paimon writing the table: its script


def ensure_table(warehouse: Path, rows: int, files: int, writer: str) -> None:
    marker = warehouse / f".written-{rows}-{files}"
    if marker.exists():
        return
    print(f"writing the benchmark table with Java Paimon {writer} into {warehouse} ...", flush=True)
    script = HERE / "paimon_writer" / WRITERS[writer]
    done = subprocess.run([str(script), str(warehouse), "bench", str(rows), str(files)], stdout=subprocess.DEVNULL,
                          env={**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)})
    if done.returncode == 3:  # run-master.sh: no Paimon master build
        sys.exit("--writer master needs $PAIMON_MASTER, a Paimon master build: see docs/benchmarks.md (Paimon tables)")
    done.check_returncode()
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


def run_engine(python: str, engine: str, warehouse: Path, runs: int, needle: int, others: list[int], env=None) -> dict:
    """One engine's samples: its queries in one process (ms lists per query: ``ms`` reopened,
    ``warm_ms``), then ``runs`` new processes per query for ``first_ms``."""
    runner = f"MIN_SECONDS, MAX_RUNS = {MIN_SECONDS}, {MAX_RUNS}\n{RUNNER}"
    args = [python, "-c", runner, engine, str(warehouse), str(runs), str(needle), ",".join(map(str, others))]
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    results = {}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["query"]] = r
    if not results:
        print(f"{engine} failed: {out.stderr[-500:]}")
        return results
    for q in QUERY_NAMES:  # the first query of a new process, once per run
        firsts = []
        for _ in range(runs):
            out = subprocess.run([*args, q], capture_output=True, text=True, env=env)
            found = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            if found and "first_ms" in found[0]:
                firsts.append(found[0]["first_ms"])
        if firsts and q in results and "error" not in results[q]:
            results[q]["first_ms"] = firsts
    return results


def merged(rounds: list[dict]) -> dict:
    """One engine's rounds as one result per query: the samples of every round without an
    error pooled, then their median (ms); a query that failed in every round keeps its error."""
    pooled: dict[str, dict] = {}
    for results in rounds:
        for q, r in results.items():
            have = pooled.get(q)
            if have is None or ("error" in have and "error" not in r):
                pooled[q] = dict(r)
            elif "error" not in r:
                for key in SAMPLED:
                    if isinstance(r.get(key), list):
                        have[key] = have.get(key, []) + r[key]
    for r in pooled.values():
        for key in SAMPLED:
            if isinstance(r.get(key), list):
                r[f"{key}_runs"] = len(r[key])
                r[key] = statistics.median(r[key])
    return pooled


def run_java(warehouse: Path, needle: int, writer: str) -> dict:
    """Java's own read of the queries, by the Paimon version that wrote the table."""
    env = dict(os.environ, JAVA_OPTS=f"-Xmx3g -Xms3g -Dneedle={needle}", PYTHON=os.environ.get("PYTHON", sys.executable))
    try:
        out = subprocess.run([str(HERE / "paimon_writer" / WRITERS[writer]), str(warehouse), "bench-read"],
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
    ap.add_argument("--rounds", type=int, default=2, help="each engine's process this many times, in turn")
    ap.add_argument("--no-java", action="store_true")
    ap.add_argument("--writer", choices=sorted(WRITERS), default="0.9.0", help="the Java Paimon writing the table")
    args = ap.parse_args()
    warehouse = CACHE / (f"paimon_bench-{args.rows}-{args.files}" if args.writer == "0.9.0"
                         else f"paimon_bench_{args.writer}-{args.rows}-{args.files}")
    ensure_table(warehouse, args.rows, args.files, args.writer)
    needle = ((args.rows // 2) * 1_000_003) % PRIME
    # ids of rows spread over the table, one per run of the varying needle (reopened and warm)
    others = [(((k * 7919 + 12345) % args.rows) * 1_000_003) % PRIME for k in range(1, 2 * args.runs + 1)]

    src = str(HERE.parent / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    engines = {"arrowidx": (sys.executable, env)}
    for name, packages in ENGINES.items():
        python = ensure_venv(name, packages)
        if python is not None:
            engines[name] = (str(python), None)
    rounds: dict[str, list[dict]] = {name: [] for name in engines}
    for k in range(args.rounds):  # engines in turn, the order reversed every other round
        for name in list(engines) if k % 2 == 0 else list(engines)[::-1]:
            python, engine_env = engines[name]
            rounds[name].append(run_engine(python, name, warehouse, args.runs, needle, others, engine_env))
    results = {name: merged(r) for name, r in rounds.items()}
    if not args.no_java:
        results["java"] = run_java(warehouse, needle, args.writer)

    print(f"\nPaimon table: {args.rows:,} rows in {args.files} files written by Paimon {args.writer} ({warehouse});"
          f" {args.rounds} rounds of each"
          f" engine's process in turn; medians of every round's runs: at least {args.runs} per round, more for a"
          f" short query until its runs took {MIN_SECONDS:.0f} s (at most {MAX_RUNS}; needle_each: {args.runs})")
    print("first: a new process, its first query (modules imported beforehand, untimed): nothing parsed yet;")
    print("reopened: the table opened afresh in every run of one process (its snapshot read; arrowidx shares the")
    print("  manifest lists, manifests, index files and footers it parsed between the table objects of a process);")
    print("warm: one table object (open_table / catalog.get_table) queried again; Java: its reader only.")
    print("needle_each: the needle with a different id in every run.")
    print(f"{'query':12} {'engine':14} {'first ms':>9} {'ratio':>6} {'reopened':>9} {'ratio':>6} {'warm ms':>9} {'ratio':>6} {'rows':>10}")

    def cell(r: dict, ours: dict, key: str) -> str:
        if not r.get(key):
            return f"{'-':>9} {'-':>6}"
        ratio = f"{r[key] / ours[key]:.1f}x" if ours.get(key) else "-"
        return f"{r[key]:>9,.1f} {ratio:>6}"

    for q in QUERY_NAMES:
        ours = results["arrowidx"].get(q, {})
        for engine, res in results.items():
            r = res.get(q)
            if r is None:
                continue
            if "error" in r:
                print(f"{q:12} {engine:14} {'error':>9}  {r['error'][:90]}")
                continue
            note = " (reader rows, unfiltered)" if engine == "java" else ""
            cells = " ".join(cell(r, ours, k) for k in ("first_ms", "ms", "warm_ms"))
            print(f"{q:12} {engine:14} {cells} {r['rows']:>10,}{note}")
    print("(ratio = engine ms / arrowidx ms: above 1.0x arrowidx is faster)")
    floor, rust = results["arrowidx"].get("needle_floor"), results.get("pypaimon-rust", {}).get("needle", {})
    if floor and rust.get("ms"):
        print(f"needle floor: pyarrow alone decoding `id` of the {floor['files']} files the bloom filters keep"
              f" ({floor['rows']:,} rows) takes {floor['ms']:.1f} ms; 3x pypaimon-rust needs at most"
              f" {rust.get('first_ms', 0) / 3:.1f} ms first, {rust['ms'] / 3:.1f} ms reopened and"
              f" {rust.get('warm_ms', 0) / 3:.1f} ms warm in all")
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
