"""Shared test fixtures: where the Java golden vectors live."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

GOLDEN = Path(os.environ.get("ARROWIDX_GOLDEN", Path(__file__).resolve().parent / "golden")).resolve()


@lru_cache(maxsize=1)
def golden_manifest() -> dict:
    """The golden manifest.json written by the Java reference (see shared/golden/README.md)."""
    with open(GOLDEN / "manifest.json") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def manifest() -> dict:
    if not (GOLDEN / "manifest.json").exists():
        pytest.fail(f"golden vectors not found at {GOLDEN}; set ARROWIDX_GOLDEN")
    return golden_manifest()


def pytest_terminal_summary(terminalreporter):
    """Print how many golden answers equal Java's exactly (the rest are narrower, still sound)."""
    try:
        from tests.test_golden_file_index import TALLY
    except Exception:
        return
    if sum(TALLY.values()):
        terminalreporter.write_line(
            f"golden file-index answers: {TALLY['equal']} equal to Java's, {TALLY['narrower']} narrower"
            f" (sound, exact where Java is not), {TALLY['known']} known deviations (xfail),"
            f" {TALLY['skipped']} skipped with a reason"
        )
