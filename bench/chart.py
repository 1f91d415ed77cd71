"""Draw the speed-ups the benchmarks recorded (``$ARROWIDX_BENCH_JSON``) as one bar chart.

    python bench/chart.py [bench-data/results.json] [docs/benchmarks.png]

One horizontal bar per measure: reference time / arrowidx time (log scale; right of the
line at 1x arrowidx is faster), in the order recorded, one color per reference. Needs matplotlib (the ``bench``
extra). ``bench/run_all.py`` records the results and calls this at the end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    source = Path(argv[0] if argv else "bench-data/results.json")
    target = Path(argv[1] if len(argv) > 1 else "docs/benchmarks.png")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("chart skipped: pip install -e '.[bench]' for matplotlib", file=sys.stderr)
        return 0
    if not source.exists():
        print(f"chart skipped: no results at {source} (run bench/run_all.py)", file=sys.stderr)
        return 0
    labels, ratios, colors = [], [], []
    palette = plt.get_cmap("tab10")
    references: dict[str, int] = {}  # one color per reference (Java, pyarrow, DuckDB, ...)
    for table in json.loads(source.read_text()):
        for row in table["rows"]:
            if not row["reference_ms"] or not row["arrowidx_ms"]:
                continue
            labels.append(f"{row['measure']}  (vs {row['reference']})")
            ratios.append(row["reference_ms"] / row["arrowidx_ms"])
            colors.append(palette(references.setdefault(row["reference"].split(",")[0], len(references)) % 10))
    if not ratios:
        print("chart skipped: no rows with a reference time", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(ratios) + 1.2))
    y = list(range(len(ratios)))[::-1]
    ax.barh(y, ratios, color=colors)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("speed-up: reference time / arrowidx time (log scale; > 1 = arrowidx faster)")
    for yi, r in zip(y, ratios):
        ax.text(r, yi, f" {r:.1f}x", va="center", fontsize=7)
    ax.set_title("arrowidx benchmarks (medians of warm runs)")
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=110)
    print(f"chart: {target} ({len(ratios)} measures from {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
