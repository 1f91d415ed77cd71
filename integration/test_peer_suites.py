"""The engines' own tests through arrowidx's adapters (issue 49, parts 2 and 3).

Polars' io and lazyframe tests and pyarrow's ``test_dataset.py`` (``../shared/peer-suites/``,
extracted under ``build/peer-suites/`` at test time, never copied into the repository) run
in one pytest run per file with ``integration/peer_plugin.py``: each test as published, then
its twin with ``pl.scan_parquet`` / ``ds.dataset`` on local files routed through
``arrowidx.build`` and ``arrowidx.polars.scan`` / ``arrowidx.dataset``. A test whose outcome
differs between the two fails here unless :data:`peer_expected.EXPECTED` lists it with its
reason (only a test reading Polars' plan text or verbose log may differ).

``make test`` runs the parquet, scan and hive files (with 10 examples per Hypothesis test:
those tests read bytes, which are never routed); ``make peer`` (``ARROWIDX_PEER=all``) runs
every file with the suites' own settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_expected import EXPECTED, KNOWN_GAPS, REASONS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "peer-suites" / "suites.tar.gz"
BUILD = REPO / "build" / "peer-suites"

# file -> (suite folder inside the archive, in `make test`)
FILES = {
    "tests/unit/io/test_parquet.py": ("py-polars", True),
    "tests/unit/io/test_scan.py": ("py-polars", True),
    "tests/unit/io/test_hive.py": ("py-polars", True),
    "tests/unit/io/test_multiscan.py": ("py-polars", False),
    "tests/unit/io/test_scan_options.py": ("py-polars", False),
    "tests/unit/io/test_lazy_count_star.py": ("py-polars", False),
    "tests/unit/io/test_scan_row_deletion.py": ("py-polars", False),
    "tests/unit/lazyframe/test_projections.py": ("py-polars", False),
    "tests/unit/lazyframe/test_optimizations.py": ("py-polars", False),
    "pyarrow_t/tests/test_dataset.py": ("pyarrow_tests", False),
}
ALL = os.environ.get("ARROWIDX_PEER") == "all"


def _extracted() -> Path:
    """The suites, extracted once per archive content under ``build/peer-suites/<hash>/``."""
    if not SHARED.is_file():
        pytest.skip(f"the engines' test suites are not here ({SHARED} is absent): nothing to compare with")
    digest = hashlib.sha256(SHARED.read_bytes()).hexdigest()[:16]
    target = BUILD / digest
    done = target / ".extracted"
    if not done.exists():
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SHARED) as archive:
            archive.extractall(target, filter="data")
        done.write_text("ok\n")
    return target


def run_suite(test_file: str, results: Path, *, quick: bool) -> dict[str, dict]:
    """Run one file of a suite with the peer plugin; each test's outcomes by node id."""
    suite, _ = FILES[test_file]
    root = _extracted() / suite
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "integration"), str(_package_parent())])}
    if quick:
        env["POLARS_HYPOTHESIS_PROFILE"] = "10"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "peer_plugin", f"--rootdir={root}",
               f"--peer-results={results}", "--hypothesis-seed=0", "-o", "addopts=--tb=line --strict-markers --import-mode=importlib",
               test_file]  # fmt: skip
    process = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=3000)
    if not results.exists():
        raise AssertionError(f"the peer run of {test_file} wrote no results:\n{process.stdout[-4000:]}\n{process.stderr[-4000:]}")
    return json.loads(results.read_text())


def _package_parent() -> Path:
    import arrowidx

    return Path(arrowidx.__file__).resolve().parents[1]


def compare(test_file: str, outcomes: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(tests that differ and are not expected to, expected differences that no longer differ)"""
    unexpected, stale = [], []
    for nodeid, v in sorted(outcomes.items()):
        if v["arrowidx"] is None:
            continue
        differs = v["arrowidx"] != v["plain"]
        if differs and nodeid not in EXPECTED:
            unexpected.append(f"{nodeid}: as published {v['plain']}, through arrowidx {v['arrowidx']}: {v['message'][:200]}")
        elif not differs and nodeid in EXPECTED:
            stale.append(nodeid)
    return unexpected, stale


def counts(outcomes: dict[str, dict]) -> dict[str, int]:
    routed = [v for v in outcomes.values() if v["arrowidx"] is not None]
    different = [k for k, v in outcomes.items() if v["arrowidx"] is not None and v["arrowidx"] != v["plain"]]
    return {"tests": len(outcomes), "routed": len(routed), "same": len(routed) - len(different),
            "different": len(different), "expected": sum(k in EXPECTED for k in different)}  # fmt: skip


def test_expected_differences_name_only_plan_or_log_text():
    """A difference in rows, types or error class is never an expected one."""
    for nodeid, (kind, why) in EXPECTED.items():
        assert kind in REASONS, f"{nodeid}: {kind!r} is not an acceptable reason ({', '.join(REASONS)})"
        assert why.strip(), f"{nodeid}: say why the test differs"
    for nodeid, why in KNOWN_GAPS.items():
        assert nodeid not in EXPECTED and why.strip(), f"{nodeid}: a known gap says what is not done yet"


@pytest.mark.parametrize("test_file", [f for f, (_, quick) in FILES.items() if ALL or quick])
def test_engine_suite_through_arrowidx(test_file, tmp_path):
    """The file's tests have the outcome through arrowidx that they have as published."""
    outcomes = run_suite(test_file, tmp_path / "results.json", quick=not ALL)
    unexpected, stale = compare(test_file, outcomes)
    summary = counts(outcomes)
    print(f"{test_file}: {summary}")
    gaps = [u for u in unexpected if u.split(": as published", 1)[0] in KNOWN_GAPS]
    new = [u for u in unexpected if u not in gaps]
    assert not new, f"{len(new)} test(s) of {test_file} differ through arrowidx:\n" + "\n".join(new)
    if stale:  # (a test of log lines may print them through arrowidx too when Polars reads a file itself)
        print("listed as expected differences, the same in this run:\n" + "\n".join(stale))
    closed = [k for k in KNOWN_GAPS if k in outcomes and outcomes[k]["arrowidx"] == outcomes[k]["plain"]]
    assert not closed, "listed as known gaps but the same now (remove them):\n" + "\n".join(closed)
    if gaps:
        pytest.xfail(f"{len(gaps)} difference(s) of {test_file} not fixed yet, each listed with its reason in"
                     f" peer_expected.KNOWN_GAPS (rows, types or errors: bugs to fix, not accepted)")  # fmt: skip
