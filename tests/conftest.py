"""Shared test fixtures: where the Java golden vectors live."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

GOLDEN = Path(os.environ.get("ARROWIDX_GOLDEN", Path(__file__).resolve().parent / "golden")).resolve()
REPOSITORY = Path(__file__).resolve().parents[1]


def shared_dir(name: str) -> Path:
    """``../shared/<name>`` seen from the repository root (the first ancestor of the
    repository holding ``shared/<name>``), or ``$ARROWIDX_SHARED/<name>``. It may not exist:
    tests needing it skip, saying where it was looked for."""
    if os.environ.get("ARROWIDX_SHARED"):
        return Path(os.environ["ARROWIDX_SHARED"]).resolve() / name
    for parent in REPOSITORY.parents:
        if (parent / "shared" / name).is_dir():
            return parent / "shared" / name
    return REPOSITORY.parent / "shared" / name


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
    """Print how many golden answers equal Java's exactly (the rest are narrower, still sound),
    and how many cases of each differential suite were selective."""
    import sys

    if "tests.differential_support" in sys.modules:
        sys.modules["tests.differential_support"].report_tallies(terminalreporter)
    try:
        from tests.test_golden_file_index import TALLY
    except Exception:
        return
    if sum(TALLY.values()):
        terminalreporter.write_line(
            f"golden file-index answers: {TALLY['equal']} equal to Java's, {TALLY['narrower']} narrower"
            f" (sound, exact where Java is not), {TALLY['known']} known deviations (xfail),"
            f" {TALLY['sound only']} only checked sound (sub-millisecond literals on a millisecond column),"
            f" {TALLY['skipped']} skipped with a reason"
        )


def rows_in_memory(source, **dataset_options):
    """Every row of a dataset's Parquet files, read whole (no filter: no row-group statistics
    or partition pruning decide anything). ``dataset_options`` go to ``pyarrow.dataset.dataset``."""
    import pyarrow.dataset as ds

    return ds.dataset(source, **{"format": "parquet", **dataset_options}).to_table()


def filtered_in_memory(table, expr=None, columns=None):
    """What ``expr`` means: ``Table.filter`` on the rows in memory, then ``columns``. (Not a
    file scan with the filter: its statistics pruning drops NaN rows and compares literals
    uncast, the bug class the tests must catch.)"""
    out = table if expr is None else table.filter(expr)
    return out if columns is None else out.select(columns)


def tables_equal(a, b) -> bool:
    """Row-for-row equality of two Arrow tables, treating NaN as equal to NaN."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if pa.types.is_floating(x.type):
            if not pc.is_null(x).equals(pc.is_null(y)):
                return False
            xs = x.fill_null(0).to_numpy(zero_copy_only=False)
            ys = y.fill_null(0).to_numpy(zero_copy_only=False)
            if not np.array_equal(xs, ys, equal_nan=True):
                return False
        elif not x.equals(y):
            return False
    return True


@pytest.fixture(params=["rows taken as shipped", "Polars takes every kept row", "Polars filters every file kept whole"])
def row_takes(request, monkeypatch):
    """Runs a test three times: as shipped (Polars takes kept rows only from large row
    groups, and filters only large files an index keeps whole), with Polars taking every
    row a mask keeps (``arrowidx.lake.read.take_with_polars``), and with Polars filtering
    every file an index keeps whole (``filter_with_polars``)."""
    from arrowidx.lake import read

    if request.param == "Polars takes every kept row":
        monkeypatch.setattr(read, "TAKE_MIN_ROWS", 0)
        monkeypatch.setattr(read, "TAKE_SHARE", 1)
        monkeypatch.setattr(read, "TAKE_MIN_BYTES", 0)
    if request.param == "Polars filters every file kept whole":
        monkeypatch.setattr(read, "FILTER_MIN_ROWS", 0)
    return request.param


def damage_index(root: str, data_file: str, column: str) -> str:
    """Flip a byte of ``column``'s index in the index file of ``data_file`` (a byte a query
    filtering on ``column`` reads: queries read only their columns' windows), and forget
    what this process holds of it (as a new process would). Returns the index file's path."""

    import arrowidx.facts
    from arrowidx.lake.commit import load_manifest
    from arrowidx.lake.layout import join, physical
    from arrowidx.lake.source import open_lake

    store, root, _ = open_lake(root)
    entry = load_manifest(store, root).files[data_file]
    path = physical(store, join(root, entry.index.file))
    start, length, _ = next(iter(entry.index.layout[column].values()))
    with open(path, "r+b") as f:
        f.seek(start + length // 2)
        byte = f.read(1)
        f.seek(start + length // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    arrowidx.facts.clear()
    return path


def index_dir(root, *parts: str) -> str:
    """Where the lake at ``root`` keeps its index files (``parts`` below it), as arrowidx
    decides it (:func:`arrowidx.lake.layout.index_root_of`, the one place): the sidecar
    ``_<folder>.arrowidx/`` beside a new lake, ``<root>/_arrowidx/`` for an old one."""
    from arrowidx.lake.layout import index_root_of
    from arrowidx.storage import as_store

    return os.path.join(index_root_of(as_store(None), os.path.abspath(os.fspath(root))), *parts)
