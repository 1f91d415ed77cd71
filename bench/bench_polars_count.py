"""Issue 49 benchmark: ``lf.select(pl.len())`` through ``arrowidx.polars.scan`` against
``pl.scan_parquet``, and against the arrowidx of ``--before`` (another ``src`` folder, e.g.
``git archive main src | tar -x -C /tmp/main``: there a count read one column).

    .venv/bin/python bench/bench_polars_count.py [--rows 4000000] [--files 20] [--runs 15] [--before /tmp/main/src]

The lake is the demo's (``arrowidx.demo.generate``, cached under ``bench-data/``, indexed
with the demo's options), and a second copy with a tenth of its rows deleted (``id < rows / 10``). Each side runs in
a new interpreter: the first ``collect()`` (cold: no opened dataset, footer or Polars scan
kept; the files are in the OS cache), then ``--runs`` warm ones (median and min); the sides
alternate, rounds repeated ``--rounds`` times. Answers are checked equal to Polars'.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SIDE = """
import json, sys, time
import polars as pl
root, kind, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "polars":
    make = lambda: pl.scan_parquet(root + "/*.parquet").select(pl.len())
else:
    from arrowidx import polars as apl
    make = lambda: apl.scan(root).select(pl.len())
t = time.perf_counter(); n = make().collect().item(); first = (time.perf_counter() - t) * 1000
lf = make(); warm = []
for _ in range(runs):
    t = time.perf_counter(); lf.collect(); warm.append((time.perf_counter() - t) * 1000)
print(json.dumps([first, warm, n]))
"""


def side(root: str, kind: str, runs: int, src: str | None) -> tuple[float, list[float], int]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    out = subprocess.run([sys.executable, "-c", SIDE, root, kind, str(runs)], capture_output=True, text=True, check=True,
                         env=env).stdout  # fmt: skip
    first, warm, n = json.loads(out.strip().splitlines()[-1])
    return first, warm, n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=None, help="a src folder of another arrowidx (e.g. main's)")
    parser.add_argument("--dir", default="bench-data")
    args = parser.parse_args(argv)

    import polars as pl
    import pyarrow.compute as pc

    import arrowidx
    from arrowidx.demo import demo_options, generate

    root = generate(Path(args.dir) / f"polars-lake-{args.rows}-{args.files}", args.rows, args.files)
    arrowidx.build(root, demo_options(), progress=False)
    deleted = generate(Path(args.dir) / f"polars-lake-{args.rows}-{args.files}-deleted", args.rows, args.files)
    arrowidx.build(deleted, demo_options(), progress=False)
    if not arrowidx.dataset(deleted).lake.has_deletions():
        arrowidx.delete(deleted, pc.field("id") < args.rows // 10, progress=False)  # a tenth, in every file (ids shuffled)
    own = str(Path(__file__).resolve().parents[1] / "src")
    sides = [("arrowidx (this)", "arrowidx", own)]
    if args.before:
        sides.append(("arrowidx (--before)", "arrowidx", args.before))
    print(f"Polars {pl.__version__}; {args.rows:,} rows in {args.files} files; {args.rounds} rounds of a new process per side")
    print(f"{'lake':10} {'side':22} {'rows':>10} {'first ms':>14} {'warm median ms':>15} {'warm min ms':>12}")
    for lake in (root, deleted):
        want = args.rows - (args.rows // 10 if lake == deleted else 0)  # (Polars' count, minus the deleted rows)
        for name, kind, src in [*sides, ("pl.scan_parquet", "polars", None)]:
            firsts, warms = [], []
            for _ in range(args.rounds):
                first, warm, n = side(str(lake), kind, args.runs, src)
                assert n == (args.rows if kind == "polars" else want), (name, n)
                firsts.append(first)
                warms.extend(warm)
            label = "deleted" if lake == deleted else "plain"
            print(f"{label:10} {name:22} {n:>10,} {statistics.median(firsts):8.1f} ({min(firsts):4.0f}) "
                  f"{statistics.median(warms):15.2f} {min(warms):12.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
