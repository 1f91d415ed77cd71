"""Small shared helpers for the benchmark scripts (timing and the ratio table)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 0) -> float:
    """Median wall time of ``fn`` in milliseconds after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def record(title: str, rows: list[tuple[str, float, float | None, str]]) -> None:
    """Append the rows to the JSON file named by ``$ARROWIDX_BENCH_JSON`` (if set), which
    ``bench/chart.py`` draws; ``bench/run_all.py`` sets it."""
    path = os.environ.get("ARROWIDX_BENCH_JSON")
    if not path:
        return
    results = json.loads(Path(path).read_text()) if Path(path).exists() else []
    results.append({
        "bench": Path(sys.argv[0]).stem, "title": title,
        "rows": [{"measure": w, "arrowidx_ms": o, "reference_ms": r, "reference": n} for w, o, r, n in rows],
    })  # fmt: skip
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(results, indent=1))


def print_table(title: str, rows: list[tuple[str, float, float | None, str]]) -> None:
    """Rows of (what, ours ms, reference ms or None, reference name) with the speed-up ratio
    (also recorded for the chart, see :func:`record`)."""
    record(title, rows)
    print(f"\n{title}")
    print(f"{'measure':44} {'arrowidx':>12} {'reference':>12}  {'speed-up':>8}")
    for what, ours, ref, ref_name in rows:
        ref_txt = f"{ref:,.2f}" if ref is not None else "-"
        ratio = f"{ref / ours:.1f}x" if ref and ours else "-"
        print(f"{what:44} {ours:>10,.2f}ms {ref_txt:>10}ms  {ratio:>8}  ({ref_name})")


def side_by_side(ours, theirs, runs: int) -> tuple[float, float, object, object]:
    """Median ms of ``runs`` warm runs of each, interleaved (ours, theirs, ours, ...) so that
    both see the same machine load; one untimed warm-up each first."""
    got, want = ours(), theirs()
    t_ours, t_theirs = [], []
    for _ in range(runs):
        for fn, times in ((ours, t_ours), (theirs, t_theirs)):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(t_ours), statistics.median(t_theirs), got, want
