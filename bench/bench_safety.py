"""What issue 47's safety costs: the whole-file content hash at build time, the LATEST check and
the tombstone look-up on a cold query, and the first query over a copied lake (each file hashed
once, until a build records the new stamps).

Two arrowidx source trees side by side in one run, each in fresh child processes, rounds
interleaved so both see the same machine load: this one (``src/``) and a baseline
(``--baseline``, default ``/work/main/src``: the code before the issue). Each builds its own
copy of the same lake (the manifest formats differ).

    PYTHONPATH=src python bench/bench_safety.py [--files 8] [--rows 1000000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
OURS = HERE.parent / "src"

CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import pyarrow.compute as pc
    import arrowidx
    kind, root = sys.argv[1], sys.argv[2]
    start, cpu = time.perf_counter(), time.process_time()
    if kind == "build":
        arrowidx.build(root, {"file-index.bloom-filter.columns": "id", "file-index.bitmap.columns": "status"},
                       progress=False, incremental=False)
    elif kind == "rebuild":  # incremental: nothing to index (a copied lake: the stamps are new)
        arrowidx.build(root, progress=False)
    else:  # one cold needle in a fresh process
        n = arrowidx.dataset(root).to_table(filter=pc.field("id") == 123_456_789, columns=["id"]).num_rows
    print(json.dumps({"ms": (time.perf_counter() - start) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000}))
""")


def run(src: Path, kind: str, root: str) -> tuple[float, float]:
    """Wall and CPU milliseconds (all threads) of one call in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, "-c", CHILD, kind, root], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["ms"], got["cpu_ms"]


def make_lake(root: Path, files: int, rows: int) -> None:
    rng = np.random.default_rng(47)
    root.mkdir(parents=True)
    for i in range(files):
        ids = rng.integers(0, 10**12, rows)
        table = pa.table({
            "id": pa.array(ids, pa.int64()),
            "status": pa.array(rng.choice(["new", "paid", "shipped", "lost"], rows)),
            "amount": pa.array(rng.random(rows) * 1000),
        })  # fmt: skip
        pq.write_table(table, root / f"part-{i:03d}.parquet", row_group_size=128 * 1024)


def spread(times: list[tuple[float, float]]) -> str:
    """Median wall time (min-max), and median CPU time: CPU moves less with the machine's load."""
    wall = [w for w, _ in times]
    cpu = statistics.median(c for _, c in times)
    return f"{statistics.median(wall):6.0f} ms ({min(wall):.0f}-{max(wall):.0f}), CPU {cpu:5.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="/work/main/src")
    args = parser.parse_args()
    base = Path(args.baseline)
    work = Path(tempfile.mkdtemp(prefix="bench-safety-"))
    try:
        make_lake(work / "data", args.files, args.rows)
        size = sum(p.stat().st_size for p in (work / "data").glob("*.parquet"))
        print(f"lake: {args.files} files x {args.rows:,} rows, {size / 1e6:,.0f} MB; {args.rounds} rounds;"
              f" baseline {base}", flush=True)  # fmt: skip
        lakes = {}
        for name in ("ours", "base"):
            shutil.copytree(work / "data", work / name)
            lakes[name] = str(work / name)
        srcs = {"ours": OURS, "base": base}
        results: dict[str, dict[str, list[tuple[float, float]]]] = {n: {} for n in srcs}
        for _ in range(args.rounds):
            for name, src in srcs.items():
                for index in (Path(lakes[name]) / "_arrowidx", Path(lakes[name]).parent / f"_{name}.arrowidx"):  # (either layout)
                    shutil.rmtree(index, ignore_errors=True)
                results[name].setdefault("full build", []).append(run(src, "build", lakes[name]))
                results[name].setdefault("cold needle", []).append(run(src, "query", lakes[name]))
                copy = work / f"{name}-copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(lakes[name], copy)  # new inodes and change times: every stamp new
                results[name].setdefault("cold needle, copied lake", []).append(run(src, "query", str(copy)))
                results[name].setdefault("incremental build, copied lake", []).append(run(src, "rebuild", str(copy)))
                results[name].setdefault("cold needle, copied lake after that build", []).append(run(src, "query", str(copy)))
        print(f"\n{'measure (wall: median (min-max); CPU: median)':44} {'this branch':>38} {'baseline':>38}")
        for measure in results["ours"]:
            print(f"{measure:44} {spread(results['ours'][measure]):>38} {spread(results['base'][measure]):>38}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
