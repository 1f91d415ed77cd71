"""Run every benchmark in turn (``make bench``); each prints its own table with ratios.

    .venv/bin/python bench/run_all.py [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["bench_core.py", "bench_range_bitmap.py", "bench_deletion.py", "bench_dataset.py", "bench_scan.py", "bench_rule.py", "bench_polars.py", "bench_spark.py", "bench_s3.py", "bench_sql.py",
           "bench_paimon_rewrite.py", "bench_build_memory.py"]
QUICK = {"bench_deletion.py": ["--quick"], "bench_core.py": ["--rows", "1000000"], "bench_range_bitmap.py": ["--rows", "1000000"],
         "bench_dataset.py": ["--rows", "1000000"], "bench_polars.py": ["--rows", "1000000"], "bench_spark.py": ["--rows", "1000000"], "bench_scan.py": ["--scale", "0.1"], "bench_rule.py": ["--scale", "0.1", "--rounds", "5"],
         "bench_s3.py": ["--rows", "400000", "--small-files", "100", "--repeats", "1"], "bench_sql.py": ["--rows", "400000"],
         "bench_paimon_rewrite.py": ["--rows", "1000000", "--files", "10", "--runs", "1", "--no-spark"],
         "bench_build_memory.py": ["--rows", "1000000", "--scale", "10", "--rounds", "1"]}  # fmt: skip


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = []
    results = HERE.parent / "bench-data" / "results.json"
    results.unlink(missing_ok=True)
    env = dict(os.environ, ARROWIDX_BENCH_JSON=str(results))  # every print_table row lands here
    for script in SCRIPTS:
        print(f"\n===== {script} =====", flush=True)
        args = QUICK.get(script, []) if quick else []
        if subprocess.call([sys.executable, str(HERE / script), *args], cwd=HERE.parent, env=env) != 0:
            failed.append(script)
    subprocess.call([sys.executable, str(HERE / "chart.py"), str(results), str(HERE.parent / "docs" / "benchmarks.png")])
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
