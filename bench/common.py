"""Small shared helpers for the benchmark scripts (timing and the ratio table)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import statistics
import subprocess
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


# ---------------------------------------------------------------------------------------
# Java beside us: Apache Paimon's own classes (shared/javaref/bin/speed-anchor)
# ---------------------------------------------------------------------------------------

JAVA_OPTS = "-Xmx3g -Xms3g"  # the machine is shared: 3 GB pre-sized heap, as the project asks
WORKLOAD_OF_COLUMN = {  # speed-anchor section "## <index> over <column>" -> workload name
    "INT, 100 distinct": "W1",
    "STRING, 1000 distinct": "W2",
    "BIGINT, ~all distinct": "W3",
    "INT, 1M distinct": "W4",
}


def javaref_dir() -> Path | None:
    """``shared/javaref`` beside the project (``$ARROWIDX_JAVAREF`` overrides), or None."""
    if os.environ.get("ARROWIDX_JAVAREF"):
        path = Path(os.environ["ARROWIDX_JAVAREF"])
        return path if (path / "bin" / "speed-anchor").exists() else None
    for parent in Path(__file__).resolve().parents:
        path = parent / "shared" / "javaref"
        if (path / "bin" / "speed-anchor").exists():
            return path
    return None


def java_unavailable() -> str | None:
    """Why Java's reference cannot run here, or None when it can."""
    if javaref_dir() is None:
        return "shared/javaref not found (set ARROWIDX_JAVAREF)"
    if shutil.which("java") is None:
        return "no `java` on PATH"
    try:
        import pyspark  # noqa: F401  (its jars supply RoaringBitmap, zstd, ... to javaref)
    except ImportError:
        return "pyspark is not installed (javaref takes its jars)"
    return None


def run_speed_anchor(rows: int, only: str, query_iters: int = 200, build_iters: int = 3) -> dict[str, dict]:
    """Run Java's speed-anchor for the scenarios whose name contains ``only``; parse its output.

    Returns ``{workload: {"build": median ms, "eq"/"in10"/"lt": median ms, "<q>_answer": text,
    "bytes": index bytes, "wall_s": JVM seconds}}``; ``{}`` (after printing "Java not
    available: why") when Java or javaref is missing, so the caller prints only its own column.
    """
    why = java_unavailable()
    if why:
        print(f"Java not available: {why}")
        return {}
    tool = javaref_dir() / "bin" / "speed-anchor"
    env = dict(os.environ, JAVA_OPTS=os.environ.get("JAVA_OPTS", JAVA_OPTS), PYTHON=sys.executable)
    cmd = [str(tool), str(rows), str(build_iters), str(query_iters), only]
    print(f"Java: {' '.join(cmd[1:])} (JAVA_OPTS={env['JAVA_OPTS']}) ...", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"Java not available: speed-anchor failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        return {}
    return parse_speed_anchor(proc.stdout, wall)


def parse_speed_anchor(text: str, wall_s: float = 0.0) -> dict[str, dict]:
    """The figures of speed-anchor's report (see :func:`run_speed_anchor`)."""
    out: dict[str, dict] = {}
    current = None
    builds: list[float] = []
    for line in text.splitlines():
        if m := re.match(r"## (.+) over (.+)$", line):
            current = out.setdefault(WORKLOAD_OF_COLUMN.get(m[2], m[2]), {"index": m[1], "wall_s": wall_s})
            builds = []
        elif current is not None and (m := re.match(r"\s+build \d+: ([\d.]+) ms", line)):
            builds.append(float(m[1]))
            current["build"] = statistics.median(builds)
        elif current is not None and (m := re.match(r"\s+query (\w+)\s+median ([\d.]+) ms .*-> (.*?)\s+\(sink", line)):
            current[m[1]] = float(m[2])
            current[f"{m[1]}_answer"] = m[3]
        elif line.startswith("| ") and not line.startswith("| index"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            workload = WORKLOAD_OF_COLUMN.get(cells[1])
            if workload in out and cells[4].isdigit():
                out[workload]["bytes"] = int(cells[4])
    return out


class SideBySide:
    """Rows of Java | arrowidx | ratio with a target; prints which targets were missed and why.

    ``add(what, java_ms, ours_ms, target, cause)``: ``target`` is the least speed-up
    (Java ms / arrowidx ms) that meets the goal, ``cause`` says where the time goes when it
    is missed. ``add_budget`` records a target given as an absolute budget in ms instead.
    """

    def __init__(self, title: str):
        self.title = title
        self.rows: list[tuple[str, str, str, str, str, str]] = []
        self.missed: list[str] = []

    def add(self, what: str, java_ms: float | None, ours_ms: float, target: float | None = None, cause: str = "") -> None:
        ratio = java_ms / ours_ms if java_ms and ours_ms else None
        goal = f">= {target:g}x" if target else "-"
        if ratio is None:
            verdict = "no Java" if target else ""
        elif target is None:
            verdict = ""
        else:
            verdict = "met" if ratio >= target else "MISSED"
        if verdict == "MISSED":
            self.missed.append(f"{what}: {ratio:.2f}x < {target:g}x" + (f" ({cause})" if cause else ""))
        self.rows.append((what, _ms(java_ms), _ms(ours_ms), f"{ratio:.2f}x" if ratio else "-", goal, verdict))

    def add_budget(self, what: str, ours_ms: float, budget_ms: float, cause: str = "", reference: str = "") -> None:
        verdict = "met" if ours_ms <= budget_ms else "MISSED"
        if verdict == "MISSED":
            self.missed.append(f"{what}: {ours_ms:,.3f} ms > {budget_ms:,.3f} ms" + (f" ({cause})" if cause else ""))
        self.rows.append((what, reference or "-", _ms(ours_ms), "-", f"<= {budget_ms:,.3f} ms", verdict))

    def print(self) -> None:
        print(f"\n{self.title}")
        head = ("measure", "Java", "arrowidx", "ratio", "target", "")
        widths = [max(len(r[i]) for r in [head, *self.rows]) for i in range(6)]
        print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for row in self.rows:
            print("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) + " |")
        print("(ratio = Java ms / arrowidx ms: above 1 arrowidx is faster)")
        for line in self.missed:
            print(f"MISSED {line}")


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} ms" if value >= 100 else f"{value:,.3g} ms" if value >= 1 else f"{value:.3f} ms"


def machine() -> str:
    """One line naming the machine, the load and the time, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"{stamp}; {os.cpu_count()} cpus ({cpu}); load average {load}; Python {platform.python_version()}"
