"""What exactness costs (issue 38): the statistics rule (``arrowidx.statistics``) and the check
that an invalid filter fails whatever the indexes decide (``expression.check_expression``).

Two parts, in one run:

1. per filter, the time of the rule plus the check: a filter of a new shape, the same shape
   with a new value (a different needle each query), and the same filter again;
2. per query of the scan benchmark's lakes (``bench_scan.py``), ``to_table`` on a warm
   dataset object with the rule and check as shipped against the same with both bypassed
   (pyarrow's statistics given the whole filter, as before issue 38), interleaved.

    .venv/bin/python bench/bench_rule.py [--scale 0.1] [--only demo,clustered]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scan import lakes, queries  # noqa: E402
from common import machine, print_table  # noqa: E402

import arrowidx  # noqa: E402
from arrowidx import expression, facts  # noqa: E402
from arrowidx import statistics as rule  # noqa: E402
from arrowidx.lake import plan, read, scan  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("user_id", pa.int64()), ("status", pa.string()), ("amount", pa.float64())])


def _per_call_us(fn, seconds: float = 0.4) -> float:
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return (time.perf_counter() - start) / n * 1e6


def rule_costs() -> None:
    shapes = {
        "needle id = X": lambda v: pc.field("id") == v,
        "range on a float": lambda v: (pc.field("amount") > float(v % 100)) & (pc.field("amount") < 200.0),
        "status IN (3 values)": lambda v: pc.field("status").isin(["LOST", "NEW", str(v)]),
        "IN (10,000 ints)": lambda v: pc.field("user_id").isin(np.arange(v, v + 10_000)),
        "float != (widened)": lambda v: pc.field("amount") != float(v),
    }
    print("\nthe rule + the validity check, per query (microseconds)")
    print(f"{'filter':26} {'new shape':>10} {'new value':>10} {'same filter':>12}")
    for name, make in shapes.items():
        a, b, c = _costs(make)
        print(f"{name:26} {a:10,.0f} {b:10,.0f} {c:12,.1f}")


def _costs(make) -> tuple[float, float, float]:
    """Microseconds of the rule + check: a new shape, a new value of a known shape, the same filter."""
    counter = iter(range(10**9))

    def new_shape():
        rule._LAST.clear()
        facts.VALID_SHAPES.clear()
        facts.VALID_FILTERS.clear()
        e = make(next(counter))
        rule.statistics_filter(e, SCHEMA)
        expression.check_expression(e, SCHEMA)

    def new_value():
        e = make(next(counter))
        rule.statistics_filter(e, SCHEMA)
        expression.check_expression(e, SCHEMA)

    same = make(7)

    def again():
        rule.statistics_filter(same, SCHEMA)
        expression.check_expression(same, SCHEMA)

    # (building the expression is in the first two: measure it alone and take it out)
    build = _per_call_us(lambda: make(next(counter)))
    return _per_call_us(new_shape) - build, _per_call_us(new_value) - build, _per_call_us(again)


def _bypassed():
    """pyarrow's statistics given the whole filter, no validity check (before issue 38)."""
    whole = lambda expr, schema: rule.StatisticsFilter(expr, True)  # noqa: E731
    return [mock.patch.object(read, "statistics_filter", whole), mock.patch.object(scan, "statistics_filter", whole),
            mock.patch.object(plan, "check_expression", lambda expr, schema, rows=True: None)]  # fmt: skip


def query_costs(scale: float, only: set[str] | None, rounds: int) -> None:
    for name, (root, _) in lakes(scale, only).items():
        data = arrowidx.dataset(root)
        rows = []
        for label, expr, _, _ in queries(name, root):
            data.to_table(filter=expr, columns=["id"])  # warm
            shipped, before = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                data.to_table(filter=expr, columns=["id"])
                shipped.append((time.perf_counter() - start) * 1000)
                patches = _bypassed()
                for p in patches:
                    p.start()
                try:
                    start = time.perf_counter()
                    data.to_table(filter=expr, columns=["id"])
                    before.append((time.perf_counter() - start) * 1000)
                finally:
                    for p in patches:
                        p.stop()
            rows.append((label, statistics.median(shipped), statistics.median(before), "the same, rule bypassed"))
        print_table(f"{name} lake, warm object, to_table(filter, columns=['id']): with the rule vs without", rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.25, help="scale of bench_scan's lakes")
    parser.add_argument("--only", default="demo,clustered,small-files", help="bench_scan lakes")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(machine())
    rule_costs()
    query_costs(args.scale, set(args.only.split(",")) if args.only else None, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
