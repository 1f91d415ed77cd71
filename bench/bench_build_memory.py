"""Peak memory and time of indexing one Parquet file, a new process per case, beside
``pyarrow.parquet.read_table`` of the same file (issue 55).

    PYTHONPATH=src .venv/bin/python bench/bench_build_memory.py [--rows 5000000] [--scale 10]
        [--baseline /tmp/base/src] [--rounds 2] [--large-rounds 1] [--cases all,bloom-filter,...]

The file: ``id`` int64 (every row distinct, scrambled), ``status`` string (4 values),
``amount`` double (gamma-distributed, practically every row distinct), row groups of
1,048,576 rows (pyarrow's default), snappy; ``--rows`` rows (68 MB at 5,000,000) and
``--rows`` x ``--scale`` rows, both cached in ``bench-data/build-memory/``.

Cases (each a new Python process; its peak is its ``VmHWM``, its time the call alone, after
the imports): ``read_table`` (pyarrow, the reference), ``all`` (``arrowidx.build`` of a
directory holding only the file: bloom filter on ``id``, bitmap on ``status``, range bitmap
on ``amount``), one case per index type alone (``bloom-filter`` on ``id``, ``bitmap`` on
``status``, ``range-bitmap`` on ``amount``, ``bsi`` on ``id``), and ``stream``
(``write_file_index`` of ``ParquetFile.iter_batches()``, a one-pass stream, all three).

``--baseline``: another arrowidx ``src`` directory (e.g. main's: ``git archive main src |
tar -x -C /tmp/base``), run in the same rounds, interleaved with this one on the small file
(``--baseline-large`` also on the large one: the old code needs gigabytes there); the table
says whether both wrote the same index bytes; ``index`` is the size of the index written (MB).

Targets: ``all`` on the small file peaks at most at ``read_table``'s peak of it; each index
type on the large file peaks within 1.5x of its peak on the small file; builds are no
slower than the baseline's. The machine is shared: each figure is the median of
``--rounds`` runs, with the spread of the times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "bench-data" / "build-memory"
ROW_GROUP = 1 << 20
OPTIONS = {
    "bloom-filter": {"file-index.bloom-filter.columns": "id"},
    "bitmap": {"file-index.bitmap.columns": "status"},
    "range-bitmap": {"file-index.range-bitmap.columns": "amount"},
    "bsi": {"file-index.bsi.columns": "id"},
}
OPTIONS["all"] = OPTIONS["stream"] = {**OPTIONS["bloom-filter"], **OPTIONS["bitmap"], **OPTIONS["range-bitmap"]}
SCALED = ("bloom-filter", "bitmap", "range-bitmap", "bsi", "all")  # cases whose large-file peak is a target

# The body of one case, run by a new interpreter: prints one JSON line.
CHILD = r"""
import hashlib, json, os, resource, sys, time
case = json.loads(sys.argv[1])
import pyarrow.parquet as pq
import arrowidx
from arrowidx import write_file_index

def peak_mb():
    # VmHWM: this process's peak RSS (ru_maxrss would start at the parent's, as exec keeps it)
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

imported = peak_mb()
wall, cpu = time.perf_counter(), time.process_time()
size = 0
if case["case"] == "read_table":
    table = pq.read_table(case["file"])
    digest = f"{table.num_rows} rows"
elif case["case"] == "stream":
    data = write_file_index(pq.ParquetFile(case["file"]).iter_batches(), case["options"])
    digest, size = hashlib.sha256(data).hexdigest(), len(data)
else:
    arrowidx.build(case["dir"], case["options"], progress=False)
    folder = case["dir"].rstrip("/")
    index = os.path.join(os.path.dirname(folder), "_" + os.path.basename(folder) + ".arrowidx", "index")  # the sidecar
    if not os.path.isdir(index):
        index = os.path.join(folder, "_arrowidx", "index")  # (a version before issue 49)
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(index)):
        for name in sorted(files):
            h.update(name.split(".")[-2].split("-")[0].encode())  # the content's digest, in the name
            size += os.path.getsize(os.path.join(root, name))
    digest = h.hexdigest()
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"peak": peak_mb(), "imported": imported, "wall": wall, "cpu": cpu, "digest": digest, "index": size / 2**20}))
"""


def make_file(rows: int) -> Path:
    """The benchmark file of ``rows`` rows (written once, in row groups, never all in memory)."""
    path = DATA / f"build-{rows}.parquet"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(55)
    status = pa.array(["active", "closed", "pending", "lost"])
    schema = pa.schema([("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, ROW_GROUP):  # per row group
            n = min(ROW_GROUP, rows - start)
            i = np.arange(start, start + n, dtype=np.uint64)
            ids = (i * np.uint64(2654435761) + np.uint64(12345)) % np.uint64(rows)  # a bijection of 0..rows-1
            table = pa.table({
                "id": pa.array(ids.astype(np.int64)),
                "status": status.take(pa.array(rng.integers(0, 4, n))),
                "amount": pa.array(rng.gamma(2.0, 50.0, n)),
            })  # fmt: skip
            writer.write_table(table, row_group_size=ROW_GROUP)
    tmp.rename(path)
    return path


def run_case(src: str, case: str, path: Path) -> dict:
    """One case in a new process with ``src`` first on the path."""
    work = DATA / "runs" / uuid.uuid4().hex
    work.mkdir(parents=True)
    try:
        os.link(path, work / path.name)  # a directory holding only this file, for arrowidx.build
        args = {"case": case, "file": str(path), "dir": str(work), "options": OPTIONS.get(case)}
        env = dict(os.environ, PYTHONPATH=src)
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], env=env, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{case} with {src} failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--scale", type=int, default=10, help="the large file has rows x scale rows (0: no large file)")
    parser.add_argument("--baseline", help="another arrowidx src directory to run side by side (the old code)")
    parser.add_argument("--baseline-large", action="store_true", help="run the baseline on the large file too")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--large-rounds", type=int, help="rounds on the large file (default: --rounds)")
    parser.add_argument("--cases", default="read_table,all,bloom-filter,bitmap,range-bitmap,bsi,stream")
    args = parser.parse_args()
    src = str(HERE.parent / "src")
    cases = args.cases.split(",")
    sizes = [args.rows] + ([args.rows * args.scale] if args.scale > 1 else [])
    files = {rows: make_file(rows) for rows in sizes}
    print("files: " + ", ".join(f"{rows:,} rows {files[rows].stat().st_size / 1e6:,.0f} MB" for rows in sizes))
    codes = [("new", src)] + ([("old", args.baseline)] if args.baseline else [])
    results: dict[tuple, list[dict]] = {}
    for rnd in range(args.rounds):  # rounds: every case of every code, interleaved
        for rows in sizes:
            if rows != sizes[0] and rnd >= (args.large_rounds or args.rounds):
                continue
            for case in cases:
                for name, code in codes:
                    if case == "read_table" and name != "new":
                        continue
                    if name == "old" and rows != sizes[0] and not args.baseline_large:
                        continue
                    got = run_case(code, case, files[rows])
                    results.setdefault((rows, case, name), []).append(got)
                    print(f"  round {rnd + 1} {rows:>11,} {case:13} {name}: peak {got['peak']:7,.0f} MB"
                          f" {got['wall']:7.2f} s (cpu {got['cpu']:.2f} s) load {load()}", flush=True)  # fmt: skip
    print(f"\nPeak RSS (MB) and build time (s), median of {args.rounds} runs ({args.large_rounds or args.rounds} on the large"
          f" file; min-max); a new process per run;"
          f" import alone peaks at {statistics.median(r['imported'] for v in results.values() for r in v):,.0f} MB")  # fmt: skip
    head = (f"| {'rows':>11} | {'case':13} | {'index':>6} | {'peak new':>8} | {'peak old':>8} | {'time new':>17}"
            f" | {'time old':>17} | {'cpu new':>7} | {'cpu old':>7} | same bytes |")  # fmt: skip
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    summary: dict[tuple, dict] = {}

    def span(rs: list[dict]) -> str:
        walls = [r["wall"] for r in rs]
        return f"{statistics.median(walls):6.2f} ({min(walls):.2f}-{max(walls):.2f})"

    for rows in sizes:
        for case in cases:
            new, old = results.get((rows, case, "new")), results.get((rows, case, "old"))
            if not new:
                continue
            row = {"peak": statistics.median(r["peak"] for r in new), "wall": statistics.median(r["wall"] for r in new),
                   "cpu": statistics.median(r["cpu"] for r in new), "index": new[0].get("index", 0)}  # fmt: skip
            summary[(rows, case)] = row
            same = "-" if not old or case == "read_table" else ("yes" if {r["digest"] for r in new} == {r["digest"] for r in old} else "NO")
            old_peak = f"{statistics.median(r['peak'] for r in old):8,.0f}" if old else f"{'-':>8}"
            old_cpu = f"{statistics.median(r['cpu'] for r in old):7.2f}" if old else f"{'-':>7}"
            print(f"| {rows:>11,} | {case:13} | {row['index']:6,.1f} | {row['peak']:8,.0f} | {old_peak} | {span(new):>17} |"
                  f" {span(old) if old else '-':>17} | {row['cpu']:7.2f} | {old_cpu} | {same:>10} |")  # fmt: skip
            if old:
                row["old_wall"] = statistics.median(r["wall"] for r in old)
                row["old_cpu"] = statistics.median(r["cpu"] for r in old)
    print("\nTargets:")
    small = sizes[0]
    ref = summary.get((small, "read_table"))
    if ref and (small, "all") in summary:
        peak = summary[(small, "all")]["peak"]
        print(f"  all three on {small:,} rows peak {peak:,.0f} MB <= read_table {ref['peak']:,.0f} MB:"
              f" {'met' if peak <= ref['peak'] else 'MISSED'}")  # fmt: skip
    if len(sizes) > 1:
        for case in SCALED:
            a, b = summary.get((small, case)), summary.get((sizes[1], case))
            if a and b:
                ratio = b["peak"] / a["peak"]
                print(f"  {case:13} {sizes[1]:,} rows peak {b['peak']:,.0f} MB = {ratio:.2f}x of {small:,} rows"
                      f" ({a['peak']:,.0f} MB), target <= 1.5x: {'met' if ratio <= 1.5 else 'MISSED'}"
                      f" (the index: {b['index']:,.0f} MB against {a['index']:,.0f} MB; peak less twice the index"
                      f" {b['peak'] - 2 * b['index']:,.0f} against {a['peak'] - 2 * a['index']:,.0f} MB)")  # fmt: skip
    for (rows, case), row in summary.items():
        if "old_wall" in row:
            ratio = row["old_wall"] / row["wall"]
            print(f"  {case:13} {rows:,} rows time new {row['wall']:.2f} s vs old {row['old_wall']:.2f} s: {ratio:.2f}x"
                  f" {'(no slower)' if ratio >= 1 else '(slower)'}; cpu {row['cpu']:.2f} vs {row['old_cpu']:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
